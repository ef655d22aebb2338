// Installing from the catalog: the form the entry (or bundle) asks, checked by the engine; the
// preview of exactly what would run (command, each argument, environment with secrets masked, the
// proposed sandbox, the bundle's signature, an update's diff); then the same consent as an import:
// added turned off, and started only after a second yes that lists what runs.
import { el, $ } from '../dom.js';
import { diffView } from './diff.js';
import { catalogNoteText, envRiskText, grantWhyText, networkText, signatureText, targetText, kindText } from './words.js';

export class InstallFlow {
  /** show(panel) shows one panel of the catalog dialog. */
  constructor(dialog, actions, show) {
    this.dialog = dialog;
    this.actions = actions;
    this.showPanel = show;
    this.prepared = null;
    this.inputs = new Map();
    $('#catalog-install-form', dialog).addEventListener('submit', (e) => { e.preventDefault(); this.preview(); });
    $('#catalog-install-cancel', dialog).addEventListener('click', () => this.back());
    $('#catalog-folders-choose', dialog).addEventListener('click', async () => {
      const picked = await this.actions.pickPath(true).catch(() => null);
      const box = $('#catalog-folders', dialog);
      if (picked) box.value = box.value.trim() ? `${box.value.trim()}\n${picked}` : picked;
    });
    $('#catalog-preview-back', dialog).addEventListener('click', () => this.showPanel('#catalog-install'));
    $('#catalog-preview-go', dialog).addEventListener('click', () => this.install());
    $('#catalog-keep-off', dialog).addEventListener('click', () => this.back());
    $('#catalog-start', dialog).addEventListener('click', () => this.startServer());
  }

  /** Shows the form of a prepared install. */
  start(prepared) {
    this.cancel();
    this.prepared = prepared;
    const p = prepared;
    const form = $('#catalog-install-form', this.dialog);
    $('#catalog-install-title', form).textContent = p.update?.completes
      ? `Complete “${p.update.server}”: it needs a secret`
      : p.update ? `Update “${p.update.server}” to ${p.update.to}` : `Install ${p.title}`;
    // what the preview adds: folders it may write (a database's, offered), proposals left out
    this.extra = { write: [], declined: [] };
    $('#catalog-install-about', form).replaceChildren(
      el('span', { class: 'muted' }, `${p.name} ${p.version} · ${kindText(p.kind)}`),
      p.signature ? el('span', { class: `catalog-signature ${p.signature.status}` }, signatureText(p.signature)) : null,
      el('p', {}, p.description));
    const name = $('#catalog-name', form);
    name.value = p.update ? p.update.server : p.defaultName;
    name.disabled = Boolean(p.update);
    $('#catalog-network-row', form).hidden = p.remote;
    $('#catalog-network', form).checked = false;
    $('#catalog-folders-row', form).hidden = p.remote;
    $('#catalog-folders', form).value = '';
    $('#catalog-confirm-write', form).value = '';
    $('#catalog-confirm-write-row', form).hidden = true;
    this.inputs = new Map();
    $('#catalog-fields', form).replaceChildren(...p.fields.map((f) => this.field(f, p.values?.[f.key])));
    if (!p.fields.length) $('#catalog-fields', form).append(el('p', { class: 'muted' }, 'It asks for nothing.'));
    this.clearErrors();
    this.showPanel('#catalog-install');
    (form.querySelector('#catalog-fields input, #catalog-fields select') ?? name).focus();
  }

  /** A form row for a field: its input (a password box for a secret, a box for yes/no, a list for
   * choices, a path with Choose… for folders and files), its words, and where it goes. */
  field(f, current) {
    const id = `catalog-field-${this.inputs.size}`;
    const kept = current && typeof current === 'object' && !Array.isArray(current) && 'secret' in current;
    const initial = kept ? null : current ?? f.default;
    let input;
    if (f.kind === 'boolean') {
      input = el('input', { id, type: 'checkbox', checked: initial === true || initial === 'true' });
    } else if (f.kind === 'choice') {
      input = el('select', { id }, f.required ? null : el('option', { value: '' }, '(none)'),
        ...f.choices.map((c) => el('option', { value: c, selected: c === initial }, c)));
    } else {
      input = el('input', {
        id, type: f.secret ? 'password' : f.kind === 'number' ? 'number' : 'text',
        spellcheck: 'false', autocomplete: 'off',
        value: Array.isArray(initial) ? initial.join(',') : initial ?? '',
        placeholder: kept ? 'kept (type to replace it)' : f.placeholder ?? (f.multiple ? 'one or more, separated by commas' : ''),
        min: f.min ?? null, max: f.max ?? null,
      });
    }
    this.inputs.set(f.key, { field: f, input, kept });
    const choose = ['file', 'directory', 'path'].includes(f.kind)
      ? el('button', {
        type: 'button', class: 'btn small', onclick: async () => {
          const picked = await this.actions.pickPath(f.kind !== 'file').catch(() => null);
          if (picked) input.value = f.multiple && input.value ? `${input.value},${picked}` : picked;
        },
      }, 'Choose…')
      : null;
    const label = `${f.label}${f.required ? '' : ' (optional)'}`;
    return el('div', { class: `field catalog-field${f.kind === 'boolean' ? ' check' : ''}`, dataset: { key: f.key } },
      el('label', { for: id }, label,
        el('small', { class: 'hint' }, ` ${targetText(f.target)}${f.secret ? '; a secret, kept in the keyring' : ''}`)),
      el('div', { class: 'catalog-input' }, input, choose),
      f.description ? el('small', { class: 'hint' }, f.description) : null,
      el('small', { class: 'field-error', dataset: { for: f.key } }));
  }

