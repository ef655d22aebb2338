// The window's own state, kept by the app in window-state.json (never the engine's settings): the
// theme, the sidebar's width, the conversation that was open and its scroll, dismissed hints,
// the first run. Drafts are drafts.js's. Views only: what is kept goes through `api`.
//
// The theme is set on `<html data-theme>` ("system" follows the desktop through the CSS media
// query) and chosen in Settings → This window; the sidebar's width is dragged or arrow-keyed on its
// edge.
import { el } from '../dom.js';

/** The desktop's scheme, followed while the theme is "system". */
const desktopDark = matchMedia('(prefers-color-scheme: dark)');

/** api = { load(): Promise<WindowState>, change(patch): Promise<void> } (ipc.windowState/changeWindowState) */
export class WindowKeeper {
  constructor(api) {
    this.api = api;
    this.state = null;
    this.timers = new Map();
    // the desktop's scheme at once (the kept choice comes later, from the app), then live
    this.applyTheme('system');
    desktopDark.addEventListener('change', () => this.applyTheme(this.state?.theme ?? 'system'));
  }

  async load() {
    try {
      this.state = await this.api.load();
    } catch (err) {
      console.warn('window state', err);
      this.state = { theme: 'system', sidebarWidth: null, open: null, hints: [], firstRunDone: true, drafts: {},
        note: null };
    }
    this.applyTheme(this.state.theme);
    if (this.state.sidebarWidth) setSidebarWidth(this.state.sidebarWidth);
    return this.state;
  }

  /** A change now (theme, hints, first run). */
  change(patch) {
    Object.assign(this.state, patch);
    return this.api.change(patch).catch((err) => console.warn('window state', err));
  }

  /** A change written once things are still for `ms` (scrolling, dragging). */
  changeLater(key, patch, ms = 400) {
    Object.assign(this.state, patch);
    clearTimeout(this.timers.get(key));
    this.timers.set(key, setTimeout(() => { this.timers.delete(key); this.change(patch); }, ms));
  }

  // ---------- theme ----------
  setTheme(theme) {
    this.applyTheme(theme);
    this.change({ theme });
  }

  /** The theme's choice in Settings → This window: applied and kept at once. */
  wireTheme(select) {
    select.value = this.state.theme ?? 'system';
    select.addEventListener('change', () => this.setTheme(select.value));
  }

  /** <html data-theme> is always the scheme shown ("light" or "dark"): the choice, or the
   *  desktop's for "system" — so the stylesheet writes the dark palette once. */
  applyTheme(theme) {
    const dark = theme === 'dark' || (theme !== 'light' && desktopDark.matches);
    document.documentElement.dataset.theme = dark ? 'dark' : 'light';
  }

  // ---------- the open conversation and its scroll ----------
  /** Keeps which conversation is open (null: a new chat) and where `scroller` is scrolled. */
  rememberOpen(conversationId, scroller) {
    const atEnd = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 40;
    const open = conversationId === null ? null : { conversationId, scrollTop: Math.round(scroller.scrollTop), atEnd };
    this.changeLater('open', { open });
  }

  // ---------- hints ----------
  dismissed(id) {
    return this.state?.hints?.includes(id);
  }

  dismiss(id) {
    if (!this.dismissed(id)) this.change({ hints: [...(this.state.hints ?? []), id] });
  }

  /** A hint with a close button that is not shown again once closed; null when it was closed. */
  hint(id, ...content) {
    if (this.dismissed(id)) return null;
    const box = el('div', { class: 'hint-box', role: 'note', dataset: { hint: id } }, ...content,
      el('button', { type: 'button', class: 'btn ghost small hint-close', 'aria-label': 'Dismiss this hint', title: 'Dismiss',
        onclick: () => { box.remove(); this.dismiss(id); } }, '✕'));
    return box;
  }

  // ---------- the sidebar's width ----------
  /** Makes `handle` (at the sidebar's edge) drag or arrow-key the sidebar's width. */
  sidebarResizer(handle, sidebar) {
    const set = (w, later = true) => {
      const width = Math.round(Math.max(180, Math.min(w, 520)));
      setSidebarWidth(width);
      handle.setAttribute('aria-valuenow', String(Math.round(sidebar.getBoundingClientRect().width)));
      if (later) this.changeLater('sidebar', { sidebarWidth: width });
    };
    handle.setAttribute('aria-valuenow', String(Math.round(sidebar.getBoundingClientRect().width)));
    handle.addEventListener('pointerdown', (e) => {
      e.preventDefault();
      handle.setPointerCapture(e.pointerId);
      const left = sidebar.getBoundingClientRect().left;
      const move = (ev) => set(ev.clientX - left);
      const up = () => { handle.removeEventListener('pointermove', move); handle.removeEventListener('pointerup', up); };
      handle.addEventListener('pointermove', move);
      handle.addEventListener('pointerup', up);
    });
    handle.addEventListener('keydown', (e) => {
      const now = sidebar.getBoundingClientRect().width;
      if (e.key === 'ArrowLeft') { e.preventDefault(); set(now - 16); }
      if (e.key === 'ArrowRight') { e.preventDefault(); set(now + 16); }
      if (e.key === 'Home') { e.preventDefault(); set(260); }
    });
  }
}

/**
 * Opens `open.conversationId` again and scrolls it as it was (`atEnd`: to its end, where new
 * messages went). A conversation deleted since: `gone()`, and the new chat stays.
 */
export async function reopenLast(open, { load, show, scroller, gone }) {
  if (!open?.conversationId) return;
  try {
    show(await load(open.conversationId));
    scroller.scrollTop = open.atEnd ? scroller.scrollHeight : open.scrollTop;
  } catch {
    gone();
  }
}

function setSidebarWidth(px) {
  document.documentElement.style.setProperty('--sidebar-width', `${px}px`);
}
