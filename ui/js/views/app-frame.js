// An MCP App on a tool card, as the reference host (ext-apps' basic-host) runs one: the window's
// frame holds the page between the window and the app (the sandbox proxy, served from the app's
// own origin `mcpapp://<view id>`, one per app shown), which holds the app's page in a frame of
// that same origin; the app's `window.parent` is that page, not the window. The host side of the
// apps bridge (JSON-RPC over postMessage, ext-apps protocol 2026-01-26) is here and in
// app-bridge.js: only messages from this frame's window are read, and the page gets its tool's
// input and result, nothing else of the conversation. Before the frame is removed, for
// whatever reason, a page that has started is told (`ui/resource-teardown`) and given
// TEARDOWN_WAIT_MS to answer. A frame that loads another page (or the app's frame inside it
// does) is closed at once: a frame shows the one page it was given.
//
// Sizes: inline, the frame is as tall as the app says it is (`size-changed`, plus the frame's
// border, as the frame is border-box), up to MAX_INLINE_HEIGHT; the app hears the width it has
// and that height as its limit (`containerDimensions`). Full screen (the whole window) and
// picture in picture (a small frame that stays in a corner) are offered to the app and on its
// card; there the app gets a fixed size. Picture in picture starts above the composer (it covers
// none of its controls), can be moved (its Move handle) and resized (its corner), and comes back
// where and as large as the user left it (PIP_KEY). Back in the chat, the app has its inline height
// again: what it had before (sizes it reported while shown otherwise describe that mode's box).
//
// The window's frame is `<iframe sandbox="allow-scripts allow-same-origin allow-forms">`; the
// window's CSP allows frames from `mcpapp:` only. The window talks to that frame only (JSON-RPC
// over postMessage, to its origin; the proxy relays both ways); `ui/notifications/sandbox-*` are
// between the window and the proxy: proxy ready → the features granted, the app's frame loaded
// another page, a CSP violation, something the app asked of the network that did not come. Lifecycle: `ui/initialize` gets the host context, the tool's input
// and result follow `initialized`; `close(reason)` waits for the teardown's answer at most
// TEARDOWN_WAIT_MS (3 s), meanwhile the page may only ping, log and resize. Inline height at most
// MAX_INLINE_HEIGHT (6000 px, app-bridge.js); the app hears its width and that limit again when the
// width or the theme changes; full screen or picture in picture come from the card's buttons or the
// app's `ui/request-display-mode` (only modes the app declares); the frame is never moved in the
// document (that would load its page again). An app that has not started after START_NOTE_MS (10 s:
// often what it loads from the network does not come) gets a note on its card.
import { el } from '../dom.js';
import { DISPLAY_MODES, MAX_INLINE_HEIGHT, answer, hostContext } from './app-bridge.js';

/** How long a page has to answer `ui/resource-teardown` before its frame is removed anyway. */
export const TEARDOWN_WAIT_MS = 3000;
const INITIAL_HEIGHT = 400;
const MIN_HEIGHT = 60;
/** The largest message read from a page. */
const MAX_MESSAGE_CHARS = 2_000_000;
/** Where picture in picture was left, and its size (localStorage): { left, top, width, height }. */
const PIP_KEY = 'switchboard.appPip';
/** Picture in picture keeps this far from the window's edges and the composer. */
const PIP_MARGIN = 12;
const PIP_MIN = { width: 200, height: 120 };
const clamp = (v, lo, hi) => Math.max(lo, Math.min(hi, v));

/**
 * Where picture in picture goes: where the user left it (kept in the window), else above the
 * composer at the right, so that it covers none of its controls.
 */
