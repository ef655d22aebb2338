// MCP Apps on their cards: opens a call's app page (views/app-frame.js) and routes what the page
// asks through the window's own rules: its tool calls get cards of their own and the same
// approval as the model's, its links the link dialog, its messages the message box, its log
// messages its server's log.
import * as ipc from '../ipc.js';
import { mountApp } from './app-frame.js';

export class AppHost {
  /**
   * `chat`: the ChatView. `app`: { openLink(url) → Promise<boolean> (opened), input (the message
   * box), autosize(), toast(text) }.
   */
  constructor(chat, app) {
    this.chat = chat;
    this.app = app;
    // the window closing: its apps are told first
    ipc.watchWindowClose(async () => {
      await this.chat.cards.closeAll('the window is closing');
      ipc.appsClosed().catch(() => {});
    }).catch(() => {});
  }

  /** A message an app wrote: into the message box, for the user to send or not. */
  draftMessage(text) {
    const input = this.app.input;
    input.value = input.value ? `${input.value}\n${text}` : text;
    this.app.autosize();
    input.focus();
    this.app.toast('The app wrote a message for you: it is in the message box, send it if you want to.');
  }

  /**
   * Shows the app of call `callId` in `box`; `onEnded(note)`: the app ended by itself (it left
   * its page, or asked to be closed). Its calls still running when it goes are cancelled.
   */
  async open(callId, box, onEnded) {
    const opened = await ipc.openApp(callId);
    const running = new Set(); // the page's calls not finished yet
    let gone = false;
    return mountApp(box, { ...opened, callId }, {
      callTool: (viewId, name, args) => ipc.appCallTool(viewId, name, args, (ev) => {
        if (ev.type === 'toolCallStarted') {
          if (gone) return; // its chat may no longer be shown
          running.add(ev.id);
        }
        if (ev.type === 'toolCallFinished') running.delete(ev.id);
        this.onEvent(ev);
      }),
      openLink: (url) => this.app.openLink(url),
      draftMessage: (text) => this.draftMessage(text),
      log: (viewId, level, data) => ipc.appLog(viewId, level, data).catch(() => {}),
      close: (viewId, reason, teardown) => {
        gone = true;
        for (const id of running) ipc.cancelToolCall(id).catch(() => {});
        ipc.closeApp(viewId, reason, teardown).catch(() => {});
      },
      ended: (note) => onEnded?.(note),
      // the window's theme (Settings → This window), else the desktop's
      theme: () => document.documentElement.dataset.theme ?? (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'),
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
