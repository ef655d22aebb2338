// An MCP App on a tool card: its page in a sandboxed frame (its own scheme, an opaque origin:
// `sandbox="allow-scripts"` without same-origin), and the host side of the apps bridge
// (JSON-RPC over postMessage, ext-apps protocol 2026-01-26). Only messages from this frame's own
// window are read; the page gets its tool's input and result, nothing else of the conversation.
// What it asks goes through the window's own rules: tool calls through approval (each its own
// card), links through the link dialog, messages into the message box for the user to send.
// Before its frame is removed, for whatever reason, a page that has started is told
// (`ui/resource-teardown`) and given TEARDOWN_WAIT_MS to answer. A page that loads another page
// in its frame (or itself again) is closed at once: a frame shows the one page it was given.
import { el } from '../dom.js';

const PROTOCOL = '2026-01-26';
const MAX_HEIGHT = 800;
const MIN_HEIGHT = 60;
/** The largest message read from a page. */
const MAX_MESSAGE_CHARS = 1_000_000;
const MAX_TEXT_CHARS = 20_000;
/** How long a page has to answer `ui/resource-teardown` before its frame is removed anyway. */
export const TEARDOWN_WAIT_MS = 3000;
/** The most log messages taken from one page (each goes to its server's log). */
const MAX_LOG_MESSAGES = 200;
/** What a page may still ask while it is being closed. */
const WHILE_CLOSING = new Set(['ping', 'notifications/message', 'ui/notifications/size-changed']);

/**
 * Mounts the app of `opened` (from `open_app`) into `box`.
 * host: { callTool(viewId, name, args) → Promise<CallToolResult>, openLink(url) → Promise<boolean>
 *         (opened, or the user said no), draftMessage(text), log(viewId, level, data),
 *         close(viewId, reason, teardown) (the frame is gone; teardown: { answered, error, ms },
 *         or null when the page had not started), ended(note) (the app ended by itself: it left
 *         its page or asked to be closed), theme() → 'light'|'dark' }
 * Returns { frame, result(r), close(reason) → Promise (resolves once the frame is gone) }.
 */
