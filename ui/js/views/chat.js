// The chat view: message bubbles, tool-call cards, notices, the empty state.
import { el, setSanitizedHtml, formatDuration } from '../dom.js';
import { splitAttachments } from './composer.js';
import { elicitationForm } from './elicitation.js';

/** Items shown when a conversation opens; the rest behind "Show earlier messages". */
const PAGE = 300;

export class ChatView {
  /**
   * actions: onLink(href), onExample(text), onCancelCall(id), onEdit(messageId, text),
   * onRegenerate(userMessageId), onBranch(messageId, step), onResume('continue' | 'wrapUp')
   */
  constructor(root, { onLink, onExample, onCancelCall, onEdit, onRegenerate, onBranch, onResume }) {
    this.root = root;
    this.onLink = onLink;
    this.onCancelCall = onCancelCall;
    this.onExample = onExample;
    this.onEdit = onEdit;
    this.onRegenerate = onRegenerate;
    this.onBranch = onBranch;
    this.onResume = onResume;
    this.busy = false;
    this.bubbles = new Map(); // message id -> { node, body, text }
    this.cards = new Map(); // tool call id -> card node
    root.addEventListener('click', (e) => {
      const a = e.target.closest('a[href]');
      if (a && root.contains(a)) {
        e.preventDefault();
        this.onLink(a.getAttribute('href'));
      }
    });
  }

  clear() {
    this.root.replaceChildren();
    this.bubbles.clear();
    this.cards.clear();
  }

  /** `servers`: the running servers, each with its tools. */
  showEmpty(servers) {
    this.clear();
    const examples = ['What is 2+40?', 'What is the square root of 1764?', 'List the files in my sandbox'];
    this.root.append(
      el('div', { class: 'empty-state' },
        el('img', { src: 'img/logo.png', alt: '', width: 56, height: 56 }),
        el('h2', {}, 'Chat with your local model'),
        el('p', {}, describeTools(servers)),
        el('div', { class: 'examples' },
          examples.map((x) => el('button', { class: 'btn example', type: 'button', onclick: () => this.onExample(x) }, x)))));
  }

  removeEmpty() {
    this.root.querySelector('.empty-state')?.remove();
  }

  scrollToEnd(force = false) {
    const r = this.root;
    const nearEnd = r.scrollHeight - r.scrollTop - r.clientHeight < 160;
    if (force || nearEnd) r.scrollTop = r.scrollHeight;
  }

  /** Renders a stored conversation (the view model from load_conversation). */
  renderConversation(view, all = false) {
    this.clear();
    const last = view.items[view.items.length - 1];
    // a very long conversation opens at its end; earlier items come on request
    const items = all || view.items.length <= PAGE ? view.items : view.items.slice(-PAGE);
    if (items.length < view.items.length) {
      this.root.append(el('button', { type: 'button', class: 'btn earlier', dataset: { action: 'earlier' },
        onclick: () => { this.renderConversation(view, true); this.root.scrollTop = 0; } },
      `Show ${view.items.length - items.length} earlier messages`));
    }
    for (const item of items) {
      if (item.kind === 'message') {
        const b = this.addMessage(item.id, item.role, item.status, item);
        if (item.role === 'assistant') {
          setSanitizedHtml(b.body, item.html ?? '');
          if (item.thinking) this.setThinking(item.id, item.thinking);
        } else if (item.role === 'user') {
          const { text, attachments } = splitAttachments(item.content);
          this.setUserText(b, text, attachments);
        } else {
          b.body.textContent = item.content;
        }
        b.text = item.content;
      } else if (item.kind === 'toolCall') {
        this.addCard(item);
        this.setApproval(item.id, item.approval);
        this.finishCard(item.id, {
          result: item.result ?? '',
          isError: item.isError,
          durationMs: item.durationMs,
          status: item.status,
          raw: item.raw,
        });
      } else if (item.kind === 'notice') {
        // the limit notice at the very end offers to go on
        this.addNotice(item.text, item === last && /^Stopped after \d+ rounds/.test(item.text));
      }
    }
    this.scrollToEnd(true);
  }

