// App-level messages: the banner (an unreachable LLM and other problems, with a fix) and short
// toasts (an export that worked).
import { el, $ } from '../dom.js';

export class Banner {
  constructor(root) { this.root = root; }

  show(title, detail) {
    $('#banner-title', this.root).textContent = title;
    $('#banner-detail', this.root).textContent = detail;
    this.root.hidden = false;
  }

  hide() { this.root.hidden = true; }

  /** An LLM error as the user can act on it; `url`: the server in effect. */
  llmError(err, url) {
    if (err?.kind === 'unreachable') {
      this.show(`Can't reach the LLM server at ${err?.url ?? url ?? ''}.`,
        'Start Ollama with “ollama serve”, or change the URL in Settings.');
    } else {
      this.show('The LLM server answered with an error.', err?.message ?? String(err));
    }
  }
}

/** A short message at the bottom, gone after a few seconds. */
export function toast(text) {
  document.querySelector('.toast')?.remove();
  const t = el('div', { class: 'toast', role: 'status' }, el('span', {}, text));
  document.body.append(t);
  setTimeout(() => t.remove(), 6000);
}
