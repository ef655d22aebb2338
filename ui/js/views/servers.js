// The MCP servers summary (sidebar) and the list with each server's status and problems.
import { el } from '../dom.js';

export function summarize(servers) {
  const running = servers.filter((s) => s.status === 'running').length;
  const failed = servers.filter((s) => s.status === 'failed').length;
  const starting = servers.filter((s) => s.status === 'starting').length;
  const tools = servers.filter((s) => s.status === 'running').reduce((n, s) => n + s.tools.length, 0);
  let text = servers.length ? `${running}/${servers.length} servers · ${tools} tools` : 'No MCP servers';
  if (starting) text = `Starting ${starting} server${starting > 1 ? 's' : ''}…`;
  const level = failed ? 'bad' : starting ? 'busy' : running ? 'good' : 'idle';
  return { text: failed ? `${running}/${servers.length} servers · ${failed} failed` : text, level };
}

export function renderServers(root, servers, configError) {
  const rows = [];
  if (configError) rows.push(el('p', { class: 'field-error' }, configError));
  if (!servers.length && !configError) rows.push(el('p', { class: 'muted' }, 'No servers are configured.'));
  for (const s of servers) {
    rows.push(el('section', { class: `server ${s.status}`, dataset: { name: s.name } },
      el('div', { class: 'server-head' },
        el('span', { class: `dot ${dotLevel(s.status)}` }),
        el('strong', {}, s.name),
        el('span', { class: 'badge' }, s.status),
        s.protocolVersion ? el('span', { class: 'muted' }, `MCP ${s.protocolVersion}`) : null,
        s.status === 'running' ? el('span', { class: 'muted' }, `${s.tools.length} tools`) : null),
      el('div', { class: 'server-cmd', title: 'Command' }, [s.command, ...s.args].join(' ')),
      s.error ? el('div', { class: 'server-error' }, s.error) : null,
      s.exit ? el('div', { class: 'muted' }, `Process ${s.exit}`) : null,
      s.stderrTail.length && s.status === 'failed'
        ? el('pre', { class: 'code stderr' }, s.stderrTail.join('\n')) : null,
      s.tools.length
        ? el('div', { class: 'server-tools' }, s.tools.map((t) => el('span', { class: 'chip', title: t.description }, t.name)))
        : null));
  }
  root.replaceChildren(...rows);
}

function dotLevel(status) {
  return { running: 'good', failed: 'bad', starting: 'busy' }[status] ?? 'idle';
}
