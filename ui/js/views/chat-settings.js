// This chat's own settings (system prompt, temperature, context length, what happens when it
// outgrows the context, which skills are on): a dialog. A new chat's
// settings wait until its first message creates the conversation.
import { el, $ } from '../dom.js';
import { skillNames } from './skills.js';
import { readSettings } from './setting-limits.js';

export class ChatSettingsDialog {
  /** actions: { save(settings) → Promise } (rejects with an error whose message is shown) */
  constructor(dialog, actions) {
    this.dialog = dialog;
    this.actions = actions;
    this.current = {};
    $('#cs-cancel', dialog).addEventListener('click', () => dialog.close());
    $('#chat-settings-form', dialog).addEventListener('submit', (e) => { e.preventDefault(); this.submit(); });
  }

  /** skillsPage: what `listSkills` gives (null: the skills could not be read). */
  open(settings, skillsPage = null) {
    this.current = settings ?? {};
    this.renderSkills(skillsPage);
    $('#cs-system-prompt', this.dialog).value = this.current.systemPrompt ?? '';
    for (const input of this.dialog.querySelectorAll('input[data-setting]')) {
      input.value = this.current[input.dataset.setting] ?? '';
    }
    $('#cs-context-policy', this.dialog).value = this.current.contextPolicy ?? '';
    $('#cs-error', this.dialog).textContent = '';
    this.dialog.showModal();
    $('#cs-system-prompt', this.dialog).focus();
  }

  /** One choice per skill: as in Settings, on, or off (kept: choices for skills not listed now). */
  renderSkills(page) {
    const box = $('#cs-skills', this.dialog);
    const own = this.current.skills ?? {};
    const off = new Set(page?.off ?? []);
    const names = skillNames(page);
    if (!names.length) {
      box.replaceChildren(el('p', { class: 'hint' }, page ? 'No skills. Add them in Settings → Skills.' : 'The skills could not be read.'));
      return;
    }
    box.replaceChildren(...names.map(({ key, description }) => {
      const value = key in own ? (own[key] ? 'on' : 'off') : '';
      const select = el('select', { class: 'cs-skill', dataset: { skill: key }, 'aria-label': `${key} in this chat` },
        el('option', { value: '', selected: value === '' }, `As in Settings (${off.has(key) ? 'off' : 'on'})`),
        el('option', { value: 'on', selected: value === 'on' }, 'On'),
        el('option', { value: 'off', selected: value === 'off' }, 'Off'));
      return el('label', { class: 'field skill-choice', title: description }, el('span', {}, key), select);
    }));
  }

  readSkills() {
    const out = { ...(this.current.skills ?? {}) };
    for (const select of this.dialog.querySelectorAll('select.cs-skill')) {
      const key = select.dataset.skill;
      if (select.value === '') delete out[key]; else out[key] = select.value === 'on';
    }
    return out;
  }

  async submit() {
    // temperature and context length: checked against the engine's table (it checks again),
    // said here before anything is sent
    const error = $('#cs-error', this.dialog);
    const numbers = readSettings(this.dialog);
    if (numbers.error) { error.textContent = numbers.error; return; }
    const next = {
      ...this.current,
      systemPrompt: $('#cs-system-prompt', this.dialog).value.trim() || null,
      ...numbers.values,
      contextPolicy: $('#cs-context-policy', this.dialog).value || null,
      skills: this.readSkills(),
    };
    try {
      await this.actions.save(next);
      this.dialog.close();
    } catch (err) {
      error.textContent = err?.message ?? String(err);
    }
  }
}