export function pipPlace() {
  let saved = null;
  try { saved = JSON.parse(localStorage.getItem(PIP_KEY) ?? 'null'); } catch { saved = null; }
  const num = (v) => (Number.isFinite(v) ? v : null);
  const maxW = Math.max(PIP_MIN.width, innerWidth - 2 * PIP_MARGIN);
  const maxH = Math.max(PIP_MIN.height, innerHeight - 2 * PIP_MARGIN);
  const width = clamp(num(saved?.width) ?? Math.min(420, innerWidth * 0.6), PIP_MIN.width, maxW);
  const height = clamp(num(saved?.height) ?? Math.min(300, innerHeight * 0.5), PIP_MIN.height, maxH);
  const composer = document.getElementById('composer')?.getBoundingClientRect();
  const floor = composer?.height ? composer.top - PIP_MARGIN : innerHeight - PIP_MARGIN;
  const left = clamp(num(saved?.left) ?? innerWidth - PIP_MARGIN - width, 0, Math.max(0, innerWidth - width));
  const top = clamp(num(saved?.top) ?? floor - height, 0, Math.max(0, innerHeight - height));
  return { left, top, width, height };
}

/** How long a page may take to start (`ui/initialize`, then initialized) before its card says so. */
export const START_NOTE_MS = 10_000;
/** What a page may still ask while it is being closed. */
const WHILE_CLOSING = new Set(['ping', 'notifications/message', 'ui/notifications/size-changed']);
/**
 * Mounts the app of `opened` (from `open_app`, with `allow`: the browser features granted) into
 * `box`. host: { callTool(viewId, name, args) → Promise<CallToolResult>, readResource(viewId,
 * uri), list(viewId, listing, cursor), modelContext(viewId, params), openLink(url) →
 * Promise<boolean> (opened, or the user said no), draftMessage(text, appName), heldMessage(text,
 * appName) (a message after a click that may have been the window's), log(viewId, level, data),
 * violation({ directive, blocked }), loadFailed({ url, what }) (a fetch, XMLHttpRequest or
 * element of the page that did not load), close(viewId, reason, teardown) (the frame is gone;
 * teardown: { answered, error, ms }, or null when the page had not started), ended(note) (the
 * app ended by itself: it left its page or asked to be closed), theme() → 'light'|'dark',
 * named(name) (the app said its name), notStarted(yes) (it has not started after START_NOTE_MS;
 * false once it has) }.
 * Returns { frame, controls (buttons for its card: display modes), result(r), close(reason) →
 * Promise (resolves once the frame is gone) }.
 */
