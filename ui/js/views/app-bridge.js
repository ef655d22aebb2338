// The host's answers to what an MCP App asks (the requests and notifications the ext-apps
// protocol 2026-01-26 defines for a view, and those the SDK's bridge forwards), each through the
// window's rules: its tool calls through the checks and approval (`app_call_tool`), its
// server's resources as its server answers, links through the link dialog, a message into the
// message box (only right after the user clicked or typed in the app, and marked as the app's;
// one that may have followed the window's own input is held on its card for the user to take),
// context for the model, its size and display mode, its log. Anything else: `-32601`.
//
// The requests: `tools/call`, `resources/read`, `resources/list`, `resources/templates/list`,
// `ui/open-link`, `ui/message`, `ui/update-model-context`, `ui/request-display-mode`, `ping`;
// notifications: `size-changed`, `notifications/message`, `request-teardown`.
//
// `ui/message` is taken only right after a click or key press in that frame (`gestureIn`: the
// browser's own user activation, which no page can fake, the pointer over the frame, and no input
// in the window itself within the activation span; never the focus, which a page can pull into
// itself). One after a click that may have been the window's (activation and pointer over the
// frame, but window input in the span: `gesture` says `unsure`) is refused and held on the app's
// card (`heldMessage`: one note, the latest message), whose button puts it in the box.
// `ui/open-link` (which the link dialog then asks about) and a `ui/request-display-mode` to full
// screen or picture in picture are taken only after a `gestureNear` (the user activation with the
// pointer over the frame, wherever the input was: a click in the link dialog or typing a message
// just before must not make the app's own click not count); refused otherwise (-32000 for a link;
// the mode it is in for a display mode).
const PROTOCOL = '2026-01-26';
export const DISPLAY_MODES = ['inline', 'fullscreen', 'pip'];
/** The tallest an app is shown in the chat. */
export const MAX_INLINE_HEIGHT = 6000;

/** How long the browser counts a click or key press as recent (its transient activation). */
const ACTIVATION_MS = 5000;

// The window's own clicks and key presses: a page's gesture is one the window did not see.
let windowInputAt = -Infinity;
for (const type of ['pointerdown', 'keydown']) {
  window.addEventListener(type, (e) => { if (e.isTrusted) windowInputAt = performance.now(); }, true);
}

/**
 * Whether the user just clicked or pressed a key in `frame`: the browser says there was such an
 * input a moment ago (it passes a frame's up to the window, and no page can fake one), the
 * pointer is over the frame, and the window itself saw no input of its own in that moment, so
 * the input was in a frame. Where the focus is says nothing: a page can pull the focus into
 * itself whenever it likes, while the pointer happens to rest on it.
 */
export function gestureIn(frame) {
  return gesture(frame) === 'app';
}

/**
 * Where the user's recent input was, as far as `frame` can be sure: `'app'` (see `gestureIn`),
 * `'unsure'` (there was one and the pointer is over the frame, but the window had input of its
 * own in that moment: it may have been the window's, or a click in the app right after using the
 * window), or `'none'`.
 */
function gesture(frame) {
  if (!gestureNear(frame)) return 'none';
  return performance.now() - windowInputAt > ACTIVATION_MS ? 'app' : 'unsure';
}

/**
 * Whether the user just clicked or pressed a key with the pointer over `frame`, in it or in the
 * window: for what the window asks the user about anyway (a link shows where it goes first), so
 * a click in that dialog does not make the next click in the app not count.
 */
export function gestureNear(frame) {
  return Boolean(navigator.userActivation?.isActive) && frame.matches(':hover');
}
const MAX_TEXT_CHARS = 20_000;
/** The most log messages taken from one page (each goes to its server's log). */
const MAX_LOG_MESSAGES = 200;

/** The host context an app gets at `ui/initialize`. */
export function hostContext(opened, host, { mode, dimensions }) {
  return {
    toolInfo: { id: String(opened.callId), tool: opened.toolInfo ?? { name: opened.tool } },
    theme: host.theme(),
    displayMode: mode,
    availableDisplayModes: DISPLAY_MODES,
    containerDimensions: dimensions,
    locale: navigator.language,
    timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    userAgent: 'switchboard/0.1.0',
    platform: 'desktop',
    deviceCapabilities: { touch: false, hover: true },
    safeAreaInsets: { top: 0, right: 0, bottom: 0, left: 0 },
  };
}

const text = (params) => {
  const blocks = Array.isArray(params?.content) ? params.content : params?.content ? [params.content] : [];
  return blocks.filter((b) => b?.type === 'text' && typeof b.text === 'string').map((b) => b.text).join('\n')
    .slice(0, MAX_TEXT_CHARS);
};

/** `host.<what>(…)`, answered to request `m`: its result, or an error with its message. */
async function relay(ctx, m, what) {
  try {
    ctx.reply(m.id, await what());
  } catch (e) {
    ctx.fail(m.id, -32000, e?.message ?? String(e));
  }
}

