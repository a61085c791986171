// Edits and writes as unified diffs: line numbers on both sides, added and
// removed lines coloured (and marked + and −, for those who do not see the
// colour), each file's diff a collapsible block. From the edit tool's own
// diff when its result has one (the file's real line numbers), else from
// the call's arguments (before it ran: an approval, or a call still going).

/** @typedef {{kind: 'add' | 'del' | 'ctx' | 'hunk', text: string, old?: number, new?: number}} DiffLine */

import { h } from './dom.js';

/**
 * Parses a unified diff's hunks: a header line (at-signs, -a,b +c,d), then lines
 * that start with a space (kept), a minus (removed) or a plus (added).
 * @param {string} diff
 * @returns {DiffLine[]}
 */
export function parseUnified(diff) {
  /** @type {DiffLine[]} */
  const lines = [];
  let oldNo = 0;
  let newNo = 0;
  for (const line of diff.replace(/\n$/, '').split('\n')) {
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      lines.push({ kind: 'hunk', text: line });
    } else if (line.startsWith('+')) {
      lines.push({ kind: 'add', text: line.slice(1), new: newNo++ });
    } else if (line.startsWith('-')) {
      lines.push({ kind: 'del', text: line.slice(1), old: oldNo++ });
    } else if (line.startsWith(' ')) {
      lines.push({ kind: 'ctx', text: line.slice(1), old: oldNo++, new: newNo++ });
    } else if (line) {
      lines.push({ kind: 'hunk', text: line });  // "[diff cut]" and the like
    }
  }
  return lines;
}

/**
 * The lines of `before` and `after` as removed, added and kept, by their
 * longest common subsequence, numbered from `first` on each side. A pair
 * too large to compare quickly is shown as all removed, then all added.
 * @param {string} before @param {string} after @param {number} [first]
 * @returns {DiffLine[]}
 */
export function diffLines(before, after, first = 1) {
  const a = before === '' ? [] : before.replace(/\n$/, '').split('\n');
  const b = after === '' ? [] : after.replace(/\n$/, '').split('\n');
  /** @type {DiffLine[]} */
  const out = [];
  let i = 0;
  let j = 0;
  if (a.length * b.length <= 4_000_000) {
    // lcs[x][y]: the common lines of a[x…] and b[y…].
    const width = b.length + 1;
    const lcs = new Uint32Array((a.length + 1) * width);
    for (let x = a.length - 1; x >= 0; x--) {
      for (let y = b.length - 1; y >= 0; y--) {
        lcs[x * width + y] = a[x] === b[y] ? lcs[(x + 1) * width + y + 1] + 1 : Math.max(lcs[(x + 1) * width + y], lcs[x * width + y + 1]);
      }
    }
    while (i < a.length && j < b.length) {
      if (a[i] === b[j]) out.push({ kind: 'ctx', text: a[i], old: first + i++, new: first + j++ });
      else if (lcs[(i + 1) * width + j] >= lcs[i * width + j + 1]) out.push({ kind: 'del', text: a[i], old: first + i++ });
      else out.push({ kind: 'add', text: b[j], new: first + j++ });
    }
  }
  while (i < a.length) out.push({ kind: 'del', text: a[i], old: first + i++ });
  while (j < b.length) out.push({ kind: 'add', text: b[j], new: first + j++ });
  return out;
}

/**
 * A diff as a collapsible block: the summary names the file and counts the
 * lines added and removed; the body has a row per line.
 * @param {string} title @param {DiffLine[]} lines @param {{open?: boolean, note?: string}} [options]
 */
export function diffBlock(title, lines, options = {}) {
  const added = lines.filter((line) => line.kind === 'add').length;
  const removed = lines.filter((line) => line.kind === 'del').length;
  const body = h('div', { class: 'diff-lines', role: 'group', 'aria-label': `diff of ${title}` });
  for (const line of lines) {
    const sign = line.kind === 'add' ? '+' : line.kind === 'del' ? '−' : line.kind === 'hunk' ? '' : ' ';
    body.append(h('div', { class: `diff-line ${line.kind}` },
      h('span', { class: 'ln old', 'aria-hidden': 'true' }, line.old === undefined ? '' : String(line.old)),
      h('span', { class: 'ln new', 'aria-hidden': 'true' }, line.new === undefined ? '' : String(line.new)),
      h('span', { class: 'sign' }, sign),
      h('span', { class: 'text' }, line.text)));
  }
  const summary = h('summary', {}, h('span', { class: 'diff-file' }, title), ' ',
    h('span', { class: 'diff-count add' }, `+${added}`), ' ', h('span', { class: 'diff-count del' }, `−${removed}`));
  const node = h('details', { class: 'diff' }, summary, ...(options.note ? [h('p', { class: 'muted diff-note' }, options.note)] : []), body);
  if (options.open !== false) node.setAttribute('open', '');
  return node;
}

/**
 * The diff an edit or a write call makes, from its arguments and (when it
 * ran) its result; null for any other call.
 * @param {string} tool @param {any} args @param {any} [result] the toolResult message
 * @returns {HTMLElement | null}
 */
export function callDiff(tool, args, result) {
  const path = String(args?.path ?? '');
  if (tool === 'edit') {
    if (result && !result.isError && typeof result.details?.diff === 'string') return diffBlock(path, parseUnified(result.details.diff));
    const edits = Array.isArray(args?.edits) ? args.edits : typeof args?.oldText === 'string' ? [args] : [];
    if (!edits.length) return null;
    const lines = edits.flatMap((/** @type {any} */ edit, /** @type {number} */ n) => [
      ...(edits.length > 1 ? [/** @type {DiffLine} */ ({ kind: 'hunk', text: `edit ${n + 1} of ${edits.length}` })] : []),
      ...diffLines(String(edit.oldText ?? ''), String(edit.newText ?? '')),
    ]);
    return diffBlock(path, lines, { note: 'Line numbers count within the replaced text (where in the file is known once it ran).' });
  }
  if (tool === 'write' && typeof args?.content === 'string') {
    return diffBlock(path, diffLines('', args.content), { note: 'The whole file as written.' });
  }
  return null;
}
