// Desktop notifications while the window is not focused (the app decides that, and whether the
// user wants the kind): a reply finished, a question waits, a server crashed, a task completed.
// A click on one brings the window up on its conversation. The words are here; the switches per
// kind are in Settings → This window, kept in the window's own state.
import { $ } from '../dom.js';

export const NOTIFY_KINDS = ['turnFinished', 'question', 'serverCrashed', 'taskCompleted'];

/**
 * api = { notify(kind, title, body, conversationId), watchClicks(onClick) } (ipc.notify,
 * ipc.watchNotificationClicks); title(id): a conversation's title as the window shows it;
 * openConversation(id): shows it.
 */
export class Notifications {
  constructor(api, { title, openConversation }) {
    this.api = api;
    this.title = title;
    this.openConversation = openConversation;
    this.lastStatus = new Map();
  }

  /** Listens for clicks on the notifications (once, at start). */
  watch() {
    return this.api.watchClicks((id) => {
      if (id !== null && id !== undefined) this.openConversation(id);
    });
  }

  send(kind, title, body, conversationId = null) {
    return this.api.notify(kind, title, body, conversationId).catch((err) => console.warn('notification', err));
  }

  /** A turn ended (not when the user stopped it: they were here). */
  turnFinished(conversationId, stopped, failed) {
    if (stopped || conversationId === null || conversationId === undefined) return;
    this.send('turnFinished', failed ? 'A reply failed' : 'A reply is ready', this.title(conversationId), conversationId);
  }

  approval(conversationId, server, tool) {
    this.send('question', 'Approval needed', `${server} › ${tool} waits for your answer in “${this.title(conversationId)}”.`, conversationId);
  }

  serverQuestion(conversationId, server) {
    const where = conversationId === null || conversationId === undefined ? '' : ` In “${this.title(conversationId)}”.`;
    this.send('question', `${server} asks you something`, `It waits for your answer.${where}`, conversationId);
  }

  taskCompleted(conversationId) {
    this.send('taskCompleted', 'A task completed', `Its result waits to be sent to the model in “${this.title(conversationId)}”.`, conversationId);
  }

  /** The servers list changed: a server that ran and now failed has crashed. */
  servers(list) {
    for (const s of list) {
      const before = this.lastStatus.get(s.name);
      if (before === 'running' && s.status === 'failed') {
        this.send('serverCrashed', `MCP server “${s.name}” stopped`, s.error ?? 'It ended unexpectedly.');
      }
      this.lastStatus.set(s.name, s.status);
    }
  }
}

/** The switches in Settings → This window, one per kind, applied and kept at once. */
export function wireNotifySettings(keeper) {
  for (const kind of NOTIFY_KINDS) {
    const box = $(`#set-notify-${kind}`);
    box.checked = keeper.state.notifications?.[kind] !== false;
    box.addEventListener('change', () => {
      const notifications = { ...keeper.state.notifications, [kind]: box.checked };
      keeper.change({ notifications });
    });
  }
}
