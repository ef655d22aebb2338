// Import servers from another host's config (with a preview of everything that would run and name
// conflicts resolved), then a second, explicit confirmation before any of them starts; and export
// ours.
import { el, $ } from '../dom.js';
import { envRiskText } from './words.js';

export class ImportExportView {
  /**
   * actions: { preview(text), pickFile(), import(choices) → names added (turned off),
   *            start(names), export() }; onShow(panel|null) hides the rest of the dialog
   */
  constructor(dialog, actions, onShow) {
    this.dialog = dialog;
    this.actions = actions;
    this.onShow = onShow;
    this.preview = null;
    $('#server-import', dialog).addEventListener('click', () => this.openImport());
    $('#server-export', dialog).addEventListener('click', () => this.openExport());
    $('#import-cancel', dialog).addEventListener('click', () => this.close());
    $('#export-close', dialog).addEventListener('click', () => this.close());
    $('#import-preview-button', dialog).addEventListener('click', () => this.showPreview());
    $('#import-choose', dialog).addEventListener('click', () => this.chooseFile());
    $('#import-go', dialog).addEventListener('click', () => this.doImport());
    $('#import-keep-off', dialog).addEventListener('click', () => this.close());
    $('#import-start', dialog).addEventListener('click', async () => {
      await this.actions.start(this.added);
      this.close();
    });
    $('#export-copy', dialog).addEventListener('click', async () => {
      const t = $('#export-text', dialog);
      t.select();
      try { await navigator.clipboard.writeText(t.value); } catch { document.execCommand('copy'); }
      $('#export-copy', dialog).textContent = 'Copied';
    });
  }

  openImport() {
    $('#import-text', this.dialog).value = '';
    $('#import-file-name', this.dialog).textContent = '';
    $('#import-error', this.dialog).textContent = '';
    $('#import-preview', this.dialog).replaceChildren();
    $('#import-go', this.dialog).disabled = true;
    this.onShow('#import-panel');
    $('#import-text', this.dialog).focus();
  }

  /** The file dialog (opened by the Rust side); a picked file's text goes in the box and is previewed. */
  async chooseFile() {
    const err = $('#import-error', this.dialog);
    err.textContent = '';
    const button = $('#import-choose', this.dialog);
    button.disabled = true;
    try {
      const picked = await this.actions.pickFile();
      if (!picked) return; // the dialog was closed
      $('#import-text', this.dialog).value = picked.text;
      $('#import-file-name', this.dialog).textContent = picked.path;
      await this.showPreview();
    } catch (e) {
      err.textContent = e?.message ?? String(e);
    } finally {
      button.disabled = false;
    }
  }

  async openExport() {
    $('#export-text', this.dialog).value = await this.actions.export();
    $('#export-copy', this.dialog).textContent = 'Copy';
    this.onShow('#export-panel');
  }

  close() { this.onShow(null); }

  async showPreview() {
    const err = $('#import-error', this.dialog);
    err.textContent = '';
    try {
      this.preview = await this.actions.preview($('#import-text', this.dialog).value);
    } catch (e) {
      err.textContent = e?.message ?? String(e);
      $('#import-preview', this.dialog).replaceChildren();
      $('#import-go', this.dialog).disabled = true;
      return;
    }
    const rows = this.preview.servers.map((s, i) => el('div', { class: 'import-row', dataset: { index: i } },
      el('input', { type: 'checkbox', class: 'import-include', 'aria-label': `Import ${s.name}` }),
      el('input', { class: 'import-name', value: s.suggestedName, 'aria-label': 'Name' }),
      s.conflict
        ? el('select', { class: 'import-mode', 'aria-label': `“${s.name}” exists` },
          el('option', { value: 'rename' }, 'keep both (import under this name)'),
          el('option', { value: 'replace' }, `replace the existing “${s.name}”`))
        : el('span', { class: 'muted' }, 'new'),
      el('code', { class: 'import-cmd' }, s.server.url ?? [s.server.command, ...(s.server.args ?? [])].join(' ')),
      whatRuns(s)));
    for (const row of rows) {
      const mode = row.querySelector('.import-mode');
      mode?.addEventListener('change', () => {
        const s = this.preview.servers[Number(row.dataset.index)];
        row.querySelector('.import-name').value = mode.value === 'replace' ? s.name : s.suggestedName;
      });
    }
    const skipped = this.preview.skipped.map((s) => el('div', { class: 'import-skipped muted' }, `Skipped “${s.name}”: ${s.reason}`));
    $('#import-preview', this.dialog).replaceChildren(
      el('p', { class: 'muted' }, `Read as ${this.preview.format}: ${this.preview.servers.length} server(s). Tick the ones to import; they are added turned off.`), ...rows, ...skipped);
    const anyChecked = () => [...this.dialog.querySelectorAll('.import-include')].some((c) => c.checked);
    for (const c of this.dialog.querySelectorAll('.import-include')) {
      c.addEventListener('change', () => { $('#import-go', this.dialog).disabled = !anyChecked(); });
    }
    $('#import-go', this.dialog).disabled = true;
  }

