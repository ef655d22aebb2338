// The conversation library: the sidebar's list (and, widened, the browser screen). Pinned first,
// then newest; only the rows in view are in the DOM, so 10,000 conversations scroll smoothly.
// Typing in the search box shows full-text hits (messages and tool calls) with the matched
// words highlighted; each row has a menu: rename, pin, duplicate, export, delete (with undo).
import { el, formatDate } from '../dom.js';

const ROW = 64; // px, one conversation row (see .conv in app.css)
const OVERSCAN = 6;
const MARK_START = '\uE000';
const MARK_END = '\uE001';

/** A snippet from the search, its matched words as <mark> elements (text nodes only). */
function highlighted(snippet) {
  const out = [];
  let rest = snippet;
  while (rest.length) {
    const a = rest.indexOf(MARK_START);
    if (a < 0) { out.push(rest); break; }
    const b = rest.indexOf(MARK_END, a);
    out.push(rest.slice(0, a));
    out.push(el('mark', {}, rest.slice(a + 1, b < 0 ? undefined : b)));
    rest = b < 0 ? '' : rest.slice(b + 1);
  }
  return out;
}

export class Sidebar {
  /**
   * actions: { onOpen(id, messageId?), onSearch(query) → hits, onRename(id, title),
   *   onPin(id, pinned), onDuplicate(id), onExport(id, format), onDelete(id), onUndo(id) }
   */
  constructor(root, search, actions) {
    this.root = root;
    this.search = search;
    this.actions = actions;
    this.activeId = null;
    this.items = [];
    this.query = '';
    this.rendered = new Map(); // index -> row node
    this.spacer = el('div', { class: 'vlist-spacer' });
    root.addEventListener('scroll', () => this.paint());
    new ResizeObserver(() => this.paint()).observe(root);
    let timer = null;
    search.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.runSearch(), 120);
    });
    search.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && search.value) { e.preventDefault(); e.stopPropagation(); search.value = ''; this.runSearch(); }
      if (e.key === 'Enter') { e.preventDefault(); this.root.querySelector('.hit, .conv')?.click(); }
    });
    document.addEventListener('click', (e) => {
      if (!e.target.closest('.conv-menu, .conv-menu-button')) this.closeMenu();
    });
  }

  /** The conversations (pinned first, newest next), as `list_conversations` gives them. */
  render(conversations) {
    this.items = conversations;
    if (this.query) return; // the hits stay until the search box is cleared
    this.showList();
  }

  showList() {
    this.rendered.clear();
    this.root.classList.remove('searching');
    if (!this.items.length) {
      this.root.replaceChildren(el('p', { class: 'sidebar-empty' }, 'No conversations yet. Your chats are saved here.'));
      return;
    }
    this.spacer.style.height = `${this.items.length * ROW}px`;
    this.spacer.replaceChildren();
    this.root.replaceChildren(this.spacer);
    this.paint();
  }

  /** Puts in the DOM the rows in view (and a few around), and only those. */
  paint() {
    if (this.query || !this.items.length || !this.spacer.isConnected) return;
    const first = Math.max(0, Math.floor(this.root.scrollTop / ROW) - OVERSCAN);
    const last = Math.min(this.items.length, Math.ceil((this.root.scrollTop + this.root.clientHeight) / ROW) + OVERSCAN);
    for (const [i, node] of this.rendered) {
      if (i < first || i >= last || node.dataset.id !== String(this.items[i]?.id)) {
        node.remove();
        this.rendered.delete(i);
      }
    }
    for (let i = first; i < last; i++) {
      if (this.rendered.has(i)) continue;
      const node = this.row(this.items[i]);
      node.style.top = `${i * ROW}px`;
      this.spacer.append(node);
      this.rendered.set(i, node);
    }
  }

  row(c) {
    const menu = el('button', { type: 'button', class: 'conv-menu-button', title: 'More', 'aria-label': `More for ${c.title}`,
      onclick: (e) => { e.stopPropagation(); this.openMenu(c, menu); } }, '⋯');
    // the row opens the conversation through a button of its own (its menu button beside it,
    // not inside: a button holds no other control)
    return el('div', { class: `conv${c.id === this.activeId ? ' active' : ''}${c.pinned ? ' pinned' : ''}`,
      title: c.title, dataset: { id: c.id }, onclick: () => this.actions.onOpen(c.id) },
    el('button', { type: 'button', class: 'conv-open', 'aria-current': c.id === this.activeId ? 'true' : null },
      el('span', { class: 'conv-title' }, c.pinned ? el('span', { class: 'pin', title: 'Pinned', 'aria-label': 'Pinned' }, '★ ') : null,
        c.imported ? el('span', { class: 'imported-mark', title: 'Imported from a file, not continued yet' }, 'imported') : null,
        el('span', { class: 'conv-name' }, c.title)),
      el('span', { class: 'conv-snippet' }, (c.snippet || '').replace(/[*_`#>~|]+/g, '') || ' '),
      el('span', { class: 'conv-meta' }, `${c.model} · ${formatDate(c.updatedAt)}`)),
    menu);
  }

  setActive(id) {
    this.activeId = id;
    for (const b of this.root.querySelectorAll('.conv')) {
      const on = Number(b.dataset.id) === id;
      b.classList.toggle('active', on);
      if (on) b.querySelector('.conv-open')?.setAttribute('aria-current', 'true');
      else b.querySelector('.conv-open')?.removeAttribute('aria-current');
    }
  }

  focusSearch() {
    this.search.focus();
    this.search.select();
  }

  // ---------- search ----------
  async runSearch() {
    this.query = this.search.value.trim();
    if (!this.query) { this.showList(); return; }
    const q = this.query;
    let hits;
    try {
      hits = await this.actions.onSearch(q);
    } catch (err) {
      this.root.replaceChildren(el('p', { class: 'sidebar-empty' }, err?.message ?? String(err)));
      return;
    }
    if (q !== this.query) return; // a newer search is under way
    this.root.classList.add('searching');
    this.rendered.clear();
    if (!hits.length) {
      this.root.replaceChildren(el('p', { class: 'sidebar-empty' }, `Nothing found for “${q}”.`));
      return;
    }
    this.root.replaceChildren(...hits.map((h) => el('button', { type: 'button', class: 'hit', dataset: { id: h.conversationId, message: h.messageId },
      onclick: () => this.actions.onOpen(h.conversationId, h.messageId) },
    el('span', { class: 'conv-title' }, h.title),
    el('span', { class: 'hit-kind' }, h.kind === 'tool' ? 'in a tool call' : 'in a message'),
    el('span', { class: 'hit-snippet' }, highlighted(h.snippet)))));
  }

  // ---------- the row menu ----------
  closeMenu() {
    document.querySelector('.conv-menu')?.remove();
  }

  openMenu(c, anchor) {
    this.closeMenu();
    const item = (label, action, cls = '') => el('button', { type: 'button', role: 'menuitem', class: `menu-action ${cls}`, dataset: { action: label },
      onclick: (e) => { e.stopPropagation(); this.closeMenu(); action(); } }, label);
    const menu = el('div', { class: 'conv-menu', role: 'menu' },
      item('Rename', () => this.rename(c)),
      item(c.pinned ? 'Unpin' : 'Pin', () => this.actions.onPin(c.id, !c.pinned)),
      item('Duplicate', () => this.actions.onDuplicate(c.id)),
      item('Export as Markdown', () => this.actions.onExport(c.id, 'markdown')),
      item('Export as JSON', () => this.actions.onExport(c.id, 'json')),
      item('Delete', () => this.remove(c), 'danger'));
    const r = anchor.getBoundingClientRect();
    menu.style.top = `${Math.min(r.bottom + 4, window.innerHeight - 230)}px`;
    menu.style.left = `${Math.max(8, r.right - 200)}px`;
    document.body.append(menu);
    menu.querySelector('button').focus();
    menu.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') { this.closeMenu(); anchor.focus(); }
      const items = [...menu.querySelectorAll('button')];
      const i = items.indexOf(document.activeElement);
      if (e.key === 'ArrowDown') { e.preventDefault(); items[(i + 1) % items.length].focus(); }
      if (e.key === 'ArrowUp') { e.preventDefault(); items[(i - 1 + items.length) % items.length].focus(); }
    });
  }

  rename(c) {
    const row = this.root.querySelector(`.conv[data-id="${c.id}"]`);
    if (!row) return;
    // the row's button gives way to the title field while it is edited (no field inside a button)
    const open = row.querySelector('.conv-open');
    const input = el('input', { class: 'rename-input', value: c.title, 'aria-label': 'New title', maxlength: 200 });
    const box = el('div', { class: 'conv-open renaming' }, input);
    const done = async (save) => {
      if (!input.isConnected) return;
      const t = input.value.trim();
      box.replaceWith(open);
      if (!save) open.focus();
      if (save && t && t !== c.title) await this.actions.onRename(c.id, t);
    };
    input.addEventListener('keydown', (e) => {
      e.stopPropagation();
      if (e.key === 'Enter') done(true);
      if (e.key === 'Escape') done(false);
    });
    input.addEventListener('click', (e) => e.stopPropagation());
    input.addEventListener('blur', () => done(true));
    open.replaceWith(box);
    input.focus();
    input.select();
  }

  /** Deleted at once; a toast offers Undo for a while. */
  async remove(c) {
    await this.actions.onDelete(c.id);
    document.querySelector('.toast')?.remove();
    const toast = el('div', { class: 'toast', role: 'status' },
      el('span', {}, `Deleted “${c.title}”.`),
      el('button', { type: 'button', class: 'btn', dataset: { action: 'undo' }, onclick: async () => { toast.remove(); await this.actions.onUndo(c.id); } }, 'Undo'));
    document.body.append(toast);
    setTimeout(() => toast.remove(), 10000);
  }
}
