// This chat's own settings (system prompt, temperature, context length, what happens when it
// outgrows the context): a dialog. A new chat's
// settings wait until its first message creates the conversation.
import { $ } from '../dom.js';

export class ChatSettingsDialog {
  /** actions: { save(settings) → Promise } (rejects with an error whose message is shown) */
  constructor(dialog, actions) {
    this.dialog = dialog;
    this.actions = actions;
    this.current = {};
    $('#cs-cancel', dialog).addEventListener('click', () => dialog.close());
    $('#chat-settings-form', dialog).addEventListener('submit', (e) => { e.preventDefault(); this.submit(); });
  }

  open(settings) {
    this.current = settings ?? {};
    $('#cs-system-prompt', this.dialog).value = this.current.systemPrompt ?? '';
    $('#cs-temperature', this.dialog).value = this.current.temperature ?? '';
    $('#cs-num-ctx', this.dialog).value = this.current.numCtx ?? '';
    $('#cs-context-policy', this.dialog).value = this.current.contextPolicy ?? '';
    $('#cs-error', this.dialog).textContent = '';
    this.dialog.showModal();
    $('#cs-system-prompt', this.dialog).focus();
  }

  async submit() {
    const num = (sel) => { const v = $(sel, this.dialog).value.trim(); return v === '' ? null : Number(v); };
    const next = {
      ...this.current,
      systemPrompt: $('#cs-system-prompt', this.dialog).value.trim() || null,
      temperature: num('#cs-temperature'),
      numCtx: num('#cs-num-ctx'),
      contextPolicy: $('#cs-context-policy', this.dialog).value || null,
    };
    // the same ranges the engine checks (it checks again): said here before anything is sent
    const error = $('#cs-error', this.dialog);
    if (next.temperature !== null && !(next.temperature >= 0 && next.temperature <= 2)) { error.textContent = 'The temperature must be between 0 and 2.'; return; }
    if (next.numCtx !== null && !(Number.isInteger(next.numCtx) && next.numCtx >= 256)) { error.textContent = 'The context length must be a whole number of at least 256.'; return; }
    try {
      await this.actions.save(next);
      this.dialog.close();
    } catch (err) {
      error.textContent = err?.message ?? String(err);
    }
  }
}
