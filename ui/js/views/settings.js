// The settings dialog: LLM URL, default model, max tool rounds, roots, defaults for chats
// (system prompt, temperature, context length, thinking), OpenAI-compatible servers, where
// secrets are kept, the sites whose links open without asking, and the standing tool policies
// (by server and tool; those an older version kept by name, with why they apply to nothing). API keys are write-only: the window is told that one is set (and where), never
// what it is; it sends back the same marker to keep it, a new value, or nothing to remove it.
import { el, $ } from '../dom.js';
import { secretPlaceText, secretStoredText, secretsNoteText } from './words.js';
import { readSettings } from './setting-limits.js';

export class SettingsView {
  constructor(dialog, { onSave }) {
    this.dialog = dialog;
    this.onSave = onSave;
    this.providers = [];
    $('#settings-cancel', dialog).addEventListener('click', () => dialog.close());
    // closed (saved or not): a key typed there is forgotten, in the page and in this view
    dialog.addEventListener('close', () => {
      this.providers = [];
      $('#set-providers', dialog).replaceChildren();
    });
    $('#add-provider', dialog).addEventListener('click', () => {
      this.providers.push({ id: '', name: '', kind: 'openai', url: '', apiKey: null, newKey: '' });
      this.renderProviders(true);
    });
    $('#settings-form', dialog).addEventListener('submit', async (e) => {
      e.preventDefault();
      const url = $('#set-llm-url', dialog).value.trim();
      const model = $('#set-model', dialog).value || null;
      const roots = $('#set-roots', dialog).value.split('\n').map((r) => r.trim()).filter(Boolean);
      const systemPrompt = $('#set-system-prompt', dialog).value.trim() || null;
      const thinking = $('#set-thinking', dialog).checked;
      const contextPolicy = $('#set-context-policy', dialog).value;
      const summaryModel = $('#set-summary-model', dialog).value.trim() || null;
      const err = $('#settings-error', dialog);
      err.textContent = '';
      if (url && !/^https?:\/\/\S+$/.test(url)) {
        err.textContent = 'The URL must start with http:// or https://';
        return;
      }
      // the bounded ones (max tool rounds, tools offered, image side, temperature, context
      // length): checked against the engine's table, by their data-setting keys
      const numbers = readSettings(dialog);
      if (numbers.error) { err.textContent = numbers.error; return; }
      const providers = this.readProviders();
      if (typeof providers === 'string') { err.textContent = providers; return; }
      try {
        await this.onSave(this.patch({ llmUrl: url || null, model, ...numbers.values, roots, systemPrompt, thinking, contextPolicy, summaryModel, providers }));
        dialog.close();
      } catch (e2) {
        err.textContent = e2?.message ?? String(e2);
      }
    });
  }

  /**
   * The dialog's fields as a change: only those that differ from what the dialog opened with, so
   * a choice made elsewhere meanwhile (a model picked, a tool always allowed) is never put back.
   */
  patch(fields) {
    const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
    const opened = {
      ...this.current,
      providers: (this.current.providers ?? []).map(({ id, name, kind, url, apiKey }) => ({ id, name, kind, url, apiKey: apiKey ?? null })),
    };
    const patch = {};
    for (const [key, value] of Object.entries(fields)) {
      if (!same(value, opened[key])) patch[key] = value;
    }
    const forgotten = (this.current.trustedLinkHosts ?? []).filter((h) => !this.linkHosts.includes(h));
    if (forgotten.length) patch.trustedLinkHosts = Object.fromEntries(forgotten.map((h) => [h, false]));
    // removed policies: by server identity and tool, or (an older version's) by the name kept
    for (const p of (this.current.policies ?? []).filter((x) => !this.policies.includes(x))) {
      if (p.oldName) {
        (patch.toolPolicies ??= {})[p.oldName] = null;
      } else {
        ((patch.standingPolicies ??= {})[p.identity] ??= {})[p.tool] = null;
      }
    }
    return patch;
  }

