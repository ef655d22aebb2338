// Servers that want a sign-in, said in the chat too: their tools are missing from it until then.
// One note at a time, with its own Sign in; a note closed (Not now) stays closed until that
// server wants a sign-in again.
import { el } from '../dom.js';

export class SignInNotes {
  /** `signIn(name)`: signs in to that server; resolves when the sign-in has ended. */
  constructor(signIn) {
    this.signIn = signIn;
    this.closed = new Set();
  }

  /** A turn needed a tool of `name`, which waits for a sign-in: its note again, even if closed. */
  remind(name, servers) {
    this.closed.delete(name);
    this.update(servers, name);
  }

  /** The servers list changed: shows, keeps or removes the note (`first`: that server's, if it wants one). */
  update(servers, first = null) {
    const needing = servers.filter((s) => s.signIn?.needed && s.status !== 'disabled').map((s) => s.name);
    for (const name of [...this.closed]) if (!needing.includes(name)) this.closed.delete(name);
    const name = needing.includes(first) ? first : needing.find((n) => !this.closed.has(n));
    const shown = document.querySelector('.sign-in-note');
    if (!name) { shown?.remove(); return; }
    if (shown?.dataset.server === name) return;
    shown?.remove();
    const close = () => { this.closed.add(name); note.remove(); };
    const signIn = el('button', { type: 'button', class: 'btn small', dataset: { action: 'sign-in-server' } }, 'Sign in');
    const note = el('div', { class: 'toast sign-in-note', role: 'status', dataset: { server: name } },
      el('span', {}, `“${name}” wants you to sign in before its tools can be used.`),
      signIn,
      el('button', { type: 'button', class: 'btn small', dataset: { action: 'close-sign-in-note' }, onclick: close }, 'Not now'));
    signIn.addEventListener('click', async () => {
      signIn.disabled = true;
      signIn.textContent = 'Finish in your browser…';
      await this.signIn(name);
      note.remove();
    });
    document.body.append(note);
  }
}
