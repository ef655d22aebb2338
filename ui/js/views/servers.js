// MCP servers: the sidebar summary, the list with status, problems and log, and the form to add
// or edit one. Secret values (headers, environment values marked secret) are write-only: the form
// shows "•••• stored in the keyring" with Replace and ✕, and sends back the engine's marker to keep one.
import { el, $ } from '../dom.js';
import { stepText, sandboxText, sandboxDetail, sandboxMissing, networkTried, secretPlaceText, secretStoredText, secretsNoteText, looksSecret } from './words.js';
import { isKept } from './settings.js';
import { readSetting } from './setting-limits.js';
import { diffView } from './diff.js';
import { showAppOrigins, hideAppOrigins, shownOrigins } from './app-origins.js';

export function summarize(servers) {
  const running = servers.filter((s) => s.status === 'running').length;
  const failed = servers.filter((s) => s.status === 'failed').length;
  const starting = servers.filter((s) => s.status === 'starting').length;
  const tools = servers.filter((s) => s.status === 'running').reduce((n, s) => n + s.tools.length, 0);
  let text = servers.length ? `${running}/${servers.length} servers · ${tools} tool${tools === 1 ? '' : 's'}` : 'No MCP servers';
  if (starting) {
    const busy = servers.find((s) => s.status === 'starting' && s.busy);
    text = `Starting ${starting} server${starting > 1 ? 's' : ''}…${busy ? ` (${busy.name}: ${busy.busy})` : ''}`;
  }
  const level = failed ? 'bad' : starting ? 'busy' : running ? 'good' : 'idle';
  return { text: failed ? `${running}/${servers.length} servers · ${failed} failed` : text, level };
}

export class ServersView {
  /**
   * actions: { save(original, copyOf, name, server), remove(name), setEnabled(name, on), restart(name),
   *   update(name, server), signIn(name), signOut(name), cancelSignIn(name), appPages(name),
   *   openUpdate(name) } — `update` saves a server's config from its row
 *   (errors reported there); `signIn` resolves when the sign-in has ended.
   */
  constructor(dialog, actions) {
    this.dialog = dialog;
    this.actions = actions;
    this.list = $('#servers-list', dialog);
    this.form = $('#server-form', dialog);
    this.config = { mcpServers: {} };
    this.editing = null; // original name, or null for a new server
    this.signingIn = new Set(); // servers whose sign-in waits for the browser
    $('#server-add', dialog).addEventListener('click', () => this.openForm(null));
    $('#server-cancel', dialog).addEventListener('click', () => this.closeForm());
    this.form.addEventListener('submit', (e) => { e.preventDefault(); this.submit(); });
    $('#srv-transport', dialog).addEventListener('change', () => this.showTransport());
    $('#srv-trusted', dialog).addEventListener('change', () => { this.trustedTouched = true; });
    $('#srv-sandbox', dialog).addEventListener('change', () => this.showSandbox());
    $('#srv-app-network', dialog).addEventListener('change', () => this.showAppOrigins());
    $('#srv-add-env', dialog).addEventListener('click', () => { this.env.push(newRow()); this.renderRows('env', true); });
    $('#srv-add-header', dialog).addEventListener('click', () => { this.headers.push(newRow()); this.renderRows('headers', true); });
    this.servers = [];
    this.env = [];
    this.headers = [];
    this.updates = [];
  }

  /** The installed servers whose registry has a newer version ([{ server, installed, latest }]). */
  setUpdates(updates) {
    this.updates = updates;
    if (this.dialog.open) this.render(this.servers, this.configError);
  }

  /** view: { config: {mcpServers}, path, secrets, transports: [{ type, names, label, description, remote, signsIn }],
   *  transportOf: {name: type} } */
  setConfig(view) {
    this.config = { ...view.config, path: view.path };
    this.transportsOf = view.transportOf;
    this.secrets = view.secrets;
    this.transports = view.transports;
    const choice = $('#srv-transport', this.form);
    if (!choice.options.length) choice.replaceChildren(...view.transports.map((t) => el('option', { value: t.type }, t.description)));
  }

  /** The engine's row for a transport (mcp/transport.rs). */
  transport(type) {
    return this.transports?.find((t) => t.type === type) ?? { type, label: type, remote: type !== 'stdio', signsIn: false };
  }

  /** The transport of server `name`'s entry, as the engine reads it (a new server: stdio). */
  transportOf(name) {
    return (name && this.transportsOf?.[name]) || 'stdio';
  }

