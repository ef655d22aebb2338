// An MCP App on a tool card: its page in a sandboxed frame (its own scheme, an opaque origin:
// `sandbox="allow-scripts"` without same-origin), and the host side of the apps bridge
// (JSON-RPC over postMessage, ext-apps protocol 2026-01-26). Only messages from this frame's own
// window are read; the page gets its tool's input and result, nothing else of the conversation.
// What it asks goes through the window's own rules: tool calls through approval (each its own
// card), links through the link dialog, messages into the message box for the user to send.
import { el } from '../dom.js';

const PROTOCOL = '2026-01-26';
const MAX_HEIGHT = 800;
const MIN_HEIGHT = 60;
/** The largest message read from a page. */
const MAX_MESSAGE_CHARS = 1_000_000;
const MAX_TEXT_CHARS = 20_000;

/**
 * Mounts the app of `opened` (from `open_app`) into `box`.
 * host: { callTool(viewId, name, args) → Promise<CallToolResult>, openLink(url),
 *         draftMessage(text), close(viewId), theme() → 'light'|'dark' }
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
  box.append(frame);
  let ready = false;
  const queue = [];
  const post = (msg) => frame.contentWindow?.postMessage(msg, '*');
  const notify = (method, params) => {
    const msg = { jsonrpc: '2.0', method, params };
    if (ready) post(msg); else queue.push(msg);
  };
  const reply = (id, result) => post({ jsonrpc: '2.0', id, result });
  const fail = (id, code, message) => post({ jsonrpc: '2.0', id, error: { code, message } });
  const text = (params) => {
    const blocks = Array.isArray(params?.content) ? params.content : params?.content ? [params.content] : [];
    return blocks.filter((b) => b?.type === 'text' && typeof b.text === 'string').map((b) => b.text).join('\n')
      .slice(0, MAX_TEXT_CHARS);
  };

  const onMessage = async (ev) => {
    if (ev.source !== frame.contentWindow) return; // only this page, whatever it claims
    const m = ev.data;
    if (!m || typeof m !== 'object' || m.jsonrpc !== '2.0' || typeof m.method !== 'string') return;
    try { if (JSON.stringify(m).length > MAX_MESSAGE_CHARS) return; } catch { return; }
    const isRequest = m.id !== undefined && m.id !== null;
    switch (m.method) {
      case 'ui/initialize':
        reply(m.id, {
          protocolVersion: PROTOCOL,
          hostInfo: { name: 'switchboard', version: '0.1.0' },
          hostCapabilities: { serverTools: {}, openLinks: {}, message: { text: {} } },
          hostContext: {
            toolInfo: { id: String(opened.callId), tool: opened.toolInfo ?? { name: opened.tool } },
            theme: host.theme(),
            displayMode: 'inline',
            availableDisplayModes: ['inline'],
            containerDimensions: { width: Math.round(box.clientWidth || 600), maxHeight: MAX_HEIGHT },
            locale: navigator.language,
            platform: 'desktop',
            deviceCapabilities: { touch: false, hover: true },
          },
        });
        return;
      case 'ui/notifications/initialized':
        ready = true;
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
        host.openLink(url); // the link dialog shows where it goes first
        reply(m.id, {});
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
      case 'notifications/message':
      case 'ui/notifications/request-teardown':
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
    /** The page is removed: it stops being heard, and its address serves nothing. */
    close() {
      window.removeEventListener('message', onMessage);
      frame.remove();
      host.close(opened.viewId);
    },
  };
}
