// What each event of a turn does in the window: one handler per event of the engine's
// ChatEvent (chat/events.rs), given what the window is made of (app.js builds `w`). A new event
// is one row here.
import * as ipc from '../ipc.js';
import { $ } from '../dom.js';
import { announce } from '../views/announce.js';
import { showContextMeter } from '../views/context-meter.js';

/**
 * The handlers, each `(ev, turn)`: `turn` is what one turn keeps — whether it started, failed or
 * reached the round limit, and `shown`, the user message to show once the engine has stored it.
 * `w`: { state, chat, composer, files, toolsPicker, notifications, signInNotes, keeper,
 * drafts() (the drafts, once there are), refreshConversations(), explainLlmError(ev),
 * onSummarised(ev) }.
 */
export function turnEvents(w) {
  return {
    turnStarted: (ev, turn) => {
      turn.started = true;
      turn.conversationId = ev.conversationId;
      if (!w.state.conversationId && w.state.pendingChatSettings) w.state.conversationSettings = w.state.pendingChatSettings;
      if (!w.state.conversationId) {
        w.drafts()?.became(ev.conversationId);
        w.keeper.rememberOpen(ev.conversationId, $('#messages')); // the new chat is now the one open
      }
      w.state.conversationId = ev.conversationId;
      w.state.pendingToolChoice = null;
      w.state.pendingChatSettings = null;
      $('#chat-title').textContent = ev.title;
      if (ev.userMessageId !== null && ev.userMessageId !== undefined && turn.shown) {
        const b = w.chat.addMessage(ev.userMessageId, 'user');
        w.chat.setUserText(b, turn.shown.text, turn.shown.attachments, turn.shown.images);
        b.text = turn.shown.text;
        w.composer.clearAttachments();
        if (turn.shown.images || turn.shown.attachments.length) w.files.clear();
      }
      w.refreshConversations();
    },
    assistantStarted: (ev) => { w.chat.compacting(false); w.chat.addMessage(ev.messageId, 'assistant', 'streaming'); },
    textDelta: (ev) => w.chat.appendText(ev.messageId, ev.text, ev.html),
    thinkingDelta: (ev) => w.chat.setThinking(ev.messageId, ev.text, true),
    assistantDone: (ev, turn) => {
      if (ev.status === 'stopped') turn.stopped = true;
      w.chat.finishMessage(ev.messageId, ev.status, ev.html, ev.content);
      announce(ev.status === 'complete' ? 'Reply finished.' : ev.status === 'stopped' ? 'Reply stopped.' : 'The reply failed.');
    },
    context: (ev) => {
      showContextMeter($('#context-meter'), ev.used, ev.limit, ev);
      w.toolsPicker.setOffered(ev.toolsOffered, ev.toolsOn);
    },
    compacting: () => { w.chat.compacting(true); announce('Summarising the earlier conversation to fit the model\'s context.'); },
    llmBusy: () => w.chat.compacting(true,
      'Waiting for the model: it is finishing another request (a summary of this chat or another chat\'s reply)…'),
    summarised: (ev) => w.onSummarised(ev),
    toolCallStarted: (ev) => { w.chat.cards.add(ev); announce(`Calling ${ev.server} › ${ev.tool}.`); },
    toolCallArguments: (ev) => w.chat.cards.setArguments(ev.id, ev.arguments, ev.repairs),
    toolCallFinished: (ev) => {
      w.chat.cards.finish(ev.id, ev);
      announce(`${w.chat.cards.toolOf(ev.id).join(' › ')} ${ev.isError ? 'failed' : 'finished'}.`);
      if (!ev.isError && w.chat.hasApp(...w.chat.cards.toolOf(ev.id))) w.chat.cards.offerApp(ev.id, true);
    },
    toolCallProgress: (ev) => w.chat.cards.showProgress(ev.id, ev),
    toolCallTask: (ev) => w.chat.cards.showTask(ev.id, ev),
    elicitationRequested: (ev) => {
      announce(`${ev.elicitation.server} asks you something, on its card.`);
      w.notifications.serverQuestion(w.state.conversationId, ev.elicitation.server);
      w.chat.cards.askUser(ev.callId, ev.elicitation,
        (answer) => ipc.answerQuestion(ev.questionId, { kind: 'elicitation', ...answer }));
    },
    samplingRequested: (ev) => {
      announce(`${ev.request.server} asks to use the model, on its card.`);
      w.notifications.serverQuestion(w.state.conversationId, ev.request.server);
      w.chat.cards.askSampling(ev.callId, ev.questionId, ev.request,
        (approve) => ipc.answerQuestion(ev.questionId, { kind: 'sampling', approve }));
    },
    samplingFinished: (ev) => w.chat.cards.finishSampling(ev.callId, ev),
    approvalRequested: (ev) => {
      announce(`Approval needed: ${ev.server} › ${ev.tool}.`);
      w.notifications.approval(w.state.conversationId, ev.server, ev.tool);
      w.chat.cards.requestApproval(ev,
        (decision) => ipc.answerQuestion(ev.questionId, { kind: 'approval', ...decision }));
    },
    approvalResolved: (ev) => w.chat.cards.resolveApproval(ev),
    signInNeeded: (ev) => w.signInNotes.remind(ev.server, w.state.servers ?? []),
    notice: (ev) => w.chat.addNotice(ev.notice, ev.notice.kind === 'roundLimit'),
    error: (ev, turn) => {
      turn.failed = true;
      if (ev.kind === 'unreachable') w.explainLlmError(ev);
      w.chat.addError(ev.message);
      announce(`Error: ${ev.message}`);
    },
    done: (ev, turn) => { w.chat.compacting(false); turn.limit = ev.limitReached; },
  };
}

/** An event this window does not know (an engine newer than it). */
export const unknownEvent = (ev) => console.warn('unknown chat event', ev);
