// The chat header's tool picker: which servers and tools this conversation may use. Off by
// server or one tool at a time; a warning when many tools are on (small models get lost).
import { el } from '../dom.js';

/** Above this many tools, small models tend to get lost. */
export const TOOL_WARNING = 30;

const key = (server, tool) => `${server}/${tool}`;

export class ToolsPicker {
  /** onChange(choice) saves a changed choice: { disabledServers: [], disabledTools: ['server/tool'] } */
  constructor(button, panel, onChange) {
    this.button = button;
    this.panel = panel;
    this.onChange = onChange;
    this.servers = [];
    this.choice = { disabledServers: [], disabledTools: [] };
    button.addEventListener('click', () => (panel.hidden ? this.open() : this.close()));
    document.addEventListener('click', (e) => {
      if (!panel.hidden && !panel.contains(e.target) && !button.contains(e.target)) this.close();
    });
    panel.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.stopPropagation(); this.close(); button.focus(); } });
  }

  /** The running servers (with their tools). */
  setServers(servers) {
    this.servers = servers;
    this.renderButton();
    if (!this.panel.hidden) this.render();
  }

  setChoice(choice) {
    this.choice = {
      disabledServers: [...(choice?.disabledServers ?? [])],
      disabledTools: [...(choice?.disabledTools ?? [])],
    };
    this.renderButton();
    if (!this.panel.hidden) this.render();
  }

  allows(server, tool) {
    return !this.choice.disabledServers.includes(server) && !this.choice.disabledTools.includes(key(server, tool));
  }

  counts() {
    let on = 0;
    let total = 0;
    for (const s of this.servers) {
      for (const t of s.tools) {
        total += 1;
        if (this.allows(s.name, t.name)) on += 1;
      }
    }
    return { on, total };
  }

  /** The last request offered the model `offered` of the `on` tools on (the most relevant). */
  setOffered(offered, on) {
    this.offered = offered < on ? offered : null;
    this.renderButton();
  }

  renderButton() {
    const { on, total } = this.counts();
    const many = on > TOOL_WARNING;
    this.button.classList.toggle('warn', many);
    const offered = this.offered !== null && this.offered !== undefined ? ` · ${this.offered} offered` : '';
    this.button.textContent = `${many ? '⚠ ' : ''}Tools ${on}/${total}${offered}`;
    this.button.title = many
      ? `${on} tools are on. Over ${TOOL_WARNING}, small local models often pick the wrong one or none: turn off what this chat does not need.`
      : 'Choose the servers and tools this conversation may use';
    if (offered) {
      this.button.title += ` The last message offered the model the ${this.offered} most relevant (Settings → Tools offered at once).`;
    }
  }

  open() {
    this.panel.hidden = false;
    this.button.setAttribute('aria-expanded', 'true');
    this.render();
    this.panel.querySelector('input')?.focus();
  }

  close() {
    this.panel.hidden = true;
    this.button.setAttribute('aria-expanded', 'false');
  }

  toggle(list, item, on) {
    const set = new Set(this.choice[list]);
    if (on) set.delete(item); else set.add(item);
    this.choice = { ...this.choice, [list]: [...set].sort() };
    this.renderButton();
    this.render();
    this.onChange(this.choice);
  }

  render() {
    const { on, total } = this.counts();
    const head = el('div', { class: 'menu-title' }, `Tools for this chat · ${on} of ${total} on`);
    if (!this.servers.length) {
      this.panel.replaceChildren(head, el('p', { class: 'muted menu-empty' }, 'No server is running. Servers are managed in MCP servers.'));
      return;
    }
    const groups = this.servers.map((s) => {
      const serverOn = !this.choice.disabledServers.includes(s.name);
      return el('fieldset', { class: 'tool-group', dataset: { server: s.name } },
        el('legend', {}, el('label', {},
          el('input', { type: 'checkbox', checked: serverOn, dataset: { server: s.name },
            onchange: (e) => this.toggle('disabledServers', s.name, e.target.checked) }),
          ` ${s.name}`, el('span', { class: 'muted' }, ` · ${s.tools.length} ${s.tools.length === 1 ? 'tool' : 'tools'}`))),
        s.tools.map((t) => el('label', { class: 'tool-option', title: t.description },
          el('input', { type: 'checkbox', checked: this.allows(s.name, t.name), disabled: !serverOn, dataset: { tool: key(s.name, t.name) },
            onchange: (e) => this.toggle('disabledTools', key(s.name, t.name), e.target.checked) }),
          ` ${t.name}`)));
    });
    const warn = on > TOOL_WARNING
      ? el('p', { class: 'tools-warning-text' }, `⚠ ${on} tools are on. Small local models do best with ${TOOL_WARNING} or fewer.`)
      : null;
    this.panel.replaceChildren(...[head, warn, ...groups].filter(Boolean));
  }
}
