// Calls followed outside a turn: tasks still running on their servers when the app last ended.
// What happens to them is shown on their cards when their conversation is open; a question a
// server asks for a chat that is not open waits (and a note says so, with a button that opens
// that chat) until the chat is opened.
import * as ipc from '../ipc.js';
import { el } from '../dom.js';

export class TaskFollower {
  /**
   * `chat`: the ChatView. `app.openConversationId()`: the conversation shown now;
   * `app.sendLateResult(callId)`: sends a late result to the model; `app.openConversation(id)`.
   */
  constructor(chat, app) {
    this.chat = chat;
    this.app = app;
    this.chats = new Map(); // tool call id -> conversation id
    this.questions = new Map(); // question id -> the event that asked it
  }

  /** An event of a followed call. */
  onEvent(ev) {
    const cards = this.chat.cards;
    switch (ev.type) {
      case 'taskFollowed': this.chats.set(ev.id, ev.conversationId); cards.showResumed(ev.id); break;
      case 'toolCallTask': cards.showTask(ev.id, ev); break;
      case 'toolCallProgress': cards.showProgress(ev.id, ev); break;
      case 'toolCallFinished':
        cards.finish(ev.id, ev);
        for (const [q, asked] of this.questions) if (asked.callId === ev.id) this.questions.delete(q);
        if (!this.questions.size) document.querySelector('.task-ask')?.remove();
        break;
      case 'taskResultWaiting':
        if (ev.conversationId === this.app.openConversationId()) {
          cards.offerLateResult(ev.id, () => this.app.sendLateResult(ev.id));
        }
        break;
      case 'elicitationRequested':
      case 'samplingRequested':
        this.questions.set(ev.questionId, ev);
        if (!this.ask(ev)) this.tell(ev);
        break;
      case 'samplingFinished': cards.finishSampling(ev.callId, ev); break;
      default: break;
    }
  }

  /** After a conversation is shown: the questions of its tasks that are still waiting. */
  askWaiting() {
    for (const ev of this.questions.values()) this.ask(ev);
    if ([...this.questions.values()].every((ev) => this.chat.cards.cards.has(ev.callId))) {
      document.querySelector('.task-ask')?.remove();
    }
  }

  /** Asks a task's question on its card; false when the card is not shown. */
  ask(ev) {
    const cards = this.chat.cards;
    if (!cards.cards.has(ev.callId)) return false;
    const answered = (answer) => ipc.answerQuestion(ev.questionId, answer).then(() => this.questions.delete(ev.questionId));
    if (ev.type === 'elicitationRequested') {
      cards.askUser(ev.callId, ev.elicitation, (answer) => answered({ kind: 'elicitation', ...answer }));
    } else {
      cards.askSampling(ev.callId, ev.questionId, ev.request, (approve) => answered({ kind: 'sampling', approve }));
    }
    return true;
  }

  /** A task's question for a chat that is not open: a note that opens that chat. */
  tell(ev) {
    const conversationId = this.chats.get(ev.callId);
    document.querySelector('.task-ask')?.remove();
    const server = ev.elicitation?.server ?? ev.request?.server ?? 'A server';
    const note = el('div', { class: 'toast task-ask', role: 'alert' },
      el('span', {}, `${server} asks you something about a task that is still running.`),
      conversationId ? el('button', {
        type: 'button', class: 'btn small', dataset: { action: 'open-task-chat' },
        onclick: async () => { note.remove(); await this.app.openConversation(conversationId); },
      }, 'Open the chat') : null);
    document.body.append(note);
  }
}
