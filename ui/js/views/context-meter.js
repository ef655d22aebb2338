// The chat header's context meter: about how much of the model's context the last request took
// (estimated before it was sent, scaled by what the model's server said its prompts were), and,
// while files are attached to the next message, that plus what they will take.
import { contextText } from './words.js';

/** Shows `used` of `limit` tokens (limit unknown: null) in `meter`. */
export function showContextMeter(meter, used, limit) {
  delete meter.dataset.base;
  meter.dataset.used = String(used);
  meter.dataset.limit = limit ? String(limit) : '';
  meter.hidden = false;
  meter.textContent = contextText(used, limit);
  const full = limit ? used / limit : 0;
  meter.classList.toggle('warn', full > 0.8);
  meter.title = limit
    ? `About ${used} of the model's ${limit} tokens of context went into the last request (system prompt, tools, history). `
      + 'Long tool results are cut for the model (the cards keep all of it), and no more tools are offered than fit.'
    : `About ${used} tokens went into the last request; the server does not say how much context the model has.`;
}

/**
 * Before sending: the last request (when this chat had one) plus about `tokens` for the files
 * attached to the next message; 0 shows the last request again.
 */
export function showAttached(meter, tokens) {
  if (meter.dataset.base === undefined) meter.dataset.base = meter.hidden ? '' : `${meter.dataset.used ?? 0}/${meter.dataset.limit ?? ''}`;
  const [used, limit] = meter.dataset.base ? meter.dataset.base.split('/').map((n) => (n ? Number(n) : null)) : [0, null];
  if (!tokens) {
    const had = meter.dataset.base;
    delete meter.dataset.base;
    if (had) showContextMeter(meter, used, limit);
    else meter.hidden = true;
    return;
  }
  const total = used + tokens;
  meter.hidden = false;
  meter.textContent = `${contextText(total, limit)} with attachments`;
  meter.classList.toggle('warn', Boolean(limit) && total / limit > 0.8);
  meter.title = `The files attached to your next message take about ${tokens} tokens`
    + (limit ? `: with the last request that is about ${total} of the model's ${limit}.` : '.')
    + (limit && total > limit ? ' That is more than the model has: remove some, or use a model with a longer context.' : '');
}
