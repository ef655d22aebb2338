// The words for the codes the engine sends (approvals, notices, failed steps, statuses). The
// engine never sends sentences for states; this module is where they are worded.

/** How a tool call came to run, or not (the card's badge). */
export function approvalText(approval, edited = false) {
  const base = {
    waiting: 'waiting',
    readOnly: 'read-only',
    alwaysAllowed: 'always allowed',
    allowedInChat: 'allowed in this chat',
    deniedByPolicy: 'denied by policy',
    approved: 'approved',
    approvedForChat: 'approved for this chat',
    approvedAlways: 'approved always',
    denied: 'denied',
    cancelled: 'cancelled',
    repeated: 'not run (repeated)',
    turnedOff: 'not run (turned off for this chat)',
    unknownTool: 'not run (unknown tool)',
    invalidArguments: 'not run (invalid arguments)',
    signInNeeded: 'not run (sign-in needed)',
  }[approval] ?? String(approval);
  return edited && !isRefused(approval) ? `${base}, arguments edited` : base;
}

/** Whether the call was kept from running (by the user, the settings, or because it could not run). */
export function isRefused(approval) {
  return ['deniedByPolicy', 'denied', 'cancelled', 'turnedOff', 'unknownTool', 'invalidArguments', 'signInNeeded'].includes(approval);
}

/** "3.1k" for 3,100 tokens. */
function tokens(n) {
  return n >= 1000 ? `${(n / 1000).toFixed(n >= 10000 ? 0 : 1)}k` : String(n);
}

/** The context meter: about how much of the model's context the last request took. */
export function contextText(used, limit) {
  return limit ? `${tokens(used)} / ${tokens(limit)}` : `${tokens(used)} tokens`;
}

/** A note from Switchboard in the conversation. */
export function noticeText(notice) {
  switch (notice?.kind) {
    case 'roundLimit':
      return `Stopped after ${notice.rounds} rounds of tool calls: that is the limit for one turn (Settings → Max tool rounds). `
        + 'The model had not finished: Continue lets it go on, Wrap up asks for an answer without more tools.';
    case 'repeatedCall':
      return `Stopped: the model asked for ${notice.tool} with the same arguments twice in a row, which usually means it is going in circles. `
        + 'Rephrase your question, or turn that tool off for this chat.';
    case 'text':
      return notice.text;
    case 'resultsStubbed':
      return `To fit the model's context, ${notice.count === 1 ? 'an older tool result now goes' : `${notice.count} older tool results now go`} `
        + 'to the model as a short note of what was there. Their cards keep everything.';
    case 'contextFull':
      return notice.ask
        ? `This conversation no longer fits the model's context (about ${tokens(notice.used)} of ${tokens(notice.limit)} tokens), and this chat is set to ask. `
          + 'Summarise the older turns, or leave the oldest out of what is sent (the conversation here stays whole).'
        : `The latest messages alone take about ${tokens(notice.used)} of the model's ${tokens(notice.limit)} tokens of context, so nothing was sent. `
          + 'Use a model with a longer context (chat settings → Context length), or shorten the last message or its attachments.';
    case 'summaryFailed':
      return `The older turns could not be summarised (${notice.error}), so the oldest were left out of this request instead. `
        + 'They are still here, in the conversation.';
    default:
      return '';
  }
}

/** Why a variable in an imported server's environment deserves a look. */
export function envRiskText(risk) {
  return {
    loadsLibraries: 'makes the program load other code (a library of someone else\'s choosing)',
    runtimeOptions: 'passes options to the runtime, which can make it load other code',
    packageSource: 'changes where npm fetches packages from, and how',
    pythonPath: 'changes what Python imports or runs first',
    searchPath: 'changes which programs run under familiar names',
  }[risk] ?? String(risk);
}

