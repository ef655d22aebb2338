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
const sidebar = new Sidebar($('#conversation-list'), { onOpen: openConversation });
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
async function refreshModels() {
  const select = $('#model-select');
  try {
    state.models = await ipc.listModels();
    hideBanner();
  } catch (err) {
    state.models = [];
    explainLlmError(err);
  }
  const names = state.models.map((m) => m.name);
  const wanted = state.settings?.model;
  if (wanted && !names.includes(wanted)) names.unshift(wanted);
  if (!names.length) {
    select.replaceChildren(el('option', { value: '' }, 'No models'));
    return;
  }
  const current = select.value && names.includes(select.value) ? select.value : (wanted ?? names[0]);
  select.replaceChildren(...names.map((n) => el('option', { value: n, selected: n === current }, n)));
  select.value = current;
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

async function openConversation(id) {
  if (state.turnId) return; // finish or stop the running turn first
  try {
    const view = await ipc.loadConversation(id);
    state.conversationId = id;
    $('#chat-title').textContent = view.summary.title;
    chat.renderConversation(view);
    toolsPicker.setChoice(view.toolChoice);
    pendingToolChoice = null;
    sidebar.setActive(id);
    const names = [...$('#model-select').options].map((o) => o.value);
    if (view.summary.model && names.includes(view.summary.model)) $('#model-select').value = view.summary.model;
    $('#input').focus();
  } catch (err) {
    showBanner('Could not open the conversation.', err?.message ?? String(err));
  }
}

function newChat() {
  if (state.turnId) return;
  state.conversationId = null;
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
  $('#send').hidden = busy;
  $('#stop').hidden = !busy;
  $('#new-chat').disabled = busy;
  document.body.classList.toggle('busy', busy);
}

async function send() {
  const input = $('#input');
  const text = input.value.trim();
  if (!text || state.turnId) return;
  const model = $('#model-select').value;
  if (!model) {
    explainLlmError({ kind: 'unreachable' });
    return;
  }
  const attachments = composer.attachments();
  input.value = '';
  autosize();
  const turnId = crypto.randomUUID();
  state.turnId = turnId;
  setBusy(true);
  let failed = false;
  let started = false;
  const onEvent = (ev) => {
    switch (ev.type) {
      case 'turnStarted': {
        started = true;
        state.conversationId = ev.conversationId;
        pendingToolChoice = null;
        $('#chat-title').textContent = ev.title;
        if (ev.userMessageId !== null && ev.userMessageId !== undefined) {
          const b = chat.addMessage(ev.userMessageId, 'user');
          chat.setUserText(b, text, attachments);
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
      case 'notice': chat.addNotice(ev.text); break;
      case 'error':
        failed = true;
        if (ev.kind === 'unreachable') explainLlmError(ev);
        chat.addError(ev.message);
        break;
      case 'done': break;
      default: console.warn('unknown chat event', ev);
    }
  };
  try {
    const toolChoice = state.conversationId ? null : pendingToolChoice;
    await ipc.sendMessage({ turnId, conversationId: state.conversationId, model, text, attachments, toolChoice }, onEvent);
    if (!failed) hideBanner();
  } catch (err) {
    chat.addError(err?.message ?? String(err));
    if (!started) { input.value = text; autosize(); } // nothing was saved: give the text back (attachments stay)
  } finally {
    state.turnId = null;
    setBusy(false);
    refreshConversations();
    input.focus();
  }
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
  const model = $('#model-select').value;
  if (model && state.settings && model !== state.settings.model) {
    try { state.settings = await ipc.saveSettings({ ...state.settings, model }); } catch { /* shown on next save */ }
  }
});
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && state.turnId) { e.preventDefault(); stop(); }
  if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'n') { e.preventDefault(); newChat(); }
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
