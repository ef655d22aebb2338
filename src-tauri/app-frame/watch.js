// The first script of an MCP App's page (put there by Switchboard): what the browser refuses under
// the page's Content-Security-Policy is told to the window through the page between them
// (proxy.js), so the app's card and its server's log can say so. Best effort: the page may undo it.
'use strict';
document.addEventListener('securitypolicyviolation', (e) => {
  window.parent.postMessage({
    jsonrpc: '2.0',
    method: 'ui/notifications/sandbox-csp-violation',
    params: { directive: String(e.effectiveDirective || e.violatedDirective || ''), blocked: String(e.blockedURI || '') },
  }, '*');
});
