// Tool-call cards: arguments, result (with images, links and structured content), duration, how
// the call came to run; the questions a call brings (approval, a server's form, a server's
// request to use the model) and its progress.
//
// A task's card says where the task is and, when it ended without its tool's result, why (words.js:
// `taskText`); "resumed after a restart" with the time it started; a late end offers "Send the
// result to the model" for a result, "Tell the model" for the tool's error, and nothing otherwise.
// `closeAppsIn` is the one way a card with an app leaves the chat (cleared, conversation switched,
// messages edited or regenerated): the card stays in place, hidden and no longer a card, until its
// app has answered; `closeAll` when the window closes. No control sits inside a card's `<summary>`
// (its Stop is in `.card-controls`).
//
// A skill tool's card names the skill and its origin (`skillOrigin`).
import { el, formatDuration } from '../dom.js';
import { elicitationForm } from './elicitation.js';
import { diffView } from './diff.js';
import { approvalText, isRefused, networkTried, resumedText, taskText } from './words.js';

export class ToolCards {
  /** `chat`: the ChatView the cards live in (its root, scrolling, link and Stop handlers). */
  constructor(chat) {
    this.chat = chat;
    this.cards = new Map(); // tool call id -> card node
    this.apps = new Map(); // tool call id -> its app shown (app-frame.js)
    this.closing = new Set(); // apps told they are closed, until their frame is gone
  }

  clear() {
    this.apps.clear();
    this.cards.clear();
  }

  /**
   * Takes the apps shown in `nodes` (about to leave the chat) away: each is told why
   * (`ui/resource-teardown`) and removed once it has answered or the wait is over. Meanwhile
   * its node stays where it is, hidden and no longer a card (a frame moved elsewhere would load
   * its page again): such a node has the class `app-closing`, and the caller removes the others.
   */
  closeAppsIn(nodes, reason) {
    for (const [id, app] of [...this.apps]) {
      const node = nodes.find((n) => n.contains(app.frame));
      if (!node) continue;
      this.apps.delete(id);
      node.hidden = true;
      node.inert = true;
      node.className = 'app-closing';
      for (const key of Object.keys(node.dataset)) delete node.dataset[key];
      const closed = app.close(reason).finally(() => { node.remove(); this.closing.delete(closed); });
      this.closing.add(closed);
    }
  }

  /** Closes every app shown (the window closes); resolves when each has answered or its time is over. */
  async closeAll(reason) {
    const apps = [...this.apps.values()];
    this.apps.clear();
    await Promise.all([...apps.map((a) => a.close(reason)), ...this.closing]);
  }

  /**
   * The call's tool has an app (MCP Apps): shown on the card at once (`now`, a call that just
   * ended), or when the user asks (a stored one); the user may close it and show it again.
   */
  offerApp(id, now) {
    const card = this.cards.get(id);
    if (!card || card.querySelector('.app-box')) return;
    const box = el('div', { class: 'app-box' });
    const note = el('p', { class: 'field-error', role: 'alert' });
    const bar = el('div', { class: 'app-bar' });
    const offer = () => {
      bar.remove();
      box.prepend(button);
    };
    const show = async () => {
      button.remove();
      note.textContent = '';
      try {
        const app = await this.chat.onOpenApp(id, box, (ended) => {
          if (this.apps.get(id) !== app) return;
          this.apps.delete(id);
          note.textContent = ended;
          offer();
        });
        this.apps.set(id, app);
        const close = el('button', {
          type: 'button', class: 'btn small', dataset: { action: 'close-app' },
          onclick: async () => {
            close.disabled = true;
            this.apps.delete(id);
            await app.close('the user closed it');
            offer();
          },
        }, 'Close the app');
        bar.replaceChildren(...(app.controls ?? []), close);
        box.prepend(bar);
      } catch (e) {
        note.textContent = `The app could not be shown: ${e?.message ?? e}`;
        offer();
      }
    };
    const button = el('button', { type: 'button', class: 'btn small', dataset: { action: 'show-app' }, onclick: show }, 'Show the app');
    box.append(button, note);
    card.querySelector('.card-body').prepend(box);
    card.open = true;
    if (now) show();
  }

