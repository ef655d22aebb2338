// The composition root: makes the views and the controllers (controllers/: the conversations,
// the turn runner, MCP Apps, the catalog, tasks followed outside a turn), wires them to each other
// and to the IPC module, and keeps the window's little state.
import * as ipc from './ipc.js';
import { $, el } from './dom.js';
import { AppHost } from './controllers/app-host.js';
import { Conversations } from './controllers/conversations.js';
import { Turns } from './controllers/turns.js';
import { ChatView } from './views/chat.js';
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
import { TaskFollower } from './controllers/task-follower.js';
import { wireCatalog } from './controllers/catalog-wiring.js';
import { WindowKeeper, reopenLast } from './views/window-state.js';
import { Drafts } from './views/drafts.js';
import { installShortcuts, ShortcutSheet } from './views/shortcuts.js';
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
  onLateResult: (id) => turns.sendLateResult(id),
  // an app is shown only for a tool as the user accepted it (the engine refuses the others too)
  hasApp: (server, tool) => {
    const t = state.servers?.find((s) => s.name === server)?.tools?.find((x) => x.name === tool);
    return Boolean(t?.ui?.resourceUri && !t.changed);
  },
  onOpenApp: (callId, box, onEnded) => apps.open(callId, box, onEnded),
  onEdit: (id, text) => turns.sendEdit(id, text),
  onRegenerate: (userMessageId) => turns.regenerate(userMessageId),
  onBranch: (id, step) => conversations.switchBranch(id, step),
  onResume: (how) => turns.resume(how),
  onChatSettings: () => $('#chat-settings-button').click(),
  onShowEarlier: () => conversations.showEarlier(),
  onAllowNetwork: (server, host) => ipc.allowServerNetwork(server, host).then(() => reloadServerConfig()),
  onEditSummary: (id, text) => ipc.editSummary(id, text),
  onContextPolicy: (policy) => turns.chooseContextPolicy(policy),
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


// The window's own state (views/window-state.js): theme, sidebar width, the open conversation,
// hints; drafts per conversation (views/drafts.js, made once the state is read).
const keeper = new WindowKeeper({ load: ipc.windowState, change: ipc.changeWindowState });
let drafts = null;
// the conversations (controllers/conversations.js): the open one, the library and its list
const conversations = new Conversations(state, {
  chat, toolsPicker, models, keeper, drafts: () => drafts, askWaiting: () => taskFollower.askWaiting(),
  showBanner, toast,
});
// desktop notifications while the window is away (the app checks focus and the user's switches)
const notifications = new Notifications({ notify: ipc.notify, watchClicks: ipc.watchNotificationClicks }, {
  title: (id) => (id === state.conversationId ? $('#chat-title').textContent
    : document.querySelector(`.conv[data-id="${id}"] .conv-name`)?.textContent) || 'a chat',
  openConversation: (id) => conversations.open(id),
});

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

// ---------- turns (controllers/turns.js) ----------
const turns = new Turns(state, {
  chat, composer, files, models, toolsPicker, notifications, signInNotes, keeper, conversations,
  drafts: () => drafts, autosize, toast, explainLlmError, hideBanner, onSummarised,
});

// Calls followed outside a turn (tasks still running on their servers when the app last ended).
const taskFollower = new TaskFollower(chat, {
  openConversationId: () => state.conversationId,
  sendLateResult: (callId) => turns.sendLateResult(callId),
  openConversation: (id) => conversations.open(id),
});

/** A summary of older turns was written (in the turn, or in the background after one). */
function onSummarised(ev) {
  chat.compacting(false);
  if (ev.conversationId === state.conversationId) chat.showSummary(ev.summary);
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
  toolsPicker.setServers(conversations.runningServers());
  $('#servers-summary').textContent = text;
  $('#servers-dot').className = `dot ${level}`;
  serversView.update(servers, state.info?.mcpConfigError);
  if (chat.isEmpty() && !state.conversationId) conversations.showEmpty();
  signInNotes.update(servers);
  notifications.servers(servers);
}

function autosize() {
  const t = $('#input');
  t.style.height = 'auto';
  t.style.height = `${Math.min(t.scrollHeight, 240)}px`;
}

// ---------- wiring ----------
$('#composer').addEventListener('submit', (e) => { e.preventDefault(); turns.send(); });
$('#input').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    turns.send();
  }
  // Up in an empty message box edits your last message (Alt+Up is the previous conversation)
  if (e.key === 'ArrowUp' && !e.altKey && !e.ctrlKey && !e.metaKey && !e.shiftKey && !e.target.value && !state.turnId) {
    const last = chat.lastUserMessageId();
    if (last !== null) { e.preventDefault(); chat.startEdit(last); }
  }
});
$('#import-conversation').addEventListener('click', () => conversations.import());
$('#library-toggle').addEventListener('click', () => conversations.showLibrary(!document.body.classList.contains('library')));

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
$('#stop').addEventListener('click', () => turns.stop());
$('#new-chat').addEventListener('click', () => conversations.newChat());
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
  if (e.key === 'Escape' && state.turnId) { e.preventDefault(); turns.stop(); }
  if (e.key === 'Escape' && document.body.classList.contains('library') && !document.querySelector('dialog[open]')) conversations.showLibrary(false);
});

// ---------- shortcuts (views/shortcuts.js: the one table the help sheet lists) ----------
const shortcutSheet = new ShortcutSheet($('#shortcuts-dialog'));
$('#shortcuts-button').addEventListener('click', () => shortcutSheet.toggle());
installShortcuts({
  newChat: () => conversations.newChat(),
  search: () => conversations.sidebar.focusSearch(),
  settings: openSettings,
  focusComposer: () => $('#input').focus(),
  focusModel: () => $('#model-select').focus(),
  nextConversation: () => conversations.step(1),
  previousConversation: () => conversations.step(-1),
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
  conversations.showEmpty();
  await Promise.all([conversations.refresh(), refreshModels(), ipc.watchServers(showServers), ipc.watchTasks(onTaskEvent),
    notifications.watch(),
    catalog.watch()]);
  // after the models: a server that answers hides the banner, and this note must stay
  if (saved.note) showBanner('The window\'s saved state was set aside.', saved.note);
  await reopenLast(saved.open, { load: ipc.loadConversation, show: (view) => conversations.show(view), scroller: $('#messages'),
    gone: () => keeper.change({ open: null }) });
  $('#input').focus();
  document.body.dataset.ready = 'true';
}

start().catch((err) => showBanner('Switchboard could not start.', err?.message ?? String(err)));