  async doImport() {
    const choices = [];
    for (const row of this.dialog.querySelectorAll('.import-row')) {
      if (!row.querySelector('.import-include').checked) continue;
      const s = this.preview.servers[Number(row.dataset.index)];
      choices.push({
        index: Number(row.dataset.index),
        name: row.querySelector('.import-name').value.trim(),
        server: s.server,
        replace: row.querySelector('.import-mode')?.value === 'replace',
      });
    }
    try {
      await this.actions.import(choices.map(({ index, ...c }) => c));
    } catch (e) {
      $('#import-error', this.dialog).textContent = e?.message ?? String(e);
      return;
    }
    // the second, explicit confirmation: what would start, listed
    const startable = choices.filter((c) => !c.server.disabled);
    if (!startable.length) { this.close(); return; }
    this.added = startable.map((c) => c.name);
    $('#import-confirm-list', this.dialog).replaceChildren(...startable.map((c) =>
      el('div', { class: 'import-row', dataset: { name: c.name } },
        el('strong', {}, c.name),
        el('code', { class: 'import-cmd' }, c.server.url ?? [c.server.command, ...(c.server.args ?? [])].join(' ')),
        whatRuns(this.preview.servers[c.index]))));
    this.onShow('#import-confirm');
    $('#import-keep-off', this.dialog).focus();
  }
}

/** Everything an imported server would run with: its folder, its environment (names, never values;
 * the risky ones flagged) and the names of the headers it sends. */
function whatRuns(s) {
  const parts = [];
  if (s.server.cwd) parts.push(el('div', {}, 'in ', el('code', {}, s.server.cwd)));
  if (s.env.length) {
    parts.push(el('div', {}, 'environment: ', ...s.env.map((e) => el('span', {
      class: `env-var${e.risk ? ' risky' : ''}${e.secret ? ' secret' : ''}`,
      title: e.risk ? envRiskText(e.risk) : `${e.length} characters (not shown)${e.secret ? '; kept as a secret (the keyring) once imported' : ''}`,
    }, e.risk ? `⚠ ${e.name}` : e.secret ? `${e.name} (secret)` : e.name, el('span', { class: 'muted' }, ` (${e.length} characters)`)))));
    for (const e of s.env.filter((x) => x.risk)) {
      parts.push(el('div', { class: 'env-risk' }, `⚠ ${e.name}: ${envRiskText(e.risk)}`));
    }
  }
  if (s.headers.length) parts.push(el('div', {}, 'headers: ', s.headers.join(', '), el('span', { class: 'muted' }, ' (values not shown; kept as secrets once imported)')));
  if (s.unset?.length) {
    parts.push(el('div', { class: 'import-unset' }, `Not in the file (secrets left out of an export): ${s.unset.join(', ')}. Set them in the server's settings after the import.`));
  }
  return parts.length ? el('div', { class: 'import-details' }, parts) : null;
}