  add(call) {
    this.chat.removeEmpty();
    const args = el('pre', { class: 'code args' }, prettyJson(call.arguments));
    const result = el('pre', { class: 'code result' });
    const icon = el('span', { class: 'card-icon spinner', 'aria-hidden': 'true' });
    const state = el('span', { class: 'card-state' }, 'running…');
    const badge = el('span', { class: 'card-approval', hidden: true });
    const stop = el('button', {
      type: 'button', class: 'btn small card-stop', title: 'Cancel this tool call',
      onclick: (e) => { e.preventDefault(); stop.disabled = true; this.chat.onCancelCall(call.id); },
    }, 'Stop');
    const progress = el('div', { class: 'card-progress', hidden: true },
      el('progress', { max: 1 }), el('span', { class: 'card-progress-text muted' }));
    const card = el('details', { class: 'tool-card running', open: true, dataset: { id: call.id, name: call.name, message: call.messageId, server: call.server ?? '', tool: call.tool || call.name } },
      el('summary', {},
        icon,
        el('span', { class: 'card-title' },
          el('span', { class: 'card-server' }, call.server || 'unknown server'),
          el('span', { class: 'card-sep' }, ' › '),
          el('span', { class: 'card-tool' }, call.tool || call.name),
          call.written ? el('span', { class: 'card-written muted', title: 'The model wrote this name; Switchboard ran the tool it meant' }, ` (the model wrote “${call.written}”)`) : null,
          skillOrigin(call)),
        badge,
        state),
      // not in the summary: a control inside another is out of a keyboard's and a screen
      // reader's reach (the card is open while it runs)
      el('div', { class: 'card-controls' }, stop),
      progress,
      el('div', { class: 'card-body' },
        el('div', { class: 'card-label' }, 'Arguments'), args,
        el('div', { class: 'card-label result-label' }, 'Result'), result));
    this.chat.root.append(card);
    this.cards.set(call.id, card);
    this.chat.scrollToEnd();
    return card;
  }

  /** The server and tool of call `id`'s card (as the engine named them, kept with the card). */
  toolOf(id) {
    const card = this.cards.get(id);
    return [card?.dataset.server, card?.dataset.tool];
  }

  /** The arguments as they run, repaired from what the model sent (each repair in words). */
  setArguments(id, args, repairs) {
    const card = this.cards.get(id);
    if (!card) return;
    card.querySelector('.args').textContent = prettyJson(args);
    card.querySelector('.repairs')?.remove();
    if (repairs?.length) {
      card.querySelector('.args').after(el('ul', { class: 'repairs muted', title: 'What Switchboard fixed in the arguments the model sent' },
        repairs.map((r) => el('li', {}, `Fixed: ${r}`))));
    }
  }

  finish(id, { result, isError, durationMs, status, raw, images }) {
    const card = this.cards.get(id);
    if (!card) return;
    const failed = isError || status === 'interrupted';
    card.classList.remove('running');
    card.classList.add(failed ? 'error' : 'ok');
    card.querySelector('.card-controls')?.remove();
    card.querySelector('.card-progress')?.remove();
    card.querySelector('.card-icon').className = `card-icon ${failed ? 'icon-error' : 'icon-ok'}`;
    card.querySelector('.card-icon').textContent = failed ? '✕' : '✓';
    card.querySelector('.card-state').textContent =
      `${failed ? 'error' : 'done'}${durationMs !== null && durationMs !== undefined ? ' · ' + formatDuration(durationMs) : ''}`;
    card.querySelector('.result-label').textContent = failed ? 'Error' : 'Result';
    card.querySelector('.result').textContent = result;
    const extras = richContent(raw);
    // the images kept with the conversation, when the raw result (too big) was not
    if (!extras.some((n) => n.classList.contains('result-image')) && images?.length) {
      extras.unshift(...images.map((img) => el('img', { class: 'result-image', alt: img.name, title: `${img.name} (${img.width}×${img.height})`, src: img.thumbnail })));
    }
    if (extras.length) card.querySelector('.card-body').append(...extras);
    const kept = raw?._switchboard;
    if (kept?.networkRefused?.length) card.querySelector('.card-body').append(this.networkNote(kept.server, kept.networkRefused));
    // finished successful cards fold away; errors stay open
    if (!failed) card.open = false;
    this.chat.scrollToEnd();
  }

