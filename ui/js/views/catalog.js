// The catalog: the registry's servers, searched and paged lazily (more as the list is scrolled),
// each with what it runs and whether it needs secrets; icons fetched by the app (https only) and
// shown as data; the cached list with a note when the registry cannot be reached. Installing one
// (or a bundle) goes on in views/catalog-install.js. Every text from the registry is text.
import { el, $ } from '../dom.js';
import { kindText, catalogErrorText, whenText } from './words.js';
import { InstallFlow } from './catalog-install.js';

export class CatalogView {
  /**
   * actions: { search(term, cursor), icon(url), prepare(name), prepareUpdate(server), preview(token,
   *   choices), install(token, choices), cancel(token), start(name), pickBundle(), pickPath(folder),
   *   setRegistry(url), openLink(url), installed() (after an install or update), toast(text) }
   */
  constructor(dialog, actions) {
    this.dialog = dialog;
    this.actions = actions;
    this.list = $('#catalog-list', dialog);
    this.term = '';
    this.cursor = null;
    this.loading = false;
    this.generation = 0;
    // searched when the list is first shown
    this.stale = true;
    this.flow = new InstallFlow(dialog, actions, (panel) => this.show(panel));
    $('#catalog-search', dialog).addEventListener('input', (e) => {
      clearTimeout(this.typing);
      this.typing = setTimeout(() => this.search(e.target.value.trim()), 250);
    });
    $('#catalog-close', dialog).addEventListener('click', () => this.close());
    dialog.addEventListener('close', () => this.flow.cancel());
    $('#catalog-bundle', dialog).addEventListener('click', () => this.pickBundle());
    $('#catalog-registry-change', dialog).addEventListener('click', () => this.editRegistry(true));
    $('#catalog-registry-cancel', dialog).addEventListener('click', () => this.editRegistry(false));
    $('#catalog-registry-form', dialog).addEventListener('submit', (e) => { e.preventDefault(); this.saveRegistry(); });
    // more as the end of the list comes into view
    this.more = $('#catalog-more', dialog);
    new IntersectionObserver((seen) => {
      if (seen.some((s) => s.isIntersecting) && this.cursor && !this.loading) this.load();
    }, { root: $('#catalog-scroll', dialog) }).observe(this.more);
  }

  /** Opens the catalog at its list (searching again, so what changed shows). */
  open() {
    this.show('#catalog-browse');
    if (!this.dialog.open) this.dialog.showModal();
    this.search($('#catalog-search', this.dialog).value.trim());
    $('#catalog-search', this.dialog).focus();
  }

  close() {
    this.flow.cancel();
    this.dialog.close();
  }

  /** Shows one panel of the dialog: the list, the install form, the preview, or the last question. */
  show(panel) {
    for (const p of ['#catalog-browse', '#catalog-install', '#catalog-preview', '#catalog-confirm']) {
      $(p, this.dialog).hidden = p !== panel;
    }
    if (panel === '#catalog-browse' && this.stale) this.search(this.term);
  }

  /** A prepared install from elsewhere (a bundle opened with the app, an update from the servers list). */
  showPrepared(prepared) {
    if (!this.dialog.open) this.dialog.showModal();
    this.flow.start(prepared);
  }

  async openUpdate(server) {
    if (!this.dialog.open) this.dialog.showModal();
    this.show('#catalog-browse');
    this.setStatus('Getting the new version…');
    try {
      this.flow.start(await this.actions.prepareUpdate(server));
      this.setStatus('');
    } catch (err) {
      this.setStatus(catalogErrorText(err), true);
    }
  }

  async pickBundle() {
    try {
      const prepared = await this.actions.pickBundle();
      if (prepared) this.flow.start(prepared);
    } catch (err) {
      this.setStatus(err?.message ?? String(err), true);
    }
  }

  setStatus(text, bad = false) {
    const s = $('#catalog-status', this.dialog);
    s.textContent = text;
    s.classList.toggle('field-error', bad);
  }

  /** A new search: the list starts again from its first page. */
  search(term) {
    this.term = term;
    this.cursor = null;
    this.stale = false;
    this.generation += 1;
    this.list.replaceChildren();
    this.load(true);
  }

  async load(first = false) {
    const generation = this.generation;
    this.loading = true;
    // hidden while a page comes: shown again, it is seen again when it is still in view
    this.more.hidden = true;
    $('#catalog-loading', this.dialog).hidden = false;
    this.setStatus('');
    try {
      const page = await this.actions.search(this.term, first ? null : this.cursor);
      if (generation !== this.generation) return;
      this.cursor = page.nextCursor;
      this.showRegistry(page);
      this.list.append(...page.entries.map((e) => this.entry(e)));
      for (const s of page.skipped) {
        this.list.append(el('div', { class: 'catalog-skipped muted' },
          `An entry${s.name ? ` (${s.name})` : ''} could not be read and is left out: ${s.reason}.`));
      }
      if (first && !page.entries.length) {
        this.list.append(el('p', { class: 'catalog-empty muted' }, this.term
          ? `No server in this registry has “${this.term}” in its name.`
          : 'This registry lists no servers.'));
      }
    } catch (err) {
      if (generation !== this.generation) return;
      this.cursor = null;
      this.setStatus(catalogErrorText(err), true);
    } finally {
      if (generation === this.generation) {
        this.loading = false;
        $('#catalog-loading', this.dialog).hidden = true;
        this.more.hidden = !this.cursor;
        requestAnimationFrame(() => this.maybeMore());
      }
    }
  }

