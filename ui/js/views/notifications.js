// Desktop notifications while the window is not focused (the app decides that, and whether the
// user wants the kind): a reply finished, a question waits, a server crashed, a task completed.
// A click on one brings the window up on its conversation. The words are here; the switches per
// kind are in Settings → This window, kept in the window's own state.
import { $ } from '../dom.js';

const KINDS = ['turnFinished', 'question', 'serverCrashed', 'taskCompleted'];

/** api = { notify(kind, title, body, conversationId), watchClicks(onClick) }; title(id): a conversation's title. */
export class Notifications {
  constructor(api, { title, openConversation }) {
    this.api = api;
    this.title = title;
    this.lastStatus = new Map();
    api.watchClicks((id) => { if (id !== null && id !== undefined) openConversation(id); });
  }

  send(kind, title, body, conversationId = null) {
    return this.api.notify(kind, title, body, conversationId).catch((err) => console.warn('notification', err));
  }

  turnFinished(conversationId, stopped, failed) {
    if (stopped) return;
    this.send('turnFinished', failed ? 'A reply failed' : 'A reply is ready', this.title(conversationId), conversationId);
  }

  approval(conversationId, server, tool) {
    this.send('question', 'Approval needed', `${server} › ${tool} waits for your answer in “${this.title(conversationId)}”.`, conversationId);
  }

  serverQuestion(conversationId, server) {
    this.send('question', `${server} asks you something`, `In “${this.title(conversationId)}”.`, conversationId);
  }

  taskCompleted(conversationId, failed) {
    this.send('taskCompleted', failed ? 'A task ended without a result' : 'A task completed', `In “${this.title(conversationId)}”.`, conversationId);
  }

  /** The servers list changed: a server that ran and now failed has crashed. */
  servers(list) {
    for (const s of list) {
      const before = this.lastStatus.get(s.name);
      if (before === 'running' && s.status === 'failed' && s.failedStep !== 'signingIn') {
        this.send('serverCrashed', `MCP server “${s.name}” stopped`, s.error ?? s.exit ?? 'It ended unexpectedly; Switchboard restarts it.');
      }
      this.lastStatus.set(s.name, s.status);
    }
  }
}

/** The switches in Settings → This window: theme and each kind of notification, applied at once. */
export function wireWindowSettings(keeper) {
  const theme = $('#set-theme');
  theme.value = keeper.state.theme ?? 'system';
  theme.addEventListener('change', () => keeper.setTheme(theme.value));
  for (const kind of KINDS) {
    const box = $(`#set-notify-${kind}`);
    box.checked = keeper.state.notifications?.[kind] !== false;
    box.addEventListener('change', () => {
      const notifications = { ...keeper.state.notifications, [kind]: box.checked };
      keeper.change({ notifications });
    });
  }
}
