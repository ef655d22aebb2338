// The chat header's context meter: about how much of the model's context the last request took
// (estimated before it was sent, scaled by what the model's server said its prompts were), and,
// while files are attached to the next message, that plus what they will take.
//
// It also says *compacted* (what was, and when the next request will be) and *(assumed)* when the
// server did not say its context.
import { contextText } from './words.js';

/**
 * Shows `used` of `limit` tokens (limit unknown: null) in `meter`. `ctx` (from the engine's
 * context event, when there is one): { limitAssumed, compacted: { stubbed, summarised, dropped },
 * room, compactAt, policy } — what was compacted to make the request fit, and when the next one
 * will be.
 */
export function showContextMeter(meter, used, limit, ctx = null) {
  delete meter.dataset.base;
  meter.dataset.used = String(used);
  meter.dataset.limit = limit ? String(limit) : '';
  meter.hidden = false;
  const c = ctx?.compacted ?? { stubbed: 0, summarised: 0, dropped: 0 };
  const compacted = c.stubbed + c.summarised + c.dropped > 0;
  // over compactAt the next request is compacted (a summary is being prepared)
  const next = Boolean(ctx && ctx.compactAt && used > ctx.compactAt);
  meter.textContent = contextText(used, limit) + (ctx?.limitAssumed ? ' (assumed)' : '') + (compacted ? ' · compacted' : '');
  const full = limit ? used / limit : 0;
  meter.classList.toggle('warn', full > 0.8 || next);
  meter.classList.toggle('compacted', compacted);
  meter.dataset.compacted = compacted ? 'true' : 'false';
  meter.dataset.next = next ? 'true' : 'false';
  const lines = [limit
    ? `About ${used} of the model's ${limit} tokens of context went into the last request (system prompt, tools, history).`
    : `About ${used} tokens went into the last request; the server does not say how much context the model has.`];
  if (ctx?.limitAssumed) lines.push(`The server does not say how much context the model has: ${limit} is assumed (set it in the chat's settings → Context length).`);
  if (compacted) {
    const parts = [];
    if (c.stubbed) parts.push(`${c.stubbed} older tool result${c.stubbed === 1 ? '' : 's'} as short stubs`);
    if (c.summarised) parts.push(`${c.summarised} older message${c.summarised === 1 ? '' : 's'} as the summary shown in the chat`);
    if (c.dropped) parts.push(`the ${c.dropped} oldest message${c.dropped === 1 ? '' : 's'} left out`);
    lines.push(`To fit, it was sent with ${parts.join(', ')}. The conversation here stays whole.`);
  }
  if (next) {
    lines.push({
      summarise: 'The next request will be compacted: older turns are being summarised.',
      dropOldest: 'The next request will be compacted: the oldest turns will be left out.',
      ask: 'The next request may not fit: this chat is set to ask what to do then.',
    }[ctx.policy] ?? 'The next request will be compacted.');
  }
  lines.push('Long tool results are cut for the model (the cards keep all of it), and no more tools are offered than fit.');
  meter.title = lines.join(' ');
  meter.setAttribute('aria-label', `Context: ${meter.textContent}. ${lines.slice(1, -1).join(' ')}`.trim());
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
