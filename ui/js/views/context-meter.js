// The chat header's context meter: about how much of the model's context the last request took
// (estimated before it was sent, scaled by what the model's server said its prompts were).
import { contextText } from './words.js';

/** Shows `used` of `limit` tokens (limit unknown: null) in `meter`. */
export function showContextMeter(meter, used, limit) {
  meter.hidden = false;
  meter.textContent = contextText(used, limit);
  const full = limit ? used / limit : 0;
  meter.classList.toggle('warn', full > 0.8);
  meter.title = limit
    ? `About ${used} of the model's ${limit} tokens of context went into the last request (system prompt, tools, history). `
      + 'Long tool results are cut for the model (the cards keep all of it), and no more tools are offered than fit.'
    : `About ${used} tokens went into the last request; the server does not say how much context the model has.`;
}
