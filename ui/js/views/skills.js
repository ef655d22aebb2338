// Settings → Skills: every skill there is — the user's own (origin "local", from their skills
// folder) and each running server's — with its origin, description and an on/off switch (the
// default for chats; applied at once); the folders and entries refused, with why; a server's
// changed skill held back, with what changed (its frontmatter and each file's digest) and an
// Accept button naming the version shown. And, per chat, the chat's own on/off (chat-settings.js
// uses `skillNames`). Everything is put in as text.
import { el, $ } from '../dom.js';
import { diffView } from './diff.js';

/** `origin/name` of every skill that can be offered (for a chat's own switches). */
export function skillNames(page) {
  const names = (page?.local?.skills ?? []).map((s) => ({ key: `local/${s.name}`, description: s.description }));
  for (const s of page?.servers ?? []) {
    if (s.leftOut) continue;
    for (const e of s.listing.skills) names.push({ key: `${s.server}/${e.frontmatter.name}`, description: e.frontmatter.description ?? '' });
  }
  return names;
}

export class SkillsSection {
  /**
   * box: the element the section fills.
   * actions: { list() → Promise<page>, setOff(key, off) → Promise, accept(server, uri, hash) →
   *   Promise<boolean>, openFolder() → Promise<string> }
   */
  constructor(box, actions) {
    this.box = box;
    this.actions = actions;
  }

  async load() {
    this.box.replaceChildren(el('p', { class: 'hint' }, 'Reading skills…'));
    try {
      this.render(await this.actions.list());
    } catch (err) {
      this.box.replaceChildren(el('p', { class: 'field-error' }, err?.message ?? String(err)));
    }
  }

  render(page) {
    const off = new Set(page.off ?? []);
    const rows = [];
    const row = (key, origin, description, extra = []) => {
      const id = `skill-on-${key.replace(/[^a-z0-9-]/gi, '_')}`;
      const box = el('input', { type: 'checkbox', id, checked: !off.has(key), 'aria-label': `${key} on` });
      box.addEventListener('change', async () => {
        box.disabled = true;
        try {
          await this.actions.setOff(key, !box.checked);
          if (box.checked) off.delete(key); else off.add(key);
        } catch (err) {
          box.checked = !box.checked;
          this.error(err);
        } finally {
          box.disabled = false;
        }
      });
      return el('div', { class: 'skill-row', dataset: { skill: key } },
        el('label', { class: 'field check', for: id }, box,
          el('span', { class: 'skill-name' }, key.slice(key.indexOf('/') + 1)),
          el('span', { class: 'skill-origin badge' }, origin)),
        el('p', { class: 'skill-description hint' }, description),
        ...extra);
    };
    for (const s of page.local?.skills ?? []) rows.push(row(`local/${s.name}`, 'local', s.description));
    for (const s of page.servers ?? []) {
      if (s.leftOut) {
        rows.push(el('p', { class: 'field-error skill-refused' },
          `The server “${s.server}” has skills, but its name is the one your own skills go by (local): rename the server to use them.`));
        continue;
      }
      for (const e of s.listing.skills) rows.push(row(`${s.server}/${e.frontmatter.name}`, s.server, e.frontmatter.description ?? ''));
      for (const p of s.listing.pending) rows.push(this.pending(s.server, p));
      for (const why of s.listing.refused) rows.push(el('p', { class: 'field-error skill-refused' }, `${s.server}: refused — ${why}`));
    }
    for (const why of page.local?.refused ?? []) rows.push(el('p', { class: 'field-error skill-refused' }, `Your skills folder: refused — ${why}`));
    if (!rows.length) {
      rows.push(el('p', { class: 'hint skills-empty' },
        'No skills yet. To add one, make a folder in your skills folder named after the skill (lowercase letters, digits and hyphens) with a SKILL.md in it: a --- block with name: (the folder\'s name) and description: (when to use it), then the instructions. Skills written for other apps in the Agent Skills format work as they are. Servers can publish skills too.'));
    }
    const folder = el('div', { class: 'skills-folder' },
      el('span', { class: 'hint' }, page.folder ? `Your skills folder: ${page.folder}` : ''),
      el('button', { type: 'button', class: 'btn small', id: 'open-skills-folder', onclick: () => this.openFolder() }, 'Open skills folder'));
    this.box.replaceChildren(folder, ...rows, el('p', { class: 'field-error', id: 'skills-error', role: 'alert' }));
  }

  /** A server's skill that changed since it was accepted: what changed, and Accept. */
  pending(server, p) {
    const name = p.entry.frontmatter.name;
    const why = { changed: 'changed since you accepted it', new: 'new since you accepted this server\'s skills', unchecked: 'could not be checked against what you accepted' }[p.unaccepted] ?? 'not accepted';
    const accept = el('button', { type: 'button', class: 'btn small primary skill-accept' }, 'Accept');
    accept.addEventListener('click', async () => {
      accept.disabled = true;
      try {
        const done = await this.actions.accept(server, p.entry.uri, p.hash);
        if (!done) this.error(new Error(`“${name}” changed again meanwhile: look at it again.`));
        await this.load();
      } catch (err) {
        accept.disabled = false;
        this.error(err);
      }
    });
    return el('div', { class: 'skill-row pending', dataset: { skill: `${server}/${name}` } },
      el('div', { class: 'skill-head' },
        el('span', { class: 'skill-name' }, name),
        el('span', { class: 'skill-origin badge' }, server),
        el('span', { class: 'warning skill-why' }, `Held back: ${why}. The model is not offered it until you accept it.`)),
      el('p', { class: 'skill-description hint' }, p.entry.frontmatter.description ?? ''),
      diffView(p.changed),
      accept);
  }

  async openFolder() {
    try {
      await this.actions.openFolder();
    } catch (err) {
      this.error(err);
    }
  }

  error(err) {
    const box = $('#skills-error', this.box);
    if (box) box.textContent = err?.message ?? String(err);
  }
}
