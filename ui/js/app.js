// The controller: wires the views to the IPC module and keeps the app's little state.
import * as ipc from './ipc.js';
import { $, el } from './dom.js';
import { AppHost } from './views/app-host.js';
import { ChatView } from './views/chat.js';
import { Sidebar } from './views/sidebar.js';
import { SettingsView } from './views/settings.js';
import { summarize, ServersView } from './views/servers.js';
import { ImportExportView } from './views/import.js';
import { ComposerView } from './views/composer.js';
import { ToolsPicker } from './views/tools.js';
import { ModelsView } from './views/models.js';
import { ModelCheckView } from './views/model-check.js';
import { renderDebug } from './views/debug.js';
import { ChatSettingsDialog } from './views/chat-settings.js';
import { useLimits } from './views/setting-limits.js';
import { SkillsSection } from './views/skills.js';
import { ModelPicker } from './views/model-picker.js';
import { Banner, toast } from './views/banner.js';
import { showAttached } from './views/context-meter.js';
import { FileAttachments, ImageViewer } from './views/attach.js';
import { LinkConfirm, linkOpener } from './views/links.js';
import { SignInNotes } from './views/sign-in-note.js';
import { TaskFollower } from './views/task-follower.js';
import { wireCatalog } from './views/catalog-wiring.js';
import { WindowKeeper, reopenLast } from './views/window-state.js';
import { Drafts } from './views/drafts.js';
import { installShortcuts, ShortcutSheet, stepIn } from './views/shortcuts.js';
import { turnEvents as makeTurnEvents, unknownEvent } from './turn-events.js';
import { Notifications, wireNotifySettings } from './views/notifications.js';

/**
 * Everything the window itself keeps (the engine owns the rest: settings, conversations,
 * servers' configs; the window asks for them). One place, so nothing hides a second copy.
 */
const state = {
  /** The open conversation; null for a new chat not yet sent. */
  conversationId: null,
  /** The turn running in this window (so Stop can name it), or null. */
  turnId: null,
  /** The models of every provider, as last listed (for the settings dialog's choice). */
  models: [],
  /** The servers as the engine last pushed them (watch_servers). */
  servers: [],
  /** appInfo(): version, data folder, config file, a config error. */
  info: null,
  /** This chat's own settings; for a new chat, those saved with its first message. */
  conversationSettings: null,
  pendingChatSettings: null,
  /** A new chat's choice of tools, until its first message creates the conversation. */
  pendingToolChoice: null,
};

