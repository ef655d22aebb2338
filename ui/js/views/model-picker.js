// The model picker in the chat header: every provider's models (grouped when there are several),
// and the picked model's capabilities as badges.
import { el } from '../dom.js';

export class ModelPicker {
  /** actions: { capabilities(provider, model) → Promise<string[]> } */
  constructor(select, badges, actions) {
    this.select = select;
    this.badges = badges;
    this.actions = actions;
  }

  /** The model picked and its provider. */
  current() {
    const opt = this.select.selectedOptions[0];
    return { model: opt?.value ?? '', provider: opt?.dataset.provider || null };
  }

  /**
   * Fills the picker from `groups` (one per provider: { provider, providerName, models }),
   * keeping the current choice, else `wanted` (the settings' model, listed even when Ollama does
   * not have it), else the first.
   */
  render(groups, wanted) {
    const before = this.current();
    const all = groups.flatMap((g) => g.models.map((m) => m.name));
    const options = [];
    for (const g of groups) {
      const names = g.models.map((m) => m.name);
      if (g.provider === 'ollama' && wanted && !all.includes(wanted)) names.unshift(wanted);
      if (!names.length) continue;
      const opts = names.map((n) => el('option', { value: n, dataset: { provider: g.provider } }, n));
      options.push(groups.length > 1 ? el('optgroup', { label: g.providerName }, opts) : opts);
    }
    if (!options.length) {
      this.select.replaceChildren(el('option', { value: '' }, 'No models'));
      this.showBadges();
      return;
    }
    this.select.replaceChildren(...options.flat());
    this.pick(before.model ? before.provider : null, before.model || wanted || this.select.options[0].value);
  }

  /** Picks `model` of `provider` (the first provider that has it, when not given). */
  pick(provider, model) {
    const opts = [...this.select.options];
    const hit = opts.find((o) => o.value === model && (!provider || o.dataset.provider === provider))
      ?? opts.find((o) => o.value === model);
    if (hit) hit.selected = true;
    this.showBadges();
  }

  /** The picked model's capabilities (tools, thinking, vision) as badges. */
  async showBadges() {
    const { model, provider } = this.current();
    this.badges.replaceChildren();
    if (!model) return;
    try {
      const caps = await this.actions.capabilities(provider, model);
      if (this.current().model !== model) return;
      const known = { tools: 'tools', thinking: 'thinking', vision: 'vision' };
      this.badges.replaceChildren(...caps.filter((c) => known[c]).map((c) => el('span', { class: `badge ${c}`, title: `This model supports ${c}` }, known[c])));
      if (!caps.length) this.badges.title = 'The server does not say what this model can do';
    } catch { /* no badges */ }
  }
}
