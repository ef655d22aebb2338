// The conversations of the window: which one is open, opening and showing one (or a version of
// it, or its earlier part), a new chat, the library's changes (rename, pin, duplicate, delete,
// undo, export, import) and the browser screen. The window's little state is app.js's `state`;
// what is on screen belongs to the views this is given.
import * as ipc from '../ipc.js';
import { $, el } from '../dom.js';
import { Sidebar } from '../views/sidebar.js';
import { stepIn } from '../views/shortcuts.js';

export class Conversations {
  /**
   * `state`: app.js's state (conversationId, turnId, servers, the pending choices of a new chat).
   * `w`: { chat, toolsPicker, models, keeper, drafts() (once there are), askWaiting() (the
   * questions waiting for the chat now open), showBanner(title, detail), toast(text) }.
   * The library's list (views/sidebar.js) is made here, with what its menu does.
   */
  constructor(state, w) {
    this.state = state;
    this.w = w;
    this.sidebar = new Sidebar($('#conversation-list'), $('#search'), this.sidebarActions());
  }

  /** The library's list again, the open one marked. */
  async refresh() {
    try {
      this.sidebar.render(await ipc.listConversations());
      this.sidebar.setActive(this.state.conversationId);
    } catch (err) {
      this.w.showBanner('Could not read saved conversations.', err?.message ?? String(err));
    }
  }

  /** Opens a conversation; with `messageId` (a search hit), shows that message's branch and scrolls to it. */
  async open(id, messageId = null) {
    if (this.state.turnId) return; // finish or stop the running turn first
    if (document.body.classList.contains('library')) this.showLibrary(false);
    try {
      const view = messageId ? await ipc.showBranch(id, messageId, 0) : await ipc.loadConversation(id);
      this.show(view);
      if (messageId) this.w.chat.reveal(messageId);
      else $('#input').focus();
    } catch (err) {
      this.w.showBanner('Could not open the conversation.', err?.message ?? String(err));
    }
  }

  /** Shows a conversation as the engine gave it (`ConversationView`). */
  show(view) {
    const { state, w } = this;
    $('#context-meter').hidden = true;
    state.conversationId = view.summary.id;
    state.conversationSettings = view.settings;
    $('#chat-title').textContent = view.summary.title;
    w.chat.renderConversation(view);
    w.askWaiting();
    w.toolsPicker.setChoice(view.toolChoice);
    state.pendingToolChoice = null;
    this.sidebar.setActive(view.summary.id);
    w.models.pick(view.settings?.provider ?? null, view.summary.model);
    const drafts = w.drafts();
    if (drafts && drafts.key !== String(view.summary.id)) drafts.show(view.summary.id);
    w.keeper.rememberOpen(view.summary.id, $('#messages'));
  }

  newChat() {
    const { state, w } = this;
    if (state.turnId) return;
    $('#context-meter').hidden = true;
    state.conversationId = null;
    state.conversationSettings = null;
    state.pendingChatSettings = null;
    state.pendingToolChoice = null;
    w.toolsPicker.setChoice(null);
    $('#chat-title').textContent = 'New chat';
    this.sidebar.setActive(null);
    this.showEmpty();
    w.drafts()?.show(null);
    w.keeper.rememberOpen(null, $('#messages'));
    $('#input').focus();
  }

  /** The empty chat, with the first run's hint until it is dismissed. */
  showEmpty() {
    const { keeper } = this.w;
    const hint = keeper.state && !keeper.state.firstRunDone
      ? keeper.hint('first-run', el('span', {}, 'New here? Pick a model at the top, then ask away. ',
        el('kbd', {}, '?'), ' lists the keyboard shortcuts.'))
      : null;
    hint?.querySelector('.hint-close')?.addEventListener('click', () => keeper.change({ firstRunDone: true }));
    this.w.chat.showEmpty(this.runningServers(), hint);
  }

  runningServers() {
    return this.state.servers.filter((s) => s.status === 'running');
  }

  /** Shows a sibling version of a message (the ‹ n/m › switcher). */
  async switchBranch(messageId, step) {
    if (this.state.turnId || !this.state.conversationId) return;
    try {
      const view = await ipc.showBranch(this.state.conversationId, messageId, step);
      this.show(view);
      this.w.chat.reveal(messageId);
    } catch (err) {
      this.w.showBanner('Could not show that version.', err?.message ?? String(err));
    }
  }

  /** The whole of a long conversation, from its start. */
  async showEarlier() {
    const id = this.state.conversationId;
    try {
      const view = await ipc.loadConversation(id, true);
      if (this.state.conversationId !== id) return;
      this.w.chat.renderConversation(view);
      $('#messages').scrollTop = 0;
    } catch (err) {
      this.w.showBanner('Could not show the earlier messages.', err?.message ?? String(err));
    }
  }

  /** The open conversation as stored (after a turn that changed more than it showed), scrolled as it was. */
  async reopen() {
    if (this.state.conversationId && !this.state.turnId) {
      const keep = $('#messages').scrollTop;
      try { this.show(await ipc.loadConversation(this.state.conversationId)); } catch { /* shown as it is */ }
      $('#messages').scrollTop = keep;
      this.w.chat.scrollToEnd(true);
    }
  }

  /** The next (`n` = 1) or previous (-1) conversation of the library. */
  step(n) {
    const id = stepIn(this.sidebar.items.map((c) => c.id), this.state.conversationId, n);
    if (id !== null) this.open(id);
  }

  /** Runs a change to the library, then shows the list again; problems go to the banner. */
  async library(change) {
    try {
      return await change();
    } catch (err) {
      this.w.showBanner('That did not work.', err?.message ?? String(err));
      return null;
    } finally {
      this.refresh();
    }
  }

  /** What the library's menu does to one conversation (the Sidebar's callbacks). */
  sidebarActions() {
    return {
      onOpen: (id, messageId) => this.open(id, messageId),
      onSearch: (q) => ipc.searchConversations(q),
      onRename: async (id, title) => {
        await this.library(() => ipc.renameConversation(id, title));
        if (id === this.state.conversationId) $('#chat-title').textContent = title;
      },
      onPin: (id, pinned) => this.library(() => ipc.setConversationPinned(id, pinned)),
      onDuplicate: async (id) => {
        const copy = await this.library(() => ipc.duplicateConversation(id));
        if (copy) this.open(copy);
      },
      onExport: (id, format) => this.export(id, format),
      onDelete: async (id) => {
        await this.library(() => ipc.deleteConversation(id));
        if (id === this.state.conversationId) this.newChat();
      },
      onUndo: (id) => this.library(() => ipc.restoreConversation(id)),
    };
  }

  async export(id, format) {
    try {
      const path = await ipc.exportConversation(id, format);
      if (path) this.w.toast(`Exported to ${path}`);
    } catch (err) {
      this.w.showBanner('Could not export the conversation.', err?.message ?? String(err));
    }
  }

  async import() {
    try {
      const id = await ipc.importConversation();
      if (id) { await this.refresh(); this.open(id); }
    } catch (err) {
      this.w.showBanner('Could not import the conversation.', err?.message ?? String(err));
    }
  }

  /** The browser screen: the library at full width (Esc or opening a chat goes back). */
  showLibrary(on) {
    document.body.classList.toggle('library', on);
    $('#library-toggle').setAttribute('aria-pressed', String(on));
    $('#library-toggle').title = on ? 'Back to the chat' : 'Browse all conversations';
    this.sidebar.paint();
    if (on) this.sidebar.focusSearch();
  }
}