const banner = new Banner($('#banner'));
const showBanner = (title, detail) => banner.show(title, detail);
const hideBanner = () => banner.hide();
// the settings are the engine's: the window asks for them when it needs them, and sends changes
const currentSettings = () => ipc.getSettings();
const explainLlmError = async (err) => banner.llmError(err, (await currentSettings().catch(() => null))?.effectiveLlmUrl);
const models = new ModelPicker($('#model-select'), $('#model-badges'), { capabilities: ipc.modelCapabilities });
const imageViewer = new ImageViewer($('#image-dialog'), ipc.attachmentImage);
const chat = new ChatView($('#messages'), {
  onOpenImage: (img) => imageViewer.open(img),
  onLink: (href, words) => openLink(href, words),
  onExample: (text) => { $('#input').value = text; autosize(); drafts?.changed(); $('#input').focus(); },
  onCancelCall: (id) => ipc.cancelToolCall(id).catch(() => {}),
  onLateResult: (id) => sendLateResult(id),
  // an app is shown only for a tool as the user accepted it (the engine refuses the others too)
  hasApp: (server, tool) => {
    const t = state.servers?.find((s) => s.name === server)?.tools?.find((x) => x.name === tool);
    return Boolean(t?.ui?.resourceUri && !t.changed);
  },
  onOpenApp: (callId, box, onEnded) => apps.open(callId, box, onEnded),
  onEdit: (id, text) => sendEdit(id, text),
  onRegenerate: (userMessageId) => regenerate(userMessageId),
  onBranch: (id, step) => switchBranch(id, step),
  onResume: (how) => resume(how),
  onChatSettings: () => $('#chat-settings-button').click(),
  onShowEarlier: () => showEarlier(),
  onAllowNetwork: (server, host) => ipc.allowServerNetwork(server, host).then(() => reloadServerConfig()),
  onEditSummary: (id, text) => ipc.editSummary(id, text),
  onContextPolicy: (policy) => chooseContextPolicy(policy),
  onPin: (id, pinned) => ipc.setMessagePinned(id, pinned),
});
const composer = new ComposerView(
  { input: $('#input'), attachButton: $('#attach'), chips: $('#attachments'), menu: $('#composer-menu') },
  { resources: ipc.mcpResources, prompts: ipc.mcpPrompts, getPrompt: ipc.getMcpPrompt, pickFiles: () => files.pick() },
  () => autosize(),
);
// files pasted, dropped on the window or picked (views/attach.js)
const files = new FileAttachments({ chips: $('#files'), note: $('#attach-note') }, {
  attachBytes: ipc.attachFile,
  openBundle: ipc.openDroppedBundle,
  pick: ipc.pickAttachments,
  seesImages: ipc.modelSeesImages,
  models: () => state.models,
  current: () => models.current(),
  pickModel: (provider, model) => { models.pick(provider, model); $('#model-select').dispatchEvent(new Event('change')); },
  openImage: (img) => imageViewer.open(img),
  onChange: () => showAttached($('#context-meter'), files.tokens()),
});
files.listen(document, $('#input'));
const toolsPicker = new ToolsPicker($('#tools-button'), $('#tools-panel'), async (choice) => {
  if (!state.conversationId) { state.pendingToolChoice = choice; return; }
  try {
    await ipc.setConversationTools(state.conversationId, choice);
  } catch (err) {
    showBanner('Could not save the tool choice.', err?.message ?? String(err));
  }
});
const sidebar = new Sidebar($('#conversation-list'), $('#search'), {
  onOpen: (id, messageId) => openConversation(id, messageId),
  onSearch: (q) => ipc.searchConversations(q),
  onRename: async (id, title) => {
    await library(() => ipc.renameConversation(id, title));
    if (id === state.conversationId) $('#chat-title').textContent = title;
  },
  onPin: (id, pinned) => library(() => ipc.setConversationPinned(id, pinned)),
  onDuplicate: async (id) => {
    const copy = await library(() => ipc.duplicateConversation(id));
    if (copy) openConversation(copy);
  },
  onExport: (id, format) => exportConversation(id, format),
  onDelete: async (id) => {
    await library(() => ipc.deleteConversation(id));
    if (id === state.conversationId) newChat();
  },
  onUndo: (id) => library(() => ipc.restoreConversation(id)),
});

// The window's own state (views/window-state.js): theme, sidebar width, the open conversation,
// hints; drafts per conversation (views/drafts.js, made once the state is read).
const keeper = new WindowKeeper({ load: ipc.windowState, change: ipc.changeWindowState });
// desktop notifications while the window is away (the app checks focus and the user's switches)
const notifications = new Notifications({ notify: ipc.notify, watchClicks: ipc.watchNotificationClicks }, {
  title: (id) => (id === state.conversationId ? $('#chat-title').textContent
    : document.querySelector(`.conv[data-id="${id}"] .conv-name`)?.textContent) || 'a chat',
  openConversation: (id) => openConversation(id),
});
let drafts = null;

/** Runs a change to the library, then shows the list again; problems go to the banner. */
async function library(change) {
  try {
    return await change();
  } catch (err) {
    showBanner('That did not work.', err?.message ?? String(err));
    return null;
  } finally {
    refreshConversations();
  }
}

async function exportConversation(id, format) {
  try {
    const path = await ipc.exportConversation(id, format);
    if (path) toast(`Exported to ${path}`);
  } catch (err) {
    showBanner('Could not export the conversation.', err?.message ?? String(err));
  }
}

async function importConversation() {
  try {
    const id = await ipc.importConversation();
    if (id) { await refreshConversations(); openConversation(id); }
  } catch (err) {
    showBanner('Could not import the conversation.', err?.message ?? String(err));
  }
}

// ---------- links ----------
// a link from a reply, a tool result or an app opens once the user has seen where it goes
const openLink = linkOpener(new LinkConfirm($('#link-dialog')), {
  trusted: async () => (await currentSettings()).trustedLinkHosts ?? [],
  trust: (host) => ipc.changeSettings({ trustedLinkHosts: { [host]: true } }),
  openUrl: (url) => ipc.openUrl(url),
  toast,
});

// MCP Apps on their cards (views/app-host.js): what a page asks goes through the window's own rules.
const apps = new AppHost(chat, { openLink: (url) => openLink(url, url), input: $('#input'), autosize, toast });