  /** The next page when the end of the list is (still) in view: a short list fills itself. */
  maybeMore() {
    if (!this.cursor || this.loading || !this.dialog.open || $('#catalog-browse', this.dialog).hidden) return;
    const view = $('#catalog-scroll', this.dialog).getBoundingClientRect();
    if (this.more.getBoundingClientRect().top <= view.bottom + 100) this.load();
  }

  showRegistry(page) {
    $('#catalog-registry', this.dialog).textContent = page.registry;
    const note = $('#catalog-offline', this.dialog);
    note.hidden = !page.offline;
    if (page.offline) {
      note.textContent = `The registry cannot be reached right now, so this is the list as it was on ${whenText(page.offline.fetchedAt)}. `
        + `(${page.offline.reason})`;
    }
  }

  editRegistry(on) {
    $('#catalog-registry-form', this.dialog).hidden = !on;
    if (on) {
      const input = $('#catalog-registry-url', this.dialog);
      input.value = $('#catalog-registry', this.dialog).textContent;
      input.focus();
    }
  }

  async saveRegistry() {
    const err = $('#catalog-registry-error', this.dialog);
    err.textContent = '';
    try {
      await this.actions.setRegistry($('#catalog-registry-url', this.dialog).value);
      this.editRegistry(false);
      this.search(this.term);
    } catch (e) {
      err.textContent = e?.message ?? String(e);
    }
  }

  /** One entry: its icon, words and what it runs; Install, or what it is installed as. */
  entry(e) {
    const icon = el('span', { class: 'catalog-icon', 'aria-hidden': 'true' }, (e.title || e.name.split('/').pop() || '?').slice(0, 1).toUpperCase());
    if (e.icon) {
      this.actions.icon(e.icon).then((data) => {
        if (typeof data === 'string' && /^data:image\/(png|jpeg|webp);base64,/.test(data)) {
          icon.replaceChildren(el('img', { src: data, alt: '', width: 32, height: 32 }));
        }
      }).catch(() => {});
    }
    const install = el('button', {
      type: 'button', class: 'btn small primary', dataset: { act: 'install' }, disabled: !e.installable,
      title: e.installable ? 'See what it runs before anything is added' : 'Nothing it offers can run on this computer',
      onclick: () => this.prepare(e, install),
    }, e.installed ? 'Install again…' : 'Install…');
    const links = [e.repository && ['Source', e.repository], e.website && ['Website', e.website]].filter(Boolean);
    return el('article', { class: `catalog-entry${e.deprecated ? ' deprecated' : ''}`, dataset: { name: e.name } },
      icon,
      el('div', { class: 'catalog-main' },
        el('div', { class: 'catalog-head' },
          el('strong', { class: 'catalog-title' }, e.title || e.name),
          el('span', { class: 'catalog-version muted' }, e.version),
          e.deprecated ? el('span', { class: 'badge deprecated', title: e.statusMessage ?? '' }, 'deprecated') : null,
          e.installed ? el('span', { class: 'badge installed' }, `installed as ${e.installed.server} (${e.installed.version})`) : null),
        el('div', { class: 'catalog-name muted' }, e.name),
        el('p', { class: 'catalog-description' }, e.description),
        e.deprecated && e.statusMessage ? el('p', { class: 'catalog-status-message muted' }, e.statusMessage) : null,
        el('div', { class: 'catalog-meta' },
          ...e.kinds.map((k) => el('span', { class: 'chip catalog-kind' }, kindText(k))),
          e.needsSecrets ? el('span', { class: 'chip catalog-secret', title: 'It asks for a key, a token or a password: kept in the keyring' }, 'needs a secret') : null,
          ...links.map(([label, url]) => el('button', {
            type: 'button', class: 'btn small ghost catalog-link', title: url,
            onclick: () => this.actions.openLink(url),
          }, label)))),
      el('div', { class: 'catalog-actions' }, install));
  }

  async prepare(e, button) {
    button.disabled = true;
    this.setStatus(e.kinds.includes('mcpb') ? 'Downloading the bundle and checking it…' : '');
    try {
      this.flow.start(await this.actions.prepare(e.name));
      this.setStatus('');
    } catch (err) {
      this.setStatus(catalogErrorText(err), true);
    } finally {
      button.disabled = !e.installable;
    }
  }

  /** After an install: the list's "installed" badges come from the engine on the next search. */
  changed() {
    this.stale = true;
  }
}
