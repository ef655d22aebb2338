// The one module that talks to the Rust side (invoke and Channel). Every other module is a view.
// The commands called here are exactly those listed in src-tauri/commands/mod.rs (build.rs checks).
const core = window.__TAURI__.core;

/**
 * An error from a command: `kind` is one of invalid, not_found, store, unreachable, http, stream,
 * protocol, mcp, file, secret; `field` names the form field it is about, when it is about one.
 * @typedef {{ message: string, kind: string, url: string|null, field: string|null }} UiError
 */

/**
 * One MCP server as the list shows it.
 * @typedef {{ name: string, status: 'starting'|'running'|'failed'|'stopped'|'disabled',
 *   transport: 'stdio'|'http'|'sse'|'rest', command: string, args: string[],
 *   protocolVersion: string|null, serverInfo: string|null, tools: ToolView[],
 *   error: string|null, failedStep: FailedStep|null, restarts: number, exit: string|null,
 *   stderrTail: string[], pid: number|null, path: string|null, trusted: boolean,
 *   sandbox: SandboxView|null }} ServerView
 * @typedef {'findingCommand'|'readingSecrets'|'sandbox'|'fetchingPackage'|'startingProcess'|'connecting'|'openingStream'|'handshake'|'listingTools'|'running'} FailedStep
 * A server's kernel sandbox (null in ServerView: it runs without one). `state`: on (in force),
 * unsupported (this kernel cannot: not started until the user allows running it without),
 * waived (this kernel cannot and the user allowed it: runs without). `read`/`write`: its config's
 * folders; `own`: folders it writes as its own (the built-in files server's); `default`: a
 * built-in sandboxed by default; `blocked`: the last refusal its log tells of.
 * @typedef {{ state: 'on'|'unsupported'|'waived'|'container', network: boolean, read: string[], write: string[],
 *   own: string[], default: boolean, allowUnsandboxed: boolean, kernelAbi: number,
 *   protections: {what: string, enforced: boolean, how: string}[], blocked: string|null }} SandboxView
 * A tool; `changed`: its definition is not one the user accepted (what changed, line by line; for
 * a new or unchecked tool, all of it), `unaccepted` why: `changed` (the model is offered the
 * accepted one), `new` (its server did not have it when its tools were accepted: new, or
 * renamed), `unchecked` (the store could not be read). Every call asks, and its app is not shown,
 * until it is accepted.
 * @typedef {'changed'|'new'|'unchecked'} Unaccepted
 * @typedef {{ name: string, exposed: string, description: string, inputSchema: object,
 *   readOnly: boolean, destructive: boolean, openWorld: boolean, changed: DiffLine[]|null,
 *   unaccepted: Unaccepted|null, hash: string }} ToolView
 * @typedef {{ change: 'same'|'removed'|'added', text: string }} DiffLine
 */

/**
 * How a tool call came to run, or not (views/words.js words it).
 * @typedef {'waiting'|'readOnly'|'alwaysAllowed'|'allowedInChat'|'deniedByPolicy'|'approved'
 *   |'approvedForChat'|'approvedAlways'|'denied'|'cancelled'|'repeated'|'turnedOff'|'unknownTool'
 *   |'invalidArguments'|'signInNeeded'} Approval
 * A note from Switchboard in a conversation.
 * @typedef {{ kind: 'roundLimit', rounds: number } | { kind: 'repeatedCall', tool: string }
 *   | { kind: 'text', text: string }} Notice
 */

