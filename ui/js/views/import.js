// Import servers from another host's config (with a preview and name conflicts resolved), and
// export ours.
import { el, $ } from '../dom.js';

export class ImportExportView {
  /** actions: { preview(text), pickFile(), import(choices), export() }; onShow(panel|null) hides the rest of the dialog */
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
      el('input', { type: 'checkbox', class: 'import-include', checked: true, 'aria-label': `Import ${s.name}` }),
      el('input', { class: 'import-name', value: s.suggestedName, 'aria-label': 'Name' }),
      s.conflict
        ? el('select', { class: 'import-mode', 'aria-label': `“${s.name}” exists` },
          el('option', { value: 'rename' }, 'keep both (import under this name)'),
          el('option', { value: 'replace' }, `replace the existing “${s.name}”`))
        : el('span', { class: 'muted' }, 'new'),
      el('code', { class: 'import-cmd' }, s.server.url ?? [s.server.command, ...(s.server.args ?? [])].join(' '))));
    for (const row of rows) {
      const mode = row.querySelector('.import-mode');
      mode?.addEventListener('change', () => {
        const s = this.preview.servers[Number(row.dataset.index)];
        row.querySelector('.import-name').value = mode.value === 'replace' ? s.name : s.suggestedName;
      });
    }
    const skipped = this.preview.skipped.map((s) => el('div', { class: 'import-skipped muted' }, `Skipped “${s.name}”: ${s.reason}`));
    $('#import-preview', this.dialog).replaceChildren(
      el('p', { class: 'muted' }, `Read as ${this.preview.format}: ${this.preview.servers.length} server(s).`), ...rows, ...skipped);
    $('#import-go', this.dialog).disabled = !rows.length;
  }

  async doImport() {
    const choices = [];
    for (const row of this.dialog.querySelectorAll('.import-row')) {
      if (!row.querySelector('.import-include').checked) continue;
      const s = this.preview.servers[Number(row.dataset.index)];
      choices.push({
        name: row.querySelector('.import-name').value.trim(),
        server: s.server,
        replace: row.querySelector('.import-mode')?.value === 'replace',
      });
    }
    try {
      await this.actions.import(choices);
      this.close();
    } catch (e) {
      $('#import-error', this.dialog).textContent = e?.message ?? String(e);
    }
  }
}
