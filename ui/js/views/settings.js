// The settings dialog: LLM URL, default model, max tool rounds.
import { el, $ } from '../dom.js';

export class SettingsView {
  constructor(dialog, { onSave }) {
    this.dialog = dialog;
    this.onSave = onSave;
    $('#settings-cancel', dialog).addEventListener('click', () => dialog.close());
    $('#settings-form', dialog).addEventListener('submit', async (e) => {
      e.preventDefault();
      const url = $('#set-llm-url', dialog).value.trim();
      const max = Number($('#set-max-iterations', dialog).value);
      const model = $('#set-model', dialog).value || null;
      const roots = $('#set-roots', dialog).value.split('\n').map((r) => r.trim()).filter(Boolean);
      const err = $('#settings-error', dialog);
      err.textContent = '';
      if (url && !/^https?:\/\/\S+$/.test(url)) {
        err.textContent = 'The URL must start with http:// or https://';
        return;
      }
      if (!Number.isInteger(max) || max < 1 || max > 100) {
        err.textContent = 'Max tool rounds must be a whole number from 1 to 100.';
        return;
      }
      try {
        await this.onSave({ ...this.current, llmUrl: url || null, model, maxIterations: max, roots });
        dialog.close();
      } catch (e2) {
        err.textContent = e2?.message ?? String(e2);
      }
    });
  }

  open(settings, models, about) {
    this.current = settings;
    $('#set-llm-url', this.dialog).value = settings.llmUrl ?? '';
    $('#set-llm-url-hint', this.dialog).textContent =
      `In effect: ${settings.effectiveLlmUrl}. Leave empty to use OLLAMA_HOST or the default.`;
    $('#set-max-iterations', this.dialog).value = settings.maxIterations;
    $('#set-roots', this.dialog).value = (settings.roots ?? []).join('\n');
    const sel = $('#set-model', this.dialog);
    const names = models.map((m) => m.name);
    if (settings.model && !names.includes(settings.model)) names.unshift(settings.model);
    sel.replaceChildren(el('option', { value: '' }, '(first available)'),
      ...names.map((n) => el('option', { value: n, selected: n === settings.model }, n)));
    $('#settings-error', this.dialog).textContent = '';
    $('#about', this.dialog).textContent = about;
    this.dialog.showModal();
    $('#set-llm-url', this.dialog).focus();
  }
}