/**
 * What happens during a turn, in order (each has a `type`):
 * - turnStarted { conversationId, userMessageId|null, title, model }
 * - assistantStarted { messageId }; textDelta { messageId, text, html|null };
 *   thinkingDelta { messageId, text };
 *   assistantDone { messageId, status: 'complete'|'stopped'|'error', content, html }
 * - context { used, limit|null, toolsOffered, toolsOn } — before each request: about how many
 *   tokens it takes of the model's context, and how many tools it offers of those on
 * - toolCallStarted { id, messageId, name, written|null, server, tool, arguments } — `written`:
 *   the name the model wrote, when Switchboard resolved it to `name`
 * - toolCallArguments { id, arguments, repairs: string[] } — the arguments as they run, repaired
 * - approvalRequested { id, questionId, name, server, tool, arguments, destructive, changed: DiffLine[]|null,
 *   unaccepted: Unaccepted|null } → answerQuestion
 * - approvalResolved { id, approval: Approval, edited, arguments }
 * - appApprovalRequested { appOf, questionId, app, server, tool, arguments, destructive,
 *   changed: DiffLine[]|null, unaccepted: Unaccepted|null, waiting } — (appCallTool only) the app shown on call `appOf`'s card (`app`:
 *   how the user knows it) wants to run a tool: asked on that card → answerQuestion (`waiting`: how many of its calls
 *   of that tool the answer decides)
 * - appApprovalWaiting { appOf, questionId, waiting, arguments } — (appCallTool only) another call of that app and tool
 *   joined question `questionId`: `waiting` in all now
 * - appApprovalResolved { appOf, questionId, approval: Approval }
 * - toolCallProgress { id, progress, total|null, message|null }
 * - toolCallTask { id, status: 'working'|'input_required'|'completed'|'failed'|'cancelled'|'lost', message|null, reason? }
 *   — the call runs as a task on its server: where it is; a lost one's `reason` (TaskEnd) says why
 * - taskFollowed { id, conversationId } — (watchTasks only) a task from before the app started is
 *   followed again (its card says "resumed after a restart")
 * - taskResultWaiting { id, conversationId } — a task ended after its turn (after a restart): its
 *   result, or its tool's error, waits for the user to send it to the model (sendMessage with lateResult)
 * A stored tool call's `task`: { status, message|null, reason?, awaitingDelivery, resumed, startedAt }.
 * TaskEnd (why a task ended when that was not its tool's doing): 'forgotten'|'sessionEnded'|
 *   'sessionNotKept'|'endedWithApp'|'serverNotRunning'|'noAnswer'.
 * - elicitationRequested { callId, questionId, elicitation: { server, message, schema|null, url|null } } → answerQuestion
 * - samplingRequested { callId, questionId, request: { server, systemPrompt|null, messages, maxTokens } } → answerQuestion
 * - samplingFinished { callId, questionId, outcome: 'answered'|'declined'|'failed', model, text|null, error|null }
 * - toolCallFinished { id, result, isError, durationMs, raw|null }
 * - notice { messageId, notice: Notice }
 * - error { message, kind: 'unreachable'|'not_found'|'http'|'stream'|'protocol'|'secret', url|null }
 * - done { conversationId, stopped, limitReached }
 * @typedef {{ type: string } & Record<string, any>} ChatEvent
 */

/**
 * An answer to a question the engine asked (its `questionId` came with the event):
 * { kind: 'approval', action: 'allowOnce'|'allowConversation'|'alwaysAllow'|'deny', arguments? }
 * | { kind: 'elicitation', action: 'accept'|'decline'|'cancel', content? }
 * | { kind: 'sampling', approve: boolean }
 * @typedef {object} Answer
 */

const call = (cmd, args, options) => core.invoke(cmd, args, options);

export const appInfo = () => call('app_info');
/**
 * Where secrets are kept, for the settings screen's note: `store` is where new ones go (`unknown`
 * until the keyring has been asked), `reason` why not the keyring, `inFile` how many the file holds.
 * @typedef {{ store: 'keyring'|'file'|'unknown', file: string, reason: string|null, inFile: number }} SecretsStatus
 * A secret as the window sees it: where it is kept, never its value. Sent back as is, it keeps it.
 * @typedef {{ secret: 'keyring'|'file'|'config' }} KeptSecret
 */