  /**
   * The latest list (pushed by the engine on every change): shown when the dialog is open and
   * something changed, so an open log or an armed Delete survives unrelated updates.
   */
  update(servers, configError) {
    const snapshot = JSON.stringify([servers, configError]);
    if (!this.dialog.open || snapshot === this.shown) return;
    this.render(servers, configError);
  }

  render(servers, configError) {
    this.shown = JSON.stringify([servers, configError]);
    this.servers = servers;
    this.configError = configError;
    const rows = [];
    if (configError) rows.push(el('p', { class: 'field-error' }, configError));
    if (!servers.length && !configError) {
      rows.push(el('p', { class: 'muted' }, 'No servers yet. Add one to give the model tools.'));
    }
    for (const s of servers) rows.push(this.row(s));
    this.list.replaceChildren(...rows);
  }

  row(s) {
    const enabled = s.status !== 'disabled';
    // waiting for a sign-in is no failure of the server: its sign-in row says what to do
    const signingIn = s.status === 'failed' && s.failedStep === 'signingIn';
    const confirmDelete = el('button', { type: 'button', class: 'btn small danger', dataset: { act: 'delete' } }, 'Delete');
    confirmDelete.addEventListener('click', () => {
      if (confirmDelete.dataset.armed) { this.actions.remove(s.name); return; }
      confirmDelete.dataset.armed = 'true';
      confirmDelete.textContent = 'Really delete?';
    });
    return el('section', { class: `server ${s.status}`, dataset: { name: s.name } },
      el('div', { class: 'server-head' },
        el('span', { class: `dot ${dotLevel(s.status)}` }),
        el('strong', {}, s.name),
        el('span', { class: 'badge' }, signingIn ? 'sign in needed' : s.status),
        s.status === 'starting' && s.busy ? el('span', { class: 'muted server-busy', role: 'status' }, s.busy) : null,
        el('span', { class: 'muted' }, this.transport(s.transport).label),
        !this.transport(s.transport).remote
          ? el('span', { class: `muted server-sandbox ${s.sandbox?.state ?? 'off'}`, title: sandboxDetail(s.sandbox) }, sandboxText(s.sandbox))
          : null,
        s.protocolVersion ? el('span', { class: 'muted' }, `MCP ${s.protocolVersion}`) : null,
        s.status === 'running' ? el('span', { class: 'muted' }, `${s.tools.length} ${s.tools.length === 1 ? 'tool' : 'tools'}`) : null,
        s.restarts ? el('span', { class: 'muted', title: 'Automatic restarts after crashes, in a row' }, `restarted ${s.restarts}×`) : null,
        s.trusted ? null : el('span', { class: 'muted untrusted', title: 'What it says about its tools (read-only…) is not believed: every call asks. Edit to change.' }, 'every call asks'),
        el('span', { class: 'spacer' }),
        // one group: where the line is too short it moves down whole (Delete never alone)
        el('span', { class: 'server-actions' },
          el('button', { type: 'button', class: 'btn small', dataset: { act: 'edit' }, onclick: () => this.openForm(s.name) }, 'Edit'),
          el('button', { type: 'button', class: 'btn small', dataset: { act: 'duplicate' }, onclick: () => this.openForm(s.name, true) }, 'Duplicate'),
          enabled ? el('button', { type: 'button', class: 'btn small', dataset: { act: 'restart' }, onclick: () => this.actions.restart(s.name) }, 'Restart') : null,
          el('button', { type: 'button', class: 'btn small', dataset: { act: 'toggle' }, onclick: () => this.actions.setEnabled(s.name, !enabled) }, enabled ? 'Disable' : 'Enable'),
          confirmDelete)),
      el('div', { class: 'server-cmd', title: 'Command, as it is run' }, [s.command, ...s.args].join(' ')),
      this.updateRow(s.name),
      s.error && !signingIn ? el('div', { class: 'server-error' }, s.error) : null,
      s.signIn ? this.signInRow(s) : null,
      s.sandbox?.state === 'unsupported'
        ? el('div', { class: 'server-consent' },
          el('button', {
            type: 'button', class: 'btn small', dataset: { act: 'unsandboxed' },
            onclick: () => this.runUnsandboxed(s),
          }, 'Run without the sandbox'),
          el('span', { class: 'muted' }, 'It will have your full access to files and the network. Saved in its settings.'))
        : null,
      sandboxMissing(s.sandbox)
        ? el('div', { class: 'server-blocked', dataset: { sandboxMissing: '' } }, `This kernel cannot enforce: ${sandboxMissing(s.sandbox)}`)
        : null,
      this.networkRow(s),
      s.sandbox?.blocked
        ? el('div', { class: 'server-blocked', title: 'Read from its log (a guess from "permission denied" errors)' }, `Blocked by sandbox: ${s.sandbox.blocked}`,
          s.sandbox.readable
            ? el('button', {
              type: 'button', class: 'btn small', dataset: { act: 'allow-read', path: s.sandbox.readable },
              title: `Lets it read ${s.sandbox.readable} from now on (saved in its sandbox; it starts again)`,
              onclick: () => this.actions.allowRead(s.name, s.sandbox.readable),
            }, `Allow reading ${s.sandbox.readable}`)
            : null)
        : null,
      s.status === 'failed' && s.failedStep && !signingIn ? el('div', { class: 'muted' }, `Failed while: ${stepText(s.failedStep)}`) : null,
      s.exit && s.status === 'failed' ? el('div', { class: 'muted' }, `Process ${s.exit}`) : null,
      s.status === 'failed' && !this.transport(s.transport).remote ? el('details', { class: 'server-log' },
        el('summary', {}, 'PATH used to find and run it'),
        el('pre', { class: 'code' }, (s.path ?? this.config.path ?? '').split(':').join('\n'))) : null,
      s.stderrTail.length
        ? el('details', { class: 'server-log', open: s.status === 'failed' && !signingIn },
          el('summary', {}, `Log (last ${s.stderrTail.length} lines: stderr and the server's log messages)`),
          el('pre', { class: 'code stderr' }, s.stderrTail.join('\n')))
        : null,
      s.tools.length
        ? el('div', { class: 'server-tools' }, s.tools.map((t) => el('span', {
          class: `chip${t.destructive ? ' destructive' : ''}${t.changed ? ' changed' : ''}`,
          title: `${t.description}${t.readOnly ? ' (read-only)' : ''}${t.destructive ? ' (destructive: always asks)' : ''}`,
        }, t.changed ? `⚠ ${t.name}` : t.name)))
        : null,
      ...s.tools.filter((t) => t.changed).map((t) => el('details', { class: 'tool-changed', dataset: { tool: t.name } },
        el('summary', {}, {
          new: `⚠ “${t.name}” is new: this server did not have it when you accepted its tools (it may be one renamed). It asks before every call, and its app is not shown`,
          unchecked: `⚠ “${t.name}” could not be checked against the definition you accepted: it asks before every call`,
        }[t.unaccepted] ?? `⚠ “${t.name}” changed since you accepted it: it asks before every call, the model sees the old definition, and its app is not shown`),
        diffView(t.changed),
        el('button', { type: 'button', class: 'btn small', dataset: { act: 'accept-tool' },
          onclick: () => this.actions.acceptTool(s.name, t.name, t.hash) }, t.unaccepted === 'new' ? 'Accept this tool' : 'Accept the new definition'))));
  }

