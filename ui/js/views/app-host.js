// MCP Apps on their cards: opens a call's app page (views/app-frame.js) and routes what the page
// asks through the window's own rules: its tool calls get cards of their own and the same
// approval as the model's, its links the link dialog, its messages the message box.
import * as ipc from '../ipc.js';
import { mountApp } from './app-frame.js';

export class AppHost {
  /** `chat`: the ChatView. `app.openLink(url)`, `app.draftMessage(text)`. */
  constructor(chat, app) {
    this.chat = chat;
    this.app = app;
  }

  /** Shows the app of call `callId` in `box`. */
  async open(callId, box) {
    const opened = await ipc.openApp(callId);
    return mountApp(box, { ...opened, callId }, {
      callTool: (viewId, name, args) => ipc.appCallTool(viewId, name, args, (ev) => this.onEvent(ev)),
      openLink: (url) => this.app.openLink(url),
      draftMessage: (text) => this.app.draftMessage(text),
      close: (viewId) => ipc.closeApp(viewId).catch(() => {}),
      theme: () => (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'),
    });
  }

  /** What happens to a call an app page made: on its own card. */
  onEvent(ev) {
    const cards = this.chat.cards;
    switch (ev.type) {
      case 'toolCallStarted': cards.add(ev); break;
      case 'toolCallFinished': cards.finish(ev.id, ev); break;
      case 'toolCallProgress': cards.showProgress(ev.id, ev); break;
      case 'approvalRequested':
        cards.requestApproval(ev, (decision) => ipc.answerQuestion(ev.questionId, { kind: 'approval', ...decision }));
        break;
      case 'approvalResolved': cards.resolveApproval(ev); break;
      case 'elicitationRequested':
        cards.askUser(ev.callId, ev.elicitation,
          (answer) => ipc.answerQuestion(ev.questionId, { kind: 'elicitation', ...answer }));
        break;
      default: break;
    }
  }
}
