// The bounded settings' inputs: each names its setting (`data-setting="maxIterations"`), and its
// bounds, step and placeholder, and the one check of what was typed, come from the table the
// engine exports (`ipc.settingLimits`, the engine's `settings::schema`). No range is written in
// the window: the engine's table is the only one (and the engine checks again on save).

/** The table, by key: { label, min, max, step, whole, unit, default, optional, message }. */
let table = {};

/** Takes the engine's table and sets every `input[data-setting]` of the page from it. */
export function useLimits(limits, root = document) {
  table = limits ?? {};
  for (const input of root.querySelectorAll('input[data-setting]')) {
    const row = table[input.dataset.setting];
    if (!row) continue;
    input.min = String(row.min);
    input.max = String(row.max);
    input.step = String(row.step);
    if (!input.placeholder && row.default !== null) input.placeholder = String(row.default);
  }
}

/**
 * What one input holds, checked against its setting's row: `{ value }` (a number, or null when
 * it is empty and may be: the row is optional, or the input is `data-optional`, as a server's own
 * timeout, empty for the app's), or `{ error }`, the row's message.
 */
export function readSetting(input) {
  const row = table[input.dataset.setting];
  const text = input.value.trim();
  if (text === '') {
    return row?.optional || 'optional' in input.dataset ? { value: null } : { error: row?.message ?? 'A value is needed.' };
  }
  const v = Number(text);
  // before the table has come (or if it could not): the number as typed, which the engine checks
  if (!row) return Number.isFinite(v) ? { value: v } : { error: `“${text}” is not a number.` };
  const ok = Number.isFinite(v) && v >= row.min && v <= row.max && (!row.whole || Number.isInteger(v));
  return ok ? { value: v } : { error: row.message };
}

/**
 * Every `input[data-setting]` under `root`, read: `{ values: { key: value } }`, or `{ error }`
 * (the first one's message) and that input focused.
 */
export function readSettings(root) {
  const values = {};
  for (const input of root.querySelectorAll('input[data-setting]')) {
    const read = readSetting(input);
    if ('error' in read) {
      input.focus();
      return { error: read.error };
    }
    values[input.dataset.setting] = read.value;
  }
  return { values };
}
