// The keyboard shortcuts: one table (what the help sheet lists, what the buttons' tooltips say)
// and the window-wide handler that runs them. The sheet opens with ? (outside a text field),
// Ctrl+/ or F1.
import { el } from '../dom.js';

/**
 * Each shortcut: `keys` as shown, `label`, `match(e)` for the window-wide ones (null: handled
 * where it applies, listed for the sheet), `run` the action's name in `actions`.
 */
export const SHORTCUTS = [
  { group: 'Chats', keys: ['Ctrl', 'N'], label: 'New chat', run: 'newChat', match: (e) => ctrl(e) && key(e, 'n') },
  { group: 'Chats', keys: ['Ctrl', 'K'], label: 'Search conversations', run: 'search', match: (e) => ctrl(e) && key(e, 'k') },
  { group: 'Chats', keys: ['Alt', '↓'], label: 'Next conversation', run: 'nextConversation', match: (e) => e.altKey && !ctrl(e) && e.key === 'ArrowDown' },
  { group: 'Chats', keys: ['Alt', '↑'], label: 'Previous conversation', run: 'previousConversation', match: (e) => e.altKey && !ctrl(e) && e.key === 'ArrowUp' },
  { group: 'Chats', keys: ['Ctrl', 'M'], label: 'Choose the model', run: 'focusModel', match: (e) => ctrl(e) && !e.shiftKey && key(e, 'm') },
  { group: 'Writing', keys: ['Ctrl', 'L'], label: 'Go to the message box', run: 'focusComposer', match: (e) => ctrl(e) && key(e, 'l') },
  { group: 'Writing', keys: ['Enter'], label: 'Send', match: null },
  { group: 'Writing', keys: ['Shift', 'Enter'], label: 'New line', match: null },
  { group: 'Writing', keys: ['↑'], label: 'Edit your last message (in an empty message box)', match: null },
  { group: 'Writing', keys: ['/'], label: 'Use a server’s prompt (at the start of the message)', match: null },
  { group: 'Writing', keys: ['Esc'], label: 'Stop the reply', run: 'stop', match: null },
  { group: 'Window', keys: ['Ctrl', ','], label: 'Settings', run: 'settings', match: (e) => ctrl(e) && e.key === ',' },
  { group: 'Window', keys: ['Esc'], label: 'Close a dialog, a menu or the conversation browser', match: null },
  { group: 'Window', keys: ['Ctrl', '/'], label: 'Keyboard shortcuts (also ? and F1)', run: 'help',
    match: (e) => (ctrl(e) && (e.key === '/' || e.code === 'Slash')) || e.key === 'F1' || (e.key === '?' && !typing(e)) },
];

const ctrl = (e) => e.ctrlKey || e.metaKey;
const key = (e, k) => e.key.toLowerCase() === k;
const typing = (e) => e.target instanceof HTMLElement
  && (e.target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(e.target.tagName));

/** The id `step` places from `current` in `ids` (none open: the first or the last); null past the ends. */
export function stepIn(ids, current, step) {
  if (!ids.length) return null;
  const at = ids.indexOf(current);
  const next = at < 0 ? (step > 0 ? 0 : ids.length - 1) : at + step;
  return next >= 0 && next < ids.length ? ids[next] : null;
}

/** "Ctrl+N", for tooltips. */
export function keysOf(run) {
  return SHORTCUTS.find((s) => s.run === run)?.keys.join('+') ?? '';
}

/**
 * Runs the window-wide shortcuts: `actions[name]()` for each; a dialog open above the window
 * keeps them to itself (but the sheet's own key closes the sheet).
 */
export function installShortcuts(actions) {
  document.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || e.isComposing) return;
    const modal = document.querySelector('dialog[open]');
    for (const s of SHORTCUTS) {
      if (!s.match || !s.run || !s.match(e)) continue;
      if (modal && !(s.run === 'help' && modal.id === 'shortcuts-dialog')) return;
      e.preventDefault();
      actions[s.run]?.();
      return;
    }
  });
}

/** The help sheet: every shortcut, grouped, in a table a screen reader reads as one. */
export class ShortcutSheet {
  constructor(dialog) {
    this.dialog = dialog;
    const groups = [...new Set(SHORTCUTS.map((s) => s.group))];
    dialog.querySelector('.shortcut-groups').replaceChildren(...groups.map((g) =>
      el('table', { class: 'shortcuts' },
        el('caption', {}, g),
        el('tbody', {}, SHORTCUTS.filter((s) => s.group === g).map((s) =>
          el('tr', {},
            el('td', { class: 'shortcut-keys' }, s.keys.flatMap((k, i) => [i ? '+' : null, el('kbd', {}, k)])),
            el('td', {}, s.label)))))));
    dialog.querySelector('.shortcuts-close').addEventListener('click', () => dialog.close());
  }

  toggle() {
    if (this.dialog.open) this.dialog.close();
    else this.dialog.showModal();
  }
}
