// MCP Apps on their cards: opens a call's app (views/app-frame.js) and routes what it asks
// through the window's own rules. Its tool calls are shown on its own card (how many of each,
// the last one's end; no card per call), and when one must be asked about, the question is on
// that card too, in the app's name, once per app and tool (the calls that come meanwhile join it,
// and it says how many wait). Browser features it asks for
// (microphone, camera, …) are asked about before it loads. A message it writes goes into the
// message box marked as the app's (one that may have followed a click in the window is held on
// its card, which says so and offers to put it in the message box). What its Content-Security-Policy refuses is said on its card
// and in its server's log. Its links go through the link dialog, its log to its server's log.
//
// The question about browser features is asked once per app in a run. "Allow for this app" is the
// default answer to its calls' question unless the tool is destructive or changed; how many calls
// wait comes from `appApprovalWaiting`. In full screen or picture in picture, a question on the
// app's card (its call, its browser features) shows with the app. The origins it names but may not
// reach are said on its card.
import * as ipc from '../ipc.js';
import { el } from '../dom.js';
import { mountApp } from '../views/app-frame.js';

/** The browser features an app may ask for, as the user reads them, and as `allow` names them. */
const FEATURES = [
  ['microphone', 'use your microphone', 'microphone'],
  ['camera', 'use your camera', 'camera'],
  ['geolocation', 'know your location', 'geolocation'],
  ['clipboardWrite', 'write to your clipboard', 'clipboard-write'],
];
/** `a`, `a and b`, `a, b and c`. */
const listed = (words) => (words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`);
/** How many refusals of its policy a card lists at most. */
const MAX_VIOLATIONS_SHOWN = 3;

const asked = (permissions) => FEATURES.filter(([k]) => permissions?.[k]);

export class AppHost {
  /**
   * `chat`: the ChatView. `app`: { openLink(url) → Promise<boolean> (opened), input (the message
   * box), autosize(), toast(text) }.
   */
  constructor(chat, app) {
    this.chat = chat;
    this.app = app;
    this.draftNote = null;
    // the window closing: its apps are told first
    ipc.watchWindowClose(async () => {
      await this.chat.cards.closeAll('the window is closing');
      ipc.appsClosed().catch(() => {});
    }).catch(() => {});
  }

  /**
   * A message the app of `server` (which calls itself `name`) wrote after the user clicked or
   * typed in it: into the message box, for the user to send or not, marked as the app's until
   * it is sent or cleared.
   */
  draftMessage(text, server, name) {
    const input = this.app.input;
    input.value = input.value ? `${input.value}\n${text}` : text;
    this.app.autosize();
    input.focus();
    const from = name ? `the app “${name}” of ${server}` : `the app of ${server}`;
    this.draftNote?.dispatchEvent(new Event('gone'));
    const note = el('p', { class: 'app-draft', role: 'status' },
      `✎ Written by ${from}: read it, then send it if you want to.`);
    const form = input.form ?? input.parentElement;
    // it goes when the message is sent (Enter, or the Send button) or the box is emptied
    const listening = new AbortController();
    const gone = () => { note.remove(); listening.abort(); if (this.draftNote === note) this.draftNote = null; };
    const opts = { signal: listening.signal };
    form?.addEventListener('submit', gone, opts);
    input.addEventListener('keydown', (e) => { if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) gone(); }, opts);
    input.addEventListener('input', () => { if (!input.value.trim()) gone(); }, opts);
    note.addEventListener('gone', gone, opts);
    // above the message box, its width (not beside it in the composer's row, which squeezed the box)
    input.before(note);
    this.draftNote = note;
  }

  /**
   * Shows the app of call `callId` in `box`; `onEnded(note)`: the app ended by itself (it left
   * its page, or asked to be closed). Its calls still running when it goes are cancelled.
   */
  async open(callId, box, onEnded) {
    const opened = await ipc.openApp(callId);
    const notes = el('div', { class: 'app-notes' });
    box.append(notes);
    this.networkNote(notes, opened);
    const granted = await this.permissions(box, opened);
    const given = FEATURES.filter(([k]) => opened.permissions?.[k] && granted?.[k]);
    const allow = given.map(([, , f]) => f).join('; ');
    // as the spec writes them (`{ microphone: {} }`): an app's SDK refuses any other shape
    const grantedPermissions = Object.fromEntries(given.map(([k]) => [k, {}]));
    const calls = new AppCalls(box);
    let name = null;
    let violations = 0;
    const refused = new Set();
    const violationsList = el('ul', { class: 'app-violations' });
    const loads = new FailedLoads(notes, refused, (line) => ipc.appLog(opened.viewId, 'warning', line).catch(() => {}));
    return mountApp(box, { ...opened, callId, allow, grantedPermissions }, {
      callTool: (viewId, tool, args) => calls.track(tool, ipc.appCallTool(viewId, name, tool, args,
        (ev) => this.onEvent(ev, box))),
      readResource: (viewId, uri) => ipc.appReadResource(viewId, uri),
      list: (viewId, listing, cursor) => ipc.appList(viewId, listing, cursor),
      modelContext: (viewId, content, structured) => ipc.appModelContext(viewId, name, content, structured),
      openLink: (url) => this.app.openLink(url),
      draftMessage: (text) => { notes.querySelector('.app-held')?.remove(); this.draftMessage(text, opened.server, name); },
      heldMessage: (text) => this.heldMessage(notes, text, opened.server, name),
      log: (viewId, level, data) => ipc.appLog(viewId, level, data).catch(() => {}),
      violation: ({ directive, blocked }) => {
        // one line per thing refused: a page asks again for what it was refused (a font both
        // preloaded and used, a retry), and the browser reports each attempt
        const what = `${blocked}\n${directive}`;
        if (refused.has(what)) return;
        refused.add(what);
        loads.show(); // what its policy refused is said here, not as a load that did not come
        violations += 1;
        ipc.appCspViolation(opened.viewId, directive, blocked).catch(() => {});
        if (violations === 1) {
          notes.append(el('div', { class: 'app-note app-csp', role: 'status' },
            el('p', {}, 'The app tried something its security policy does not allow (its server’s log lists it):'),
            violationsList));
        }
        if (violations <= MAX_VIOLATIONS_SHOWN) {
          violationsList.append(el('li', {}, el('code', {}, blocked || 'inline code'), ` (${directive || 'policy'})`));
        } else {
          violationsList.dataset.more = String(violations - MAX_VIOLATIONS_SHOWN);
        }
      },
      close: (viewId, reason, teardown) => {
        for (const n of [notes, calls.node, ...box.querySelectorAll('.app-approval')]) n.remove();
        ipc.closeApp(viewId, reason, teardown).catch(() => {});
      },
      loadFailed: (failure) => loads.failed(failure),
      ended: (note) => onEnded?.(note),
      // the scheme shown: the window's theme (Settings → This window), else the desktop's
      theme: () => document.documentElement.dataset.theme,
      named: (n) => { name = n; },
      notStarted: (yes) => {
        notes.querySelector('.app-slow')?.remove();
        if (!yes) return;
        notes.append(el('p', { class: 'app-note app-slow', role: 'status' },
          (opened.closedOrigins ?? []).length
            ? 'The app has not started yet: it may be waiting for a site it cannot reach (see above).'
            : 'The app has not started yet: it may be waiting for something from the network, or have failed (its server’s log may say why).'));
      },
    });
  }

  /**
   * A message the app wrote after a click that may have been the window's (the user had used the
   * window a moment before): said on its card, briefly, with a button that puts it in the message
   * box (the user's click there is sure). The app's latest such message only.
   */
  heldMessage(notes, text, server, name) {
    // one note, kept in place (an app that writes again and again only changes what it holds)
    let note = notes.querySelector('.app-held');
    if (!note) {
      note = el('p', { class: 'app-note app-held', role: 'status' },
        'The app’s message was held: you had used the window just before, so the click may not have been in the app. Click in the app again in a moment, or ',
        el('button', {
          type: 'button', class: 'btn', dataset: { action: 'take-message' },
          onclick: () => { note.remove(); this.draftMessage(note.held, server, name); },
        }, 'put it in the message box'));
      notes.append(note);
    }
    note.held = text;
  }

  /** Origins the page names that it may not reach: the card says which, and why. */
  networkNote(notes, opened) {
    const closed = opened.closedOrigins ?? [];
    if (!closed.length) return;
    const list = closed.flatMap((d, i) => [i ? ', ' : '', el('code', { class: 'origin' }, d)]);
    notes.append(el('p', { class: 'app-note app-network muted', dataset: { origins: closed.join(' ') } },
      ...(opened.appNetwork
        ? ['This app names sites you have not allowed yet: ', ...list,
          '. They stay closed until you allow them in its server’s settings.']
        : ['This app names sites it would reach: ', ...list,
          '. Its server’s settings do not let its apps reach any site, so it reaches none.'])));
  }

  /**
   * What the app asks of the browser: asked about once per app (in this run) before it loads;
   * what the user granted (null: nothing asked).
   */
  async permissions(box, opened) {
    const wants = asked(opened.permissions);
    if (!wants.length) return null;
    if (opened.granted) return opened.granted;
    const yes = await new Promise((resolve) => {
      const question = el('div', { class: 'approval app-permissions', role: 'group', 'aria-label': 'What the app asks to use' },
        el('p', { class: 'approval-question' }, 'The app of ', el('strong', {}, opened.server), ' asks to ',
          listed(wants.map(([, words]) => words)), '.'),
        el('div', { class: 'approval-buttons' },
          el('button', { type: 'button', class: 'btn primary', dataset: { action: 'grant' }, onclick: () => { question.remove(); resolve(true); } }, 'Allow'),
          el('button', { type: 'button', class: 'btn', dataset: { action: 'refuse' }, onclick: () => { question.remove(); resolve(false); } }, 'Not now')));
      box.append(question);
    });
    const granted = Object.fromEntries(FEATURES.map(([k]) => [k, yes && Boolean(opened.permissions[k])]));
    await ipc.appGrant(opened.viewId, granted);
    return granted;
  }

  /** A question about one of an app's calls, on the app's card (`box`). */
  onEvent(ev, box) {
    switch (ev.type) {
      case 'appApprovalRequested': askAboutAppCall(box, ev); break;
      case 'appApprovalWaiting': {
        const bar = box.querySelector(`.app-approval[data-question="${Number(ev.questionId)}"]`);
        if (bar) showWaiting(bar, ev.waiting);
        break;
      }
      case 'appApprovalResolved':
        box.querySelector(`.app-approval[data-question="${Number(ev.questionId)}"]`)?.remove();
        break;
      case 'elicitationRequested':
        this.chat.cards.askUser(ev.callId, ev.elicitation,
          (answer) => ipc.answerQuestion(ev.questionId, { kind: 'elicitation', ...answer }));
        break;
      default: break;
    }
  }
}

/** The question about an app's call of a tool, in the app's name, on its card. */
function askAboutAppCall(box, ev) {
  const error = el('p', { class: 'field-error approval-error', role: 'alert' });
  const choose = async (action) => {
    error.textContent = '';
    for (const b of bar.querySelectorAll('button')) b.disabled = true;
    try {
      await ipc.answerQuestion(ev.questionId, { kind: 'approval', action });
    } catch (e) {
      error.textContent = e?.message ?? String(e);
      for (const b of bar.querySelectorAll('button')) b.disabled = false;
    }
  };
  const careful = Boolean(ev.destructive || ev.changed);
  const button = (action, words, primary) => el('button', {
    type: 'button', class: `btn${primary ? ' primary' : ''}${action === 'deny' ? ' danger' : ''}`,
    dataset: { action }, onclick: () => choose(action),
  }, words);
  const bar = el('div', {
    class: `approval app-approval${ev.destructive ? ' destructive' : ''}`, role: 'group',
    'aria-label': 'Approve the app’s tool call', dataset: { question: ev.questionId, tool: ev.tool },
  },
  el('p', { class: 'approval-question' },
    ev.destructive ? '⚠ This tool can change or delete data. ' : '',
    el('span', { class: 'app-asker' }, capitalized(ev.app)), ' wants to run ',
    el('strong', {}, `${ev.server} › ${ev.tool}`), ' with these arguments:'),
  ev.changed ? el('p', { class: 'tool-changed' }, {
    new: '⚠ This tool is new (its server did not have it when you accepted its tools); accept it in the servers list first to allow it for good.',
    unchecked: '⚠ This tool could not be checked against the definition you accepted; it asks every time.',
  }[ev.unaccepted] ?? '⚠ This tool is not what it was when you accepted it; accept its new definition in the servers list first to allow it for good.') : null,
  el('pre', { class: 'code args' }, JSON.stringify(ev.arguments ?? {}, null, 2)),
  el('p', { class: 'app-waiting', role: 'status', hidden: true }),
  el('p', { class: 'approval-scope' },
    `“Allow for this app”: this app may run ${ev.tool} without asking again in this chat; the model and other apps still ask.`),
  el('div', { class: 'approval-buttons' },
    // an app asks again and again (a polling app, a viewer reading piece by piece): what the
    // user most likely means is the app, unless the tool can change or delete data, or is not
    // what was accepted
    button('allowOnce', 'Allow once', careful),
    button('allowConversation', 'Allow for this app', !careful),
    careful ? null : button('alwaysAllow', 'Always allow'),
    button('deny', 'Deny')),
  error);
  showWaiting(bar, ev.waiting ?? 1);
  box.append(bar);
  bar.tabIndex = -1;
  bar.focus({ preventScroll: true });
  bar.scrollIntoView({ block: 'nearest' });
}

/** How many of the app's calls of the tool the answer to `bar` decides (said when more than one). */
function showWaiting(bar, waiting) {
  const n = Math.max(1, Number(waiting) || 1);
  const line = bar.querySelector('.app-waiting');
  line.dataset.waiting = String(n);
  line.textContent = n > 1 ? `${n} calls of the app to this tool wait for this answer: it decides them all (“Allow once” runs each one).` : '';
  const shown = !line.hidden;
  line.hidden = n < 2;
  // the line pushes the buttons down: they stay in sight
  if (!shown && !line.hidden && bar.isConnected) bar.scrollIntoView({ block: 'nearest' });
}

const capitalized = (s) => (s ? s[0].toUpperCase() + s.slice(1) : s);

/** The calls an app made, on its card: how many of each tool, and how the last one ended. */
class AppCalls {
  constructor(box) {
    this.node = el('p', { class: 'app-calls muted', hidden: true });
    box.append(this.node);
    this.counts = new Map();
    this.running = 0;
    this.last = null;
  }

  /** Follows one call (`promise`, its result); resolves or rejects as it does. */
  async track(tool, promise) {
    this.counts.set(tool, (this.counts.get(tool) ?? 0) + 1);
    this.running += 1;
    this.show();
    const t0 = performance.now();
    try {
      const r = await promise;
      this.last = { tool, ok: !r?.isError, ms: Math.round(performance.now() - t0) };
      return r;
    } catch (e) {
      this.last = { tool, ok: false, ms: Math.round(performance.now() - t0), error: e?.message ?? String(e) };
      throw e;
    } finally {
      this.running -= 1;
      this.show();
    }
  }

  show() {
    const each = [...this.counts].map(([t, n]) => `${t} ×${n}`).join(', ');
    const last = this.last
      ? ` · last: ${this.last.tool} ${this.last.ok ? 'done' : 'failed'} in ${this.last.ms} ms${this.last.error ? ` (${this.last.error})` : ''}`
      : '';
    this.node.textContent = `The app’s calls: ${each}${this.running ? ` · ${this.running} running` : ''}${last}`;
    this.node.dataset.calls = String([...this.counts.values()].reduce((a, b) => a + b, 0));
    this.node.hidden = false;
  }
}

/** What a page asked of the network that did not come, said once on its card (at most 3 addresses). */
const MAX_FAILED_SHOWN = 3;

/**
 * The loads of one app that did not come (watch.js reports them): a line on its card, so an app
 * whose data never arrives (offline, or a site this computer cannot reach) is not just an empty
 * frame, and one in its server's log per address. A load its policy refused is left out: the card
 * says that already (`refused`: the `blocked\ndirective` of each refusal).
 */
class FailedLoads {
  constructor(notes, refused, log) {
    this.notes = notes;
    this.refused = refused;
    this.log = log;
    this.urls = new Map(); // url -> what loaded it (fetch, xhr, img, script, …)
    this.timer = null;
  }

  failed({ url, what }) {
    if (!url || this.urls.has(url) || this.urls.size >= 20) return;
    this.urls.set(url, what);
    this.log(`the app could not load ${url} (${what || 'a request'})`);
    // a refusal of its policy may be reported just after the failure it caused
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.show(), 500);
  }

  /** The note as it now stands (gone when every failure was a refusal of its policy). */
  show() {
    const origin = (u) => { try { return new URL(u).origin; } catch { return u; } };
    const refusedOrigins = new Set([...this.refused].map((r) => origin(r.split('\n')[0])));
    const failed = [...this.urls.keys()].filter((u) => !refusedOrigins.has(origin(u)));
    this.notes.querySelector('.app-load-failed')?.remove();
    if (!failed.length) return;
    const shown = failed.slice(0, MAX_FAILED_SHOWN)
      .flatMap((u, i) => [i ? ', ' : '', el('code', { class: 'origin' }, u)]);
    const more = failed.length > MAX_FAILED_SHOWN ? ` and ${failed.length - MAX_FAILED_SHOWN} more` : '';
    this.notes.append(el('p', { class: 'app-note app-load-failed', role: 'status', dataset: { urls: failed.join(' ') } },
      'Some of what the app loads did not come: ', ...shown, more,
      '. It may need the internet, or a site this computer cannot reach; what it shows may be incomplete (its server’s log lists each).'));
  }
}