export function mountApp(box, opened, host) {
  const frame = el('iframe', {
    class: 'app-frame',
    sandbox: 'allow-scripts',
    referrerpolicy: 'no-referrer',
    title: `App of ${opened.server} › ${opened.tool}`,
    src: opened.url,
  });
  frame.style.height = '160px';
  frame.dataset.viewId = opened.viewId;
  // loading → ready (it said initialized) → closing (told, waiting for its answer) → closed
  let state;
  const setState = (s) => { state = s; frame.dataset.state = s; };
  setState('loading');
  box.append(frame);
  const queue = [];
  const pending = new Map(); // the host's requests to the page, by id
  let nextId = 1;
  let logged = 0;
  let closing = null;
  const post = (msg) => frame.contentWindow?.postMessage(msg, '*');
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
  const text = (params) => {
    const blocks = Array.isArray(params?.content) ? params.content : params?.content ? [params.content] : [];
    return blocks.filter((b) => b?.type === 'text' && typeof b.text === 'string').map((b) => b.text).join('\n')
      .slice(0, MAX_TEXT_CHARS);
  };

  /** The frame goes now; its server's log says why and how the page took it. */
  const remove = (reason, teardown) => {
    window.removeEventListener('message', onMessage);
    frame.removeEventListener('load', onLoad);
    for (const done of pending.values()) done(null);
    pending.clear();
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
        const answer = await request('ui/resource-teardown', { reason }, TEARDOWN_WAIT_MS);
        teardown = {
          answered: Boolean(answer),
          error: answer?.error ? String(answer.error.message ?? 'an error') : null,
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

  // the first load is the page; any later one is another page in its frame (or it again)
  let loads = 0;
  const onLoad = () => {
    loads += 1;
    if (loads > 1) ended('it loaded another page', 'The app loaded another page in its frame, so it was closed.', false);
  };
  frame.addEventListener('load', onLoad);

  const onMessage = async (ev) => {
    if (ev.source !== frame.contentWindow) return; // only this page, whatever it claims
    const m = ev.data;
    if (!m || typeof m !== 'object' || m.jsonrpc !== '2.0') return;
    try { if (JSON.stringify(m).length > MAX_MESSAGE_CHARS) return; } catch { return; }
    if (typeof m.method !== 'string') {
      // an answer to one of the host's requests
      const done = pending.get(m.id);
      if (done && ('result' in m || 'error' in m)) { pending.delete(m.id); done(m); }
      return;
    }
    const isRequest = m.id !== undefined && m.id !== null;
    if (state === 'closing' && !WHILE_CLOSING.has(m.method)) {
      if (isRequest) fail(m.id, -32000, 'The app is being closed.');
      return;
    }
    switch (m.method) {
      case 'ui/initialize':
        reply(m.id, {
          protocolVersion: PROTOCOL,
          hostInfo: { name: 'switchboard', version: '0.1.0' },
          hostCapabilities: {
            serverTools: {}, openLinks: {}, logging: {}, message: { text: {} },
            sandbox: { csp: opened.approvedCsp ?? {} },
          },
          hostContext: {
            toolInfo: { id: String(opened.callId), tool: opened.toolInfo ?? { name: opened.tool } },
            theme: host.theme(),
            displayMode: 'inline',
            availableDisplayModes: ['inline'],
            containerDimensions: { width: Math.round(box.clientWidth || 600), maxHeight: MAX_HEIGHT },
            locale: navigator.language,
            timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
            userAgent: 'switchboard/0.1.0',
            platform: 'desktop',
            deviceCapabilities: { touch: false, hover: true },
          },
        });
        return;
      case 'ui/notifications/initialized':
        if (state !== 'loading') return;
        setState('ready');
        for (const msg of queue.splice(0)) post(msg);
        return;
      case 'ui/notifications/size-changed': {
        const h = Number(m.params?.height);
        if (Number.isFinite(h)) frame.style.height = `${Math.max(MIN_HEIGHT, Math.min(MAX_HEIGHT, Math.ceil(h)))}px`;
        return;
      }
      case 'ping':
        if (isRequest) reply(m.id, {});
        return;
      case 'notifications/message': {
        if (isRequest || logged >= MAX_LOG_MESSAGES) return;
        logged += 1;
        const p = m.params ?? {};
        const data = typeof p.data === 'string' ? p.data : JSON.stringify(p.data ?? null);
        host.log(opened.viewId, String(p.level ?? 'info'), typeof p.logger === 'string' ? `${p.logger}: ${data}` : data);
        return;
      }
      case 'tools/call': {
        if (!isRequest) return;
        const name = m.params?.name;
        const args = m.params?.arguments ?? {};
        if (typeof name !== 'string' || typeof args !== 'object' || Array.isArray(args)) {
          fail(m.id, -32602, 'tools/call needs a tool name and an arguments object');
          return;
        }
        try {
          reply(m.id, await host.callTool(opened.viewId, name, args));
        } catch (e) {
          fail(m.id, -32000, e?.message ?? String(e));
        }
        return;
      }
      case 'ui/open-link': {
        if (!isRequest) return;
        const url = String(m.params?.url ?? '');
        if (!/^https?:\/\//i.test(url)) { reply(m.id, { isError: true }); return; }
        // the link dialog shows where it goes first; the page learns whether it opened
        let done = false;
        try { done = await host.openLink(url); } catch { done = false; }
        reply(m.id, done ? {} : { isError: true });
        return;
      }
      case 'ui/message': {
        if (!isRequest) return;
        const said = text(m.params);
        if (!said) { reply(m.id, { isError: true }); return; }
        host.draftMessage(said); // the user sees it in the message box and sends it, or not
        reply(m.id, {});
        return;
      }
      case 'ui/request-display-mode':
        if (isRequest) reply(m.id, { mode: 'inline' });
        return;
      case 'ui/notifications/request-teardown':
        ended('it asked to be closed', 'The app closed itself.', true);
        return;
      default:
        if (isRequest) fail(m.id, -32601, `${m.method} is not supported by this host`);
    }
  };
  window.addEventListener('message', onMessage);
  notify('ui/notifications/tool-input', { arguments: opened.toolInput ?? {} });
  if (opened.toolResult) notify('ui/notifications/tool-result', opened.toolResult);

  return {
    frame,
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
