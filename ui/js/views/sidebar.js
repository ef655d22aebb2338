// The sidebar's list of saved conversations, newest first.
import { el, formatDate } from '../dom.js';

export class Sidebar {
  constructor(root, { onOpen }) {
    this.root = root;
    this.onOpen = onOpen;
    this.activeId = null;
  }

  render(conversations) {
    if (!conversations.length) {
      this.root.replaceChildren(el('p', { class: 'sidebar-empty' }, 'No conversations yet. Your chats are saved here.'));
      return;
    }
    this.root.replaceChildren(...conversations.map((c) =>
      el('button', {
        class: `conv${c.id === this.activeId ? ' active' : ''}`,
        type: 'button',
        title: c.title,
        dataset: { id: c.id },
        onclick: () => this.onOpen(c.id),
      },
      el('span', { class: 'conv-title' }, c.title),
      el('span', { class: 'conv-meta' }, `${c.model} · ${formatDate(c.updatedAt)}`))));
  }

  setActive(id) {
    this.activeId = id;
    for (const b of this.root.querySelectorAll('.conv')) {
      b.classList.toggle('active', Number(b.dataset.id) === id);
    }
  }
}
