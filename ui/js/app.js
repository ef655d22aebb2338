// The controller: wires the views to the IPC module and keeps the app's little state.
import * as ipc from './ipc.js';
import { $ } from './dom.js';
import { el } from './dom.js';
import { ChatView } from './views/chat.js';
import { Sidebar } from './views/sidebar.js';
import { SettingsView } from './views/settings.js';
import { summarize, ServersView } from './views/servers.js';
import { ImportExportView } from './views/import.js';
import { ComposerView } from './views/composer.js';
import { ToolsPicker } from './views/tools.js';
import { ModelsView } from './views/models.js';
import { renderDebug } from './views/debug.js';

const state = {
  conversationId: null,
  turnId: null,
  settings: null,
  models: [],
  servers: [],
  info: null,
};

const chat = new ChatView($('#messages'), {
  onLink: (href) => { if (/^https?:\/\//i.test(href)) ipc.openUrl(href).catch(() => {}); },
  onExample: (text) => { $('#input').value = text; autosize(); $('#input').focus(); },
  onCancelCall: (id) => ipc.cancelToolCall(id).catch(() => {}),
  onEdit: (id, text) => sendEdit(id, text),
  onRegenerate: (userMessageId) => regenerate(userMessageId),
  onBranch: (id, step) => switchBranch(id, step),
  onResume: (how) => resume(how),
});
const composer = new ComposerView(
  { input: $('#input'), attachButton: $('#attach'), chips: $('#attachments'), menu: $('#composer-menu') },
  { resources: ipc.mcpResources, prompts: ipc.mcpPrompts, getPrompt: ipc.getMcpPrompt },
  () => autosize(),
);
// a new chat's choice waits here until its first message creates the conversation
let pendingToolChoice = null;
const toolsPicker = new ToolsPicker($('#tools-button'), $('#tools-panel'), async (choice) => {
  if (!state.conversationId) { pendingToolChoice = choice; return; }
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

function toast(text) {
  document.querySelector('.toast')?.remove();
  const t = el('div', { class: 'toast', role: 'status' }, el('span', {}, text));
  document.body.append(t);
  setTimeout(() => t.remove(), 6000);
}
const settingsView = new SettingsView($('#settings-dialog'), { onSave: saveSettings });
const serversView = new ServersView($('#servers-dialog'), {
  save: async (original, name, server) => { await ipc.saveMcpServer(original, name, server); await reloadServerConfig(); },
  remove: (name) => ipc.deleteMcpServer(name).then(reloadServerConfig, reportServerError),
  setEnabled: (name, on) => ipc.setMcpServerEnabled(name, on).then(reloadServerConfig, reportServerError),
  restart: (name) => { ipc.restartMcpServer(name).then(refreshServers, reportServerError); setTimeout(refreshServers, 100); },
});

// ---------- banner (LLM unreachable and other app-level problems) ----------
function showBanner(title, detail) {
  $('#banner-title').textContent = title;
  $('#banner-detail').textContent = detail;
  $('#banner').hidden = false;
}
function hideBanner() { $('#banner').hidden = true; }

function explainLlmError(err) {
  const url = err?.url ?? state.settings?.effectiveLlmUrl ?? '';
  if (err?.kind === 'unreachable') {
    showBanner(`Can't reach the LLM server at ${url}.`,
      'Start Ollama with “ollama serve”, or change the URL in Settings.');
  } else {
    showBanner('The LLM server answered with an error.', err?.message ?? String(err));
  }
}

// ---------- models ----------
/** Every provider's models into the header picker (grouped by provider), keeping the choice. */
async function refreshModels() {
  const select = $('#model-select');
  const before = currentModel();
  let groups;
  try {
    groups = await ipc.listModels();
  } catch (err) {
    groups = [];
    explainLlmError(err);
  }
  state.providers = groups;
  state.models = groups.flatMap((g) => g.models.map((m) => ({ ...m, provider: g.provider })));
  const ollama = groups.find((g) => g.provider === 'ollama');
  if (ollama?.error && groups.every((g) => g.error || !g.models.length)) explainLlmError(ollama.error);
  else if (ollama && !ollama.error) hideBanner();
  const options = [];
  const wanted = state.settings?.model;
  for (const g of groups) {
    const names = g.models.map((m) => m.name);
    if (g.provider === 'ollama' && wanted && !state.models.some((m) => m.name === wanted)) names.unshift(wanted);
    if (!names.length) continue;
    const opts = names.map((n) => el('option', { value: n, dataset: { provider: g.provider } }, n));
    options.push(groups.length > 1 ? el('optgroup', { label: g.providerName }, opts) : opts);
  }
  if (!options.length) {
    select.replaceChildren(el('option', { value: '' }, 'No models'));
    showBadges();
    return;
  }
  select.replaceChildren(...options.flat());
  selectModel(before.model ? before.provider : null, before.model || wanted || select.options[0].value);
}

/** Picks `model` of `provider` in the header (the first provider that has it, when not given). */
function selectModel(provider, model) {
  const select = $('#model-select');
  const opts = [...select.options];
  const hit = opts.find((o) => o.value === model && (!provider || o.dataset.provider === provider))
    ?? opts.find((o) => o.value === model);
  if (hit) hit.selected = true;
  showBadges();
}

/** The picked model's capabilities (tools, thinking, vision) as badges. */
async function showBadges() {
  const box = $('#model-badges');
  const { model, provider } = currentModel();
  box.replaceChildren();
  if (!model) return;
  try {
    const caps = await ipc.modelCapabilities(provider, model);
    if (currentModel().model !== model) return;
    const known = { tools: 'tools', thinking: 'thinking', vision: 'vision' };
    box.replaceChildren(...caps.filter((c) => known[c]).map((c) => el('span', { class: `badge ${c}`, title: `This model supports ${c}` }, known[c])));
    if (!caps.length) box.title = 'The server does not say what this model can do';
  } catch { /* no badges */ }
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
  state.conversationId = view.summary.id;
  state.conversationSettings = view.settings;
  $('#chat-title').textContent = view.summary.title;
  chat.renderConversation(view);
  toolsPicker.setChoice(view.toolChoice);
  pendingToolChoice = null;
  sidebar.setActive(view.summary.id);
  selectModel(view.settings?.provider ?? null, view.summary.model);
}

function newChat() {
  if (state.turnId) return;
  state.conversationId = null;
  state.conversationSettings = null;
  state.pendingChatSettings = null;
  pendingToolChoice = null;
  toolsPicker.setChoice(null);
  $('#chat-title').textContent = 'New chat';
  sidebar.setActive(null);
  chat.showEmpty(runningServers());
  $('#input').focus();
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
function currentModel() {
  const opt = $('#model-select').selectedOptions[0];
  return { model: opt?.value ?? '', provider: opt?.dataset.provider || null };
}

async function send() {
  const input = $('#input');
  const text = input.value.trim();
  if (!text || state.turnId) return;
  const attachments = composer.attachments();
  input.value = '';
  autosize();
  const ok = await runTurn({ text, attachments }, { text, attachments });
  if (!ok) { input.value = text; autosize(); } // nothing was saved: give the text back (attachments stay)
}

/** Edit: your message `id` becomes `text`, as a new branch; the rest is answered again. */
async function sendEdit(id, text) {
  chat.truncateFrom(id);
  await runTurn({ text, editOf: id }, { text, attachments: [] });
  await reopen();
}

/** Regenerate: a new reply to your message `userMessageId`, as a new branch. */
async function regenerate(userMessageId) {
  const reply = document.querySelector(`.msg[data-id="${userMessageId}"]`)?.nextElementSibling;
  if (reply) {
    let n = reply;
    while (n) { const next = n.nextElementSibling; n.remove(); n = next; }
  }
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
  let failed = false;
  let started = false;
  let limit = false;
  const onEvent = (ev) => {
    switch (ev.type) {
      case 'turnStarted': {
        started = true;
        if (!state.conversationId && state.pendingChatSettings) state.conversationSettings = state.pendingChatSettings;
        state.conversationId = ev.conversationId;
        pendingToolChoice = null;
        state.pendingChatSettings = null;
        $('#chat-title').textContent = ev.title;
        if (ev.userMessageId !== null && ev.userMessageId !== undefined && shown) {
          const b = chat.addMessage(ev.userMessageId, 'user');
          chat.setUserText(b, shown.text, shown.attachments);
          b.text = shown.text;
          composer.clearAttachments();
        }
        refreshConversations();
        break;
      }
      case 'assistantStarted': chat.addMessage(ev.messageId, 'assistant', 'streaming'); break;
      case 'textDelta': chat.appendText(ev.messageId, ev.text, ev.html); break;
      case 'thinkingDelta': chat.setThinking(ev.messageId, ev.text, true); break;
      case 'assistantDone': chat.finishMessage(ev.messageId, ev.status, ev.html, ev.content); break;
      case 'toolCallStarted': chat.addCard(ev); break;
      case 'toolCallFinished': chat.finishCard(ev.id, ev); break;
      case 'toolCallProgress': chat.showProgress(ev.id, ev); break;
      case 'elicitationRequested':
        chat.askUser(ev.callId, ev.elicitation, (answer) => ipc.answerElicitation(ev.elicitation.id, answer));
        break;
      case 'samplingRequested':
        chat.askSampling(ev.callId, ev.request, (approve) => ipc.resolveSampling(ev.request.id, approve));
        break;
      case 'samplingFinished': chat.finishSampling(ev.callId, ev); break;
      case 'approvalRequested':
        chat.requestApproval(ev, (decision) => ipc.resolveApproval(ev.id, decision));
        break;
      case 'approvalResolved': chat.resolveApproval(ev); break;
      case 'notice': chat.addNotice(ev.text, /^Stopped after \d+ rounds/.test(ev.text)); break;
      case 'error':
        failed = true;
        if (ev.kind === 'unreachable') explainLlmError(ev);
        chat.addError(ev.message);
        break;
      case 'done': limit = ev.limitReached; break;
      default: console.warn('unknown chat event', ev);
    }
  };
  try {
    const toolChoice = state.conversationId ? null : pendingToolChoice;
    const chatSettings = state.conversationId ? null : (state.pendingChatSettings ?? null);
    await ipc.sendMessage({
      turnId, conversationId: state.conversationId, model, provider, toolChoice, chatSettings,
      text: request.text ?? '', attachments: request.attachments ?? [],
      editOf: request.editOf ?? null, regenerate: request.regenerate ?? null, resume: request.resume ?? null,
    }, onEvent);
    if (!failed) hideBanner();
  } catch (err) {
    chat.addError(err?.message ?? String(err));
  } finally {
    state.turnId = null;
    setBusy(false);
    refreshConversations();
    $('#input').focus();
  }
  if (!limit) chat.clearResume();
  return started;
}

async function stop() {
  if (state.turnId) await ipc.stopTurn(state.turnId);
}

// ---------- settings and servers ----------
async function saveSettings(next) {
  state.settings = await ipc.saveSettings(next);
  await refreshModels();
}

async function openSettings() {
  state.settings = await ipc.getSettings();
  settingsView.open(state.settings, state.models,
    `Switchboard ${state.info?.version ?? ''} · data in ${state.info?.dataDir ?? ''} · MCP servers in ${state.info?.mcpConfigFile ?? ''}`);
}

let serversTimer = null;
let lastServersSnapshot = '';
async function refreshServers() {
  try {
    state.servers = await ipc.mcpServers();
  } catch { return; }
  const { text, level } = summarize(state.servers);
  toolsPicker.setServers(runningServers());
  $('#servers-summary').textContent = text;
  $('#servers-dot').className = `dot ${level}`;
  // re-render only on a change, so an open log or an armed Delete survives the polling
  const snapshot = JSON.stringify(state.servers);
  if ($('#servers-dialog').open && snapshot !== lastServersSnapshot) serversView.render(state.servers, state.info?.mcpConfigError);
  lastServersSnapshot = snapshot;
  const empty = document.querySelector('.empty-state');
  if (empty && !state.conversationId) chat.showEmpty(runningServers());
  clearTimeout(serversTimer);
  const starting = state.servers.some((s) => s.status === 'starting');
  serversTimer = setTimeout(refreshServers, starting ? 500 : 4000);
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
  // Up in an empty message box edits your last message
  if (e.key === 'ArrowUp' && !e.target.value && !state.turnId) {
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
  toolMode: (name) => state.settings?.toolModes?.[name] ?? null,
  setToolMode: async (name, mode) => {
    const toolModes = { ...(state.settings?.toolModes ?? {}) };
    if (mode) toolModes[name] = mode; else delete toolModes[name];
    state.settings = await ipc.saveSettings({ ...state.settings, toolModes });
  },
});
$('#models-button').addEventListener('click', () => modelsView.open());

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

$('#chat-settings-button').addEventListener('click', () => {
  const s = state.conversationId ? (state.conversationSettings ?? {}) : (state.pendingChatSettings ?? {});
  $('#cs-system-prompt').value = s.systemPrompt ?? '';
  $('#cs-temperature').value = s.temperature ?? '';
  $('#cs-num-ctx').value = s.numCtx ?? '';
  $('#cs-error').textContent = '';
  $('#chat-settings-dialog').showModal();
  $('#cs-system-prompt').focus();
});
$('#cs-cancel').addEventListener('click', () => $('#chat-settings-dialog').close());
$('#chat-settings-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const num = (sel) => ($(sel).value.trim() === '' ? null : Number($(sel).value));
  const next = {
    ...(state.conversationSettings ?? {}),
    systemPrompt: $('#cs-system-prompt').value.trim() || null,
    temperature: num('#cs-temperature'),
    numCtx: num('#cs-num-ctx'),
  };
  if (next.temperature !== null && !(next.temperature >= 0 && next.temperature <= 2)) { $('#cs-error').textContent = 'The temperature must be between 0 and 2.'; return; }
  if (next.numCtx !== null && !(Number.isInteger(next.numCtx) && next.numCtx >= 256)) { $('#cs-error').textContent = 'The context length must be a whole number of at least 256.'; return; }
  if (!state.conversationId) {
    state.pendingChatSettings = next; // saved with the chat's first message
    $('#chat-settings-dialog').close();
    return;
  }
  try {
    await ipc.setConversationSettings(state.conversationId, next);
    state.conversationSettings = next;
    $('#chat-settings-dialog').close();
  } catch (err) {
    $('#cs-error').textContent = err?.message ?? String(err);
  }
});
$('#input').addEventListener('input', autosize);
$('#stop').addEventListener('click', stop);
$('#new-chat').addEventListener('click', newChat);
$('#settings-button').addEventListener('click', openSettings);
$('#banner-settings').addEventListener('click', openSettings);
$('#banner-retry').addEventListener('click', refreshModels);
$('#banner-close').addEventListener('click', hideBanner);
// the servers dialog shows one thing at a time: the list, the form, or the import/export panel
function showServersPanel(panel) {
  for (const sel of ['#import-panel', '#export-panel']) $(sel).hidden = sel !== panel;
  $('#servers-list').hidden = Boolean(panel);
  $('#server-form').hidden = true;
  for (const b of ['#server-add', '#server-import', '#server-export']) $(b).hidden = Boolean(panel);
}
new ImportExportView($('#servers-dialog'), {
  preview: (text) => ipc.previewMcpImport(text),
  pickFile: () => ipc.pickMcpImportFile(),
  import: async (choices) => { await ipc.importMcpServers(choices); await reloadServerConfig(); },
  export: () => ipc.exportMcpConfig(),
}, showServersPanel);

async function reloadServerConfig() {
  serversView.setConfig(await ipc.mcpConfig());
  setTimeout(refreshServers, 50);
}
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
  showBadges();
  const model = $('#model-select').value;
  if (model && state.settings && model !== state.settings.model) {
    try { state.settings = await ipc.saveSettings({ ...state.settings, model }); } catch { /* shown on next save */ }
  }
});
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && state.turnId) { e.preventDefault(); stop(); }
  if (e.key === 'Escape' && document.body.classList.contains('library') && !document.querySelector('dialog[open]')) showLibrary(false);
  if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'n') { e.preventDefault(); newChat(); }
  if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'k') { e.preventDefault(); sidebar.focusSearch(); }
});

async function start() {
  state.info = await ipc.appInfo();
  state.settings = await ipc.getSettings();
  if (state.info.mcpConfigError) showBanner('Your MCP server config could not be read.', state.info.mcpConfigError);
  chat.showEmpty([]);
  await Promise.all([refreshConversations(), refreshModels(), refreshServers()]);
  $('#input').focus();
  document.body.dataset.ready = 'true';
}

start().catch((err) => showBanner('Switchboard could not start.', err?.message ?? String(err)));
