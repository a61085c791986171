// Entries and messages as DOM. Everything a session holds is text from a
// model, a tool or a user: it only ever becomes text nodes (textContent),
// never HTML, so a transcript cannot inject markup or script into the page.

/**
 * @param {string} tag
 * @param {Record<string, string>} [attrs]
 * @param {...(Node | string | null | undefined)} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === 'class') node.className = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

/**
 * A small markdown: fenced code blocks, headings, bullet lists, paragraphs,
 * and inline code, bold and italic. Enough for a model's answers; anything
 * else stays as the text it is.
 * @param {string} text
 */
export function markdown(text) {
  const root = h('div', { class: 'md' });
  const lines = text.split('\n');
  /** @type {string[]} */
  let paragraph = [];
  /** @type {HTMLElement | null} */
  let list = null;
  const flush = () => {
    if (paragraph.length) root.append(inline(h('p'), paragraph.join('\n')));
    paragraph = [];
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^```(\S*)/.exec(line);
    if (fence) {
      flush();
      const body = [];
      for (i++; i < lines.length && !lines[i].startsWith('```'); i++) body.push(lines[i]);
      const code = h('code', fence[1] ? { 'data-lang': fence[1] } : {}, body.join('\n'));
      root.append(h('pre', {}, code));
      continue;
    }
    const heading = /^(#{1,4})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      root.append(inline(h(`h${Math.min(6, heading[1].length + 2)}`), heading[2]));
      continue;
    }
    const item = /^\s*(?:[-*]|\d+\.)\s+(.*)$/.exec(line);
    if (item) {
      if (paragraph.length) root.append(inline(h('p'), paragraph.join('\n')));
      paragraph = [];
      if (!list) {
        list = h('ul');
        root.append(list);
      }
      list.append(inline(h('li'), item[1]));
      continue;
    }
    if (!line.trim()) {
      flush();
      continue;
    }
    list = null;
    paragraph.push(line);
  }
  flush();
  return root;
}

/** @param {HTMLElement} into @param {string} text */
function inline(into, text) {
  const pattern = /(`[^`]+`|\*\*[^*]+\*\*|\*[^*\s][^*]*\*)/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    const at = match.index ?? 0;
    if (at > last) into.append(text.slice(last, at));
    const token = match[0];
    if (token.startsWith('`')) into.append(h('code', {}, token.slice(1, -1)));
    else if (token.startsWith('**')) into.append(h('strong', {}, token.slice(2, -2)));
    else into.append(h('em', {}, token.slice(1, -1)));
    last = at + token.length;
  }
  if (last < text.length) into.append(text.slice(last));
  return into;
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

/** @param {string} diff */
function diffView(diff) {
  const node = h('pre', { class: 'diff' });
  for (const line of diff.split('\n')) {
    const cls = line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : '';
    node.append(h('span', cls ? { class: cls } : {}, `${line}\n`));
  }
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
 * A tool call, with its result when there is one.
 * @param {any} call @param {any} [result] the toolResult message
 */
export function toolCall(call, result) {
  const args = call.arguments ?? {};
  const title = call.name === 'bash' && typeof args.command === 'string' ? `$ ${args.command}` : `${call.name}(${summarise(args)})`;
  const node = h('div', { class: 'tool', 'data-tool-call': String(call.id ?? '') });
  const body = h('div');
  if (call.name === 'edit' && typeof args.oldText === 'string') {
    body.append(h('p', { class: 'muted' }, String(args.path ?? '')));
  } else {
    body.append(pre(JSON.stringify(args, null, 2), 'args'));
  }
  if (result) {
    const text = textOf(result.content);
    if (result.details && typeof result.details.diff === 'string') body.append(diffView(result.details.diff));
    else if (text) body.append(pre(text, result.isError ? 'output error' : 'output'));
    for (const block of Array.isArray(result.content) ? result.content : []) if (block.type === 'image') body.append(image(block));
    node.classList.add(result.isError ? 'failed' : 'done');
  } else {
    node.classList.add('pending');
  }
  node.append(details(title, body, !result));
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
 * drawn again).
 * @param {any} message @param {Map<string, any>} results
 */
export function messageView(message, results) {
  const role = message.role;
  if (role === 'user') return h('article', { class: 'msg user', 'aria-label': 'user message' }, h('h3', { class: 'who' }, 'You'), userContent(message.content));
  if (role === 'assistant') {
    const node = h('article', { class: 'msg assistant', 'aria-label': 'assistant message' }, h('h3', { class: 'who' }, 'Assistant'));
    for (const block of message.content ?? []) {
      if (block.type === 'text') node.append(markdown(String(block.text ?? '')));
      else if (block.type === 'thinking') node.append(details('Thinking', pre(String(block.thinking ?? ''), 'thinking')));
      else if (block.type === 'toolCall') node.append(toolCall(block, results.get(block.id)));
    }
    if (message.stopReason === 'error' || message.stopReason === 'aborted') {
      node.append(h('p', { class: message.stopReason }, message.stopReason === 'aborted' ? 'Aborted.' : `Error: ${message.errorMessage ?? 'the request failed'}`));
    }
    return node;
  }
  if (role === 'toolResult') {
    return h('article', { class: 'msg tool-result' }, toolCall({ id: message.toolCallId, name: message.toolName, arguments: {} }, message));
  }
  if (role === 'bashExecution') {
    return h('article', { class: 'msg bash' }, details(`$ ${message.command}`, pre(String(message.output ?? ''), 'output'), true));
  }
  if (role === 'branchSummary' || role === 'compactionSummary') {
    return h('article', { class: 'msg summary' }, h('h3', { class: 'who' }, role === 'branchSummary' ? 'Branch summary' : 'Compaction summary'), markdown(String(message.summary ?? '')));
  }
  return h('article', { class: 'msg custom' }, h('h3', { class: 'who' }, String(message.customType ?? role)), markdown(textOf(message.content)));
}

/**
 * An entry of the transcript, or null for one that draws nothing (a label,
 * a setting kept for the model).
 * @param {any} entry @param {Map<string, any>} results
 */
export function entryView(entry, results) {
  switch (entry.type) {
    case 'message':
      return messageView(entry.message, results);
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