  /**
   * A bubble. `info` (from a stored conversation) adds the branch switcher `‹ n/m ›` and the
   * actions: Edit on your messages, Regenerate on replies.
   */
  addMessage(id, role, status = 'complete', info = null) {
    this.removeEmpty();
    const body = el('div', { class: role === 'assistant' ? 'body markdown' : 'body' });
    const tools = el('div', { class: 'msg-tools' });
    const node = el('article', { class: `msg ${role} ${status}`, dataset: { id, role } },
      el('div', { class: 'who' }, role === 'user' ? 'You' : 'Assistant', tools),
      body,
      el('div', { class: 'status-line' }, statusText(status)));
    this.root.append(node);
    const b = { node, body, text: '' };
    this.bubbles.set(id, b);
    if (info) this.addMessageTools(b, id, role, info);
    this.scrollToEnd(role === 'user');
    return b;
  }

  addMessageTools(b, id, role, info) {
    const tools = b.node.querySelector('.msg-tools');
    if (info.siblingCount > 1) {
      const step = (d) => el('button', { type: 'button', class: 'branch-step', dataset: { step: d },
        'aria-label': d < 0 ? 'Previous version' : 'Next version',
        disabled: (d < 0 && info.siblingIndex === 0) || (d > 0 && info.siblingIndex === info.siblingCount - 1),
        onclick: () => { if (!this.busy) this.onBranch(id, d); } }, d < 0 ? '‹' : '›');
      tools.append(el('span', { class: 'branch', title: 'Versions of this message' },
        step(-1), el('span', { class: 'branch-pos' }, `${info.siblingIndex + 1}/${info.siblingCount}`), step(1)));
    }
    if (role === 'user') {
      tools.append(el('button', { type: 'button', class: 'msg-action', dataset: { action: 'edit' }, title: 'Edit and send again (a new branch)',
        onclick: () => this.startEdit(id) }, 'Edit'));
    } else if (info.replyTo) {
      tools.append(el('button', { type: 'button', class: 'msg-action', dataset: { action: 'regenerate' }, title: 'Answer again (a new branch)',
        onclick: () => { if (!this.busy) this.onRegenerate(info.replyTo); } }, 'Regenerate'));
    }
  }

  /** The last message you wrote, for Up in an empty message box. */
  lastUserMessageId() {
    const all = [...this.root.querySelectorAll('.msg.user')];
    return all.length ? Number(all[all.length - 1].dataset.id) : null;
  }