export function mountApp(box, opened, host) {
  const frame = el('iframe', {
    class: 'app-frame',
    sandbox: 'allow-scripts allow-same-origin allow-forms',
    allow: opened.allow || null,
    referrerpolicy: 'no-referrer',
    title: `App of ${opened.server} › ${opened.tool}`,
    src: opened.url,
  });
  frame.style.height = `${INITIAL_HEIGHT}px`;
  frame.dataset.viewId = opened.viewId;
  frame.dataset.mode = 'inline';
  // loading → ready (it said initialized) → closing (told, waiting for its answer) → closed
  let state;
  const setState = (s) => { state = s; frame.dataset.state = s; };
  setState('loading');
  box.append(frame);
  const app = { name: null, modes: null, height: null }; // what the page said of itself
  let mode = 'inline';
  let inlineHeight = null; // the frame's height in the chat, while it is shown otherwise
  let target = '*'; // the proxy's origin, once it said it is ready
  const queue = [];
  const pending = new Map(); // the host's requests to the page, by id
  let nextId = 1;
  let closing = null;
  const post = (msg) => frame.contentWindow?.postMessage(msg, target);
  const notify = (method, params) => {
    const msg = { jsonrpc: '2.0', method, params };
    if (state === 'ready') post(msg); else if (state === 'loading') queue.push(msg);
  };
  const reply = (id, result) => post({ jsonrpc: '2.0', id, result });
  const fail = (id, code, message) => post({ jsonrpc: '2.0', id, error: { code, message } });
  /** Asks the page; resolves with its response, or null after `ms`. */
  const request = (method, params, ms) => new Promise((resolve) => {
    const id = nextId++;
    const timer = setTimeout(() => { pending.delete(id); resolve(null); }, ms);
    pending.set(id, (m) => { clearTimeout(timer); resolve(m); });
    post({ jsonrpc: '2.0', id, method, params });
  });

  const border = () => {
    const s = getComputedStyle(frame);
    return s.boxSizing === 'border-box'
      ? (parseFloat(s.borderTopWidth) || 0) + (parseFloat(s.borderBottomWidth) || 0) : 0;
  };
  const dimensions = () => (mode === 'inline'
    ? { width: Math.round(frame.clientWidth || box.clientWidth || 600), maxHeight: MAX_INLINE_HEIGHT }
    : { width: Math.round(frame.clientWidth), height: Math.round(frame.clientHeight) });
  const fitHeight = () => {
    if (mode !== 'inline' || app.height === null) return;
    frame.style.height = `${Math.max(MIN_HEIGHT, Math.min(MAX_INLINE_HEIGHT, Math.ceil(app.height))) + border()}px`;
  };

  /** Shows the app inline, in full screen or in picture in picture; the app hears it. */
  const setMode = (next) => {
    if (!DISPLAY_MODES.includes(next) || state === 'closed') return mode;
    if (!offered(next)) return mode;
    if (mode === 'inline' && next !== 'inline') inlineHeight = frame.style.height;
    mode = next;
    frame.dataset.mode = next;
    box.classList.toggle('app-fullscreen', next === 'fullscreen');
    box.classList.toggle('app-pip', next === 'pip');
    placePip();
    if (next === 'inline') {
      frame.style.height = inlineHeight ?? `${INITIAL_HEIGHT}px`;
      inlineHeight = null;
    } else frame.style.height = '';
    offer();
    requestAnimationFrame(() => notify('ui/notifications/host-context-changed',
      { displayMode: next, containerDimensions: dimensions() }));
    return mode;
  };
  const modeButton = (m, words) => el('button', {
    type: 'button', class: 'btn small', dataset: { action: `app-${m}`, mode: m },
    hidden: m === 'inline', onclick: () => setMode(m),
  }, words);
  // picture in picture: placed (pipPlace), moved by its handle, resized by its corner; both kept
  const pipSaved = () => {
    const r = box.getBoundingClientRect();
    try {
      localStorage.setItem(PIP_KEY, JSON.stringify({
        left: Math.round(r.left), top: Math.round(r.top), width: Math.round(r.width), height: Math.round(r.height),
      }));
    } catch { /* not kept: it starts above the composer next time */ }
  };
  let placed = null; // the size picture in picture was given (a change of it is the user's)
  const placePip = () => {
    const at = mode === 'pip' ? pipPlace() : null;
    for (const k of ['left', 'top', 'width', 'height']) box.style[k] = at ? `${Math.round(at[k])}px` : '';
    placed = at && { width: Math.round(at.width), height: Math.round(at.height) };
  };
  const move = el('button', {
    type: 'button', class: 'btn small app-move', dataset: { action: 'app-move' }, hidden: true,
    title: 'Drag to move the app', 'aria-label': 'Move the app (drag)',
  }, '✥ Move');
  move.addEventListener('pointerdown', (e) => {
    if (mode !== 'pip' || e.button !== 0) return;
    e.preventDefault();
    move.setPointerCapture(e.pointerId);
    const r = box.getBoundingClientRect();
    const dx = e.clientX - r.left;
    const dy = e.clientY - r.top;
    const onMove = (m) => {
      box.style.left = `${Math.round(clamp(m.clientX - dx, 0, Math.max(0, innerWidth - r.width)))}px`;
      box.style.top = `${Math.round(clamp(m.clientY - dy, 0, Math.max(0, innerHeight - r.height)))}px`;
    };
    const onUp = () => {
      move.removeEventListener('pointermove', onMove);
      move.removeEventListener('pointerup', onUp);
      move.removeEventListener('pointercancel', onUp);
      pipSaved();
    };
    move.addEventListener('pointermove', onMove);
    move.addEventListener('pointerup', onUp);
    move.addEventListener('pointercancel', onUp);
  });
  // resized by its corner (CSS resize): the size is kept once the user lets go
  let resizedBy = null;
  const boxResized = new ResizeObserver(() => {
    if (mode !== 'pip' || !placed) return;
    const r = box.getBoundingClientRect();
    if (Math.round(r.width) === placed.width && Math.round(r.height) === placed.height) return;
    clearTimeout(resizedBy);
    resizedBy = setTimeout(() => { if (mode === 'pip') pipSaved(); }, 300);
  });
  boxResized.observe(box);
  const onWindowResize = () => { if (mode === 'pip') placePip(); };
  window.addEventListener('resize', onWindowResize);
  const controls = [
    move,
    modeButton('inline', 'Back in the chat'),
    modeButton('fullscreen', 'Full screen'),
    modeButton('pip', 'Picture in picture'),
  ];
  /** Inline always; another mode if the app said it can be shown so (or said nothing). */
  const offered = (m) => m === 'inline' || !app.modes || app.modes.includes(m);
  /** The card offers the modes the app can be shown in, but the one it is in. */
  const offer = () => {
    for (const b of controls) {
      b.hidden = b === move ? mode !== 'pip' : b.dataset.mode === mode || !offered(b.dataset.mode);
    }
  };
  offer();
  const onKey = (e) => { if (e.key === 'Escape' && mode !== 'inline') setMode('inline'); };
  window.addEventListener('keydown', onKey);
  // the width it has, and the theme, as they change
  let size = '';
  const resized = new ResizeObserver(() => {
    // inline its height is the app's own; else both are the host's
    const d = dimensions();
    const now = mode === 'inline' ? `${d.width}` : `${d.width}x${d.height}`;
    if (d.width && now !== size) {
      size = now;
      notify('ui/notifications/host-context-changed', { containerDimensions: d });
    }
  });
  resized.observe(frame);
  // the scheme shown changed (the desktop's, or the choice in Settings): <html data-theme>
  let theme = host.theme();
  const onTheme = () => {
    if (host.theme() === theme) return;
    theme = host.theme();
    notify('ui/notifications/host-context-changed', { theme });
  };
  const scheme = new MutationObserver(onTheme);
  scheme.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });

  /** The frame goes now; its server's log says why and how the page took it. */
  const remove = (reason, teardown) => {
    clearTimeout(slow);
    window.removeEventListener('message', onMessage);
    window.removeEventListener('keydown', onKey);
    scheme.disconnect();
    resized.disconnect();
    boxResized.disconnect();
    clearTimeout(resizedBy);
    window.removeEventListener('resize', onWindowResize);
    frame.removeEventListener('load', onLoad);
    for (const done of pending.values()) done(null);
    pending.clear();
    box.classList.remove('app-fullscreen', 'app-pip');
    for (const k of ['left', 'top', 'width', 'height']) box.style[k] = '';
    for (const b of controls) b.remove();
    frame.remove();
    setState('closed');
    host.close(opened.viewId, reason, teardown);
  };
  const close = (reason) => {
    if (closing) return closing;
    const started = state === 'ready';
    setState('closing');
    closing = (async () => {
      let teardown = null;
      if (started) {
        const t0 = performance.now();
        const said = await request('ui/resource-teardown', { reason }, TEARDOWN_WAIT_MS);
        teardown = {
          answered: Boolean(said),
          error: said?.error ? String(said.error.message ?? 'an error') : null,
          ms: Math.round(performance.now() - t0),
        };
      }
      if (state !== 'closed') remove(reason, teardown);
    })();
    return closing;
  };
  /** The app ended by itself: closed, and the card says so. */
  const ended = (reason, note, ask) => {
    if (state === 'closed') return;
    if (ask) close(reason).then(() => host.ended(note));
    else {
      closing ??= Promise.resolve();
      remove(reason, null);
      host.ended(note);
    }
  };
  const navigated = () => ended('it loaded another page', 'The app loaded another page in its frame, so it was closed.', false);

  // the first load is the page between window and app; any later one is another page in its place
  let loads = 0;
  const onLoad = () => {
    loads += 1;
    if (loads > 1) navigated();
  };
  frame.addEventListener('load', onLoad);
  // a page that has not started after a while (often: what it loads from the network does not
  // come): its card says so, instead of an empty frame
  const slow = setTimeout(() => { if (state === 'loading') host.notStarted?.(true); }, START_NOTE_MS);

  // what the bridge's answers need of this frame
  const ctx = {
    opened, host, frame, app,
    reply, fail, notify,
    context: () => hostContext(opened, host, { mode, dimensions: dimensions() }),
    initialized: () => {
      if (state !== 'loading') return;
      setState('ready');
      clearTimeout(slow);
      host.notStarted?.(false);
      for (const msg of queue.splice(0)) post(msg);
    },
    // a size it reports while shown otherwise is that mode's box, not its height in the chat
    sized: (h) => { if (mode === 'inline') { app.height = h; fitHeight(); } },
    offer,
    setMode,
    mode: () => mode,
    ended,
  };

  const onMessage = async (ev) => {
    if (ev.source !== frame.contentWindow) return; // only this frame, whatever it claims
    const m = ev.data;
    if (!m || typeof m !== 'object' || m.jsonrpc !== '2.0') return;
    try { if (JSON.stringify(m).length > MAX_MESSAGE_CHARS) return; } catch { return; }
    if (typeof m.method !== 'string') {
      // an answer to one of the host's requests
      const done = pending.get(m.id);
      if (done && ('result' in m || 'error' in m)) { pending.delete(m.id); done(m); }
      return;
    }
    // between the window and the page in its frame
    if (m.method === 'ui/notifications/sandbox-proxy-ready') {
      if (state !== 'loading') return;
      if (typeof ev.origin === 'string' && ev.origin !== 'null') target = ev.origin;
      post({ jsonrpc: '2.0', method: 'ui/notifications/sandbox-resource-ready', params: { allow: opened.allow ?? '' } });
      return;
    }
    if (m.method === 'ui/notifications/sandbox-app-navigated') { navigated(); return; }
    if (m.method === 'ui/notifications/sandbox-csp-violation') {
      host.violation({ directive: String(m.params?.directive ?? ''), blocked: String(m.params?.blocked ?? '') });
      return;
    }
    if (m.method === 'ui/notifications/sandbox-load-failed') {
      host.loadFailed?.({ url: String(m.params?.url ?? '').slice(0, 500), what: String(m.params?.what ?? '') });
      return;
    }
    const isRequest = m.id !== undefined && m.id !== null;
    if ((state === 'closing' || state === 'closed') && !WHILE_CLOSING.has(m.method)) {
      if (isRequest) fail(m.id, -32000, 'The app is being closed.');
      return;
    }
    await answer(ctx, m, isRequest);
  };
  window.addEventListener('message', onMessage);
  notify('ui/notifications/tool-input', { arguments: opened.toolInput ?? {} });
  if (opened.toolResult) notify('ui/notifications/tool-result', opened.toolResult);

  return {
    frame,
    controls,
    /** The call ended after the page was shown. */
    result(r) { notify('ui/notifications/tool-result', r); },
    /**
     * The page is to go (`reason`, as the page is told): a started page is asked first and its
     * answer waited for (at most TEARDOWN_WAIT_MS); then the frame is removed, the page stops
     * being heard and its address serves nothing. Resolves when the frame is gone.
     */
    close,
  };
}
