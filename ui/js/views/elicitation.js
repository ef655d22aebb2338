// A form built from a server's elicitation schema (string, number, integer, boolean, enum,
// multi-select, email, uri, date), or a link to open for URL elicitation. Built as DOM only.
import { el } from '../dom.js';

function options(prop) {
  const titled = prop.oneOf ?? prop.anyOf;
  if (Array.isArray(titled)) return titled.map((o) => ({ value: o.const, label: o.title ?? String(o.const) }));
  if (Array.isArray(prop.enum)) {
    return prop.enum.map((v, i) => ({ value: v, label: Array.isArray(prop.enumNames) ? prop.enumNames[i] ?? String(v) : String(v) }));
  }
  return null;
}

function field(name, prop, required) {
  const label = `${prop.title ?? name}${required ? ' *' : ''}`;
  const hint = prop.description ? el('small', { class: 'hint' }, prop.description) : null;
  let input;
  let read;
  const opts = options(prop);
  if (prop.type === 'boolean') {
    input = el('input', { type: 'checkbox', checked: prop.default === true });
    read = () => input.checked;
    return { node: el('label', { class: 'field check', dataset: { name } }, input, el('span', {}, label), hint), read, required: false };
  }
  if (prop.type === 'array') {
    const items = options(prop.items ?? {}) ?? [];
    const boxes = items.map((o) => el('input', { type: 'checkbox', value: String(o.value), checked: (prop.default ?? []).includes(o.value) }));
    read = () => items.filter((_, i) => boxes[i].checked).map((o) => o.value);
    input = el('div', { class: 'multi' }, items.map((o, i) => el('label', {}, boxes[i], ` ${o.label}`)));
  } else if (opts) {
    input = el('select', {}, required ? null : el('option', { value: '' }, '—'),
      opts.map((o) => el('option', { value: String(o.value), selected: o.value === prop.default }, o.label)));
    read = () => {
      const o = opts.find((x) => String(x.value) === input.value);
      return o ? o.value : undefined;
    };
  } else if (prop.type === 'number' || prop.type === 'integer') {
    input = el('input', { type: 'number', step: prop.type === 'integer' ? 1 : 'any', min: prop.minimum, max: prop.maximum, value: prop.default });
    read = () => (input.value === '' ? undefined : Number(input.value));
  } else {
    const type = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' }[prop.format] ?? 'text';
    input = el('input', { type, value: prop.default, minlength: prop.minLength, maxlength: prop.maxLength });
    read = () => (input.value === '' ? undefined : input.value);
  }
  return { node: el('label', { class: 'field', dataset: { name } }, el('span', {}, label), input, hint), read, required, input };
}

/** answer({action, content?}) sends the user's answer; returns a promise. */
export function elicitationForm(ask, answer, openUrl) {
  const error = el('p', { class: 'field-error', role: 'alert' });
  const done = (text) => box.replaceChildren(el('p', { class: 'muted' }, text));
  const send = async (action, content) => {
    try {
      await answer({ action, content });
      done({ accept: 'Sent.', decline: 'Declined.', cancel: 'Cancelled.' }[action]);
    } catch (e) {
      error.textContent = e?.message ?? String(e);
    }
  };
  const head = el('p', { class: 'elicitation-message' }, el('strong', {}, `${ask.server} asks: `), ask.message);
  let box;
  if (ask.url) {
    box = el('div', { class: 'elicitation', dataset: { id: ask.id } }, head,
      el('code', { class: 'muted' }, ask.url),
      el('div', { class: 'approval-buttons' },
        el('button', { type: 'button', class: 'btn primary', dataset: { action: 'open' },
          onclick: () => { openUrl(ask.url); send('accept'); } }, 'Open in browser'),
        el('button', { type: 'button', class: 'btn', dataset: { action: 'decline' }, onclick: () => send('decline') }, 'Decline')),
      error);
    return box;
  }
  const schema = ask.schema ?? { properties: {} };
  const required = schema.required ?? [];
  const fields = Object.entries(schema.properties ?? {}).map(([name, prop]) => [name, field(name, prop, required.includes(name))]);
  const submit = () => {
    error.textContent = '';
    const content = {};
    for (const [name, f] of fields) {
      const v = f.read();
      if (v === undefined || (Array.isArray(v) && !v.length && !f.required)) {
        if (f.required) { error.textContent = `“${name}” is required.`; f.input?.focus(); return; }
        continue;
      }
      if (typeof v === 'number' && Number.isNaN(v)) { error.textContent = `“${name}” must be a number.`; return; }
      content[name] = v;
    }
    send('accept', content);
  };
  box = el('form', { class: 'elicitation', dataset: { id: ask.id }, onsubmit: (e) => { e.preventDefault(); submit(); } },
    head, ...fields.map(([, f]) => f.node),
    el('div', { class: 'approval-buttons' },
      el('button', { type: 'submit', class: 'btn primary', dataset: { action: 'accept' } }, 'Send'),
      el('button', { type: 'button', class: 'btn', dataset: { action: 'decline' }, onclick: () => send('decline') }, 'Decline'),
      el('button', { type: 'button', class: 'btn', dataset: { action: 'cancel' }, onclick: () => send('cancel') }, 'Cancel')),
    error);
  return box;
}