/** Signs in to a server (its page opens in the browser); resolves when that has ended. */
function signInServer(name) {
  return ipc.signInMcpServer(name)
    .catch((err) => showBanner(`Signing in to “${name}” did not succeed.`, err?.message ?? String(err)));
}

// Servers that want a sign-in, said in the chat too (views/sign-in-note.js).
const signInNotes = new SignInNotes(signInServer);

const settingsView = new SettingsView($('#settings-dialog'), { onSave: changeSettings });
// Settings → Skills: read again each time Settings opens; a switch is saved at once
const skillsSection = new SkillsSection($('#set-skills'), {
  list: () => ipc.listSkills(),
  setOff: (key, off) => ipc.changeSettings({ skillsOff: { [key]: off } }),
  accept: (server, uri, hash) => ipc.acceptSkill(server, uri, hash),
  openFolder: () => ipc.openSkillsFolder(),
});
const serversView = new ServersView($('#servers-dialog'), {
  save: async (original, copyOf, name, server) => { await ipc.saveMcpServer(original, copyOf, name, server); await reloadServerConfig(); },
  remove: (name) => ipc.deleteMcpServer(name).then(reloadServerConfig, reportServerError),
  acceptTool: (server, tool, hash) => ipc.acceptToolDefinition(server, tool, hash).catch(reportServerError),
  setEnabled: (name, on) => ipc.setMcpServerEnabled(name, on).then(reloadServerConfig, reportServerError),
  allowNetwork: (name, host) => ipc.allowServerNetwork(name, host).then(reloadServerConfig, reportServerError),
  allowRead: (name, path) => ipc.allowServerRead(name, path).then(reloadServerConfig, reportServerError),
  restart: (name) => ipc.restartMcpServer(name).catch(reportServerError),
  signIn: (name) => signInServer(name),
  signOut: (name) => ipc.signOutMcpServer(name).catch(reportServerError),
  cancelSignIn: (name) => ipc.cancelSignIn(name).catch(reportServerError),
  appPages: (name) => ipc.appPages(name),
  update: (name, server) => ipc.saveMcpServer(name, null, name, server).then(reloadServerConfig, reportServerError),
  openUpdate: (name) => catalog.openUpdate(name),
});

// ---------- models ----------
/** Every provider's models into the header picker (grouped by provider), keeping the choice. */
async function refreshModels() {
  let groups;
  try {
    groups = await ipc.listModels();
  } catch (err) {
    groups = [];
    explainLlmError(err);
  }
  state.models = groups.flatMap((g) => g.models.map((m) => ({ ...m, provider: g.provider })));
  const ollama = groups.find((g) => g.provider === 'ollama');
  if (ollama?.error && groups.every((g) => g.error || !g.models.length)) explainLlmError(ollama.error);
  else if (ollama && !ollama.error) hideBanner();
  models.render(groups, (await currentSettings().catch(() => null))?.model);
}

// ---------- conversations ----------
async function refreshConversations() {
  try {
    sidebar.render(await ipc.listConversations());
    sidebar.setActive(state.conversationId);
  } catch (err) {
    showBanner('Could not read saved conversations.', err?.message ?? String(err));
  }
}

/** Opens a conversation; with `messageId` (a search hit), shows that message's branch and scrolls to it. */
async function openConversation(id, messageId = null) {
  if (state.turnId) return; // finish or stop the running turn first
  if (document.body.classList.contains('library')) showLibrary(false);
  try {
    const view = messageId ? await ipc.showBranch(id, messageId, 0) : await ipc.loadConversation(id);
    showConversation(view);
    if (messageId) chat.reveal(messageId);
    else $('#input').focus();
  } catch (err) {
    showBanner('Could not open the conversation.', err?.message ?? String(err));
  }
}

function showConversation(view) {
  $('#context-meter').hidden = true;
  state.conversationId = view.summary.id;
  state.conversationSettings = view.settings;
  $('#chat-title').textContent = view.summary.title;
  chat.renderConversation(view);
  taskFollower.askWaiting();
  toolsPicker.setChoice(view.toolChoice);
  state.pendingToolChoice = null;
  sidebar.setActive(view.summary.id);
  models.pick(view.settings?.provider ?? null, view.summary.model);
  if (drafts && drafts.key !== String(view.summary.id)) drafts.show(view.summary.id);
  keeper.rememberOpen(view.summary.id, $('#messages'));
}