  /**
   * What the sandbox kept a server's call off (noted by the sandbox itself), with its one action:
   * allow that host for the server (saved in its config; it starts again).
   */
  networkNote(server, refused) {
    const note = el('div', { class: 'sandbox-note', role: 'note', dataset: { server } },
      el('span', {}, `The sandbox kept ${server} off the network: it tried ${networkTried(refused)}.`));
    const actions = el('span', { class: 'sandbox-note-actions' });
    // only what can be allowed gets a button (a name that is not a host name is only told)
    for (const a of refused.filter((x) => x.host).slice(0, 3)) {
      actions.append(el('button', {
        type: 'button', class: 'btn small', dataset: { act: 'allow-host', host: a.target },
        title: `Lets ${server} reach ${a.target} from now on (saved in its sandbox; it starts again)`,
        onclick: async () => {
          actions.querySelectorAll('button').forEach((b) => { b.disabled = true; });
          try {
            await this.chat.onAllowNetwork(server, a.target);
            actions.replaceChildren(el('span', { class: 'muted' }, `Allowed: ${server} may reach ${a.target}. Ask again to try.`));
          } catch (err) {
            actions.replaceChildren(el('span', { class: 'field-error' }, `Could not allow it: ${err?.message ?? err}`));
          }
        },
      }, `Allow ${a.target}`));
    }
    note.append(' ', actions);
    return note;
  }

  /** The call waits for the user: show what it wants to do and the choices. */
  requestApproval(ev, decide) {
    const card = this.cards.get(ev.id);
    if (!card) return;
    card.open = true;
    card.classList.add('awaiting');
    card.querySelector('.card-icon').className = 'card-icon icon-ask';
    card.querySelector('.card-icon').textContent = '?';
    card.querySelector('.card-state').textContent = 'waiting for you';
    const argsBox = card.querySelector('.args');
    const editor = el('textarea', { class: 'code args-editor', rows: 6, spellcheck: 'false', 'aria-label': 'Arguments (JSON)', hidden: true });
    const error = el('p', { class: 'field-error approval-error', role: 'alert' });
    const choose = async (action) => {
      error.textContent = '';
      const decision = { action };
      if (!editor.hidden && action !== 'deny') {
        try {
          decision.arguments = JSON.parse(editor.value);
        } catch (e) {
          error.textContent = `Not valid JSON: ${e.message}`;
          return;
        }
        if (typeof decision.arguments !== 'object' || decision.arguments === null || Array.isArray(decision.arguments)) {
          error.textContent = 'The arguments must be a JSON object.';
          return;
        }
      }
      for (const b of bar.querySelectorAll('button')) b.disabled = true;
      try {
        await decide(decision);
      } catch (e) {
        error.textContent = e?.message ?? String(e);
        for (const b of bar.querySelectorAll('button')) b.disabled = false;
      }
    };
    const edit = () => {
      editor.value = prettyJson(ev.arguments);
      editor.hidden = false;
      argsBox.hidden = true;
      editBtn.hidden = true;
      editor.focus();
    };
    const editBtn = el('button', { type: 'button', class: 'btn', dataset: { action: 'edit' }, onclick: edit }, 'Edit arguments');
    const bar = el('div', { class: `approval${ev.destructive ? ' destructive' : ''}`, role: 'group', 'aria-label': 'Approve this tool call' },
      ev.changed ? el('div', { class: 'tool-changed' },
        el('p', {}, ...unacceptedWords(ev.unaccepted)),
        diffView(ev.changed)) : null,
      el('p', { class: 'approval-question' },
        ev.destructive ? '⚠ This tool can change or delete data. ' : '',
        'Run ', el('strong', {}, `${ev.server} › ${ev.tool}`), ' with these arguments?'),
      el('div', { class: 'approval-buttons' },
        el('button', { type: 'button', class: 'btn primary', dataset: { action: 'allowOnce' }, onclick: () => choose('allowOnce') }, 'Allow once'),
        el('button', { type: 'button', class: 'btn', dataset: { action: 'allowConversation' }, onclick: () => choose('allowConversation') }, 'Allow in this chat'),
        ev.destructive || ev.changed ? null
          : el('button', { type: 'button', class: 'btn', dataset: { action: 'alwaysAllow' }, onclick: () => choose('alwaysAllow') }, 'Always allow'),
        editBtn,
        el('button', { type: 'button', class: 'btn danger', dataset: { action: 'deny' }, onclick: () => choose('deny') }, 'Deny')),
      error);
    argsBox.after(editor);
    card.querySelector('.card-body').prepend(bar);
    takeFocusSafely(bar);
    this.chat.scrollToEnd(true);
  }