  open(settings, models, about) {
    this.current = settings;
    $('#set-llm-url', this.dialog).value = settings.llmUrl ?? '';
    $('#set-llm-url-hint', this.dialog).textContent =
      `In effect: ${settings.effectiveLlmUrl}. Leave empty to use OLLAMA_HOST or the default.`;
    for (const input of this.dialog.querySelectorAll('input[data-setting]')) {
      input.value = settings[input.dataset.setting] ?? '';
    }
    $('#set-roots', this.dialog).value = (settings.roots ?? []).join('\n');
    $('#set-system-prompt', this.dialog).value = settings.systemPrompt ?? '';
    $('#set-thinking', this.dialog).checked = settings.thinking !== false;
    $('#set-context-policy', this.dialog).value = settings.contextPolicy;
    $('#set-summary-model', this.dialog).value = settings.summaryModel ?? '';
    const sel = $('#set-model', this.dialog);
    const names = [...new Set(models.map((m) => m.name))];
    if (settings.model && !names.includes(settings.model)) names.unshift(settings.model);
    sel.replaceChildren(el('option', { value: '' }, '(first available)'),
      ...names.map((n) => el('option', { value: n, selected: n === settings.model }, n)));
    this.providers = (settings.providers ?? []).map((p) => ({ ...p, newKey: '' }));
    this.renderProviders();
    this.linkHosts = [...(settings.trustedLinkHosts ?? [])];
    this.renderLinkHosts();
    this.policies = [...(settings.policies ?? [])];
    this.renderPolicies();
    const note = secretsNoteText(settings.secrets);
    const noteEl = $('#secrets-note', this.dialog);
    noteEl.textContent = note.text;
    noteEl.classList.toggle('warning', note.warning);
    $('#settings-error', this.dialog).textContent = '';
    $('#about', this.dialog).textContent = about;
    this.dialog.showModal();
    $('#set-llm-url', this.dialog).focus();
  }

  renderProviders(focusLast = false) {
    const box = $('#set-providers', this.dialog);
    if (!this.providers.length) {
      box.replaceChildren(el('p', { class: 'hint' }, 'None. Ollama is always available.'));
      return;
    }
    box.replaceChildren(...this.providers.map((p, i) => el('div', { class: 'provider-row', dataset: { index: i } },
      el('input', { class: 'prov-name', placeholder: 'Name, e.g. llama.cpp', value: p.name, 'aria-label': 'Name',
        oninput: (e) => { p.name = e.target.value; } }),
      el('input', { class: 'prov-url', placeholder: 'http://127.0.0.1:8080', value: p.url, 'aria-label': 'URL', spellcheck: 'false',
        oninput: (e) => { p.url = e.target.value; } }),
      this.keyField(p, i),
      el('button', { type: 'button', class: 'btn small', 'aria-label': `Remove ${p.name || 'this server'}`,
        onclick: () => { this.providers.splice(i, 1); this.renderProviders(); } }, '✕'))));
    if (focusLast) box.querySelector('.provider-row:last-child .prov-name')?.focus();
  }

  /** The sites whose links open without asking, each with a button to ask again. */
  renderLinkHosts() {
    const box = $('#set-link-hosts', this.dialog);
    if (!this.linkHosts.length) {
      box.replaceChildren(el('p', { class: 'hint' }, 'None: every link shows where it goes before it opens.'));
      return;
    }
    box.replaceChildren(...this.linkHosts.map((h, i) => el('span', { class: 'link-host' }, h,
      el('button', { type: 'button', class: 'btn small ghost', 'aria-label': `Ask again before opening links to ${h}`, title: 'Ask again',
        onclick: () => { this.linkHosts.splice(i, 1); this.renderLinkHosts(); } }, '✕'))));
  }

