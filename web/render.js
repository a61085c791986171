// Entries and messages as DOM. Everything a session holds is text from a
// model, a tool or a user: it becomes text nodes (textContent), or, for
// Markdown, HTML that markdown.js has sanitised with its raw HTML escaped,
// so a transcript cannot inject markup or script into the page.

import { ansiText, hasEscapes } from './ansi.js';
import { callDiff, diffBlock, parseUnified } from './diff.js';
import { h } from './dom.js';
import { markdown } from './markdown.js';

export { h, markdown };

/** @typedef {import('./runlog.js').Sandbox} Sandbox */

/** A status as people say it: `awaiting input`, not `awaiting_input`. @param {string} status */
export function statusText(status) {
  return String(status).replaceAll('_', ' ');
}

/** @param {unknown} content @returns {string} */
export function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (part && part.type === 'text' ? String(part.text) : '')).join('');
}

/**
 * A collapsible block: a <details> whose summary is a button-like line.
 * @param {string} summary @param {Node} body @param {boolean} [open]
 */
function details(summary, body, open = false) {
  const node = h('details', {}, h('summary', {}, summary), body);
  if (open) node.setAttribute('open', '');
  return node;
}

/** @param {string} text @param {string} [cls] */
function pre(text, cls = '') {
  return h('pre', cls ? { class: cls } : {}, text);
}

/** A program's output, its terminal colours shown. @param {string} text @param {string} cls */
function output(text, cls) {
  if (!hasEscapes(text)) return pre(text, cls);
  const node = h('pre', { class: `${cls} ansi` });
  node.append(ansiText(text));
  return node;
}

/**
 * What a tool call's processes ran under, as its tool_started records it
 * (or, `pending`, what they will run under if a person allows the call, as
 * its approval request says); null when the log says nothing (an older log,
 * or no policy given).
 * @param {Sandbox | undefined} sandbox @param {boolean} [pending]
 */
export function sandboxBadge(sandbox, pending = false) {
  if (!sandbox) return null;
  const ran = pending ? 'will run' : 'ran';
  if (sandbox.mode === 'off') return h('span', { class: 'sandbox-badge off', title: `This call's processes ${ran} with no sandbox: they can read and write what the server's user can, and reach the network.` }, 'no sandbox');
  const mode = { readOnly: 'read-only', workspaceWrite: 'workspace-write' }[sandbox.mode] ?? sandbox.mode;
  const network = sandbox.networkGranted ? 'on for this call' : sandbox.network ? 'on' : 'off';
  const why = sandbox.networkGranted ? ' (the call asked for it; allowing it grants it to this call alone)' : '';
  return h('span', { class: 'sandbox-badge', title: `This call's processes ${ran} in the ${mode} sandbox, ${sandbox.network ? 'with' : 'without'} network access${why}.` },
    `sandbox: ${mode}, network ${network}`);
}

/** @param {HTMLElement} node @param {string} cls */
function withClass(node, cls) {
  node.classList.add(cls);
  return node;
}

/** @param {any} block */
function image(block) {
  const mime = typeof block.mimeType === 'string' && /^image\/(png|jpeg|gif|webp)$/.test(block.mimeType) ? block.mimeType : null;
  if (!mime || typeof block.data !== 'string') return h('p', { class: 'muted' }, '[image]');
  return h('img', { src: `data:${mime};base64,${block.data}`, alt: 'an image from the conversation', class: 'image' });
}

/** @param {any[] | string} content */
function userContent(content) {
  const body = h('div');
  if (typeof content === 'string') body.append(markdown(content));
  else for (const block of content ?? []) body.append(block.type === 'image' ? image(block) : markdown(String(block.text ?? '')));
  return body;
}

/**
 * A tool call, with its result when there is one, and the sandbox it ran
 * under when its tool_started is known.
 * @param {any} call @param {any} [result] the toolResult message @param {Sandbox} [sandbox]
 */