function newChat() {
  if (state.turnId) return;
  $('#context-meter').hidden = true;
  state.conversationId = null;
  state.conversationSettings = null;
  state.pendingChatSettings = null;
  state.pendingToolChoice = null;
  toolsPicker.setChoice(null);
  $('#chat-title').textContent = 'New chat';
  sidebar.setActive(null);
  showEmptyChat();
  drafts?.show(null);
  keeper.rememberOpen(null, $('#messages'));
  $('#input').focus();
}

/** The empty chat, with the first run's hint until it is dismissed. */
function showEmptyChat() {
  const hint = keeper.state && !keeper.state.firstRunDone
    ? keeper.hint('first-run', el('span', {}, 'New here? Pick a model at the top, then ask away. ',
      el('kbd', {}, '?'), ' lists the keyboard shortcuts.'))
    : null;
  hint?.querySelector('.hint-close')?.addEventListener('click', () => keeper.change({ firstRunDone: true }));
  chat.showEmpty(runningServers(), hint);
}

function runningServers() {
  return state.servers.filter((s) => s.status === 'running');
}

// ---------- sending ----------
function setBusy(busy) {
  chat.busy = busy;
  $('#send').hidden = busy;
  $('#stop').hidden = !busy;
  $('#new-chat').disabled = busy;
  document.body.classList.toggle('busy', busy);
}

/** The model picked in the header and its provider. */
const currentModel = () => models.current();

async function send() {
  const input = $('#input');
  const text = input.value.trim();
  if (state.turnId || (!text && files.isEmpty())) return;
  if (files.busy()) { toast('The files are still being read.'); return; }
  const blocked = files.blocked();
  if (blocked) { toast(blocked); return; }
  const attachments = composer.attachments();
  const [images, documents] = [files.images(), files.documents()];
  const shown = [...attachments, ...documents.map(({ name, mime, text: t }) => ({ name, type: mime, text: t }))];
  input.value = '';
  autosize();
  drafts?.sent();
  if (keeper.state && !keeper.state.firstRunDone) keeper.change({ firstRunDone: true });
  const ok = await runTurn({ text, attachments, images, documents }, { text, attachments: shown, images: files.shownImages() });
  // nothing was saved: give the text back (attachments stay), and keep it as the draft again
  if (!ok) { input.value = text; autosize(); drafts?.changed(); }
}

/** Edit: your message `id` becomes `text`, as a new branch; the rest is answered again. */
async function sendEdit(id, text) {
  chat.truncateFrom(id);
  await runTurn({ text, editOf: id }, { text, attachments: [] });
  await reopen();
}

/** Regenerate: a new reply to your message `userMessageId`, as a new branch. */
async function regenerate(userMessageId) {
  chat.removeAfter(userMessageId);
  await runTurn({ regenerate: userMessageId }, null);
  await reopen();
}

/** After the tool-round limit: `continue` or `wrapUp`. */
async function resume(how) {
  chat.clearResume();
  await runTurn({ resume: how }, null);
}

/** Shows a sibling version of a message (the ‹ n/m › switcher). */
async function switchBranch(messageId, step) {
  if (state.turnId || !state.conversationId) return;
  try {
    const view = await ipc.showBranch(state.conversationId, messageId, step);
    showConversation(view);
    chat.reveal(messageId);
  } catch (err) {
    showBanner('Could not show that version.', err?.message ?? String(err));
  }
}

/** The whole of a long conversation, from its start. */
async function showEarlier() {
  const id = state.conversationId;
  try {
    const view = await ipc.loadConversation(id, true);
    if (state.conversationId !== id) return;
    chat.renderConversation(view);
    $('#messages').scrollTop = 0;
  } catch (err) {
    showBanner('Could not show the earlier messages.', err?.message ?? String(err));
  }
}

async function reopen() {
  if (state.conversationId && !state.turnId) {
    const keep = $('#messages').scrollTop;
    try { showConversation(await ipc.loadConversation(state.conversationId)); } catch { /* shown as it is */ }
    $('#messages').scrollTop = keep;
    chat.scrollToEnd(true);
  }
}

/**
 * Runs one turn and shows it as it happens. `request` adds to the send request (text, editOf,
 * regenerate, resume, attachments); `shown` is the user message to show when one is added.
 * Resolves false when nothing was saved (the caller gives the text back).
 */