  resolveApproval(ev) {
    const card = this.cards.get(ev.id);
    if (!card) return;
    card.classList.remove('awaiting');
    card.querySelector('.approval')?.remove();
    card.querySelector('.args-editor')?.remove();
    card.querySelector('.args').hidden = false;
    card.querySelector('.args').textContent = prettyJson(ev.arguments);
    this.setApproval(ev.id, ev.approval, ev.edited);
    if (!isRefused(ev.approval)) {
      card.querySelector('.card-icon').className = 'card-icon spinner';
      card.querySelector('.card-icon').textContent = '';
      card.querySelector('.card-state').textContent = 'running…';
    }
  }

  setApproval(id, approval, edited = false) {
    const badge = this.cards.get(id)?.querySelector('.card-approval');
    if (!badge || !approval) return;
    badge.hidden = false;
    badge.textContent = approvalText(approval, edited);
    badge.classList.toggle('denied', isRefused(approval));
  }

  /** A server asks the user for input during call `callId`. */
  askUser(callId, ask, answer) {
    const card = this.cards.get(callId);
    if (!card) return;
    card.open = true;
    const form = elicitationForm(ask, answer, this.chat.onLink);
    card.querySelector('.card-body').prepend(form);
    takeFocusSafely(form);
    this.chat.scrollToEnd(true);
  }

  /** A server asks to use the model during call `callId` (question `questionId`): show what it would send; ask. */
  askSampling(callId, questionId, req, decide) {
    const card = this.cards.get(callId);
    if (!card) return;
    card.open = true;
    const error = el('p', { class: 'field-error', role: 'alert' });
    const choose = async (approve) => {
      for (const b of box.querySelectorAll('button')) b.disabled = true;
      try {
        await decide(approve);
        box.querySelector('.approval-buttons').replaceChildren(
          el('p', { class: 'muted sampling-state' }, approve ? 'Asking the model…' : 'Declined.'));
      } catch (e) {
        error.textContent = e?.message ?? String(e);
        for (const b of box.querySelectorAll('button')) b.disabled = false;
      }
    };
    const box = el('div', { class: 'sampling approval', role: 'group', dataset: { id: questionId }, 'aria-label': 'Sampling request' },
      el('p', { class: 'approval-question' }, el('strong', {}, req.server),
        ` wants to ask your model (up to ${req.maxTokens} tokens):`),
      req.systemPrompt ? el('div', { class: 'sampling-message' }, el('span', { class: 'card-label' }, 'system'), el('pre', { class: 'code' }, req.systemPrompt)) : null,
      req.messages.map((m) => el('div', { class: 'sampling-message' }, el('span', { class: 'card-label' }, m.role), el('pre', { class: 'code' }, m.text),
        richContent({ content: (m.images ?? []).map((i) => ({ type: 'image', mimeType: i.mimeType, data: i.data })) }))),
      el('div', { class: 'approval-buttons' },
        el('button', { type: 'button', class: 'btn primary', dataset: { action: 'allow-sampling' }, onclick: () => choose(true) }, 'Send to the model'),
        el('button', { type: 'button', class: 'btn danger', dataset: { action: 'deny-sampling' }, onclick: () => choose(false) }, 'Decline')),
      error);
    card.querySelector('.card-body').prepend(box);
    takeFocusSafely(box);
    this.chat.scrollToEnd(true);
  }

