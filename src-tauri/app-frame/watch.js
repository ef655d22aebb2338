// The first script of an MCP App's page (put there by Switchboard): what the browser refuses under
// the page's Content-Security-Policy, and what the page asked of the network that did not come (a
// fetch or XMLHttpRequest that failed, an image, script, style or media that did not load), are
// told to the window through the page between them (proxy.js), so the app's card and its server's
// log can say so: an app whose data never arrives is not just an empty frame. Best effort: the page
// may undo it. Each address is told once, at most 20 of them.
'use strict';
(() => {
  const tell = (method, params) => window.parent.postMessage({ jsonrpc: '2.0', method, params }, '*');
  document.addEventListener('securitypolicyviolation', (e) => {
    tell('ui/notifications/sandbox-csp-violation',
      { directive: String(e.effectiveDirective || e.violatedDirective || ''), blocked: String(e.blockedURI || '') });
  });
  const told = new Set();
  const failed = (url, what) => {
    const u = String(url || '').slice(0, 500);
    if (!/^https?:/i.test(u) || told.has(u) || told.size >= 20) return;
    told.add(u);
    tell('ui/notifications/sandbox-load-failed', { url: u, what });
  };
  // an element's resource that did not load (errors of elements do not bubble: caught on the way down)
  window.addEventListener('error', (e) => {
    const t = e.target;
    if (!t || t === window || !t.tagName) return;
    failed(t.currentSrc || t.src || t.href, t.tagName.toLowerCase());
  }, true);
  const absolute = (url) => { try { return new URL(String(url), location.href).href; } catch { return ''; } };
  const fetch = window.fetch;
  if (typeof fetch === 'function') {
    window.fetch = function (input, init) {
      const url = typeof input === 'string' ? input : (input && (input.url || input.href)) || '';
      return fetch.call(window, input, init).catch((err) => {
        if (!(err && err.name === 'AbortError')) failed(absolute(url), 'fetch');
        throw err;
      });
    };
  }
  const open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url, ...rest) {
    const href = absolute(url);
    this.addEventListener('error', () => failed(href, 'xhr'));
    return open.call(this, method, url, ...rest);
  };
})();
