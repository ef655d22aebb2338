// The chat view: message bubbles, tool-call cards, notices, the empty state.
import { el, setSanitizedHtml } from '../dom.js';
import { splitAttachments } from './composer.js';
import { imageStrip } from './attach.js';
import { ToolCards } from './cards.js';
import { messageStatusText, noticeText } from './words.js';
import { showSummary } from './earlier.js';

export class ChatView {
  /**
   * actions: onLink(href, words), onExample(text), onCancelCall(id), onLateResult(callId) (send a
   * task's late result to the model), hasApp(server, tool), onOpenApp(callId, box, onEnded) → the
   * app shown (MCP Apps; onEnded(note): it ended by itself), onEdit(messageId, text),
   * onRegenerate(userMessageId), onBranch(messageId, step), onResume('continue' | 'wrapUp'),
   * onShowEarlier() (the items of a long conversation before those sent), onOpenImage(img) (a
   * message's image at full size), onAllowNetwork(server, host) (a card's "Allow host": what the
   * sandbox kept the server off)
   */
  constructor(root, { onLink, onExample, onCancelCall, onLateResult, hasApp, onOpenApp, onEdit, onRegenerate, onBranch, onResume, onChatSettings, onShowEarlier, onOpenImage, onAllowNetwork, onEditSummary, onContextPolicy, onPin }) {
    this.root = root;
    this.onEditSummary = onEditSummary ?? (() => Promise.reject(new Error('not available')));
    this.onContextPolicy = onContextPolicy ?? (() => {});
    this.onPin = onPin ?? (() => Promise.reject(new Error('not available')));
    this.onAllowNetwork = onAllowNetwork ?? (() => Promise.reject(new Error('not available')));
    this.onOpenImage = onOpenImage ?? (() => {});
    this.onShowEarlier = onShowEarlier;
    this.onChatSettings = onChatSettings;
    this.onLink = onLink;
    this.onCancelCall = onCancelCall;
    this.onLateResult = onLateResult;
    this.hasApp = hasApp;
    this.onOpenApp = onOpenApp;
    this.onExample = onExample;
    this.onEdit = onEdit;
    this.onRegenerate = onRegenerate;
    this.onBranch = onBranch;
    this.onResume = onResume;
    this.busy = false;
    this.bubbles = new Map(); // message id -> { node, body, text }
    this.cards = new ToolCards(this);
    root.addEventListener('click', (e) => {
      const a = e.target.closest('a[href]');
      if (a && root.contains(a)) {
        e.preventDefault();
        this.onLink(a.getAttribute('href'), a.textContent);
      }
    });
  }

  /** Empties the chat; its apps are told `reason` before they go (cards.closeAppsIn). */
  clear(reason = 'its conversation is no longer shown') {
    this.removeNodes([...this.root.children], reason);
    this.bubbles.clear();
    this.cards.clear();
  }

  /** Removes `nodes` from the chat; an app among them is closed first (told `reason`). */
  removeNodes(nodes, reason) {
    this.cards.closeAppsIn(nodes, reason);
    // an app still closing stays until it has answered
    for (const n of nodes) if (!n.classList.contains('app-closing')) n.remove();
  }

  /** `servers`: the running servers, each with its tools. */
  /**
   * The empty chat: what the model can use, and examples that work with the servers running now
   * (each needs its tool; none is offered for a server that is not there). `extra`: a node below
   * (a hint), or null.
   */
  showEmpty(servers, extra = null) {
    this.clear();
    const examples = emptyExamples(servers);
    this.root.append(
      el('div', { class: 'empty-state' },
        el('img', { src: 'img/logo.png', alt: '', width: 56, height: 56 }),
        el('h2', {}, 'Chat with your local model'),
        el('p', {}, describeTools(servers)),
        el('div', { class: 'examples', role: 'group', 'aria-label': 'Examples to try' },
          examples.map((x) => el('button', { class: 'btn example', type: 'button', onclick: () => this.onExample(x) }, x))),
        extra));
  }

  removeEmpty() {
    this.root.querySelector('.empty-state')?.remove();
  }

  scrollToEnd(force = false) {
    // while a whole conversation is laid in, once at the end: reading the scroll height after
    // every item would lay the page out again for each of them
    if (this.filling) return;
    const r = this.root;
    const nearEnd = r.scrollHeight - r.scrollTop - r.clientHeight < 160;
    if (force || nearEnd) r.scrollTop = r.scrollHeight;
  }