  /** The outcome of a sampling request: the model's reply (as text), a refusal or an error. */
  finishSampling(callId, ev) {
    const box = this.cards.get(callId)?.querySelector(`.sampling[data-id="${ev.questionId}"]`);
    if (!box) return;
    const state = box.querySelector('.sampling-state') ?? el('p', { class: 'muted sampling-state' });
    box.querySelector('.approval-buttons')?.remove();
    if (ev.outcome === 'answered') {
      state.replaceChildren(`${ev.model} answered:`);
      box.append(state, el('pre', { class: 'code sampling-reply' }, ev.text ?? ''));
    } else {
      state.textContent = ev.outcome === 'declined' ? 'Declined: the server was told no.' : `Failed: ${ev.error ?? ''}`;
      box.append(state);
    }
    box.classList.add('done');
  }

  /**
   * The call runs as a task on its server: where it is, in the server's words (and why, when it
   * ended without its tool's result). While it runs the card says so (Stop cancels the task on the
   * server); its end comes with `finish`. A stored task says whether a later run followed it again.
   */
  showTask(id, task) {
    const card = this.cards.get(id);
    if (!card) return;
    card.dataset.task = task.status;
    if (task.reason) card.dataset.taskEnd = task.reason;
    if (task.startedAt) card.dataset.startedAt = String(task.startedAt);
    let line = card.querySelector('.card-task');
    if (!line) {
      line = el('p', { class: 'card-task muted', role: 'status' });
      card.querySelector('.card-body').prepend(line);
    }
    line.textContent = taskText(task);
    if (task.resumed) this.showResumed(id);
    if (card.classList.contains('running')) {
      card.querySelector('.card-state').textContent =
        task.status === 'input_required' ? 'task · waiting for you' : 'task · running…';
    }
  }

  /** The task is followed again after the app restarted: the card says so, with when it started. */
  showResumed(id) {
    const card = this.cards.get(id);
    if (!card || card.querySelector('.card-resumed')) return;
    const line = el('p', { class: 'card-resumed muted' }, resumedText(Number(card.dataset.startedAt) || null));
    const task = card.querySelector('.card-task');
    if (task) task.after(line); else card.querySelector('.card-body').prepend(line);
  }

  /**
   * A task ended after its turn, with something for the model: its result, or its tool's error
   * (the card already shows which). Offers to send it to the model, once.
   */
  offerLateResult(id, send) {
    const card = this.cards.get(id);
    if (!card || card.querySelector('.late-result')) return;
    const failed = card.classList.contains('error');
    const error = el('p', { class: 'field-error', role: 'alert' });
    const button = el('button', {
      type: 'button', class: 'btn primary', dataset: { action: 'send-late-result' },
      onclick: async () => {
        // gone at once: the turn that sends it takes it from the store first, and the model's
        // answer follows below; back, with why, only if it could not be sent
        const body = box.parentElement;
        button.disabled = true;
        error.textContent = '';
        box.remove();
        try {
          await send();
        } catch (e) {
          error.textContent = e?.message ?? String(e);
          button.disabled = false;
          if (body?.isConnected) body.prepend(box);
        }
      },
    }, failed ? 'Tell the model' : 'Send the result to the model');
    const box = el('div', { class: 'late-result approval', role: 'group', 'aria-label': failed ? 'Late error' : 'Late result' },
      el('p', { class: 'approval-question' }, failed
        ? 'This task ended with an error after its turn had ended, so the model has not been told.'
        : 'This task finished after its turn had ended, so the model has not seen its result.'),
      el('div', { class: 'approval-buttons' }, button), error);
    card.open = true;
    card.querySelector('.card-body').prepend(box);
    this.chat.scrollToEnd();
  }

  /** A running call reported progress; without a total the bar is indeterminate. */
  showProgress(id, { progress, total, message }) {
    const box = this.cards.get(id)?.querySelector('.card-progress');
    if (!box) return;
    box.hidden = false;
    const bar = box.querySelector('progress');
    if (total) { bar.max = total; bar.value = Math.min(progress, total); } else { bar.removeAttribute('value'); }
    box.querySelector('.card-progress-text').textContent =
      message ?? (total ? `${Math.round((progress / total) * 100)} %` : `${progress}`);
  }
}

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