/** The step of a server's start (or life) that failed. */
export function stepText(step) {
  return {
    findingCommand: 'finding the command',
    readingSecrets: 'reading its secrets (the keyring)',
    sandbox: 'setting up its sandbox',
    fetchingPackage: 'fetching its package',
    startingProcess: 'starting the process',
    connecting: 'connecting',
    openingStream: 'opening the event stream (GET)',
    handshake: 'the MCP handshake (initialize)',
    listingTools: 'listing tools (tools/list)',
    signingIn: 'signing in',
    running: 'running',
  }[step] ?? String(step);
}

/**
 * A server's sandbox in a few words, for its row: "sandboxed (no network)", "not sandboxed", …
 * `sandbox` is the ServerView's (null: it runs without one).
 */
export function sandboxText(sandbox) {
  if (!sandbox) return 'not sandboxed';
  switch (sandbox.state) {
    case 'on':
      if (sandbox.network) return 'sandboxed';
      if (sandbox.hosts?.length) return `sandboxed (network: ${sandbox.hosts.length === 1 ? sandbox.hosts[0] : `${sandbox.hosts.length} hosts`} only)`;
      return 'sandboxed (no network)';
    case 'waived': return 'not sandboxed (this system cannot; you allowed it)';
    case 'container': return sandbox.network ? 'in a container' : 'in a container (no network)';
    case 'unsupported': return 'sandbox unavailable on this system';
    default: return String(sandbox.state);
  }
}

/** What a sandboxed server may use besides what it needs to run, for the badge's tooltip. */
export function sandboxDetail(sandbox) {
  if (!sandbox) return 'It runs with your user\'s full access to files and the network.';
  if (sandbox.state === 'container') {
    return [
      'It runs a container, which is its sandbox: the docker (podman) command runs outside Switchboard’s sandbox so it can reach Docker, with only the options Switchboard checked (no privileges, host namespaces, devices, ports; mounts only of the folders listed).',
      sandbox.network ? 'Network: Docker’s.' : 'Network: none (--network=none).',
      `Mounts: ${[...sandbox.write, ...sandbox.read].join(', ') || 'none'}.`,
    ].join('\n');
  }
  const lines = [];
  lines.push(sandbox.network ? 'Network: allowed.'
    : sandbox.hosts?.length ? `Network: only ${sandbox.hosts.join(', ')} (enforced by Switchboard).`
      : 'Network: none (no TCP, UDP or DNS).');
  const read = sandbox.read.length ? sandbox.read.join(', ') : 'only what it needs to run';
  lines.push(`Reads: ${read}.`);
  const write = [...sandbox.own, ...sandbox.write];
  lines.push(`Writes: ${write.length ? write.join(', ') : 'only its own temporary folder'}.`);
  if (sandbox.default) lines.push('A built-in server: sandboxed by default.');
  lines.push(sandbox.kernelAbi ? `Kernel sandbox: Landlock ABI ${sandbox.kernelAbi}.` : 'This kernel has no Landlock.');
  for (const p of sandbox.protections ?? []) lines.push(`${p.enforced ? '✓' : '✗'} ${p.what}: ${p.how}`);
  return lines.join('\n');
}

/** The protections this kernel cannot give a sandboxed server, in a line ('' when none). */
export function sandboxMissing(sandbox) {
  if (!sandbox || sandbox.state !== 'on') return '';
  return (sandbox.protections ?? []).filter((p) => !p.enforced).map((p) => `${p.what} (${p.how})`).join('; ');
}

/** The line under a reply that did not finish normally. */
export function messageStatusText(status) {
  switch (status) {
    case 'stopped': return 'Stopped — this reply is incomplete.';
    case 'interrupted': return 'Interrupted — the app closed while this reply was being written.';
    case 'error': return 'The model failed while writing this reply.';
    default: return '';
  }
}

/** What a write-only field shows in the place of a set secret: where it is, never what. */
export function secretStoredText(where) {
  return {
    keyring: 'stored in the keyring',
    file: 'stored in the secrets file',
    config: 'in the config file (moved on save)',
  }[where] ?? 'stored';
}