  /**
   * Renders a stored conversation (the view model from load_conversation). A very long one
   * opens at its end: the engine sends its last page, and the earlier items on request.
   */
  renderConversation(view) {
    this.clear();
    if (view.summary.imported) this.root.append(importedNote(view, this.onChatSettings));
    const last = view.items[view.items.length - 1];
    if (view.earlier > 0) {
      this.root.append(el('button', { type: 'button', class: 'btn earlier', dataset: { action: 'earlier' },
        onclick: (e) => { e.currentTarget.disabled = true; this.onShowEarlier(); } },
      `Show ${view.earlier} earlier messages`));
    }
    this.filling = true;
    try {
      this.fill(view.items, last);
    } finally {
      this.filling = false;
    }
    this.showSummary(view.summarised ?? null);
    this.scrollToEnd(true);
  }

  /** The summary that stands for older turns in requests (views/earlier.js); null: none. */
  showSummary(summary) {
    showSummary(this.root, summary, this.onEditSummary);
  }

  /** Lays in stored items (see renderConversation); `last`: the conversation's last item. */
  fill(items, last) {
    for (const item of items) {
      if (item.kind === 'message') {
        const b = this.addMessage(item.id, item.role, item.status, item);
        if (item.role === 'assistant') {
          setSanitizedHtml(b.body, item.html ?? '');
          if (item.thinking) this.setThinking(item.id, item.thinking);
        } else if (item.role === 'user') {
          const { text, attachments } = splitAttachments(item.content);
          this.setUserText(b, text, attachments, item.attachments);
        } else {
          b.body.textContent = item.content;
        }
        if (item.role !== 'user') this.showImages(b, item.attachments);
        b.text = item.content;
      } else if (item.kind === 'toolCall') {
        this.cards.add(item);
        this.cards.setApproval(item.id, item.approval, item.argumentsEdited);
        if (item.task) this.cards.showTask(item.id, item.task);
        // a call still running is a task its server still runs (followed again since the start)
        if (item.status !== 'running') {
          this.cards.finish(item.id, {
            result: item.result ?? '',
            isError: item.isError,
            durationMs: item.durationMs,
            status: item.status,
            raw: item.raw,
            images: item.images,
          });
        }
        if (item.task?.awaitingDelivery) this.cards.offerLateResult(item.id, () => this.onLateResult(item.id));
        if (item.status === 'done' && !item.isError && this.hasApp(item.server, item.tool)) this.cards.offerApp(item.id, false);
      } else if (item.kind === 'notice') {
        // the limit notice at the very end offers to go on
        this.addNotice(item.notice, item === last && item.notice.kind === 'roundLimit');
      }
    }
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
      el('div', { class: 'who' }, { user: 'You', system: 'System (from the file)' }[role] ?? 'Assistant', tools),
      body,
      el('div', { class: 'status-line' }, messageStatusText(status)));
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
    if (role === 'user' || role === 'assistant') {
      const pin = el('button', { type: 'button', class: 'msg-action pin', dataset: { action: 'pin' }, 'aria-pressed': info.pinned ? 'true' : 'false',
        title: 'Pinned messages are always sent to the model whole, however long the chat grows (older ones may be summarised)' },
      info.pinned ? 'Pinned' : 'Pin');
      pin.addEventListener('click', async () => {
        const on = pin.getAttribute('aria-pressed') !== 'true';
        pin.disabled = true;
        try {
          await this.onPin(id, on);
          pin.setAttribute('aria-pressed', on ? 'true' : 'false');
          pin.textContent = on ? 'Pinned' : 'Pin';
          b.node.classList.toggle('pinned', on);
        } catch (err) {
          pin.title = `Could not ${on ? 'pin' : 'unpin'} it: ${err?.message ?? err}`;
        } finally {
          pin.disabled = false;
        }
      });
      b.node.classList.toggle('pinned', Boolean(info.pinned));
      tools.append(pin);
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
    if (b) this.removeNodes(siblingsFrom(b.node), 'its message was edited');
  }

  /** Removes what follows your message `userMessageId` (its reply is about to be regenerated). */
  removeAfter(userMessageId) {
    const first = this.root.querySelector(`.msg[data-id="${userMessageId}"]`)?.nextElementSibling;
    this.removeNodes(siblingsFrom(first), 'its reply is being regenerated');
  }