async function runTurn(request, shown) {
  if (state.turnId) return true;
  const { model, provider } = currentModel();
  if (!model) {
    explainLlmError({ kind: 'unreachable' });
    return false;
  }
  const turnId = crypto.randomUUID();
  state.turnId = turnId;
  setBusy(true);
  chat.clearResume();
  const turn = { started: false, failed: false, stopped: false, limit: false, shown, conversationId: null };
  const onEvent = (ev) => (turnEvents[ev.type] ?? unknownEvent)(ev, turn);
  try {
    const toolChoice = state.conversationId ? null : state.pendingToolChoice;
    const chatSettings = state.conversationId ? null : (state.pendingChatSettings ?? null);
    await ipc.sendMessage({
      turnId, conversationId: state.conversationId, model, provider, toolChoice, chatSettings,
      text: request.text ?? '', attachments: request.attachments ?? [],
      images: request.images ?? [], documents: request.documents ?? [],
      editOf: request.editOf ?? null, regenerate: request.regenerate ?? null, resume: request.resume ?? null,
      lateResult: request.lateResult ?? null, contextPolicy: request.contextPolicy ?? null,
    }, onEvent);
    if (!turn.failed) hideBanner();
  } catch (err) {
    turn.failed = true;
    chat.addError(err?.message ?? String(err));
  } finally {
    if (turn.started) notifications.turnFinished(turn.conversationId, turn.stopped, turn.failed);
    state.turnId = null;
    setBusy(false);
    refreshConversations();
    $('#input').focus();
  }
  if (!turn.limit) chat.clearResume();
  return turn.started;
}

// what each event of a turn does (turn-events.js)
const turnEvents = makeTurnEvents({
  state, chat, composer, files, toolsPicker, notifications, signInNotes, keeper,
  drafts: () => drafts, refreshConversations, explainLlmError, onSummarised,
});

/** Sends the model the result of a task that ended after its turn (one click on its card). */
async function sendLateResult(callId) {
  if (state.turnId) throw new Error('Wait until the reply in progress has finished.');
  await runTurn({ lateResult: callId }, null);
  // the message that carried the result is shown as stored
  await reopen();
}

// Calls followed outside a turn (tasks still running on their servers when the app last ended).
const taskFollower = new TaskFollower(chat, {
  openConversationId: () => state.conversationId,
  sendLateResult: (callId) => sendLateResult(callId),
  openConversation: (id) => openConversation(id),
});

/** A summary of older turns was written (in the turn, or in the background after one). */
function onSummarised(ev) {
  chat.compacting(false);
  if (ev.conversationId === state.conversationId) chat.showSummary(ev.summary);
}

/** The chat's policy was to ask when it outgrew the context: the user chose; the turn goes on so. */
async function chooseContextPolicy(policy) {
  if (!state.conversationId || state.turnId) return;
  chat.clearResume();
  await runTurn({ resume: 'continue', contextPolicy: policy }, null);
}

/** Tasks followed outside a turn: to their cards; a notification when one asks or its result waits. */
function onTaskEvent(ev) {
  if (ev.type === 'summarised') { onSummarised(ev); return; }
  taskFollower.onEvent(ev);
  if (ev.type === 'taskResultWaiting') notifications.taskCompleted(ev.conversationId);
  if (ev.type === 'elicitationRequested' || ev.type === 'samplingRequested') {
    notifications.serverQuestion(taskFollower.chats.get(ev.callId) ?? null, ev.elicitation?.server ?? ev.request?.server);
  }
}

async function stop() {
  if (state.turnId) await ipc.stopTurn(state.turnId);
}

// ---------- settings and servers ----------
async function changeSettings(patch) {
  await ipc.changeSettings(patch);
  await refreshModels();
}

async function openSettings() {
  settingsView.open(await currentSettings(), state.models,
    `Switchboard ${state.info?.version ?? ''} · data in ${state.info?.dataDir ?? ''} · MCP servers in ${state.info?.mcpConfigFile ?? ''}`);
  skillsSection.load();
}

/** The servers list changed (the engine pushes every change): summary, picker, dialog, empty state. */
function showServers(servers) {
  state.servers = servers;
  const { text, level } = summarize(servers);
  toolsPicker.setServers(runningServers());
  $('#servers-summary').textContent = text;
  $('#servers-dot').className = `dot ${level}`;
  serversView.update(servers, state.info?.mcpConfigError);
  if (chat.isEmpty() && !state.conversationId) showEmptyChat();
  signInNotes.update(servers);
  notifications.servers(servers);
}

