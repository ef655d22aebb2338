// The composer's helpers: resources attached to the next message (the 📎 menu), and the prompt
// menu that opens when the message starts with `/`. Views only: data comes through `api`.
import { el } from '../dom.js';

/**
 * api = { resources(): Promise<ResourceView[]>, prompts(): Promise<PromptView[]>,
 *         getPrompt(server, name, args): Promise<{role, text}[]>,
 *         pickFiles?(): the system's file dialog (views/attach.js) }
 */
export class ComposerView {
  constructor({ input, attachButton, chips, menu }, api, onChange) {
    this.input = input;
    this.chips = chips;
    this.menu = menu;
    this.api = api;
    this.onChange = onChange ?? (() => {});
    this.attached = [];
    this.items = [];
    this.active = -1;
    this.mode = null; // 'prompts' | 'resources' | 'form'
    attachButton.addEventListener('click', () => (this.mode === 'resources' ? this.close() : this.openResources()));
    input.addEventListener('input', () => this.onInput());
    input.addEventListener('keydown', (e) => this.onKey(e), true);
    document.addEventListener('click', (e) => {
      if (this.mode && !this.menu.contains(e.target) && e.target !== attachButton && e.target !== input) this.close();
    });
  }

  /** The attached resources, as the send command wants them. */
  attachments() {
    return this.attached.map(({ server, uri, name }) => ({ server, uri, name }));
  }

  /** Puts back the attachments kept with a draft (drafts.js). */
  restoreAttachments(list) {
    this.attached = [...list];
    this.renderChips();
  }

  clearAttachments() {
    this.attached = [];
    this.renderChips();
  }

  isOpen() {
    return this.mode !== null;
  }

  close() {
    this.mode = null;
    this.menu.hidden = true;
    this.menu.replaceChildren();
    this.input.removeAttribute('aria-activedescendant');
  }

  renderChips() {
    this.chips.hidden = !this.attached.length;
    this.chips.replaceChildren(...this.attached.map((a, i) =>
      el('span', { class: 'chip', title: a.uri, dataset: { uri: a.uri } },
        el('span', { class: 'chip-server' }, a.server), ' › ', a.name,
        el('button', { type: 'button', class: 'chip-remove', 'aria-label': `Remove ${a.name}`,
          onclick: () => { this.attached.splice(i, 1); this.renderChips(); this.input.focus(); } }, '✕'))));
  }

  // ---------- the list (resources or prompts), keyboard first ----------
  showList(title, items, render, pick, empty) {
    this.items = items;
    this.pick = pick;
    this.active = items.length ? 0 : -1;
    const list = el('ul', { class: 'menu-list', role: 'listbox', 'aria-label': title },
      items.map((it, i) => el('li', { role: 'option', id: `menu-item-${i}`, class: 'menu-item', dataset: { index: i },
        onmousedown: (e) => { e.preventDefault(); this.choose(i); } }, render(it))));
    this.menu.replaceChildren(el('div', { class: 'menu-title' }, title), items.length ? list : el('p', { class: 'muted menu-empty' }, empty));
    this.menu.hidden = false;
    this.highlight();
  }

  highlight() {
    const items = this.menu.querySelectorAll('.menu-item');
    items.forEach((n, i) => n.setAttribute('aria-selected', String(i === this.active)));
    if (this.active >= 0) {
      items[this.active]?.scrollIntoView({ block: 'nearest' });
      this.input.setAttribute('aria-activedescendant', `menu-item-${this.active}`);
    }
  }

  choose(i) {
    const it = this.items[i];
    if (it) this.pick(it);
  }

  onKey(e) {
    if (!this.mode || this.mode === 'form') return;
    const n = this.items.length;
    if (e.key === 'ArrowDown' && n) { e.preventDefault(); e.stopImmediatePropagation(); this.active = (this.active + 1) % n; this.highlight(); }
    else if (e.key === 'ArrowUp' && n) { e.preventDefault(); e.stopImmediatePropagation(); this.active = (this.active - 1 + n) % n; this.highlight(); }
    else if ((e.key === 'Enter' || e.key === 'Tab') && !e.shiftKey && this.active >= 0) { e.preventDefault(); e.stopImmediatePropagation(); this.choose(this.active); }
    else if (e.key === 'Escape') { e.preventDefault(); e.stopImmediatePropagation(); this.close(); }
  }

  // ---------- resources ----------
  async openResources() {
    this.mode = 'resources';
    let resources;
    try {
      resources = await this.api.resources();
    } catch (err) {
      this.menu.replaceChildren(el('p', { class: 'field-error' }, err?.message ?? String(err)));
      this.offerFiles();
      this.menu.hidden = false;
      return;
    }
    const taken = new Set(this.attached.map((a) => `${a.server}\n${a.uri}`));
    const items = resources.filter((r) => !taken.has(`${r.server}\n${r.uri}`));
    this.showList('Attach a resource to your next message', items,
      (r) => [el('span', { class: 'menu-name' }, r.title ?? r.name), el('span', { class: 'menu-server' }, r.server),
        el('small', { class: 'menu-desc' }, r.description ?? r.uri)],
      (r) => {
        this.attached.push({ server: r.server, uri: r.uri, name: r.title ?? r.name });
        this.renderChips();
        this.close();
        this.input.focus();
      },
      resources.length ? 'Everything offered is attached already.' : 'No running server offers resources. Servers are managed in MCP servers.');
    this.offerFiles();
    this.menu.querySelector('.menu-item')?.focus?.();
  }