  /** The standing tool policies: server › tool and what it says, each with a button to forget it. */
  renderPolicies() {
    const box = $('#set-policies', this.dialog);
    if (!this.policies.length) {
      box.replaceChildren(el('p', { class: 'hint' }, 'None: tools ask unless they only read (as their server says, when you believe it).'));
      return;
    }
    box.replaceChildren(...this.policies.map((p, i) => {
      const what = policyText(p);
      return el('div', { class: `policy-row${p.old ? ' old' : ''}`, title: p.identity ? `Server identity ${p.identity}` : '' },
        el('span', { class: 'policy-what' }, what.tool),
        el('span', { class: `policy-is ${p.policy}` }, what.policy),
        what.note ? el('span', { class: 'hint policy-note' }, what.note) : null,
        el('button', { type: 'button', class: 'btn small ghost', 'aria-label': `Forget the policy for ${what.tool}`, title: 'Forget it (the tool asks again)',
          onclick: () => { this.policies.splice(i, 1); this.renderPolicies(); } }, '✕'));
    }));
  }

  /**
   * A set key shows as "•••• stored in the keyring" with Replace and Remove; a new one is typed in a password field.
   * Replace with the field left empty keeps the key; Remove drops it when the settings are saved.
   */
  keyField(p, i) {
    const focusKey = () => this.dialog.querySelector(`.provider-row[data-index="${i}"] .prov-key`)?.focus();
    if (isKept(p.apiKey) && !p.keyMode) {
      return el('span', { class: 'secret-set prov-key-set', title: secretPlaceText(p.apiKey.secret) },
        el('span', { class: 'secret-dots' }, `•••• ${secretStoredText(p.apiKey.secret)}`),
        el('button', { type: 'button', class: 'btn small', dataset: { act: 'replace-key' }, 'aria-label': `Replace the API key of ${p.name || 'this server'}`,
          onclick: () => { p.keyMode = 'replace'; this.renderProviders(); focusKey(); } }, 'Replace'),
        el('button', { type: 'button', class: 'btn small', dataset: { act: 'remove-key' }, 'aria-label': `Remove the API key of ${p.name || 'this server'}`,
          onclick: () => { p.keyMode = 'remove'; this.renderProviders(); } }, 'Remove'));
    }
    const placeholder = { replace: 'New API key (empty: keep the one set)', remove: 'Removed when you save (or type a new one)' }[p.keyMode] ?? 'API key (optional)';
    return el('input', { class: 'prov-key', type: 'password', placeholder, title: placeholder,
      value: p.newKey ?? '', 'aria-label': 'API key', autocomplete: 'off', spellcheck: 'false',
      oninput: (e) => { p.newKey = e.target.value; } });
  }

  /** The providers as settings, or what is wrong with them. */
  readProviders() {
    const used = new Set(['ollama']);
    const out = [];
    for (const p of this.providers) {
      const name = p.name.trim();
      const url = p.url.trim();
      if (!name && !url) continue;
      if (!name) return 'Every server needs a name.';
      if (!/^https?:\/\/\S+$/.test(url)) return `The URL of ${name} must start with http:// or https://`;
      let id = p.id || name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'server';
      while (used.has(id)) id += '-2';
      used.add(id);
      // typed: a new secret; else the one set, kept (its marker sent back as it came) unless removed
      const typed = p.newKey?.trim();
      const apiKey = typed ? { newSecret: typed } : isKept(p.apiKey) && p.keyMode !== 'remove' ? p.apiKey : null;
      out.push({ id, name, kind: 'openai', url, apiKey });
    }
    return out;
  }
}

/** A secret the engine keeps (`{secret: 'keyring'|'file'|'config'}`): the window never has its value. */
export function isKept(v) {
  return v !== null && typeof v === 'object' && typeof v.secret === 'string';
}

/** How a standing policy reads in the list: the tool (server › tool), the policy, and a note. */
export function policyText(p) {
  const servers = p.servers?.length ? p.servers.join(', ') : null;
  const policy = { allow: 'always allowed', ask: 'always asks', deny: 'never runs' }[p.policy] ?? p.policy;
  if (!p.oldName) {
    return { tool: `${servers ?? 'a server no longer configured'} › ${p.tool}`, policy, note: null };
  }
  const from = servers ? ` (for ${servers})` : '';
  const note = p.old === 'inert'
    ? 'Kept by an older version under this name, which now leads to a tool the server did not have when you accepted its tools: it is never applied.'
    : 'Kept by an older version under this name: it applies to nothing until the name leads to exactly one tool of its server.';
  return { tool: `${p.oldName}${from}`, policy, note };
}