/** Answers message `m` (a request when `isRequest`) of the app in `ctx` (app-frame.js). */
export async function answer(ctx, m, isRequest) {
  const { opened, host, app } = ctx;
  const p = m.params ?? {};
  switch (m.method) {
    case 'ui/initialize': {
      if (!isRequest) return;
      if (typeof p.appInfo?.name === 'string') { app.name = p.appInfo.name.slice(0, 60); host.named?.(app.name); }
      const modes = p.appCapabilities?.availableDisplayModes;
      if (Array.isArray(modes)) { app.modes = modes.filter((x) => DISPLAY_MODES.includes(x)); ctx.offer(); }
      ctx.reply(m.id, {
        protocolVersion: PROTOCOL,
        hostInfo: { name: 'switchboard', version: '0.1.0' },
        hostCapabilities: {
          openLinks: {},
          serverTools: {},
          serverResources: {},
          logging: {},
          message: { text: {} },
          updateModelContext: { text: {}, structuredContent: {} },
          sandbox: { csp: opened.approvedCsp ?? {}, permissions: opened.grantedPermissions ?? {} },
        },
        hostContext: ctx.context(),
      });
      return;
    }
    case 'ui/notifications/initialized':
      ctx.initialized();
      return;
    case 'ui/notifications/size-changed': {
      const h = Number(p.height);
      if (Number.isFinite(h) && h >= 0) ctx.sized(Math.min(h, MAX_INLINE_HEIGHT));
      return;
    }
    case 'ping':
      if (isRequest) ctx.reply(m.id, {});
      return;
    case 'notifications/message': {
      if (isRequest || app.logged >= MAX_LOG_MESSAGES) return;
      app.logged = (app.logged ?? 0) + 1;
      const data = typeof p.data === 'string' ? p.data : JSON.stringify(p.data ?? null);
      host.log(opened.viewId, String(p.level ?? 'info'), typeof p.logger === 'string' ? `${p.logger}: ${data}` : data);
      return;
    }
    case 'tools/call': {
      if (!isRequest) return;
      const args = p.arguments ?? {};
      if (typeof p.name !== 'string' || typeof args !== 'object' || Array.isArray(args)) {
        ctx.fail(m.id, -32602, 'tools/call needs a tool name and an arguments object');
        return;
      }
      await relay(ctx, m, () => host.callTool(opened.viewId, p.name, args));
      return;
    }
    case 'resources/read':
      if (!isRequest) return;
      if (typeof p.uri !== 'string') { ctx.fail(m.id, -32602, 'resources/read needs a uri'); return; }
      await relay(ctx, m, () => host.readResource(opened.viewId, p.uri));
      return;
    case 'resources/list':
    case 'resources/templates/list': {
      if (!isRequest) return;
      const listing = m.method === 'resources/list' ? 'resources' : 'resourceTemplates';
      const cursor = typeof p.cursor === 'string' ? p.cursor : null;
      await relay(ctx, m, () => host.list(opened.viewId, listing, cursor));
      return;
    }
    case 'ui/open-link': {
      if (!isRequest) return;
      const url = String(p.url ?? '');
      if (!/^https?:\/\//i.test(url)) { ctx.reply(m.id, { isError: true }); return; }
      // only on the user's gesture: a page cannot raise link dialogs on its own
      if (!gestureNear(ctx.frame)) {
        ctx.fail(m.id, -32000, 'Opening a link denied: an app may open a link only right after the user clicked or typed in it.');
        return;
      }
      // the link dialog shows where it goes first; the page learns whether it opened
      let done = false;
      try { done = await host.openLink(url); } catch { done = false; }
      ctx.reply(m.id, done ? {} : { isError: true });
      return;
    }
    case 'ui/message': {
      if (!isRequest) return;
      // only what the user just asked for in this app, and shown as the app's
      const where = gesture(ctx.frame);
      const said = text(p);
      if (where !== 'app') {
        // a click in the app right after using the window cannot be told from the window's own
        // input: the card says the message was held, and the user's click there takes it
        if (where === 'unsure' && said) host.heldMessage?.(said, app.name);
        ctx.fail(m.id, -32000, 'Message sending denied: an app may write a message only right after the user clicked or typed in it.');
        return;
      }
      if (!said) { ctx.fail(m.id, -32602, 'Invalid message format: no text'); return; }
      host.draftMessage(said, app.name);
      ctx.reply(m.id, {});
      return;
    }
    case 'ui/update-model-context': {
      if (!isRequest) return;
      const content = Array.isArray(p.content) ? p.content : [];
      const structured = p.structuredContent && typeof p.structuredContent === 'object' && !Array.isArray(p.structuredContent)
        ? p.structuredContent : null;
      await relay(ctx, m, async () => { await host.modelContext(opened.viewId, content, structured); return {}; });
      return;
    }
    case 'ui/request-display-mode': {
      if (!isRequest) return;
      // back to inline whenever it likes; full screen or picture in picture only right after a
      // click or key press with the pointer over the app (a page cannot cover the window on its
      // own; Escape or the card's button brings it back); the answer is the mode it is in
      const asked = String(p.mode ?? '');
      const allowed = asked === 'inline' || asked === ctx.mode() || gestureNear(ctx.frame);
      ctx.reply(m.id, { mode: allowed ? ctx.setMode(asked) : ctx.mode() });
      return;
    }
    case 'ui/notifications/request-teardown':
      ctx.ended('it asked to be closed', 'The app closed itself.', true);
      return;
    default:
      if (isRequest) ctx.fail(m.id, -32601, `${m.method} is not supported by this host`);
  }
}