/**
 * The settings, with `effectiveLlmUrl`, `secrets` (SecretsStatus) and `policies` (PolicyView[]).
 * A provider's `apiKey` is a KeptSecret or null. The window keeps no copy: it asks when it needs them.
 * A standing tool policy, for one tool (its own name) of the server with that identity (the
 * configured servers of that identity in `servers`); an older version's entry has `oldName` (the
 * name it was kept under) and `old` (why it applies to nothing) instead of `tool`:
 * @typedef {{ servers: string[], identity: string|null, tool: string|null, oldName: string|null,
 *   policy: 'allow'|'ask'|'deny', old: 'waiting'|'inert'|null }} PolicyView
 */
export const getSettings = () => call('get_settings');
/**
 * A change naming only what changes; the reply is the settings as they are now. Left out: stays;
 * `null`: cleared. Maps change per key: `toolModes: { [model]: mode|null }`,
 * `standingPolicies: { [serverIdentity]: { [tool]: policy|null } }` (by the tool's own name),
 * `toolPolicies: { [oldName]: null }` (forgets an older version's entry),
 * `trustedLinkHosts: { [host]: true|false }`.
 * `providers` is the whole list; an `apiKey` sent back as is keeps it, `{ newSecret: '…' }`
 * replaces it, null removes it.
 * @typedef {Object<string, *>} SettingsPatch
 * @param {SettingsPatch} patch
 */
export const changeSettings = (patch) => call('change_settings', { patch });
/**
 * The bounded settings, by key (`maxIterations`, `temperature`, …): { label, min, max, step, whole,
 * unit, default (null: it may be empty), optional, perModel, message } — the engine's one table.
 */
export const settingLimits = () => call('setting_limits');
export const listModels = () => call('list_models');
export const listConversations = () => call('list_conversations');
export const searchConversations = (query) => call('search_conversations', { query });
export const renameConversation = (id, title) => call('rename_conversation', { id, title });
export const setConversationPinned = (id, pinned) => call('set_conversation_pinned', { id, pinned });
export const deleteConversation = (id) => call('delete_conversation', { id });
export const restoreConversation = (id) => call('restore_conversation', { id });
export const duplicateConversation = (id) => call('duplicate_conversation', { id });
/** Shows the branch through messageId; with step ±1, through that message's previous/next sibling. */
export const showBranch = (id, messageId, step = 0) => call('show_branch', { id, messageId, step });
export const setConversationSettings = (id, settings) => call('set_conversation_settings', { id, settings });
/** The user's text for summary `id` of older turns (the next request carries it); the stored summary. */
export const editSummary = (id, text) => call('edit_summary', { id, text });
/** Pins message `id`: always sent to the model whole, however long the chat grows. */
export const setMessagePinned = (id, pinned) => call('set_message_pinned', { id, pinned });
export const llmCalls = (id) => call('llm_calls', { id });
/** format: 'markdown' | 'json'; resolves with the path written, or null when the dialog was closed. */
export const exportConversation = (id, format) => call('export_conversation', { id, format });
/** Resolves with the new conversation's id, or null when the dialog was closed. */
export const importConversation = () => call('import_conversation');
export const modelCapabilities = (provider, model) => call('model_capabilities', { provider, model });
/** Whether a model sees images: true, false, or null when its server does not say. */
export const modelSeesImages = (provider, model) => call('model_sees_images', { provider, model });
/** onProgress({status, digest, total, completed}); resolves true when done, false when cancelled. */
export function pullModel(name, onProgress) {
  const channel = new core.Channel();
  channel.onmessage = onProgress;
  return call('pull_model', { name, onProgress: channel });
}
export const cancelPull = (name) => call('cancel_pull', { name });
export const deleteModel = (name) => call('delete_model', { name });
/** { id, name, from: 'template' | 'name' | 'family' } or null: the tool-call format detected for the model. */
export const modelToolFormat = (provider, model) => call('model_tool_format', { provider, model });
/**
 * onEvent({event: 'probe', index, total, title, mode} | {event: 'result', result}); resolves with
 * the report { results, proposal: 'native' | 'text' | 'off', format, cancelled, checkedAt }.
 */