function autosize() {
  const t = $('#input');
  t.style.height = 'auto';
  t.style.height = `${Math.min(t.scrollHeight, 240)}px`;
}

// ---------- wiring ----------
$('#composer').addEventListener('submit', (e) => { e.preventDefault(); send(); });
$('#input').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
  // Up in an empty message box edits your last message (Alt+Up is the previous conversation)
  if (e.key === 'ArrowUp' && !e.altKey && !e.ctrlKey && !e.metaKey && !e.shiftKey && !e.target.value && !state.turnId) {
    const last = chat.lastUserMessageId();
    if (last !== null) { e.preventDefault(); chat.startEdit(last); }
  }
});
$('#import-conversation').addEventListener('click', importConversation);
// the browser screen: the library at full width (Esc or opening a chat goes back)
function showLibrary(on) {
  document.body.classList.toggle('library', on);
  $('#library-toggle').setAttribute('aria-pressed', String(on));
  $('#library-toggle').title = on ? 'Back to the chat' : 'Browse all conversations';
  sidebar.paint();
  if (on) sidebar.focusSearch();
}
$('#library-toggle').addEventListener('click', () => showLibrary(!document.body.classList.contains('library')));

// ---------- models, debug, this chat's settings ----------
const modelsView = new ModelsView($('#models-dialog'), {
  list: async () => {
    const groups = await ipc.listModels();
    const ollama = groups.find((g) => g.provider === 'ollama');
    if (ollama?.error) throw ollama.error;
    return ollama?.models ?? [];
  },
  pull: (name, onProgress) => ipc.pullModel(name, onProgress),
  cancel: (name) => ipc.cancelPull(name),
  remove: (name) => ipc.deleteModel(name),
  changed: () => refreshModels(),
  toolModes: async () => (await currentSettings()).toolModes ?? {},
  setToolMode: (name, mode) => ipc.changeSettings({ toolModes: { [name]: mode } }),
  format: (name) => ipc.modelToolFormat(null, name),
});
const modelCheck = new ModelCheckView($('#model-check'), {
  current: () => models.current(),
  format: (provider, model) => ipc.modelToolFormat(provider, model),
  run: (provider, model, onEvent) => ipc.checkModel(provider, model, onEvent),
  cancel: (provider, model) => ipc.cancelModelCheck(provider, model),
  last: (provider, model) => ipc.lastModelCheck(provider, model),
  apply: async (model, mode) => {
    await ipc.changeSettings({ toolModes: { [model]: mode } });
    await modelsView.refresh();
  },
});
$('#models-button').addEventListener('click', () => { modelsView.open(); modelCheck.show(); });

$('#debug-button').addEventListener('click', async () => {
  const list = $('#debug-list');
  if (!state.conversationId) {
    list.replaceChildren(el('p', { class: 'hint' }, 'Start or open a chat first.'));
  } else {
    try { renderDebug(list, await ipc.llmCalls(state.conversationId)); } catch (err) { list.replaceChildren(el('p', { class: 'field-error' }, err?.message ?? String(err))); }
  }
  $('#debug-dialog').showModal();
});
$('#debug-close').addEventListener('click', () => $('#debug-dialog').close());

const chatSettings = new ChatSettingsDialog($('#chat-settings-dialog'), {
  save: async (next) => {
    // a new chat's settings are saved with its first message
    if (state.conversationId) await ipc.setConversationSettings(state.conversationId, next);
    if (state.conversationId) state.conversationSettings = next; else state.pendingChatSettings = next;
  },
});
$('#chat-settings-button').addEventListener('click', async () => chatSettings.open(
  state.conversationId ? state.conversationSettings : state.pendingChatSettings,
  await ipc.listSkills().catch(() => null)));
