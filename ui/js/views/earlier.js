// The summary that stands for older turns of a long conversation in requests to the model (the
// engine's chat::context): a folded "Earlier conversation, summarised" block after the last
// message it covers, which the user can open, read and edit (the next request carries the edit).
// The conversation itself stays whole above it: only what is sent to the model changes.
import { el } from '../dom.js';

/** How many messages, in words. */
const messages = (n) => `${n} message${n === 1 ? '' : 's'}`;

/**
 * Shows `summary` ({ id, throughId, covers, text, model, edited }) in the chat `root`, in place of
 * the block shown before (a summary reaching further replaces it); null removes it.
 * `save(id, text)` → Promise of the stored summary (rejects with an error whose message is shown).
 */
export function showSummary(root, summary, save) {
  const old = root.querySelector('.earlier-summary');
  const wasOpen = old?.open && Number(old.dataset.id) === summary?.id;
  old?.remove();
  if (!summary) return null;
  const block = summaryBlock(summary, save);
  block.open = Boolean(wasOpen);
  // after the last message it covers: before the first message shown after it (messages of a
  // branch are stored in order, so ids grow along it)
  const after = [...root.querySelectorAll(':scope > article.msg[data-id]')]
    .find((m) => Number(m.dataset.id) > summary.throughId);
  if (after) root.insertBefore(block, after);
  else root.append(block);
  return block;
}

function summaryBlock(summary, save) {
  const text = el('p', { class: 'earlier-text' }, summary.text);
  const note = el('p', { class: 'muted earlier-note' },
    `Written by ${summary.model}${summary.edited ? ', edited by you' : ''}. The model is sent this instead of the `
    + `${messages(summary.covers)} above it (they stay here, in search and in exports).`);
  const edit = el('button', { type: 'button', class: 'btn small', dataset: { action: 'edit-summary' } }, 'Edit');
  const body = el('div', { class: 'earlier-body' }, text, note, el('div', { class: 'earlier-actions' }, edit));
  const block = el('details', { class: 'earlier-summary', dataset: { id: summary.id, throughId: summary.throughId } },
    el('summary', {}, `Earlier conversation, summarised (${messages(summary.covers)})`),
    body);
  edit.addEventListener('click', () => editIn(block, body, summary, save));
  return block;
}

/** The editor in place of the text: Save sends it, Cancel (or Escape) goes back. */
function editIn(block, body, summary, save) {
  const area = el('textarea', { class: 'earlier-editor', rows: 6, 'aria-label': 'Summary of the earlier conversation' });
  area.value = summary.text;
  const error = el('p', { class: 'field-error', role: 'alert' });
  const cancel = el('button', { type: 'button', class: 'btn small' }, 'Cancel');
  const ok = el('button', { type: 'button', class: 'btn small primary', dataset: { action: 'save-summary' } }, 'Save');
  const editor = el('div', { class: 'earlier-body editing' }, area, error, el('div', { class: 'earlier-actions' }, cancel, ok));
  body.replaceWith(editor);
  const back = () => { editor.replaceWith(body); body.querySelector('button')?.focus(); };
  cancel.addEventListener('click', back);
  area.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); back(); }
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); ok.click(); }
  });
  ok.addEventListener('click', async () => {
    ok.disabled = true;
    error.textContent = '';
    try {
      const saved = await save(summary.id, area.value);
      const fresh = summaryBlock(saved, save);
      fresh.open = true;
      block.replaceWith(fresh);
      fresh.querySelector('summary').focus();
    } catch (err) {
      error.textContent = err?.message ?? String(err);
      ok.disabled = false;
    }
  });
  area.focus();
}