export function checkModel(provider, model, onEvent) {
  const channel = new core.Channel();
  channel.onmessage = onEvent;
  return call('check_model', { provider, model, onEvent: channel });
}
export const cancelModelCheck = (provider, model) => call('cancel_model_check', { provider, model });
/** The model's last check, as remembered (null when it was never checked). */
export const lastModelCheck = (provider, model) => call('last_model_check', { provider, model });
/**
 * { summary, items, toolChoice, settings, earlier }: the last page of items (`all`: every one);
 * `earlier` items come before them and were not sent.
 */
export const loadConversation = (id, all = false) => call('load_conversation', { id, all });
/** choice = { disabledServers: [name], disabledTools: ['server/tool'] } */
export const setConversationTools = (id, choice) => call('set_conversation_tools', { id, choice });
/** onChange(ServerView[]) now and after every change of any server (status, tools, log). */
export function watchServers(onChange) {
  const channel = new core.Channel();
  channel.onmessage = onChange;
  return call('watch_servers', { onChange: channel });
}
/**
 * { config: { mcpServers } (secrets as KeptSecret), path, secrets: SecretsStatus, transports:
 *   [{ type, names, label, description, remote, signsIn, discovers }] (the engine's table, mcp/transport.rs) }
 */
export const mcpConfig = () => call('mcp_config');
/**
 * Adds a server, or replaces `original`; `copyOf`: the server it duplicates (its secrets are copied).
 * In `server.env` and `server.headers` a value is a string (plain), `{ newSecret: '…' }` (a value to
 * keep secret) or the `{ secret: 'keyring'|'file'|'config' }` marker the config came with (keep it).
 */
export const saveMcpServer = (original, copyOf, name, server) => call('save_mcp_server', { original, copyOf, name, server });
export const deleteMcpServer = (name) => call('delete_mcp_server', { name });
export const setMcpServerEnabled = (name, enabled) => call('set_mcp_server_enabled', { name, enabled });
/** Lets a sandboxed server reach `host` (what it tried), or the whole network when null. */
export const allowServerNetwork = (name, host) => call('allow_mcp_server_network', { name, host });
/** Lets a sandboxed server read `path`, which its sandbox refused (never a protected path). */
export const allowServerRead = (name, path) => call('allow_mcp_server_read', { name, path });
export const restartMcpServer = (name) => call('restart_mcp_server', { name });
/** Signs in to a server (its page opens in the browser); resolves when the sign-in has ended. */
export const signInMcpServer = (name) => call('sign_in_mcp_server', { name });
export const signOutMcpServer = (name) => call('sign_out_mcp_server', { name });
/** Stops waiting for a sign-in (the page may stay open in the browser; its answer is ignored). */
export const cancelSignIn = (name) => call('cancel_sign_in', { name });
export const previewMcpImport = (text) => call('preview_mcp_import', { text });
/** Opens the system's file dialog; resolves with { path, text } or null when closed. */
export const pickMcpImportFile = () => call('pick_mcp_import_file');
export const importMcpServers = (servers) => call('import_mcp_servers', { servers });
export const exportMcpConfig = () => call('export_mcp_config');
/** Accepts the definition of `server`'s `tool` that the user was shown (changed, new or unchecked; `hash`: its view's);
 * fails when the server presents another one by now. */
export const acceptToolDefinition = (server, tool, hash) => call('accept_tool_definition', { server, tool, hash });
/**
 * Every skill (Settings → Skills): the user's own folder (read again) and each running server's.
 * `local`: { dir, skills: {name, description, frontmatter, dir}[], refused: string[] };
 * `servers`: { server, leftOut, listing: { skills: SkillEntry[], pending: {entry, unaccepted,
 * changed: DiffLine[], hash}[], refused: string[] } }[]; `folder`: the user's folder; `off`: the
 * skills off by default (`origin/name`). A SkillEntry: { uri, frontmatter, files }.
 */