  /** Turns your message into a text box: Save sends it as a new branch, Esc cancels. */
  startEdit(id) {
    const b = this.bubbles.get(id);
    if (!b || this.busy || b.node.querySelector('.edit-box')) return;
    const { text, attachments } = splitAttachments(b.text);
    const box = el('textarea', { class: 'edit-box', rows: Math.min(12, text.split('\n').length + 1), 'aria-label': 'Edit your message' });
    box.value = text;
    const cancel = () => { form.remove(); b.body.hidden = false; };
    const save = () => {
      const t = box.value.trim();
      if (!t) return;
      // attachments stay as they were
      const full = b.text.slice(text.length);
      form.remove();
      b.body.hidden = false;
      this.onEdit(id, t + full);
    };
    const form = el('div', { class: 'edit-form' }, box,
      attachments.length ? el('p', { class: 'muted' }, `Attachments stay: ${attachments.map((a) => a.name).join(', ')}`) : null,
      el('div', { class: 'approval-buttons' },
        el('button', { type: 'button', class: 'btn primary', dataset: { action: 'save-edit' }, onclick: save }, 'Save & send'),
        el('button', { type: 'button', class: 'btn', onclick: cancel }, 'Cancel')));
    box.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); save(); }
      if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); cancel(); }
    });
    b.body.hidden = true;
    b.body.after(form);
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  }

  /** Removes a message and everything after it (an edit or regeneration replaces them). */
  truncateFrom(id) {
    const b = this.bubbles.get(id);
    if (!b) return;
    let n = b.node;
    while (n) {
      const next = n.nextElementSibling;
      n.remove();
      n = next;
    }
  }

  /** Scrolls to a message (or the tool call cards of a reply) and flashes it. */
  reveal(messageId) {
    const node = this.root.querySelector(`.msg[data-id="${messageId}"]`)
      ?? this.root.querySelector(`.tool-card[data-message="${messageId}"]`);
    if (!node) return false;
    if (node.tagName === 'DETAILS') node.open = true;
    node.scrollIntoView({ block: 'center' });
    node.classList.remove('flash');
    void node.offsetWidth;
    node.classList.add('flash');
    return true;
  }

  /** A user message: the typed text, then each attached resource folded (its text only when known). */
  setUserText(b, text, attachments = []) {
    b.body.textContent = text;
    for (const a of attachments) {
      b.node.append(el('details', { class: 'attachment', title: a.uri },
        el('summary', {}, 'Attached: ', el('strong', {}, a.name)),
        a.text !== undefined ? el('pre', { class: 'code' }, a.text) : el('p', { class: 'muted' }, a.uri)));
    }
  }

  setStatus(id, status) {
    const b = this.bubbles.get(id);
    if (!b) return;
    b.node.className = `msg ${b.node.dataset.role} ${status}`;
    b.node.querySelector('.status-line').textContent = statusText(status);
  }

  /** A streamed piece: `html` (when present) is the whole reply so far, rendered and sanitized. */
  appendText(id, text, html) {
    const b = this.bubbles.get(id);
    if (!b) return;
    b.text += text;
    if (html !== null && html !== undefined) setSanitizedHtml(b.body, html);
    else b.body.append(document.createTextNode(text));
    this.scrollToEnd();
  }

  setThinking(id, text, append = false) {
    const b = this.bubbles.get(id);
    if (!b) return;
    let t = b.node.querySelector('.thinking');
    if (!t) {
      t = el('details', { class: 'thinking' }, el('summary', {}, 'Thinking'), el('div', { class: 'thinking-text' }));
      b.node.insertBefore(t, b.body);
    }
    const box = t.querySelector('.thinking-text');
    box.textContent = append ? box.textContent + text : text;
  }

  finishMessage(id, status, html, content) {
    const b = this.bubbles.get(id);
    if (!b) return;
    b.text = content;
    setSanitizedHtml(b.body, html);
    this.setStatus(id, status);
    // a reply that only called tools has no text: its cards say it all
    if (!content && status === 'complete' && !b.node.querySelector('.thinking')) {
      b.node.remove();
      this.bubbles.delete(id);
    }
  }

  addCard(call) {
    this.removeEmpty();
    const args = el('pre', { class: 'code args' }, prettyJson(call.arguments));
    const result = el('pre', { class: 'code result' });
    const icon = el('span', { class: 'card-icon spinner', 'aria-hidden': 'true' });
    const state = el('span', { class: 'card-state' }, 'running…');
    const badge = el('span', { class: 'card-approval', hidden: true });
    const stop = el('button', {
      type: 'button', class: 'btn small card-stop', title: 'Cancel this tool call',
      onclick: (e) => { e.preventDefault(); stop.disabled = true; this.onCancelCall(call.id); },
    }, 'Stop');
    const progress = el('div', { class: 'card-progress', hidden: true },
      el('progress', { max: 1 }), el('span', { class: 'card-progress-text muted' }));
    const card = el('details', { class: 'tool-card running', open: true, dataset: { id: call.id, name: call.name, message: call.messageId } },
      el('summary', {},
        icon,
        el('span', { class: 'card-title' },
          el('span', { class: 'card-server' }, call.server || 'unknown server'),
          el('span', { class: 'card-sep' }, ' › '),
          el('span', { class: 'card-tool' }, call.tool || call.name)),
        badge,
        state,
        stop),
      progress,
      el('div', { class: 'card-body' },
        el('div', { class: 'card-label' }, 'Arguments'), args,
        el('div', { class: 'card-label result-label' }, 'Result'), result));
    this.root.append(card);
    this.cards.set(call.id, card);
    this.scrollToEnd();
    return card;
  }

  finishCard(id, { result, isError, durationMs, status, raw }) {
    const card = this.cards.get(id);
    if (!card) return;
    const failed = isError || status === 'interrupted';
    card.classList.remove('running');
    card.classList.add(failed ? 'error' : 'ok');
    card.querySelector('.card-stop')?.remove();
    card.querySelector('.card-progress')?.remove();
    card.querySelector('.card-icon').className = `card-icon ${failed ? 'icon-error' : 'icon-ok'}`;
    card.querySelector('.card-icon').textContent = failed ? '✕' : '✓';
    card.querySelector('.card-state').textContent =
      `${failed ? 'error' : 'done'}${durationMs !== null && durationMs !== undefined ? ' · ' + formatDuration(durationMs) : ''}`;
    card.querySelector('.result-label').textContent = failed ? 'Error' : 'Result';
    card.querySelector('.result').textContent = result;
    const extras = richContent(raw);
    if (extras.length) card.querySelector('.card-body').append(...extras);
    // finished successful cards fold away; errors stay open
    if (!failed) card.open = false;
    this.scrollToEnd();
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
      el('p', { class: 'approval-question' },
        ev.destructive ? '⚠ This tool can change or delete data. ' : '',
        'Run ', el('strong', {}, `${ev.server} › ${ev.tool}`), ' with these arguments?'),
      el('div', { class: 'approval-buttons' },
        el('button', { type: 'button', class: 'btn primary', dataset: { action: 'allowOnce' }, onclick: () => choose('allowOnce') }, 'Allow once'),
        el('button', { type: 'button', class: 'btn', dataset: { action: 'allowConversation' }, onclick: () => choose('allowConversation') }, 'Allow in this chat'),
        ev.destructive ? null
          : el('button', { type: 'button', class: 'btn', dataset: { action: 'alwaysAllow' }, onclick: () => choose('alwaysAllow') }, 'Always allow'),
        editBtn,
        el('button', { type: 'button', class: 'btn danger', dataset: { action: 'deny' }, onclick: () => choose('deny') }, 'Deny')),
      error);
    argsBox.after(editor);
    card.querySelector('.card-body').prepend(bar);
    bar.querySelector('button').focus();
    this.scrollToEnd(true);
  }

  resolveApproval(ev) {
    const card = this.cards.get(ev.id);
    if (!card) return;
    card.classList.remove('awaiting');
    card.querySelector('.approval')?.remove();
    card.querySelector('.args-editor')?.remove();
    card.querySelector('.args').hidden = false;
    card.querySelector('.args').textContent = prettyJson(ev.arguments);
    this.setApproval(ev.id, ev.approval);
    if (!ev.approval.startsWith('denied') && ev.approval !== 'cancelled') {
      card.querySelector('.card-icon').className = 'card-icon spinner';
      card.querySelector('.card-icon').textContent = '';
      card.querySelector('.card-state').textContent = 'running…';
    }
  }

  setApproval(id, approval) {
    const badge = this.cards.get(id)?.querySelector('.card-approval');
    if (!badge || !approval) return;
    badge.hidden = false;
    badge.textContent = approval;
    badge.classList.toggle('denied', approval.startsWith('denied') || approval === 'cancelled');
  }

  /** A server asks the user for input during call `callId`. */
  askUser(callId, ask, answer) {
    const card = this.cards.get(callId);
    if (!card) return;
    card.open = true;
    card.querySelector('.card-body').prepend(elicitationForm(ask, answer, this.onLink));
    card.querySelector('.elicitation input, .elicitation select, .elicitation button')?.focus();
    this.scrollToEnd(true);
  }

  /** A server asks to use the model during call `callId`: show what it would send; ask. */
  askSampling(callId, req, decide) {
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
    const box = el('div', { class: 'sampling approval', role: 'group', dataset: { id: req.id }, 'aria-label': 'Sampling request' },
      el('p', { class: 'approval-question' }, el('strong', {}, req.server),
        ` wants to ask your model (up to ${req.maxTokens} tokens):`),
      req.systemPrompt ? el('div', { class: 'sampling-message' }, el('span', { class: 'card-label' }, 'system'), el('pre', { class: 'code' }, req.systemPrompt)) : null,
      req.messages.map((m) => el('div', { class: 'sampling-message' }, el('span', { class: 'card-label' }, m.role), el('pre', { class: 'code' }, m.text))),
      el('div', { class: 'approval-buttons' },
        el('button', { type: 'button', class: 'btn primary', dataset: { action: 'allow-sampling' }, onclick: () => choose(true) }, 'Send to the model'),
        el('button', { type: 'button', class: 'btn danger', dataset: { action: 'deny-sampling' }, onclick: () => choose(false) }, 'Decline')),
      error);
    card.querySelector('.card-body').prepend(box);
    box.querySelector('button').focus();
    this.scrollToEnd(true);
  }

  /** The outcome of a sampling request: the model's reply (as text), a refusal or an error. */
  finishSampling(callId, ev) {
    const box = this.cards.get(callId)?.querySelector(`.sampling[data-id="${ev.id}"]`);
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

  /** A note from Switchboard; `resumable` adds Continue and Wrap up (after the tool-round limit). */
  addNotice(text, resumable = false) {
    const note = el('div', { class: 'notice', role: 'status' }, el('span', {}, text));
    if (resumable) {
      note.append(el('div', { class: 'approval-buttons resume' },
        el('button', { type: 'button', class: 'btn primary', dataset: { action: 'continue' }, onclick: () => { if (!this.busy) this.onResume('continue'); } }, 'Continue'),
        el('button', { type: 'button', class: 'btn', dataset: { action: 'wrap-up' }, onclick: () => { if (!this.busy) this.onResume('wrapUp'); } }, 'Wrap up')));
    }
    this.root.append(note);
    this.scrollToEnd();
  }

  /** Removes the Continue / Wrap up buttons (a new turn started). */
  clearResume() {
    for (const r of this.root.querySelectorAll('.resume')) r.remove();
  }

  addError(text) {
    this.root.append(el('div', { class: 'notice error', role: 'alert' }, text));
    this.scrollToEnd(true);
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

function describeTools(servers) {
  const tools = servers.reduce((n, s) => n + s.tools.length, 0);
  if (!tools) return 'No MCP tools are available yet. Servers start in the background; see “MCP servers” in the sidebar.';
  const names = servers.map((s) => s.name).join(', ');
  return `It can use ${tools} tool${tools > 1 ? 's' : ''} from ${servers.length} MCP server${servers.length > 1 ? 's' : ''} (${names}).`;
}

function statusText(status) {
  switch (status) {
    case 'streaming': return '';
    case 'stopped': return 'Stopped — this reply is incomplete.';
    case 'interrupted': return 'Interrupted — the app closed while this reply was being written.';
    case 'error': return 'The model failed while writing this reply.';
    default: return '';
  }
}

function prettyJson(v) {
  if (typeof v === 'string') {
    try { return JSON.stringify(JSON.parse(v), null, 2); } catch { return v; }
  }
  return JSON.stringify(v ?? {}, null, 2);
}