  /** A newer version in the registry it came from: its row says so, Update… shows what changes. */
  updateRow(name) {
    const u = this.updates.find((x) => x.server === name);
    if (!u) return null;
    return el('div', { class: 'server-update' },
      el('span', {}, `Version ${u.latest} is available (this is ${u.installed}).`),
      el('button', { type: 'button', class: 'btn small', dataset: { act: 'update' },
        onclick: () => this.actions.openUpdate(name) }, 'Update…'));
  }

  /** A remote server's sign-in (OAuth): Sign in when it wants one, who signed it in, Sign out. */
  signInRow(s) {
    const { needed, signedIn, issuer, account, opening } = s.signIn;
    const signIn = el('button', { type: 'button', class: `btn small${needed ? ' primary' : ''}`, dataset: { act: 'sign-in' } },
      signedIn ? 'Sign in again' : 'Sign in');
    // waiting for the browser (kept across re-renders of the list)
    const busy = this.signingIn.has(s.name);
    signIn.disabled = busy;
    const waiting = busy
      ? el('span', { class: 'sign-in-waiting' },
        // the page's host, told before the browser opens it (https, or http on this computer)
        el('span', { class: 'muted' }, opening ? `Finish signing in at ${opening} in your browser…` : 'Finish signing in in your browser…'),
        el('button', { type: 'button', class: 'btn small', dataset: { act: 'cancel-sign-in' },
          onclick: () => this.actions.cancelSignIn(s.name) }, 'Cancel'))
      : null;
    signIn.addEventListener('click', async () => {
      this.signingIn.add(s.name);
      this.render(this.servers, this.configError);
      try {
        await this.actions.signIn(s.name);
      } finally {
        this.signingIn.delete(s.name);
        this.render(this.servers, this.configError);
      }
    });
    // a sign-in that failed says why (its report); else what to do
    const why = s.failedStep === 'signingIn' && s.error && !/^This server wants you to sign in/.test(s.error) ? `${s.error[0].toUpperCase()}${s.error.slice(1)}. ` : '';
    let text = signedIn ? `Signed in${account ? ` as ${account}` : ''}${issuer ? ` at ${issuer}` : ''}.` : 'This server wants you to sign in. Its sign-in page opens in your browser.';
    if (needed && signedIn) text = `It no longer takes your sign-in: sign in again. ${text}`;
    return el('div', { class: 'server-sign-in' },
      el('span', { class: needed ? 'server-error' : 'muted' }, why + text),
      signIn,
      signedIn ? el('button', { type: 'button', class: 'btn small', dataset: { act: 'sign-out' },
        onclick: () => this.actions.signOut(s.name) }, 'Sign out') : null,
      waiting);
  }