export function toolCall(call, result, sandbox) {
  const args = call.arguments ?? {};
  const title = call.name === 'bash' && typeof args.command === 'string' ? `$ ${args.command}` : `${call.name}(${summarise(args)})`;
  const node = h('div', { class: 'tool', 'data-tool-call': String(call.id ?? '') });
  const body = h('div');
  // An edit or a write is its diff (the edit's own, with the file's line
  // numbers, once it ran); any other call shows its arguments.
  const diff = callDiff(String(call.name), args, result);
  if (diff) body.append(diff);
  else body.append(pre(JSON.stringify(args, null, 2), 'args'));
  if (result) {
    const text = textOf(result.content);
    if (!diff && result.details && typeof result.details.diff === 'string') body.append(diffBlock(String(result.details.path ?? 'diff'), parseUnified(result.details.diff)));
    else if (text) body.append(output(text, result.isError ? 'output error' : 'output'));
    for (const block of Array.isArray(result.content) ? result.content : []) if (block.type === 'image') body.append(image(block));
    node.classList.add(result.isError ? 'failed' : 'done');
  } else {
    node.classList.add('pending');
  }
  const summary = h('summary', {}, h('span', { class: 'call-title' }, title));
  const badge = sandboxBadge(sandbox);
  if (badge) summary.append(' ', badge);
  const box = h('details', {}, summary, body);
  // Open while it runs, and when it changed a file: the diff is what a reader looks for.
  if (!result || diff) box.setAttribute('open', '');
  node.append(box);
  return node;
}

/** @param {any} args */
function summarise(args) {
  const text = Object.entries(args)
    .map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(', ');
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}

/**
 * One message. `results` maps a tool call id to its toolResult message, so
 * a call shows its result beside it (the result's own entry is then not
 * drawn again). `sandboxes` maps a call id to the sandbox it ran under.
 * @param {any} message @param {Map<string, any>} results @param {Map<string, Sandbox>} [sandboxes]
 */
export function messageView(message, results, sandboxes = new Map()) {
  const role = message.role;
  if (role === 'user') return h('article', { class: 'msg user', 'aria-label': 'user message' }, h('h3', { class: 'who' }, 'You'), userContent(message.content));
  if (role === 'assistant') {
    const node = h('article', { class: 'msg assistant', 'aria-label': 'assistant message' }, h('h3', { class: 'who' }, 'Assistant'));
    for (const block of message.content ?? []) {
      if (block.type === 'text') node.append(markdown(String(block.text ?? '')));
      else if (block.type === 'thinking') node.append(details('Thinking', withClass(markdown(String(block.thinking ?? '')), 'thinking')));
      else if (block.type === 'toolCall') node.append(toolCall(block, results.get(block.id), sandboxes.get(block.id)));
    }
    if (message.stopReason === 'error' || message.stopReason === 'aborted') {
      node.append(h('p', { class: message.stopReason }, message.stopReason === 'aborted' ? 'Aborted.' : `Error: ${message.errorMessage ?? 'the request failed'}`));
    }
    return node;
  }
  if (role === 'toolResult') {
    return h('article', { class: 'msg tool-result' }, toolCall({ id: message.toolCallId, name: message.toolName, arguments: {} }, message, sandboxes.get(message.toolCallId)));
  }
  if (role === 'bashExecution') {
    return h('article', { class: 'msg bash' }, details(`$ ${message.command}`, output(String(message.output ?? ''), 'output'), true));
  }
  if (role === 'branchSummary' || role === 'compactionSummary') {
    return h('article', { class: 'msg summary' }, h('h3', { class: 'who' }, role === 'branchSummary' ? 'Branch summary' : 'Compaction summary'), markdown(String(message.summary ?? '')));
  }
  return h('article', { class: 'msg custom' }, h('h3', { class: 'who' }, String(message.customType ?? role)), markdown(textOf(message.content)));
}

/**
 * An entry of the transcript, or null for one that draws nothing (a label,
 * a setting kept for the model).
 * @param {any} entry @param {Map<string, any>} results @param {Map<string, Sandbox>} [sandboxes]
 */
export function entryView(entry, results, sandboxes = new Map()) {
  switch (entry.type) {
    case 'message':
      return messageView(entry.message, results, sandboxes);
    case 'compaction':
      return h('div', { class: 'marker compaction', role: 'note' }, h('strong', {}, 'Compacted'), details('The summary the model reads', markdown(String(entry.summary ?? ''))));
    case 'branch_summary':
      return h('div', { class: 'marker branch', role: 'note' }, h('strong', {}, 'Branch summary'), details('What the abandoned branch did', markdown(String(entry.summary ?? ''))));
    case 'model_change':
      return h('div', { class: 'marker', role: 'note' }, `Model: ${entry.provider}/${entry.modelId}`);
    case 'thinking_level_change':
      return h('div', { class: 'marker', role: 'note' }, `Thinking: ${entry.thinkingLevel}`);
    case 'custom_message':
      return h('article', { class: 'msg custom' }, h('h3', { class: 'who' }, String(entry.customType ?? 'note')), markdown(textOf(entry.content)));
    case 'damaged_entry':
      return h('div', { class: 'marker damaged', role: 'note' }, 'A damaged entry (repaired)');
    default:
      return null;
  }
}
