// Files attached to the next message: pasted, dropped anywhere on the window, or picked through
// the 📎 menu. The engine reads them (the type from the bytes, never the name): an image comes
// back kept and re-encoded, with a thumbnail; a text file or a PDF with its text. They show as
// removable chips above the message box and go with the next message. When an image is attached
// and the model does not see images, the box says so and offers the installed models that do.
// Views only: data comes through `api`.
//
// Text pastes stay text. Refusals get their notes. Thumbnails in messages and the full-size viewer
// show `data:` URLs the engine built (the window's CSP allows `data:` images and nothing remote).
// The window's own drag-and-drop is off (`dragDropEnabled: false`), so a drop reaches the page as
// files.
import { el } from '../dom.js';

/** The engine's limits (media::MAX_FILE_BYTES, bundle::MAX_BUNDLE): a file past them is refused
 * here by its size, without reading it into the page. */
const MAX_FILE_BYTES = 32 * 1024 * 1024;
const MAX_BUNDLE_BYTES = 256 * 1024 * 1024;

/** A size in words: "1.2 MB", "340 KB". */
function size(bytes) {
  return bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MB` : `${Math.max(1, Math.round(bytes / 1024))} KB`;
}

/** About `n` tokens, short: "~1.2k tokens". */
export function tokensText(n) {
  return `~${n >= 1000 ? `${(n / 1000).toFixed(1)}k` : n} tokens`;
}

/**
 * Thumbnails of images a message carries (each opens full size), or null when there are none.
 * images: [{ sha256, name, width, height, thumbnail }]
 */
export function imageStrip(images, open) {
  if (!images?.length) return null;
  return el('div', { class: 'image-strip' }, images.map((img) => el('button', {
    type: 'button', class: 'thumb', title: `${img.name} (${img.width}×${img.height}) — open full size`,
    'aria-label': `Open ${img.name} full size`, onclick: () => open(img),
  }, el('img', { src: img.thumbnail, alt: img.name }))));
}

/** The dialog that shows one kept image at full size (a data: URL the engine builds). */
export class ImageViewer {
  constructor(dialog, load) {
    this.dialog = dialog;
    this.load = load;
    dialog.addEventListener('click', (e) => { if (e.target === dialog) dialog.close(); });
  }

  async open(img) {
    const body = this.dialog.querySelector('.image-view');
    const caption = el('p', { class: 'muted' }, `${img.name} · ${img.width}×${img.height}`);
    body.replaceChildren(el('img', { src: img.thumbnail, alt: img.name, class: 'full-image loading' }), caption);
    if (!this.dialog.open) this.dialog.showModal();
    try {
      const url = await this.load(img.sha256);
      body.querySelector('img').src = url;
      body.querySelector('img').classList.remove('loading');
    } catch (err) {
      caption.textContent = `${img.name}: ${err?.message ?? err}`;
    }
  }
}

/**
 * api = {
 *   attachBytes(name, bytes) → Promise<AttachedFile>, openBundle(name, bytes) → Promise (a
 *   dropped `.mcpb`, for the catalog), pick() → Promise<Picked[]>,
 *   seesImages(provider, model) → Promise<boolean|null>, models() → [{ name, provider }],
 *   current() → { model, provider }, pickModel(provider, model), openImage(img), onChange()
 * }
 */
export class FileAttachments {
  constructor({ chips, note }, api) {
    this.chips = chips;
    this.note = note;
    this.api = api;
    /** @type {Array<object>} AttachedFile: { kind: 'image', sha256, name, … } | { kind: 'document', name, mime, text, … } */
    this.files = [];
    this.errors = [];
    this.pending = 0;
    this.vision = null; // { model, sees: boolean|null, others: [{ name, provider }] }
  }

  /**
   * Paste and drop anywhere on the window bring files here (text pastes stay text); not into
   * another field, nor while a dialog is open. `input`: the message box.
   */
  listen(target, input) {
    const elsewhere = (e) => {
      const field = e.target?.closest?.('input, textarea, [contenteditable="true"]');
      return (field && field !== input) || Boolean(document.querySelector('dialog[open]'));
    };
    target.addEventListener('paste', (e) => {
      const files = [...(e.clipboardData?.files ?? [])];
      if (!files.length || elsewhere(e)) return;
      e.preventDefault();
      this.addFiles(files);
    });
    target.addEventListener('dragover', (e) => {
      if ([...(e.dataTransfer?.types ?? [])].includes('Files')) {
        e.preventDefault();
        e.dataTransfer.dropEffect = 'copy';
        document.body.classList.add('dropping');
      }
    });
    target.addEventListener('dragleave', (e) => {
      if (!e.relatedTarget) document.body.classList.remove('dropping');
    });
    target.addEventListener('drop', (e) => {
      document.body.classList.remove('dropping');
      const files = [...(e.dataTransfer?.files ?? [])];
      if (!files.length) return;
      // a file dropped on the window never navigates it
      e.preventDefault();
      // an MCP bundle dropped on the window goes to the catalog's install (even over a dialog),
      // not into the message
      const bundle = (f) => /\.mcpb$/i.test(f.name);
      for (const f of files.filter(bundle)) {
        // never read whole past the engine's limit (which it checks again)
        if (f.size > MAX_BUNDLE_BYTES) {
          this.fail(`Could not open ${f.name}: it is larger than ${MAX_BUNDLE_BYTES / 1048576} MB, the most a bundle may be.`);
          continue;
        }
        f.arrayBuffer().then((b) => this.api.openBundle(f.name, new Uint8Array(b)))
          .catch((err) => this.fail(`Could not open ${f.name}: ${err?.message ?? err}`));
      }
      const rest = files.filter((f) => !bundle(f));
      if (rest.length && !elsewhere(e)) this.addFiles(rest);
    });
  }

  /** Reads each file's bytes and hands them to the engine. */
  async addFiles(files) {
    await Promise.all(files.map(async (f) => {
      this.pending += 1;
      this.render();
      try {
        // never read whole: the engine refuses it in words by its size
        if (f.size > MAX_FILE_BYTES) {
          throw new Error(`Could not attach ${f.name}: it is ${Math.round(f.size / 1048576)} MB; files up to ${MAX_FILE_BYTES / 1048576} MB can be attached`);
        }
        const bytes = new Uint8Array(await f.arrayBuffer());
        this.add(await this.api.attachBytes(f.name || 'pasted', bytes));
      } catch (err) {
        this.fail(err?.message ?? String(err));
      } finally {
        this.pending -= 1;
        this.render();
      }
    }));
  }

  /** The system's file dialog (📎 → A file from this computer). */
  async pick() {
    try {
      for (const p of await this.api.pick()) {
        if (p.file) this.add(p.file);
        else this.fail(p.error);
      }
    } catch (err) {
      this.fail(err?.message ?? String(err));
    }
  }

  add(file) {
    const same = (f) => f.kind === 'image' && file.kind === 'image' && f.sha256 === file.sha256;
    if (!this.files.some(same)) this.files.push(file);
    this.render();
    this.checkVision();
    this.api.onChange();
  }

  fail(message) {
    this.errors.push(message);
    this.render();
  }

  remove(i) {
    this.files.splice(i, 1);
    this.render();
    this.checkVision();
    this.api.onChange();
  }

  clear() {
    this.files = [];
    this.errors = [];
    this.vision = null;
    this.render();
    this.api.onChange();
  }

  isEmpty() { return !this.files.length; }
  busy() { return this.pending > 0; }

  /** The images to send: [{ sha256, name }]. */
  images() {
    return this.files.filter((f) => f.kind === 'image').map(({ sha256, name }) => ({ sha256, name }));
  }

  /** The images as a sent message shows them. */
  shownImages() {
    return this.files.filter((f) => f.kind === 'image');
  }

  /** The documents to send: [{ name, mime, text }]. */
  documents() {
    return this.files.filter((f) => f.kind === 'document').map(({ name, mime, text }) => ({ name, mime, text }));
  }

  /** About how many tokens the attached files take. */
  tokens() {
    return this.files.reduce((n, f) => n + (f.tokens ?? 0), 0);
  }

  /** Why the message cannot go as it is (images for a model that does not see them), or null. */
  blocked() {
    if (!this.images().length || this.vision?.sees !== false) return null;
    return `${this.vision.model} does not see images: pick a model that does, or remove the images.`;
  }

  /** Finds out whether the picked model sees images (and which installed models do), when an image is attached. */
  async checkVision() {
    const { model, provider } = this.api.current();
    if (!this.images().length || !model) { this.vision = null; this.render(); return; }
    const sees = async (p, m) => {
      try {
        return await this.api.seesImages(p, m);
      } catch { return null; }
    };
    const seen = await sees(provider, model);
    let others = [];
    if (seen === false) {
      const all = this.api.models().filter((m) => m.name !== model);
      const checks = await Promise.all(all.map(async (m) => ((await sees(m.provider, m.name)) ? m : null)));
      others = checks.filter(Boolean);
    }
    if (this.api.current().model !== model) return; // picked another meanwhile
    this.vision = { model, sees: seen, others };
    this.render();
  }

  render() {
    const chips = this.files.map((f, i) => {
      const remove = el('button', { type: 'button', class: 'chip-remove', 'aria-label': `Remove ${f.name}`,
        onclick: () => this.remove(i) }, '✕');
      if (f.kind === 'image') {
        return el('span', { class: 'chip file-chip image', title: `${f.name} · ${f.width}×${f.height} · ${size(f.bytes)} · ${tokensText(f.tokens)}`, dataset: { sha256: f.sha256 } },
          el('button', { type: 'button', class: 'thumb', 'aria-label': `Open ${f.name} full size`, onclick: () => this.api.openImage(f) },
            el('img', { src: f.thumbnail, alt: f.name })),
          el('span', { class: 'file-name' }, f.name), remove);
      }
      const pages = f.pages ? ` · ${f.pages} page${f.pages > 1 ? 's' : ''}` : '';
      return el('span', { class: 'chip file-chip document', title: `${f.name}${pages} · ${tokensText(f.tokens)}${f.cut ? ' · only its first 256 KB of text goes' : ''}` },
        '📄 ', el('span', { class: 'file-name' }, f.name),
        el('small', { class: 'muted' }, `${pages} · ${tokensText(f.tokens)}${f.cut ? ' · cut' : ''}`), remove);
    });
    if (this.pending) chips.push(el('span', { class: 'chip file-chip reading muted' }, 'Reading…'));
    this.chips.hidden = !chips.length;
    this.chips.replaceChildren(...chips);

    const notes = this.errors.map((m, i) => el('p', { class: 'attach-error field-error', role: 'alert' }, m, ' ',
      el('button', { type: 'button', class: 'btn ghost small', 'aria-label': 'Dismiss',
        onclick: () => { this.errors.splice(i, 1); this.render(); } }, '✕')));
    const v = this.vision;
    if (v && this.images().length && v.sees === false) {
      notes.push(el('p', { class: 'vision-note warn', role: 'status' },
        `${v.model} does not see images. `,
        ...(v.others.length
          ? ['Models you have that do: ', ...v.others.map((m) => el('button', { type: 'button', class: 'btn small', dataset: { model: m.name },
            onclick: () => { this.api.pickModel(m.provider, m.name); this.checkVision(); } }, m.name))]
          : ['None of your models does: download one in Models (for example gemma3 or llava).'])));
    } else if (v && this.images().length && v.sees === null) {
      notes.push(el('p', { class: 'vision-note muted', role: 'status' },
        `The server does not say whether ${v.model} sees images; if it does not, it will answer with an error.`));
    }
    this.note.hidden = !notes.length;
    this.note.replaceChildren(...notes);
  }
}