  /**
   * What the sandbox kept the server off the network (noted by the sandbox, counted), each with
   * the action that allows exactly that, and one for the whole network; null when nothing was.
   */
  networkRow(s) {
    const refused = (s.sandbox?.attempts ?? []).filter((a) => !a.allowed);
    if (!refused.length) return null;
    const shown = refused.slice(-5);
    return el('div', { class: 'server-blocked sandbox-note', dataset: { networkRefused: '' } },
      el('span', {}, `Kept off the network: it tried ${networkTried(shown)}${refused.length > shown.length ? ` and ${refused.length - shown.length} more` : ''}.`),
      ' ',
      ...shown.filter((a) => a.host).map((a) => el('button', {
        type: 'button', class: 'btn small', dataset: { act: 'allow-host', host: a.target },
        title: `Lets it reach ${a.target} from now on (saved in its sandbox; it starts again)`,
        onclick: () => this.actions.allowNetwork(s.name, a.target),
      }, `Allow ${a.target}`)),
      el('button', {
        type: 'button', class: 'btn small', dataset: { act: 'allow-network' },
        title: 'Lets it reach the whole network from now on',
        onclick: () => this.actions.allowNetwork(s.name, null),
      }, 'Allow all network'));
  }

  /** Saves the user's agreement to run a server without its sandbox where the kernel has none. */
  runUnsandboxed(s) {
    const cfg = this.config.mcpServers[s.name];
    if (!cfg) return;
    const current = cfg.sandbox && typeof cfg.sandbox === 'object'
      ? cfg.sandbox
      : { network: s.sandbox.network, hosts: s.sandbox.hosts ?? [], read: s.sandbox.read, write: s.sandbox.write };
    this.actions.update(s.name, { ...cfg, sandbox: { ...current, allowUnsandboxed: true } });
  }

  /** The sandbox the form starts with: the config's, else the built-ins' default; null for none. */
  sandboxOf(name, cfg) {
    const sb = cfg?.sandbox;
    if (sb === true) return { network: false };
    if (sb === false) return null;
    if (sb) return sb;
    const view = this.servers.find((v) => v.name === name)?.sandbox;
    return view?.default ? { network: view.network, read: [], write: [] } : null;
  }