  /** Whether the empty state (no conversation yet) is shown. */
  isEmpty() {
    return Boolean(this.root.querySelector('.empty-state'));
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

  /** A message's images, as thumbnails under its text (each opens full size). */
  showImages(b, images) {
    const strip = imageStrip(images, this.onOpenImage);
    if (strip) b.body.after(strip);
  }

  /** A user message: the typed text, its images, then each attached text folded (its text only when known). */
  setUserText(b, text, attachments = [], images = []) {
    b.body.textContent = text;
    this.showImages(b, images);
    for (const a of attachments) {
      b.node.append(el('details', { class: 'attachment', title: a.uri },
        el('summary', {}, 'Attached: ', el('strong', {}, a.name), a.type ? el('span', { class: 'muted' }, ` (${a.type === 'application/pdf' ? 'PDF' : 'text'})`) : null),
        a.text !== undefined ? el('pre', { class: 'code' }, a.text) : el('p', { class: 'muted' }, a.uri)));
    }
  }

  setStatus(id, status) {
    const b = this.bubbles.get(id);
    if (!b) return;
    b.node.className = `msg ${b.node.dataset.role} ${status}`;
    b.node.querySelector('.status-line').textContent = messageStatusText(status);
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

  /** A note from Switchboard; `resumable` adds Continue and Wrap up (after the tool-round limit). */
  addNotice(notice, resumable = false) {
    const note = el('div', { class: 'notice', role: 'status' }, el('span', {}, noticeText(notice)));
    if (notice.kind === 'contextFull' && notice.ask) {
      // the chat's policy is to ask: the user chooses, and the turn goes on
      note.append(el('div', { class: 'approval-buttons resume' },
        el('button', { type: 'button', class: 'btn primary', dataset: { action: 'summarise' }, onclick: () => { if (!this.busy) this.onContextPolicy('summarise'); } }, 'Summarise older turns'),
        el('button', { type: 'button', class: 'btn', dataset: { action: 'drop-oldest' }, onclick: () => { if (!this.busy) this.onContextPolicy('dropOldest'); } }, 'Leave out the oldest')));
    }
    if (resumable) {
      note.append(el('div', { class: 'approval-buttons resume' },
        el('button', { type: 'button', class: 'btn primary', dataset: { action: 'continue' }, onclick: () => { if (!this.busy) this.onResume('continue'); } }, 'Continue'),
        el('button', { type: 'button', class: 'btn', dataset: { action: 'wrap-up' }, onclick: () => { if (!this.busy) this.onResume('wrapUp'); } }, 'Wrap up')));
    }
    this.root.append(note);
    this.scrollToEnd();
  }

  /** While the request waits — for a summary of older turns, or (`text` given) for the model to
   *  finish another request: a note saying so (`on` false: gone). */
  compacting(on, text = 'Summarising the earlier conversation to fit the model\'s context…') {
    this.root.querySelector('.notice.compacting')?.remove();
    if (!on) return;
    this.root.append(el('div', { class: 'notice compacting', role: 'status' }, text));
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

/** Examples for the tools running now: a built-in server's only when a running server has its tool. */
function emptyExamples(servers) {
  const has = (tool) => servers.some((s) => s.tools.some((t) => t.name === tool));
  const out = [];
  if (has('add')) out.push('What is 2+40?');
  if (has('square_root')) out.push('What is the square root of 1764?');
  if (has('list_files')) out.push('List the files in my sandbox');
  if (has('search_papers')) out.push('Find recent papers on tool use by small language models');
  if (!out.length) out.push('Explain what an MCP server is in two sentences', 'Write a haiku about switchboards');
  return out;
}

function describeTools(servers) {
  const tools = servers.reduce((n, s) => n + s.tools.length, 0);
  if (!tools) return 'No MCP tools are available yet. Servers start in the background; see “MCP servers” in the sidebar.';
  const names = servers.map((s) => s.name).join(', ');
  return `It can use ${tools} tool${tools > 1 ? 's' : ''} from ${servers.length} MCP server${servers.length > 1 ? 's' : ''} (${names}).`;
}

/**
 * An imported conversation, until it is continued: where it came from, and everything the model
 * will be told that is not a message in view (the conversation's own system prompt).
 */
function importedNote(view, onChatSettings) {
  const prompt = view.settings.systemPrompt;
  return el('div', { class: 'imported-note', role: 'note' },
    el('strong', {}, 'Imported from a file.'),
    ' Everything the model will be told is shown here; messages marked “System” came from the file.',
    prompt
      ? el('div', { class: 'imported-prompt' },
        el('span', {}, 'It has its own system prompt (the model gets it first): '),
        el('pre', { class: 'code' }, prompt),
        onChatSettings ? el('button', { type: 'button', class: 'btn small', onclick: onChatSettings }, 'Change it in Chat settings') : null)
      : null);
}

/** `node` and the elements after it. */
function siblingsFrom(node) {
  const nodes = [];
  for (let n = node; n; n = n.nextElementSibling) nodes.push(n);
  return nodes;
}