/** Where a set secret is kept (its tooltip); `where` is the engine's marker. */
export function secretPlaceText(where) {
  return {
    keyring: 'Set: kept in the system keyring. Replace it to change it; it is never shown.',
    file: 'Set: kept in Switchboard\'s private secrets file (no keyring was available). Replace it to change it; it is never shown.',
    config: 'Set: written in the config file by hand. It moves to the keyring (or the private secrets file) when you save.',
  }[where] ?? 'Set. Replace it to change it; it is never shown.';
}

/**
 * The settings screen's note on where secrets are kept, from the engine's status
 * ({ store: 'keyring'|'file'|'unknown', file, reason, inFile }). `warning`: no keyring.
 */
export function secretsNoteText(status) {
  if (!status) return { text: '', warning: false };
  const what = 'API keys, server headers and the environment values you mark secret';
  if (status.store === 'keyring') {
    const also = status.inFile ? ` ${status.inFile} saved while it was unavailable are in ${status.file} (readable only by you) until you replace them.` : '';
    return { text: `${what} are kept in the system keyring, not in the settings files.${also}`, warning: false };
  }
  if (status.store === 'file') {
    return {
      text: `⚠ No system keyring is available${status.reason ? ` (${status.reason})` : ''}. ${what} are kept in ${status.file}, a file only you can read (0600), not in the settings files.`,
      warning: true,
    };
  }
  return { text: `${what} go to the system keyring, or to ${status.file} (readable only by you) when there is none.`, warning: false };
}

/** Environment variable names that usually hold a secret (the engine's `looks_secret`). */
export function looksSecret(name) {
  const upper = name.toUpperCase();
  const words = ['KEY', 'TOKEN', 'SECRET', 'PASSWORD', 'PASSWD', 'PASS', 'CREDENTIAL', 'AUTH', 'PAT'];
  return words.some((w) => upper.split('_').includes(w) || (w !== 'PAT' && upper.endsWith(w)));
}

/** What a catalog entry runs. */
export function kindText(kind) {
  return {
    npm: 'npm', pypi: 'PyPI', oci: 'container', nuget: 'NuGet', mcpb: 'bundle',
    'streamable-http': 'remote (HTTP)', sse: 'remote (SSE)',
  }[kind] ?? kind;
}

/** A catalog error, for people: what happened, not an HTTP code. */
export function catalogErrorText(err) {
  const message = err?.message ?? String(err);
  switch (err?.kind) {
    case 'unreachable':
      return `The registry cannot be reached: check the connection, or the registry's address (Change…). ${message}`;
    case 'not_found':
      return `${message} It may have been removed.`;
    case 'http':
      return `The registry did not give what was asked. ${message}`;
    default:
      return message;
  }
}

/** Unix seconds as a date and time. */
export function whenText(secs) {
  return new Date(secs * 1000).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' });
}

/** A note in an install's preview. */
export function catalogNoteText(n) {
  switch (n?.kind) {
    case 'downloadsOnStart':
      return `${n.launcher} downloads ${n.package} when the server first starts: it needs the network for that (tick "It may use the network"), unless the package is already on this computer.`;
    case 'programMissing':
      return `${n.program} is not installed (it is not on the PATH): the server cannot start until it is.`;
    case 'deprecated':
      return `The registry marks it deprecated${n.message ? `: ${n.message}` : '.'}`;
    case 'container':
      return 'It runs in a container, which is its sandbox: the docker (or podman) command runs outside Switchboard’s sandbox, since it must reach Docker, but only with the options Switchboard checks before each start (no privileges, no host namespaces, devices or ports); the container gets no network unless you allow it (--network=none), and it mounts only folders you gave it.';
    case 'imageByTag':
      return `Its image is named by the tag ${n.tag}, not pinned: the publisher of ${n.image} can point that tag at another image later (only a digest, @sha256:…, names one image).`;
    case 'remote':
      return `It is a server at ${n.host}: what it gets is what you send it.`;
    case 'fileNeedsFolder': {
      const what = n.database
        ? `${n.file} is a database: SQLite writes its journal (-journal, -wal, -shm) beside it`
        : `${n.file} does not exist yet, and the sandbox can let a server write only what exists`;
      return `${what}, and ${n.folder} holds other files, so ${n.exists ? 'it may change only the file itself' : 'it cannot make it'}. Give it a file in a folder of its own, or let it write that folder.`;
    }
    default:
      return '';
  }
}