  openForm(name, duplicate = false) {
    const cfg = name ? this.config.mcpServers[name] : null;
    this.editing = duplicate ? null : name;
    // a duplicate's secrets are copied by the engine from the server it copies
    this.copyOf = duplicate ? name : null;
    $('#server-form-title', this.form).textContent = !name ? 'Add a server' : duplicate ? `Duplicate “${name}”` : `Edit “${name}”`;
    $('#srv-name', this.form).value = !name ? '' : duplicate ? `${name} copy` : name;
    $('#srv-command', this.form).value = cfg?.command ?? '';
    $('#srv-args', this.form).value = (cfg?.args ?? []).join('\n');
    this.env = Object.entries(cfg?.env ?? {}).map(([k, v]) => rowOf(k, v));
    this.renderRows('env');
    $('#srv-cwd', this.form).value = cfg?.cwd ?? '';
    $('#srv-transport', this.form).value = this.transportOf(name);
    $('#srv-url', this.form).value = cfg?.url ?? '';
    $('#srv-log-level', this.form).value = cfg?.logLevel ?? '';
    $('#srv-timeout', this.form).value = cfg?.timeout ?? '';
    $('#srv-app-network', this.form).checked = Boolean(cfg?.appNetwork);
    this.headers = Object.entries(cfg?.headers ?? {}).map(([k, v]) => rowOf(k, v, true));
    this.renderRows('headers');
    const oauth = cfg?.oauth ?? {};
    $('#srv-oauth-client-id', this.form).value = oauth.clientId ?? '';
    $('#srv-oauth-metadata-url', this.form).value = oauth.clientMetadataUrl ?? '';
    // a stored secret is kept unless something is typed in its place
    this.keptClientSecret = isKept(oauth.clientSecret) ? oauth.clientSecret : null;
    const secretInput = $('#srv-oauth-client-secret', this.form);
    secretInput.value = '';
    secretInput.placeholder = this.keptClientSecret ? 'stored (type to replace it)' : '';
    $('#srv-oauth', this.form).open = Boolean(cfg?.oauth);
    $('#srv-secrets-note', this.form).textContent = secretsNoteText(this.secrets).text;
    // unset: the default for the transport, which follows the transport until the box is touched
    this.trustedTouched = cfg?.trusted != null;
    $('#srv-trusted', this.form).checked = cfg?.trusted ?? !this.transport(this.transportOf(name)).remote;
    const sb = name ? this.sandboxOf(name, cfg) : null;
    $('#srv-sandbox', this.form).checked = Boolean(sb);
    $('#srv-sandbox-network', this.form).checked = Boolean(sb?.network);
    $('#srv-sandbox-hosts', this.form).value = (sb?.hosts ?? []).join('\n');
    $('#srv-sandbox-read', this.form).value = (sb?.read ?? []).join('\n');
    $('#srv-sandbox-write', this.form).value = (sb?.write ?? []).join('\n');
    $('#srv-sandbox-unsandboxed', this.form).checked = Boolean(sb?.allowUnsandboxed);
    this.showTransport();
    this.showSandbox();
    this.showAppOrigins();
    this.clearErrors();
    this.form.hidden = false;
    this.list.hidden = true;
    for (const b of ['#server-add', '#server-import', '#server-export']) $(b, this.dialog).hidden = true;
    $('#srv-name', this.form).focus();
  }

  /** With "Let its apps reach the sites they name" ticked: which sites those are. */
  showAppOrigins() {
    const box = $('#srv-app-origins', this.form);
    box.hidden = !$('#srv-app-network', this.form).checked;
    if (box.hidden) { hideAppOrigins(box); return; }
    // a duplicate runs the same program: what the original's apps name
    const name = this.editing ?? this.copyOf;
    showAppOrigins(box, name, this.servers.find((s) => s.name === name), this.actions.appPages);
  }

  showTransport() {
    const t = this.transport($('#srv-transport', this.form).value);
    if (!this.trustedTouched) $('#srv-trusted', this.form).checked = !t.remote;
    for (const g of this.form.querySelectorAll('.http-only')) g.hidden = !t.remote;
    for (const g of this.form.querySelectorAll('.stdio-only')) g.hidden = t.remote;
    $('#srv-oauth', this.form).hidden = !t.signsIn;
  }

