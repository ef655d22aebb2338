// The page between the window and an MCP App (the "sandbox proxy" of the MCP Apps spec): served
// from the app's own origin (mcpapp://<view id>/, one per app shown), it holds the app's page in
// a frame of that same origin, so the app's `window.parent` is this page and not the window, and
// relays the apps bridge (JSON-RPC over postMessage) both ways. It carries no authority: the app
// can run code here (same origin), and the window treats whatever comes from this frame as the
// app's. Messages named `ui/notifications/sandbox-*` are between this page and the window:
//   window → here: sandbox-resource-ready { allow }: load the app, with the browser features the
//     user granted it (the frame's `allow` attribute);
//   here → window: sandbox-proxy-ready (load me), sandbox-app-navigated (the app's frame loaded a
//     second page), sandbox-csp-violation { directive, blocked } (the browser refused something
//     under the app's Content-Security-Policy), sandbox-load-failed { url, what } (something the
//     app asked of the network did not come); both reported by /watch.js inside the app's page.
'use strict';
(() => {
  const host = window.parent;
  if (host === window) return;
  // a serialized origin to post to, or any (an opaque one cannot be named)
  const named = (o) => (o && o !== 'null' ? o : '*');
  const own = named(window.location.origin);
  // the window's origin, where everything from here goes (it is the only parent there is)
  const hostOrigin = named(window.location.ancestorOrigins && window.location.ancestorOrigins[0]);
  const toHost = (msg) => host.postMessage(msg, hostOrigin);
  const root = document.documentElement;
  root.style.height = '100%';
  root.style.margin = '0';
  root.style.overflow = 'hidden';
  let inner = null;
  let loads = 0;

  const load = (allow) => {
    if (inner) return;
    inner = document.createElement('iframe');
    inner.setAttribute('sandbox', 'allow-scripts allow-same-origin allow-forms');
    if (typeof allow === 'string' && allow) inner.setAttribute('allow', allow);
    inner.setAttribute('referrerpolicy', 'no-referrer');
    inner.setAttribute('title', 'app');
    Object.assign(inner.style, { display: 'block', width: '100%', height: '100%', border: '0' });
    inner.addEventListener('load', () => {
      loads += 1;
      if (loads > 1) toHost({ jsonrpc: '2.0', method: 'ui/notifications/sandbox-app-navigated', params: {} });
    });
    inner.src = '/app';
    document.body.style.margin = '0';
    document.body.style.height = '100%';
    document.body.append(inner);
  };

  const violation = (e) => ({
    jsonrpc: '2.0',
    method: 'ui/notifications/sandbox-csp-violation',
    params: { directive: String(e.effectiveDirective || e.violatedDirective || ''), blocked: String(e.blockedURI || '') },
  });
  // what the app tries here (it can run code in this page too) is refused under this page's policy
  document.addEventListener('securitypolicyviolation', (e) => toHost(violation(e)));

  window.addEventListener('message', (event) => {
    const m = event.data;
    if (event.source === host) {
      if (m && m.method === 'ui/notifications/sandbox-resource-ready') {
        load(m.params && m.params.allow);
        return;
      }
      if (m && typeof m.method === 'string' && m.method.startsWith('ui/notifications/sandbox-')) return;
      if (inner && inner.contentWindow) inner.contentWindow.postMessage(m, own);
      return;
    }
    if (inner && event.source === inner.contentWindow && (own === '*' || event.origin === own)) {
      if (m && typeof m.method === 'string' && m.method.startsWith('ui/notifications/sandbox-')) {
        // only what /watch.js reports passes from the app's side
        if (m.method === 'ui/notifications/sandbox-csp-violation' || m.method === 'ui/notifications/sandbox-load-failed') toHost(m);
        return;
      }
      toHost(m);
    }
  });
  toHost({ jsonrpc: '2.0', method: 'ui/notifications/sandbox-proxy-ready', params: {} });
})();