/** Why an install's sandbox grants a folder (`GrantReason`). */
export function grantWhyText(why) {
  switch (why?.kind) {
    case 'bundleFolder': return 'its own folder: the bundle’s files';
    case 'field': return `you gave it as “${why.label}”`;
    case 'fileFolder': return why.database
      ? `the folder of ${why.file} (“${why.label}”), which holds nothing else: SQLite writes its journal beside it`
      : `the folder of ${why.file} (“${why.label}”), which holds nothing else: the file does not exist yet`;
    case 'picked': return 'you listed it';
    case 'written': return 'you let it write there';
    case 'proposed': return `${why.tool} reads its settings there (proposed; credentials inside stay out)`;
    default: return '';
  }
}

/** The network an install will have (`NetworkView`), as the preview says it. */
export function networkText(n, hosts = []) {
  switch (n?.kind) {
    case 'container': return n.allowed
      ? 'Docker’s own network for the container (outside this sandbox: it reaches what Docker lets containers reach).'
      : 'none: the container runs with --network=none, whatever the sandbox of the docker command allows.';
    case 'sandbox': return n.allowed ? 'allowed.' : hosts?.length ? `only ${hosts.join(', ')}.` : 'none.';
    default: return '';
  }
}

/** A bundle's signature. */
export function signatureText(s) {
  switch (s?.status) {
    case 'signed': return `Signed by ${s.publisher} (certified by ${s.issuer}).`;
    case 'untrusted': return s.notForCode
      ? `Signed, but by a certificate that is not for signing code: “${s.publisher}” proves nothing.`
      : `Signed, but by a certificate this computer does not trust: “${s.publisher}” proves nothing.`;
    default: return 'Unsigned: nothing says who made it.';
  }
}

/** Where a form field's value goes. */
export function targetText(t) {
  switch (t?.kind) {
    case 'env': return `(environment variable ${t.name})`;
    case 'header': return `(header ${t.name})`;
    case 'argument': return `(argument ${t.name})`;
    case 'url': return '(part of its address)';
    default: return '';
  }
}

/** Where a task is (a tool call its server runs as a task), and why when it ended without its tool's result. */
export function taskText({ status, message, reason }) {
  const base = (reason && TASK_ENDS[reason]) ?? TASK_STATES[status] ?? String(status);
  return message ? `${base} — ${message}` : base;
}

const TASK_STATES = {
  working: 'Running as a task on the server',
  input_required: 'The task waits for your answer',
  completed: 'The task finished',
  failed: 'The task failed',
  cancelled: 'The task was cancelled',
  lost: 'The server no longer knows this task',
};

const TASK_ENDS = {
  forgotten: 'The server no longer knows this task (it restarted, or the task expired); it was not run again',
  sessionEnded: 'The server ended the session this task ran in, so the task cannot be recovered; it was not run again',
  sessionNotKept: 'The session this task ran in could not be read back from the keyring, so the task cannot be recovered',
  endedWithApp: 'The server ran inside the app, so the restart ended it and this task; it was not run again',
  serverNotRunning: 'The server is not running, so this task cannot be followed',
  noAnswer: 'The server stopped answering about this task',
};

/** A task followed again after the app restarted: says so, with when it was started (ms since the epoch). */
export function resumedText(startedAt) {
  if (!startedAt) return 'Resumed after a restart';
  const d = new Date(startedAt);
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  const today = d.toDateString() === new Date().toDateString();
  const when = today ? `at ${time}` : `on ${d.toLocaleDateString([], { month: 'short', day: 'numeric' })} at ${time}`;
  return `Resumed after a restart — started ${when}`;
}

/** What a sandbox kept off the network, in a line: `example.com (3 times), 1.2.3.4:443`. */
export function networkTried(attempts) {
  return attempts.map((a) => (a.count > 1 ? `${a.target} (${a.count} times)` : a.target)).join(', ');
}