  /**
   * The environment's or the headers' rows: a name, a value (a password field when secret), for
   * the environment a "secret" box (ticked as a name that looks like one is typed, until touched);
   * a kept secret shows "•••• stored in the keyring" and Replace (its name fixed: it is what the engine keeps it by).
   */
  renderRows(kind, focusLast = false) {
    const rows = kind === 'env' ? this.env : this.headers;
    const box = $(kind === 'env' ? '#srv-env' : '#srv-headers', this.form);
    const what = kind === 'env' ? 'variable' : 'header';
    box.replaceChildren(...rows.map((r, i) => {
      const valueType = () => (kind === 'headers' || r.secret ? 'password' : 'text');
      const value = el('input', {
        class: 'kv-value', type: valueType(), value: r.value, spellcheck: 'false', autocomplete: 'off',
        'aria-label': `Value of ${r.name || `the ${what}`}`,
        placeholder: r.kept ? 'new value (empty: keep the one set)' : kind === 'env' ? 'value' : 'Bearer …',
        oninput: (e) => { r.value = e.target.value; },
      });
      const secretBox = kind === 'env' ? el('input', {
        type: 'checkbox', class: 'kv-secret-box', checked: r.secret, disabled: Boolean(r.kept),
        'aria-label': `${r.name || 'This variable'} is secret`,
        onchange: (e) => { r.secret = e.target.checked; r.secretTouched = true; value.type = valueType(); },
      }) : null;
      const name = el('input', {
        class: 'kv-name', value: r.name, spellcheck: 'false', autocomplete: 'off', readonly: Boolean(r.kept),
        'aria-label': kind === 'env' ? 'Variable name' : 'Header name',
        placeholder: kind === 'env' ? 'NAME' : 'Authorization',
        oninput: (e) => {
          r.name = e.target.value;
          if (secretBox && !r.secretTouched && !r.kept) {
            r.secret = looksSecret(r.name.trim());
            secretBox.checked = r.secret;
            value.type = valueType();
          }
        },
      });
      const set = r.kept && !r.replacing
        ? el('span', { class: 'secret-set', title: secretPlaceText(r.kept.secret) },
          el('span', { class: 'secret-dots' }, `•••• ${secretStoredText(r.kept.secret)}`),
          el('button', {
            type: 'button', class: 'btn small', dataset: { act: 'replace' }, 'aria-label': `Replace the value of ${r.name}`,
            onclick: () => { r.replacing = true; this.renderRows(kind); box.children[i]?.querySelector('.kv-value')?.focus(); },
          }, 'Replace'))
        : value;
      return el('div', { class: `kv-row${r.kept ? ' kept' : ''}`, dataset: { name: r.name } },
        name, set,
        secretBox ? el('label', { class: 'kv-secret', title: 'Kept in the keyring (or the private secrets file), never shown again' }, secretBox, ' secret') : null,
        el('button', {
          type: 'button', class: 'btn small kv-remove', 'aria-label': `Remove ${r.name || `this ${what}`}`,
          onclick: () => { rows.splice(i, 1); this.renderRows(kind); },
        }, '✕'));
    }));
    if (focusLast) box.querySelector('.kv-row:last-child .kv-name')?.focus();
  }

  /**
   * The rows as the engine takes them: a plain value; `{newSecret}` for a value to keep secret;
   * the engine's marker (as it came) to keep a set one. Or what is wrong with them.
   */
  readRows(kind) {
    const rows = kind === 'env' ? this.env : this.headers;
    const out = {};
    for (const r of rows) {
      const name = r.name.trim();
      if (!name) {
        if (r.value) return `A ${kind === 'env' ? 'variable' : 'header'} needs a name.`;
        continue;
      }
      if (name in out) return `${name} is there twice.`;
      const value = kind === 'headers' ? r.value.trim() : r.value;
      if (r.kept && !value) out[name] = r.kept;
      else if (kind === 'headers' && !value) return `The header ${name} has no value.`;
      else if (kind === 'headers' || r.secret) out[name] = { newSecret: value };
      else out[name] = value;
    }
    return out;
  }

  /** The sign-in client typed in the form (null: none). */
  readOAuth() {
    const clientId = $('#srv-oauth-client-id', this.form).value.trim();
    const typed = $('#srv-oauth-client-secret', this.form).value;
    const clientSecret = typed ? { newSecret: typed } : clientId ? this.keptClientSecret : null;
    const clientMetadataUrl = $('#srv-oauth-metadata-url', this.form).value.trim();
    if (!clientId && !clientSecret && !clientMetadataUrl) return null;
    return { clientId: clientId || null, clientSecret: clientSecret ?? null, clientMetadataUrl: clientMetadataUrl || null };
  }

  showSandbox() {
    $('#srv-sandbox-options', this.form).hidden = !$('#srv-sandbox', this.form).checked;
  }

  closeForm() {
    // secret values typed there are forgotten (saved or not), in the page and in this view
    this.env = [];
    this.headers = [];
    this.renderRows('env');
    this.renderRows('headers');
    $('#srv-oauth-client-secret', this.form).value = '';
    const hadFocus = this.form.contains(document.activeElement);
    this.form.hidden = true;
    this.list.hidden = false;
    for (const b of ['#server-add', '#server-import', '#server-export']) $(b, this.dialog).hidden = false;
    // the focus was in the form that went: it goes back to "+ Add server", not to nowhere
    if (hadFocus) $('#server-add', this.dialog).focus();
  }