export const listSkills = () => call('list_skills');
/** Accepts a server's changed skill as shown (its hash); false: it changed again meanwhile. */
export const acceptSkill = (server, uri, hash) => call('accept_skill', { server, uri, hash });
/** Opens the folder of the user's own skills (made when missing); resolves with its path. */
export const openSkillsFolder = () => call('open_skills_folder');
export const mcpPrompts = () => call('mcp_prompts');
export const getMcpPrompt = (server, name, args) => call('get_mcp_prompt', { server, name, arguments: args });
export const mcpResources = () => call('mcp_resources');
export const renderMarkdown = (text) => call('render_markdown', { text });
export const stopTurn = (turnId) => call('stop_turn', { turnId });
/**
 * Answers question `id` (see Answer). Rejects with a UiError when it does not fit (edited
 * arguments that do not match the tool's schema: the question keeps waiting).
 */
export const answerQuestion = (id, answer) => call('answer_question', { id, answer });
export const cancelToolCall = (id) => call('cancel_tool_call', { id });
/**
 * Serves the app page of a tool call's tool at an origin of its own: { viewId, url, server, tool,
 * toolInfo, toolInput, toolResult|null, prefersBorder|null, approvedCsp, closedOrigins: string[]
 * (origins it names that it may not reach), appNetwork, permissions: { camera, microphone,
 * geolocation, clipboardWrite } (what it asks of the browser), granted: same|null (what the user
 * granted this app before, in this run) }.
 */
export const openApp = (callId) => call('open_app', { callId });
/**
 * A `tools/call` the app page `viewId` (which calls itself `appName`) makes: through the checks
 * and approval, asked on its card (appApprovalRequested and elicitation events go to onEvent);
 * resolves with the CallToolResult for the page, rejects with a UiError when it may not run.
 */
export function appCallTool(viewId, appName, name, args, onEvent) {
  const channel = new core.Channel();
  channel.onmessage = onEvent;
  return call('app_call_tool', { viewId, appName, name, arguments: args, onEvent: channel });
}
/** `resources/read` of app page `viewId`: its server's ReadResourceResult. */
export const appReadResource = (viewId, uri) => call('app_read_resource', { viewId, uri });
/** `resources/list` ('resources') or `resources/templates/list` ('resourceTemplates') of app page `viewId`. */
export const appList = (viewId, listing, cursor) => call('app_list', { viewId, listing, cursor });
/** `ui/update-model-context` of app page `viewId`: its content blocks and structured content. */
export const appModelContext = (viewId, appName, content, structuredContent) =>
  call('app_model_context', { viewId, appName, content, structuredContent });
/** The user answered what app page `viewId` asks of the browser; resolves with its `allow` attribute. */
export const appGrant = (viewId, granted) => call('app_grant', { viewId, granted });
/** App page `viewId` had `blocked` refused by its Content-Security-Policy (`directive`). */
export const appCspViolation = (viewId, directive, blocked) => call('app_csp_violation', { viewId, directive, blocked });
/**
 * App page `viewId` is no longer shown. `reason`: why (what the page was told); `teardown`:
 * { answered, error, ms } how it took ui/resource-teardown, or null when it had not started.
 */
export const closeApp = (viewId, reason, teardown) => call('close_app', { viewId, reason, teardown });
/**
 * onClose() is called when the window is asked to close while apps are shown; it tells them,
 * then calls appsClosed() (the window closes by itself after 5 s anyway).
 */
export function watchWindowClose(onClose) {
  const channel = new core.Channel();
  channel.onmessage = () => onClose();
  return call('watch_window_close', { onClose: channel });
}
export const appsClosed = () => call('apps_closed');
/** A log message from app page `viewId` (`notifications/message`), into its server's log. */
export const appLog = (viewId, level, data) => call('app_log', { viewId, level, data });
/** The app pages of `server`'s tools: [{ uri, domains: { connect, resource, frame, baseUri }, error }]. */
export const appPages = (server) => call('app_pages', { server });
/**
 * onEvent(ChatEvent) for calls followed outside a turn: tasks still running on their servers when
 * the app last ended (toolCallTask, toolCallProgress, elicitation and sampling questions,
 * toolCallFinished, taskResultWaiting).
 */