  /** The menu's first entry: a file from this computer (the system's dialog), when offered. */
  offerFiles() {
    if (!this.api.pickFiles) return;
    this.menu.prepend(el('button', { type: 'button', class: 'btn menu-file', dataset: { action: 'attach-file' },
      onmousedown: (e) => e.preventDefault(),
      onclick: () => { this.close(); this.api.pickFiles(); } }, '📄 A file from this computer…'));
  }

  // ---------- prompts ----------
  async onInput() {
    const m = /^\/(\S*)$/.exec(this.input.value);
    if (!m) {
      if (this.mode === 'prompts') this.close();
      return;
    }
    if (this.mode !== 'prompts' || !this.allPrompts) {
      this.mode = 'prompts';
      try {
        this.allPrompts = await this.api.prompts();
      } catch {
        this.allPrompts = [];
      }
    }
    if (this.mode !== 'prompts') return;
    const q = m[1].toLowerCase();
    const items = this.allPrompts.filter((p) => `${p.server} ${p.name} ${p.title ?? ''}`.toLowerCase().includes(q));
    this.showList('Prompts', items,
      (p) => [el('span', { class: 'menu-name' }, `/${p.name}`), el('span', { class: 'menu-server' }, p.server),
        el('small', { class: 'menu-desc' }, p.description ?? p.title ?? '')],
      (p) => this.promptForm(p),
      this.allPrompts.length ? `No prompt matches “${m[1]}”.` : 'No running server offers prompts.');
  }

  promptForm(p) {
    if (!p.arguments.length) { this.runPrompt(p, {}); return; }
    this.mode = 'form';
    const error = el('p', { class: 'field-error', role: 'alert' });
    const fields = p.arguments.map((a) => {
      const input = el('input', { type: 'text', name: a.name, required: a.required, spellcheck: 'false' });
      return { a, input, node: el('label', { class: 'field', dataset: { name: a.name } },
        el('span', {}, `${a.title ?? a.name}${a.required ? ' *' : ''}`), input,
        a.description ? el('small', { class: 'hint' }, a.description) : null) };
    });
    const form = el('form', { class: 'prompt-form', novalidate: true, onsubmit: (e) => {
      e.preventDefault();
      const args = {};
      for (const f of fields) {
        const v = f.input.value;
        if (!v && f.a.required) { error.textContent = `“${f.a.name}” is required.`; f.input.focus(); return; }
        if (v) args[f.a.name] = v;
      }
      this.runPrompt(p, args, error);
    } },
    el('div', { class: 'menu-title' }, `/${p.name} · ${p.server}`),
    p.description ? el('p', { class: 'muted' }, p.description) : null,
    fields.map((f) => f.node),
    el('div', { class: 'approval-buttons' },
      el('button', { type: 'submit', class: 'btn primary', dataset: { action: 'insert-prompt' } }, 'Insert'),
      el('button', { type: 'button', class: 'btn', onclick: () => { this.close(); this.input.focus(); } }, 'Cancel')),
    error);
    form.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); this.close(); this.input.focus(); } });
    this.menu.replaceChildren(form);
    this.menu.hidden = false;
    fields[0].input.focus();
  }

  async runPrompt(p, args, errorNode) {
    try {
      const messages = await this.api.getPrompt(p.server, p.name, args);
      this.input.value = messages.map((m) => m.text).join('\n\n');
      this.close();
      this.input.focus();
      this.onChange();
    } catch (err) {
      const msg = err?.message ?? String(err);
      if (errorNode) errorNode.textContent = msg;
      else this.menu.replaceChildren(el('p', { class: 'field-error', role: 'alert' }, msg));
    }
  }
}

/** Splits a stored user message into the typed text and its attachments (see the engine's
 * `with_attachments`: a resource's block names its `uri`, a file's its `type`). */
export function splitAttachments(content) {
  const at = content.startsWith('<attachment name="') ? 0 : content.indexOf('\n\n<attachment name="');
  if (at < 0) return { text: content, attachments: [] };
  const text = content.slice(0, at);
  const attachments = [];
  const re = /<attachment name="([^"]*)"(?: uri="([^"]*)")?(?: type="([^"]*)")?>\n([\s\S]*?)\n<\/attachment>/g;
  const unescape = (s) => s?.replaceAll('&quot;', '"').replaceAll('&amp;', '&');
  for (const m of content.slice(text.length).matchAll(re)) {
    attachments.push({ name: unescape(m[1]), uri: unescape(m[2]), type: unescape(m[3]), text: m[4].replaceAll('<\\/attachment>', '</attachment>') });
  }
  return { text, attachments };
}
