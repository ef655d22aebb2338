// The one module that talks to the Rust side (invoke and Channel). Every other module is a view.
const core = window.__TAURI__.core;

const call = (cmd, args) => core.invoke(cmd, args);

export const appInfo = () => call('app_info');
export const getSettings = () => call('get_settings');
export const saveSettings = (settings) => call('save_settings', { settings });
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
export const llmCalls = (id) => call('llm_calls', { id });
/** format: 'markdown' | 'json'; resolves with the path written, or null when the dialog was closed. */
export const exportConversation = (id, format) => call('export_conversation', { id, format });
/** Resolves with the new conversation's id, or null when the dialog was closed. */
export const importConversation = () => call('import_conversation');
export const modelCapabilities = (provider, model) => call('model_capabilities', { provider, model });
/** onProgress({status, digest, total, completed}); resolves true when done, false when cancelled. */
export function pullModel(name, onProgress) {
  const channel = new core.Channel();
  channel.onmessage = onProgress;
  return call('pull_model', { name, onProgress: channel });
}
export const cancelPull = (name) => call('cancel_pull', { name });
export const deleteModel = (name) => call('delete_model', { name });
export const loadConversation = (id) => call('load_conversation', { id });
/** choice = { disabledServers: [name], disabledTools: ['server/tool'] } */
export const setConversationTools = (id, choice) => call('set_conversation_tools', { id, choice });
export const mcpServers = () => call('mcp_servers');
export const mcpConfig = () => call('mcp_config');
export const saveMcpServer = (original, name, server) => call('save_mcp_server', { original, name, server });
export const deleteMcpServer = (name) => call('delete_mcp_server', { name });
export const setMcpServerEnabled = (name, enabled) => call('set_mcp_server_enabled', { name, enabled });
export const restartMcpServer = (name) => call('restart_mcp_server', { name });
export const previewMcpImport = (text) => call('preview_mcp_import', { text });
/** Opens the system's file dialog; resolves with { path, text } or null when closed. */
export const pickMcpImportFile = () => call('pick_mcp_import_file');
export const importMcpServers = (servers) => call('import_mcp_servers', { servers });
export const exportMcpConfig = () => call('export_mcp_config');
export const mcpPrompts = () => call('mcp_prompts');
export const getMcpPrompt = (server, name, args) => call('get_mcp_prompt', { server, name, arguments: args });
export const mcpResources = () => call('mcp_resources');
export const renderMarkdown = (text) => call('render_markdown', { text });
export const stopTurn = (turnId) => call('stop_turn', { turnId });
/** Answers a tool call waiting for approval: decision = { action: 'allowOnce' | 'allowConversation' | 'alwaysAllow' | 'deny' }. */
/** answer = { action: 'accept' | 'decline' | 'cancel', content? } */
export const answerElicitation = (id, answer) => call('answer_elicitation', { id, answer });
/** Lets a server's sampling request go to the model (true) or declines it (false). */
export const resolveSampling = (id, approve) => call('resolve_sampling', { id, approve });
export const cancelToolCall = (id) => call('cancel_tool_call', { id });
export const resolveApproval = (id, decision) => call('resolve_approval', { id, decision });

/** Opens an http(s) link in the user's browser, never in this window. */
export const openUrl = (url) => call('plugin:opener|open_url', { url });

/**
 * Runs a turn; `onEvent` receives each ChatEvent as it happens. request = { turnId, conversationId,
 * model, text, attachments, toolChoice, editOf?, regenerate?, resume?: 'continue' | 'wrapUp' }.
 * Resolves with the turn summary when the turn has ended.
 */
export function sendMessage(request, onEvent) {
  const channel = new core.Channel();
  channel.onmessage = onEvent;
  return call('send_message', { request, onEvent: channel });
}
