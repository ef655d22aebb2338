// The server form's "Let its apps reach the sites they name": what that server's app pages
// declare (read from the server when the box is ticked), so the user knows what they allow. What
// was shown is what is allowed (`shownOrigins`, saved as the server's `appOrigins`): a site a
// page names later stays closed until the user has seen it here too.
import { el } from '../dom.js';

let shown = 0; // the latest request wins

/**
 * Fills `box` with the origins the app pages of server `name` declare. `server`: its view (from
 * watch_servers) or undefined; `appPages(name)` → [{ uri, domains: { connect, resource, frame }, error }].
 */
export async function showAppOrigins(box, name, server, appPages) {
  const mine = ++shown;
  const say = (...lines) => box.replaceChildren(...lines);
  if (!name || !server || server.status !== 'running') {
    say(el('p', {}, 'The sites its apps name are known once it runs.'));
    return;
  }
  if (!server.tools.some((t) => t.ui?.resourceUri)) {
    say(el('p', {}, 'None of its tools shows an app, so this changes nothing for now.'));
    return;
  }
  say(el('p', {}, 'Reading what its apps name…'));
  let pages;
  try {
    pages = await appPages(name);
  } catch (e) {
    if (mine === shown) say(el('p', {}, `Its apps could not be read: ${e?.message ?? e}`));
    return;
  }
  if (mine !== shown) return;
  const list = el('ul', { class: 'app-pages' });
  for (const p of pages) list.append(pageItem(p));
  say(list);
}

const KINDS = [
  ['connect', 'talk to'],
  ['resource', 'load scripts, styles, images and fonts from'],
  ['frame', 'embed pages of'],
  ['baseUri', 'set their base address to'],
];

/** One page and what it names. */
function pageItem(p) {
  const item = el('li', { class: 'app-page', dataset: { uri: p.uri } }, el('code', {}, p.uri), ': ');
  if (p.error) {
    item.append(`could not be read (${p.error})`);
    return item;
  }
  const named = KINDS.filter(([k]) => p.domains[k]?.length);
  if (!named.length) {
    item.append('names no site, so it reaches nothing even when allowed');
    return item;
  }
  const list = el('ul', {});
  for (const [k, words] of named) {
    list.append(el('li', {}, `${words} `,
      p.domains[k].flatMap((d, i) => [i ? ', ' : '', el('code', { class: 'origin' }, d)])));
  }
  item.append('may then', list);
  return item;
}

/**
 * The origins `box` shows (each once, sorted), or null when it shows none it could read (the
 * server is not running, or its pages could not be read).
 */
export function shownOrigins(box) {
  if (!box.querySelector('.app-pages')) return null;
  return [...new Set([...box.querySelectorAll('code.origin')].map((c) => c.textContent))].sort();
}

/** Forgets a reading under way (the form closed). */
export function hideAppOrigins(box) {
  shown += 1;
  box.replaceChildren();
}