/** Images, resource links and structured content of a tool result, built as DOM (never HTML). */
function richContent(raw) {
  if (!raw || typeof raw !== 'object') return [];
  const out = [];
  for (const block of Array.isArray(raw.content) ? raw.content : []) {
    if (block?.type === 'image' && IMAGE_TYPES.includes(block.mimeType) && typeof block.data === 'string'
        && /^[A-Za-z0-9+/=\s]+$/.test(block.data)) {
      out.push(el('img', { class: 'result-image', alt: 'Image from the tool', src: `data:${block.mimeType};base64,${block.data.replace(/\s/g, '')}` }));
    } else if (block?.type === 'resource_link' && typeof block.uri === 'string') {
      const label = `${block.name ?? block.uri}${block.description ? ` — ${block.description}` : ''}`;
      const link = /^https?:\/\//i.test(block.uri)
        ? el('a', { href: block.uri }, label) // opened in the browser by the view's link handler
        : el('span', {}, label);
      out.push(el('div', { class: 'result-link' }, '🔗 ', link, el('code', { class: 'muted' }, ` ${block.uri}`)));
    }
  }
  if (raw.structuredContent !== undefined && raw.structuredContent !== null) {
    out.push(el('div', { class: 'card-label' }, 'Structured content'),
      el('pre', { class: 'code structured' }, JSON.stringify(raw.structuredContent, null, 2)));
  }
  return out;
}


export function prettyJson(v) {
  if (typeof v === 'string') {
    try { return JSON.stringify(JSON.parse(v), null, 2); } catch { return v; }
  }
  return JSON.stringify(v ?? {}, null, 2);
}

/** How long a new question ignores the keyboard: keys meant for what the user was typing when
 * it appeared must not answer it. */
const KEY_GUARD_MS = 500;

/**
 * A question (approval, sampling, elicitation) takes the focus itself, never its affirmative
 * button or a field (Enter or a letter typed for the composer would answer it), and ignores key
 * presses for its first moments.
 */
function takeFocusSafely(box) {
  box.tabIndex = -1;
  box.classList.add('question', 'fresh'); // .fresh: still ignoring keys
  const shown = performance.now();
  const guard = (e) => {
    if (performance.now() - shown < KEY_GUARD_MS) { e.preventDefault(); e.stopPropagation(); }
  };
  setTimeout(() => box.classList.remove('fresh'), KEY_GUARD_MS);
  for (const type of ['keydown', 'keypress', 'keyup']) box.addEventListener(type, guard, true);
  box.focus({ preventScroll: true });
}

/** What a card says of a tool whose definition is not one the user accepted (`unaccepted`: why). */
export function unacceptedWords(unaccepted) {
  switch (unaccepted) {
    case 'new':
      return [el('strong', {}, '⚠ This tool is new.'),
        ' Its server did not have it when you accepted its tools (it may be one renamed), so nothing you allowed before holds for it. Allowing runs this call only: accept the tool in the servers list.'];
    case 'unchecked':
      return [el('strong', {}, '⚠ This tool could not be checked.'),
        ' Switchboard could not read the definitions you accepted, so it takes none as accepted. Allowing runs this call only.'];
    default:
      return [el('strong', {}, '⚠ This tool is not what it was when you accepted it.'),
        ' The server changed its definition; the model still sees the one you accepted. Allowing runs this call only: accept the new definition in the servers list.'];
  }
}

/** A skill tool's card says which skill, from where: `local` (the user's own) or a server. */
function skillOrigin(call) {
  const skill = call.server === 'skills' ? call.arguments?.skill : null;
  if (typeof skill !== 'string' || !skill.includes('/')) return null;
  const cut = skill.indexOf('/');
  const origin = skill.slice(0, cut);
  const from = origin === 'local' ? 'your own skills (local)' : `the server ${origin}`;
  return el('span', { class: 'card-skill muted', dataset: { origin } }, ` · ${skill.slice(cut + 1)} from ${from}`);
}
