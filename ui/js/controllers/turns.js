// The turn runner: sending a message (or an edit, a regenerate, a resume after the round limit or
// a full context, a task's late result) runs one turn of the engine's chat loop, shown as it
// happens through controllers/turn-events.js; Stop and Esc end it. One turn at a time per window.
import * as ipc from '../ipc.js';
import { $ } from '../dom.js';
import { turnEvents as makeTurnEvents, unknownEvent } from './turn-events.js';

export class Turns {
  /**
   * `state`: app.js's state (turnId is this runner's; conversationId and a new chat's pending
   * choices are read). `w`: { chat, composer, files, models, toolsPicker, notifications,
   * signInNotes, keeper, conversations, drafts() (once there are), autosize(), toast(text),
   * explainLlmError(err), hideBanner(), onSummarised(ev) }.
   */
  constructor(state, w) {
    this.state = state;
    this.w = w;
    // what each event of a turn does (turn-events.js)
    this.events = makeTurnEvents({
      state, chat: w.chat, composer: w.composer, files: w.files, toolsPicker: w.toolsPicker,
      notifications: w.notifications, signInNotes: w.signInNotes, keeper: w.keeper, drafts: w.drafts,
      refreshConversations: () => w.conversations.refresh(), explainLlmError: w.explainLlmError,
      onSummarised: w.onSummarised,
    });
  }

  /** Sends what is in the message box (text, files, resources) as a new message. */
  async send() {
    const { files, composer, keeper } = this.w;
    const input = $('#input');
    const text = input.value.trim();
    if (this.state.turnId || (!text && files.isEmpty())) return;
    if (files.busy()) { this.w.toast('The files are still being read.'); return; }
    const blocked = files.blocked();
    if (blocked) { this.w.toast(blocked); return; }
    const attachments = composer.attachments();
    const [images, documents] = [files.images(), files.documents()];
    const shown = [...attachments, ...documents.map(({ name, mime, text: t }) => ({ name, type: mime, text: t }))];
    input.value = '';
    this.w.autosize();
    this.w.drafts()?.sent();
    if (keeper.state && !keeper.state.firstRunDone) keeper.change({ firstRunDone: true });
    const ok = await this.run({ text, attachments, images, documents }, { text, attachments: shown, images: files.shownImages() });
    // nothing was saved: give the text back (attachments stay), and keep it as the draft again
    if (!ok) { input.value = text; this.w.autosize(); this.w.drafts()?.changed(); }
  }

  /** Edit: your message `id` becomes `text`, as a new branch; the rest is answered again. */
  async sendEdit(id, text) {
    this.w.chat.truncateFrom(id);
    await this.run({ text, editOf: id }, { text, attachments: [] });
    await this.w.conversations.reopen();
  }

  /** Regenerate: a new reply to your message `userMessageId`, as a new branch. */
  async regenerate(userMessageId) {
    this.w.chat.removeAfter(userMessageId);
    await this.run({ regenerate: userMessageId }, null);
    await this.w.conversations.reopen();
  }

  /** After the tool-round limit: `continue` or `wrapUp`. */
  async resume(how) {
    this.w.chat.clearResume();
    await this.run({ resume: how }, null);
  }

  /** The chat's policy was to ask when it outgrew the context: the user chose; the turn goes on so. */
  async chooseContextPolicy(policy) {
    if (!this.state.conversationId || this.state.turnId) return;
    this.w.chat.clearResume();
    await this.run({ resume: 'continue', contextPolicy: policy }, null);
  }

  /** Sends the model the result of a task that ended after its turn (one click on its card). */
  async sendLateResult(callId) {
    if (this.state.turnId) throw new Error('Wait until the reply in progress has finished.');
    await this.run({ lateResult: callId }, null);
    // the message that carried the result is shown as stored
    await this.w.conversations.reopen();
  }

  async stop() {
    if (this.state.turnId) await ipc.stopTurn(this.state.turnId);
  }

  setBusy(busy) {
    this.w.chat.busy = busy;
    $('#send').hidden = busy;
    $('#stop').hidden = !busy;
    $('#new-chat').disabled = busy;
    document.body.classList.toggle('busy', busy);
  }

  /**
   * Runs one turn and shows it as it happens. `request` adds to the send request (text, editOf,
   * regenerate, resume, attachments); `shown` is the user message to show when one is added.
   * Resolves false when nothing was saved (the caller gives the text back).
   */
  async run(request, shown) {
    const { state, w } = this;
    if (state.turnId) return true;
    const { model, provider } = w.models.current();
    if (!model) {
      w.explainLlmError({ kind: 'unreachable' });
      return false;
    }
    const turnId = crypto.randomUUID();
    state.turnId = turnId;
    this.setBusy(true);
    w.chat.clearResume();
    const turn = { started: false, failed: false, stopped: false, limit: false, shown, conversationId: null };
    const onEvent = (ev) => (this.events[ev.type] ?? unknownEvent)(ev, turn);
    try {
      const toolChoice = state.conversationId ? null : state.pendingToolChoice;
      const chatSettings = state.conversationId ? null : (state.pendingChatSettings ?? null);
      await ipc.sendMessage({
        turnId, conversationId: state.conversationId, model, provider, toolChoice, chatSettings,
        text: request.text ?? '', attachments: request.attachments ?? [],
        images: request.images ?? [], documents: request.documents ?? [],
        editOf: request.editOf ?? null, regenerate: request.regenerate ?? null, resume: request.resume ?? null,
        lateResult: request.lateResult ?? null, contextPolicy: request.contextPolicy ?? null,
      }, onEvent);
      if (!turn.failed) w.hideBanner();
    } catch (err) {
      turn.failed = true;
      w.chat.addError(err?.message ?? String(err));
    } finally {
      if (turn.started) w.notifications.turnFinished(turn.conversationId, turn.stopped, turn.failed);
      state.turnId = null;
      this.setBusy(false);
      w.conversations.refresh();
      $('#input').focus();
    }
    if (!turn.limit) w.chat.clearResume();
    return turn.started;
  }
}
