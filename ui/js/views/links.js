// Links in replies and tool results open in the browser only after the user has seen where they
// really go: a link's words can say anything, its target is what counts. The dialog shows the
// target's site (as the URL parser reads it, so a look-alike name shows as its xn-- form) and the
// whole address; "always" remembers the site (Settings lists and forgets them).
import { $ } from '../dom.js';

/**
 * Where a link goes, or null if it is not one the browser should open (only http, https and
 * mailto are). { url, host, scheme }; host is '' for mailto.
 */
export function linkTarget(href) {
  let u;
  try { u = new URL(String(href ?? '').trim()); } catch { return null; }
  const scheme = u.protocol.replace(/:$/, '').toLowerCase();
  if (scheme === 'mailto') return { url: u.href, host: '', scheme };
  if (scheme !== 'http' && scheme !== 'https') return null;
  if (!u.hostname) return null;
  return { url: u.href, host: u.hostname.toLowerCase(), scheme };
}

export class LinkConfirm {
  constructor(dialog) {
    this.dialog = dialog;
    this.resolve = null;
    $('#link-cancel', dialog).addEventListener('click', () => this.finish(null));
    $('#link-form', dialog).addEventListener('submit', (e) => {
      e.preventDefault();
      this.finish({ always: $('#link-always', dialog).checked });
    });
    // Escape closes the dialog: the same as Cancel
    dialog.addEventListener('close', () => this.finish(null));
  }

  /** Shows the target; resolves to { always } if the user chose to open it, else null. */
  ask(target, words) {
    this.finish(null);
    const d = this.dialog;
    $('#link-site', d).textContent = target.host || target.url.replace(/^mailto:/i, '');
    $('#link-url', d).textContent = target.url;
    const said = String(words ?? '').trim();
    const differs = said && said !== target.url && said !== target.host;
    $('#link-words-row', d).hidden = !differs;
    $('#link-words', d).textContent = differs ? said : '';
    const always = $('#link-always', d);
    always.checked = false;
    $('#link-always-row', d).hidden = !target.host;
    $('#link-always-host', d).textContent = target.host;
    $('#link-open', d).textContent = target.scheme === 'mailto' ? 'Open in mail app' : 'Open in browser';
    d.showModal();
    $('#link-cancel', d).focus();
    return new Promise((resolve) => { this.resolve = resolve; });
  }

  finish(answer) {
    const r = this.resolve;
    this.resolve = null;
    if (this.dialog.open) this.dialog.close();
    if (r) r(answer);
  }
}

/**
 * `openLink(href, words)` → Promise<boolean> (opened): opens a link once the user has seen where
 * it goes in `confirm` (a LinkConfirm), or at once when its site is trusted; "always" trusts the
 * site. deps: { trusted() → Promise<[host]>, trust(host) → Promise, openUrl(url) → Promise, toast(text) }.
 */
export function linkOpener(confirm, { trusted, trust, openUrl, toast }) {
  return async (href, words) => {
    const target = linkTarget(href);
    if (!target) return false;
    if (!(target.host && (await trusted().catch(() => [])).includes(target.host))) {
      const answer = await confirm.ask(target, words);
      if (!answer) return false;
      if (answer.always && target.host) {
        try {
          await trust(target.host);
        } catch (err) {
          toast(`Could not remember ${target.host}: ${err?.message ?? err}`);
        }
      }
    }
    try {
      await openUrl(target.url);
      return true;
    } catch (err) {
      toast(`Could not open the link: ${err?.message ?? err}`);
      return false;
    }
  };
}
