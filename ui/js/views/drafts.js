// Drafts: what is typed in the message box, kept per conversation (`new` for a chat not yet
// sent) with its attached resources, as it is typed (written 300 ms after the last change, by the
// app, atomically: a crash or a kill loses at most that). Switching conversations keeps each
// draft; sending clears it.

const NEW = 'new';

/**
 * input: the message box; composer: ComposerView (attachments(), restoreAttachments(list));
 * chips: the attachments' container (watched for changes); save(key, draft|null): keeps one.
 */
export class Drafts {
  constructor({ input, composer, chips }, drafts, save, onRestore) {
    this.input = input;
    this.composer = composer;
    this.save = save;
    this.onRestore = onRestore ?? (() => {});
    this.drafts = { ...(drafts ?? {}) };
    this.key = NEW;
    this.timer = null;
    this.quiet = false;
    input.addEventListener('input', () => this.changed());
    new MutationObserver(() => this.changed()).observe(chips, { childList: true });
  }

  /** The message box or its attachments changed: kept shortly. */
  changed() {
    if (this.quiet) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.flush(), 300);
  }

  /** Keeps the current draft now. */
  flush() {
    clearTimeout(this.timer);
    this.timer = null;
    const text = this.input.value;
    const attachments = this.composer.attachments();
    const draft = text || attachments.length ? { text, attachments } : null;
    const before = this.drafts[this.key] ?? null;
    if (JSON.stringify(before) === JSON.stringify(draft)) return;
    if (draft) this.drafts[this.key] = draft; else delete this.drafts[this.key];
    this.save(this.key, draft);
  }

  /** Shows conversation `id`'s draft (null: a new chat's), keeping the one being left. */
  show(id) {
    if (this.timer) this.flush();
    this.key = id === null || id === undefined ? NEW : String(id);
    const d = this.drafts[this.key];
    this.quiet = true;
    try {
      this.input.value = d?.text ?? '';
      this.composer.restoreAttachments(d?.attachments ?? []);
    } finally {
      this.quiet = false;
    }
    this.onRestore();
  }

  /** The message was sent: its draft goes. */
  sent() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.key in this.drafts) {
      delete this.drafts[this.key];
      this.save(this.key, null);
    }
  }

  /** A new chat's first message made conversation `id`: what is typed now belongs to it. */
  became(id) {
    const key = String(id);
    if (this.key === NEW && this.key !== key) {
      if (this.timer) this.flush();
      if (NEW in this.drafts) { delete this.drafts[NEW]; this.save(NEW, null); }
      this.key = key;
      this.changed();
    }
  }

  has(id) {
    return (id === null ? NEW : String(id)) in this.drafts;
  }
}
