// What a screen reader hears of a turn: a few sentences at its moments (a call starts, waits for
// approval, ends; the reply is done), through one polite status region, never the streaming text
// token by token (the messages are not a live region).
let region = null;
let last = '';

/** Says `text` politely (the same sentence twice in a row is said again). */
export function announce(text) {
  region ??= document.getElementById('announcer');
  if (!region) return;
  // a changed text is what a live region reads; the same one again needs a change in between
  region.textContent = text === last ? `${text}\u00a0` : text;
  last = region.textContent;
}