export function watchTasks(onEvent) {
  const channel = new core.Channel();
  channel.onmessage = onEvent;
  return call('watch_tasks', { onEvent: channel });
}

/**
 * The catalog (an MCP Registry, API v0.1). A page: { registry, entries: CatalogEntry[], skipped:
 * [{ name|null, reason }], nextCursor|null, offline: { fetchedAt, reason }|null } — `offline`: the
 * registry could not be reached and this is the copy fetched before.
 * @typedef {{ name: string, title: string|null, description: string, version: string,
 *   repository: string|null, website: string|null, icon: string|null, kinds: string[],
 *   needsSecrets: boolean, deprecated: boolean, statusMessage: string|null, installable: boolean,
 *   installed: { server: string, version: string }|null }} CatalogEntry
 * A prepared install: { token, title, name, version, description, kind, defaultName, fields:
 * Field[], values (an update's current ones; secrets as { secret: 'kept' }), signature:
 * { status: 'unsigned'|'signed'|'untrusted', publisher?, issuer?, fingerprint? }|null,
 * update: { server, from, to }|null, remote }.
 * @typedef {{ key: string, label: string, description: string|null, kind: 'text'|'number'|'boolean'
 *   |'choice'|'file'|'directory'|'path', choices?: string[], required: boolean, secret: boolean,
 *   multiple: boolean, default: any, placeholder: string|null, min: number|null, max: number|null,
 *   target: { kind: 'env'|'header'|'argument'|'url'|'setting', name?: string } }} Field
 * Choices: { name, values: { [key]: string|number|boolean|string[]|{ secret } }, network, folders,
 * confirmWrite, write (folders it may also write), declined (proposed read grants left out) }.
 * A prepared install's `update.completes`: it completes that server (a secret never set).
 */
export const catalogSearch = (term, cursor = null) => call('catalog_search', { term, cursor });
/** An entry's icon as a data: URL (fetched by the app, https only), or null. */
export const catalogIcon = (url) => call('catalog_icon', { url });
/** way: which of the entry's packages/remotes (null: the first this computer can run). */
export const catalogPrepare = (name, way = null) => call('catalog_prepare', { name, way });
export const catalogPrepareUpdate = (server) => call('catalog_prepare_update', { server });
/**
 * The exact server an install would add: { name, kind, transport, command|null, args, cwd|null,
 * url|null, env: [{ name, value|null (null: a secret), secret, risk|null }], headers, sandbox:
 * { network, hosts?, read, write, onlyNamed }|null, grants: [{ path, write, why: { kind: 'bundleFolder'|
 * 'field'|'fileFolder'|'picked'|'written'|'proposed', key?, label?, file?, database?, tool? },
 * means|null }], network: { kind: 'sandbox'|'container', allowed }
 * |{ kind: 'remote' }, signature, notes: [{ kind, … }], diff: DiffLine[]|null, startsOff }.
 * Rejects with a UiError whose `field` is the form field's key when a value does not fit
 * (`confirmWrite`: a folder it may write that decides what runs at login, to be typed in
 * `choices.confirmWrite`).
 */