$('#input').addEventListener('input', autosize);
$('#stop').addEventListener('click', stop);
$('#new-chat').addEventListener('click', newChat);
$('#settings-button').addEventListener('click', openSettings);
$('#banner-settings').addEventListener('click', openSettings);
$('#banner-retry').addEventListener('click', refreshModels);
$('#banner-close').addEventListener('click', hideBanner);
// the servers dialog shows one thing at a time: the list, the form, or the import/export panel
function showServersPanel(panel) {
  for (const sel of ['#import-panel', '#export-panel', '#import-confirm']) $(sel).hidden = sel !== panel;
  $('#servers-list').hidden = Boolean(panel);
  $('#server-form').hidden = true;
  for (const b of ['#server-add', '#server-import', '#server-export']) $(b).hidden = Boolean(panel);
}
new ImportExportView($('#servers-dialog'), {
  preview: (text) => ipc.previewMcpImport(text),
  pickFile: () => ipc.pickMcpImportFile(),
  import: async (choices) => { await ipc.importMcpServers(choices); await reloadServerConfig(); },
  start: async (names) => {
    for (const name of names) await ipc.setMcpServerEnabled(name, true).catch(reportServerError);
    await reloadServerConfig();
  },
  export: () => ipc.exportMcpConfig(),
}, showServersPanel);

async function reloadServerConfig() {
  serversView.setConfig(await ipc.mcpConfig());
}

// Getting servers: the catalog, bundles opened with the app, update notices (views/catalog-wiring.js).
const catalog = wireCatalog({ serversView, reloadServerConfig, openLink: (url) => openLink(url, url), toast, showBanner });
function reportServerError(err) {
  showBanner('Could not change the MCP servers.', err?.message ?? String(err));
}
$('#servers-button').addEventListener('click', async () => {
  await reloadServerConfig();
  showServersPanel(null);
  serversView.closeForm();
  serversView.render(state.servers, state.info?.mcpConfigError);
  $('#servers-dialog').showModal();
});
$('#servers-close').addEventListener('click', () => $('#servers-dialog').close());
$('#model-select').addEventListener('change', async () => {
  models.showBadges();
  files.checkVision();
  const model = $('#model-select').value;
  if (model) {
    try { await ipc.changeSettings({ model }); } catch (err) { toast(`Could not remember ${model} for new chats: ${err?.message ?? err}`); }
  }
});
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && state.turnId) { e.preventDefault(); stop(); }
  if (e.key === 'Escape' && document.body.classList.contains('library') && !document.querySelector('dialog[open]')) showLibrary(false);
});

// ---------- shortcuts (views/shortcuts.js: the one table the help sheet lists) ----------
const shortcutSheet = new ShortcutSheet($('#shortcuts-dialog'));
$('#shortcuts-button').addEventListener('click', () => shortcutSheet.toggle());
const step = (n) => {
  const id = stepIn(sidebar.items.map((c) => c.id), state.conversationId, n);
  if (id !== null) openConversation(id);
};
installShortcuts({
  newChat,
  search: () => sidebar.focusSearch(),
  settings: openSettings,
  focusComposer: () => $('#input').focus(),
  focusModel: () => $('#model-select').focus(),
  nextConversation: () => step(1),
  previousConversation: () => step(-1),
  help: () => shortcutSheet.toggle(),
});


async function start() {
  const saved = await keeper.load();
  drafts = new Drafts({ input: $('#input'), composer, chips: $('#attachments') }, saved.drafts,
    (key, draft) => keeper.api.change({ drafts: { [key]: draft } }).catch((err) => console.warn('draft', err)),
    autosize);
  drafts.show(null);
  keeper.wireTheme($('#set-theme'));
  wireNotifySettings(keeper);
  keeper.sidebarResizer($('#sidebar-resizer'), $('#sidebar'));
  $('#messages').addEventListener('scroll', () => keeper.rememberOpen(state.conversationId, $('#messages')), { passive: true });
  state.info = await ipc.appInfo();
  // the bounded settings' inputs get their bounds and checks from the engine's table
  // (without it they have none, and the engine's check on save still speaks)
  useLimits(await ipc.settingLimits().catch((err) => { console.warn('setting limits', err); return {}; }));
  if (state.info.mcpConfigError) showBanner('Your MCP server config could not be read.', state.info.mcpConfigError);
  showEmptyChat();
  await Promise.all([refreshConversations(), refreshModels(), ipc.watchServers(showServers), ipc.watchTasks(onTaskEvent),
    notifications.watch(),
    catalog.watch()]);
  // after the models: a server that answers hides the banner, and this note must stay
  if (saved.note) showBanner('The window\'s saved state was set aside.', saved.note);
  await reopenLast(saved.open, { load: ipc.loadConversation, show: showConversation, scroller: $('#messages'),
    gone: () => keeper.change({ open: null }) });
  $('#input').focus();
  document.body.dataset.ready = 'true';
}

start().catch((err) => showBanner('Switchboard could not start.', err?.message ?? String(err)));