  /** The choices as the engine takes them. */
  choices() {
    const values = {};
    for (const [key, { field, input, kept }] of this.inputs) {
      if (field.kind === 'boolean') { values[key] = input.checked; continue; }
      const v = input.value;
      if (kept && v === '') { values[key] = { secret: 'kept' }; continue; }
      if (v === '') continue;
      values[key] = field.multiple ? v.split(',').map((x) => x.trim()).filter(Boolean) : v;
    }
    const lines = (id) => $(id, this.dialog).value.split('\n').map((l) => l.trim()).filter(Boolean);
    return {
      name: $('#catalog-name', this.dialog).value.trim(), values, folders: lines('#catalog-folders'),
      confirmWrite: lines('#catalog-confirm-write'), network: $('#catalog-network', this.dialog).checked,
      write: this.extra?.write ?? [], declined: this.extra?.declined ?? [],
    };
  }

  clearErrors() {
    for (const e of this.dialog.querySelectorAll('#catalog-install-form .field-error')) e.textContent = '';
  }

  showError(err) {
    const field = err?.field;
    // a folder that decides what runs at login: its confirmation box, shown once it is needed
    if (field === 'confirmWrite') {
      $('#catalog-confirm-write-row', this.dialog).hidden = false;
      $('#catalog-confirm-write', this.dialog).focus();
    }
    const slot = (field && this.dialog.querySelector(`#catalog-install-form .field-error[data-for="${CSS.escape(field)}"]`))
      ?? $('#catalog-install-error', this.dialog);
    slot.textContent = err?.message ?? String(err);
  }

  async preview() {
    this.clearErrors();
    try {
      this.shown = await this.actions.preview(this.prepared.token, this.choices());
    } catch (err) {
      this.showError(err);
      return;
    }
    const v = this.shown;
    $('#catalog-preview-title', this.dialog).textContent = this.prepared.update
      ? `Update “${v.name}”: what changes` : `What “${v.name}” runs`;
    $('#catalog-preview-body', this.dialog).replaceChildren(...previewRows(v, false, this.previewActions()));
    $('#catalog-preview-go', this.dialog).textContent = this.prepared.update?.completes ? 'Complete it'
      : this.prepared.update ? 'Update' : 'Add it (turned off)';
    this.showPanel('#catalog-preview');
    $('#catalog-preview-go', this.dialog).focus();
  }

  /** What the preview's rows may change: a folder to let it write, a proposed grant to leave out
   * (or take back); each shows the preview again. */
  previewActions() {
    const again = () => this.preview();
    return {
      allowFolder: (folder) => { if (!this.extra.write.includes(folder)) this.extra.write.push(folder); again(); },
      decline: (path, leaveOut) => {
        this.extra.declined = this.extra.declined.filter((d) => d !== path);
        if (leaveOut) this.extra.declined.push(path);
        again();
      },
      declined: this.extra.declined,
    };
  }

  async install() {
    const button = $('#catalog-preview-go', this.dialog);
    button.disabled = true;
    try {
      const update = this.prepared.update;
      this.name = await this.actions.install(this.prepared.token, this.choices());
      this.prepared = null;
      await this.actions.installed();
      if (update && !update.completes) {
        this.actions.toast(`Updated “${this.name}” to ${update.to}. Changed tools ask before they run until you accept them.`);
        this.showPanel('#catalog-browse');
        return;
      }
      // the second yes: what would start, listed again
      $('#catalog-confirm-title', this.dialog).textContent = `Start “${this.name}” now?`;
      $('#catalog-confirm-body', this.dialog).replaceChildren(...previewRows(this.shown, true));
      this.showPanel('#catalog-confirm');
      $('#catalog-keep-off', this.dialog).focus();
    } catch (err) {
      $('#catalog-preview-error', this.dialog).textContent = err?.message ?? String(err);
    } finally {
      button.disabled = false;
    }
  }