export const catalogPreview = (token, choices) => call('catalog_preview', { token, choices });
/** Installs; resolves with the server's name (a new one is added turned off). */
export const catalogInstall = (token, choices) => call('catalog_install', { token, choices });
export const catalogCancel = (token) => call('catalog_cancel', { token });
/** The installed servers with a newer version: [{ server, name, installed, latest }]. */
export const catalogUpdates = () => call('catalog_updates');
/** Sets the registry the catalog searches ('' : the official one); resolves with the one in use. */
export const setCatalogRegistry = (url) => call('set_catalog_registry', { url });
/** "Install bundle…": the system's file dialog (opened by the app); a prepared install, or null. */
export const pickBundle = () => call('pick_bundle');
/** A folder (or a file) for a setting, picked in the system's dialog; its path, or null. */
export const pickSettingPath = (folder) => call('pick_setting_path', { folder });
/**
 * onOpen({ kind: 'prepared', prepared } | { kind: 'refused', file, message }) for each bundle opened
 * with the app (its command line, another launch, a drop on the window).
 */
export function watchBundles(onOpen) {
  const channel = new core.Channel();
  channel.onmessage = onOpen;
  return call('watch_bundles', { onOpen: channel });
}

/** A `.mcpb` dropped on the window (its bytes): prepared or refused, through watchBundles. */
export const openDroppedBundle = (name, bytes) => call('open_dropped_bundle', bytes, { headers: { 'x-file-name': encodeURIComponent(name) } });

/** Opens an http(s) link in the user's browser, never in this window. */
export const openUrl = (url) => call('plugin:opener|open_url', { url });

/**
 * A file made ready to send: an image kept by the engine (re-encoded, no metadata) or a
 * document's text; `tokens`: about how many of the model's context it takes.
 * @typedef {{ kind: 'image', sha256: string, name: string, mime: string, width: number, height: number,
 *   bytes: number, thumbnail: string, tokens: number }
 *   | { kind: 'document', name: string, mime: string, text: string, pages: number|null, cut: boolean,
 *   tokens: number }} AttachedFile
 */
/** A pasted or dropped file's bytes (a Uint8Array): the engine reads the type from them. → AttachedFile */
export const attachFile = (name, bytes) => call('attach_file', bytes, { headers: { 'x-file-name': encodeURIComponent(name) } });
/** The system's file dialog; each file picked: { name, file: AttachedFile|null, error: string|null }. */
export const pickAttachments = () => call('pick_attachments');
/** A kept image whole, as a data: URL. */
export const attachmentImage = (sha256) => call('attachment_image', { sha256 });

/**
 * Runs a turn; `onEvent` receives each ChatEvent as it happens. request = { turnId, conversationId,
 * model, text, attachments, images: [{ sha256, name }], documents: [{ name, mime, text }], toolChoice, editOf?, regenerate?, resume?: 'continue' | 'wrapUp',
 * lateResult?: a tool call id whose late task result to send }.
 * Resolves with the turn summary when the turn has ended.
 */
export function sendMessage(request, onEvent) {
  const channel = new core.Channel();
  channel.onmessage = onEvent;
  return call('send_message', { request, onEvent: channel });
}

/**
 * The window's own state (kept by the app in window-state.json, never the engine's settings):
 * { theme: 'system'|'light'|'dark', sidebarWidth: number|null, open: { conversationId, scrollTop,
 *   atEnd }|null, hints: string[], firstRunDone: boolean, notifications: { turnFinished, question,
 *   serverCrashed, taskCompleted }, drafts: { [conversationId|'new']: { text, attachments } },
 *   note: string|null (why a saved state was set aside at start) }
 */
export const windowState = () => call('window_state');
/** Changes what `patch` names (same keys; `drafts` per key, null removes one; `open: null`). */
export const changeWindowState = (patch) => call('change_window_state', { patch });
/**
 * A desktop notification, shown only while the window is not focused and that kind is on.
 * kind: 'turnFinished'|'question'|'serverCrashed'|'taskCompleted'. Resolves true when shown.
 */
export const notify = (kind, title, body, conversationId = null) => call('notify', { kind, title, body, conversationId });
/** onClick(conversationId|null) when a notification is clicked (the window is brought up first). */
export function watchNotificationClicks(onClick) {
  const channel = new core.Channel();
  channel.onmessage = onClick;
  return call('watch_notification_clicks', { onClick: channel });
}
