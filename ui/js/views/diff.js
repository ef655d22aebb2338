// What changed in a tool's definition, line by line (the lines come from the Rust side; shown as
// text only).
import { el } from '../dom.js';

/** A block of diff lines; unchanged runs longer than 6 lines are folded to their ends. */
export function diffView(lines) {
  const out = [];
  let same = [];
  const flush = (last) => {
    if (same.length > 6) {
      const head = out.length ? same.slice(0, 2) : [];
      const tail = last ? [] : same.slice(-2);
      out.push(...head.map(line), el('div', { class: 'diff-line fold' }, `… ${same.length - head.length - tail.length} unchanged lines`), ...tail.map(line));
    } else {
      out.push(...same.map(line));
    }
    same = [];
  };
  for (const l of lines) {
    if (l.change === 'same') { same.push(l); continue; }
    flush(false);
    out.push(line(l));
  }
  flush(true);
  return el('div', { class: 'diff', role: 'group', 'aria-label': 'What changed' }, out);
}

function line(l) {
  const mark = { same: ' ', removed: '−', added: '+' }[l.change];
  return el('div', { class: `diff-line ${l.change}` }, `${mark} ${l.text}`);
}