  async startServer() {
    await this.actions.start(this.name);
    this.actions.toast(`“${this.name}” is starting. Its tools are pinned when it first connects.`);
    this.showPanel('#catalog-browse');
  }

  back() {
    this.cancel();
    this.showPanel('#catalog-browse');
  }

  /** Forgets the install being prepared (and the secrets typed in its form). */
  cancel() {
    if (this.prepared) this.actions.cancel(this.prepared.token).catch(() => {});
    this.prepared = null;
    for (const { input } of this.inputs.values()) input.value = '';
    this.inputs = new Map();
    $('#catalog-fields', this.dialog).replaceChildren();
    for (const id of ['#catalog-install-error', '#catalog-preview-error']) $(id, this.dialog).textContent = '';
  }
}

/** The preview, as rows of text: every argument on its own, secrets never shown; `acts` (the
 * preview's, not the second yes's) offers a database's folder and leaving a proposed grant out. */
function previewRows(v, short = false, acts = null) {
  const rows = [];
  const row = (label, ...value) => rows.push(el('div', { class: 'preview-row' }, el('span', { class: 'preview-label' }, label), el('div', { class: 'preview-value' }, ...value)));
  if (v.command) {
    row('Runs', el('code', { class: 'preview-command' }, v.command),
      ...v.args.map((a) => el('code', { class: 'preview-arg', title: 'One argument, exactly as passed (no shell)' }, a)));
  }
  if (v.cwd) row('In', el('code', {}, v.cwd));
  if (v.url) row('Connects to', el('code', {}, v.url));
  if (v.env.length) {
    row('Environment', ...v.env.map((e) => el('div', { class: `preview-env${e.risk ? ' risky' : ''}`, title: e.risk ? envRiskText(e.risk) : '' },
      el('code', {}, e.name), ' = ', e.secret ? el('span', { class: 'secret-dots' }, '•••• (a secret, kept in the keyring)') : el('code', {}, e.value))));
  }
  if (v.headers.length) {
    row('Headers', ...v.headers.map((h) => el('div', {}, el('code', {}, h.name), ': ', el('span', { class: 'secret-dots' }, '•••• (kept in the keyring)'))));
  }
  if (v.sandbox) {
    // every grant, each with why (the engine lists them: nothing of its arguments is granted)
    const grants = v.grants ?? [];
    const leaveOut = (g) => acts && g.why?.kind === 'proposed'
      ? el('button', { type: 'button', class: 'btn small', onclick: () => acts.decline(g.path, true) }, 'Leave it out')
      : null;
    const declined = acts?.declined ?? [];
    row('Sandbox', el('div', {}, `On. Network: ${networkText(v.network, v.sandbox.hosts)}`),
      grants.length
        ? el('ul', { class: 'preview-grants' }, ...grants.map((g) => el('li', { class: g.means ? 'risky' : '' },
          `${g.write ? 'May read and write' : 'May read'} `, el('code', {}, g.path), ` (${grantWhyText(g.why)})`,
          g.means ? el('strong', {}, ` — ${g.means}.`) : null, ' ', leaveOut(g))))
        : null,
      ...declined.map((d) => el('div', { class: 'muted' }, 'Left out: ', el('code', {}, d), ' ',
        el('button', { type: 'button', class: 'btn small', onclick: () => acts.decline(d, false) }, 'Let it read it'))),
      grants.some((g) => g.why?.kind !== 'bundleFolder') ? null : el('div', { class: 'muted' }, 'No folders of yours.'));
  } else if (!v.command) {
    row('Sandbox', el('div', { class: 'muted' }, 'None: it runs elsewhere and gets what you send it.'));
  }
  if (v.signature) row('Signature', el('span', { class: `catalog-signature ${v.signature.status}` }, signatureText(v.signature)));
  if (!short) {
    for (const n of v.notes) {
      rows.push(el('p', { class: 'preview-note' }, catalogNoteText(n),
        n.kind === 'fileNeedsFolder' && acts
          ? el('button', { type: 'button', class: 'btn small', onclick: () => acts.allowFolder(n.folder) }, `Let it write ${n.folder}`)
          : null));
    }
    if (v.diff) rows.push(el('div', { class: 'preview-diff' }, el('span', { class: 'preview-label' }, 'Its settings, before and after'), diffView(v.diff)));
    if (v.startsOff) rows.push(el('p', { class: 'hint' }, 'It is added turned off and not trusted (every call asks); you are asked once more before it starts.'));
  }
  return rows;
}
