// The debug view (the original CLI's `debug`): each recent LLM call of the chat, with the exact
// request and the response objects as they came, pretty-printed as text.
import { el, formatDuration } from '../dom.js';

const pretty = (v) => JSON.stringify(v, null, 2);

export function renderDebug(root, calls) {
  if (!calls.length) {
    root.replaceChildren(el('p', { class: 'hint' }, 'No LLM calls recorded for this chat yet.'));
    return;
  }
  root.replaceChildren(...calls.map((c, i) => el('details', { class: `debug-call${c.error ? ' error' : ''}`, open: i === calls.length - 1 },
    el('summary', {},
      el('strong', {}, `#${i + 1} ${c.model}`),
      el('span', { class: 'muted' }, ` · ${new Date(c.startedAt).toLocaleTimeString()} · ${formatDuration(c.durationMs)} · ${c.response.length} response objects`),
      c.error ? el('span', { class: 'field-error' }, ` · ${c.error}`) : null),
    el('div', { class: 'card-label' }, 'Request'),
    el('pre', { class: 'code debug-request' }, pretty(c.request)),
    el('div', { class: 'card-label' }, 'Response'),
    el('pre', { class: 'code debug-response' }, c.response.map((r) => JSON.stringify(r)).join('\n')))));
}