  clearErrors() {
    for (const e of this.form.querySelectorAll('.field-error')) e.textContent = '';
  }

  showError(field, message) {
    const slot = this.form.querySelector(`.field-error[data-for="${field}"]`) ?? this.form.querySelector('.field-error[data-for="form"]');
    slot.textContent = message;
  }

  async submit() {
    this.clearErrors();
    const name = $('#srv-name', this.form).value.trim();
    const env = this.readRows('env');
    if (typeof env === 'string') { this.showError('env', env); return; }
    const disabled = this.editing ? Boolean(this.config.mcpServers[this.editing]?.disabled) : false;
    const logLevel = $('#srv-log-level', this.form).value || null;
    const appNetwork = $('#srv-app-network', this.form).checked;
    // the sites the user saw listed are those allowed (unread: what was allowed before)
    const before = this.editing ? this.config.mcpServers[this.editing]?.appOrigins ?? [] : [];
    const appOrigins = appNetwork ? shownOrigins($('#srv-app-origins', this.form)) ?? before : [];
    // the app's bound for a tool timeout (the engine's table); empty: the app's setting
    const timeoutRead = readSetting($('#srv-timeout', this.form));
    if (timeoutRead.error) { this.showError('timeout', timeoutRead.error); return; }
    const timeout = timeoutRead.value;
    // left as the transport's default unless the box was touched (or was set before)
    const trusted = this.trustedTouched ? $('#srv-trusted', this.form).checked : null;
    let server;
    const transport = $('#srv-transport', this.form).value;
    if (this.transport(transport).remote) {
      const headers = this.readRows('headers');
      if (typeof headers === 'string') { this.showError('headers', headers); return; }
      server = { type: transport, url: $('#srv-url', this.form).value.trim(), headers, logLevel, timeout, appNetwork, appOrigins, disabled, trusted, oauth: this.readOAuth() };
    } else {
      const cwd = $('#srv-cwd', this.form).value.trim();
      const command = $('#srv-command', this.form).value.trim();
      const args = $('#srv-args', this.form).value.split('\n').map((a) => a.trim()).filter(Boolean);
      const lines = (id) => $(id, this.form).value.split('\n').map((l) => l.trim()).filter(Boolean);
      // unticked: no sandbox; a built-in (sandboxed by default) needs saying so
      const builtin = command === 'switchboard' && args[0] === 'mcp-server';
      // the environment names granted and the limits set in mcp.json (not in the form) are kept,
      // and a catalog install's "only what is named" (nothing granted from its arguments)
      const before = this.config.mcpServers[this.editing]?.sandbox;
      const sandbox = $('#srv-sandbox', this.form).checked
        ? {
          network: $('#srv-sandbox-network', this.form).checked,
          hosts: lines('#srv-sandbox-hosts'),
          read: lines('#srv-sandbox-read'),
          write: lines('#srv-sandbox-write'),
          ...(before?.env?.length ? { env: before.env } : {}),
          ...(before?.limits ? { limits: before.limits } : {}),
          ...(before?.onlyNamed ? { onlyNamed: true } : {}),
          allowUnsandboxed: $('#srv-sandbox-unsandboxed', this.form).checked,
        }
        : builtin ? false : null;
      server = { command, args, env, cwd: cwd || null, logLevel, timeout, appNetwork, appOrigins, disabled, trusted, sandbox };
    }
    try {
      await this.actions.save(this.editing, this.copyOf, name, server);
      this.closeForm();
    } catch (err) {
      this.showError(err?.field ?? 'form', err?.message ?? String(err));
    }
  }
}

/** A form row from a config entry: a kept secret (the engine's marker) or a plain value. */
function rowOf(name, v, alwaysSecret = false) {
  return isKept(v)
    ? { name, value: '', secret: true, kept: v, replacing: false, secretTouched: true }
    : { name, value: String(v ?? ''), secret: alwaysSecret, kept: null, replacing: false, secretTouched: true };
}

function newRow() {
  return { name: '', value: '', secret: false, kept: null, replacing: false, secretTouched: false };
}

function dotLevel(status) {
  return { running: 'good', failed: 'bad', starting: 'busy' }[status] ?? 'idle';
}
