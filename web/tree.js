// A session's tree beside its transcript. A long linear history would make
// a deep, useless tree, so the rows are the entries a person steers by —
// their prompts, labelled entries, summaries and each ref's leaf — and the
// tree indents only where the history forks, each branch collapsible.

import { h } from './render.js';

const SHOWN = 300;

/**
 * @typedef {{id: string, parentId: string | null, type: string, timestamp: string, role?: string, label?: string, preview?: string}} TreeEntry
 * @typedef {{name: string, leafId: string | null}} RefLeaf
 */

/**
 * Draws the tree into `into`. `onSelect` hears the entry a row stands for.
 * @param {HTMLElement} into
 * @param {{entries: TreeEntry[], refs: RefLeaf[]}} tree
 * @param {string | null} selected
 * @param {(entry: TreeEntry) => void} onSelect
 * @param {boolean} [all] draw every row rather than the newest
 */
export function drawTree(into, tree, selected, onSelect, all = false) {
  /** @type {Map<string | null, TreeEntry[]>} */
  const children = new Map();
  for (const entry of tree.entries) {
    const siblings = children.get(entry.parentId) ?? [];
    siblings.push(entry);
    children.set(entry.parentId, siblings);
  }
  /** @type {Map<string, string[]>} */
  const leaves = new Map();
  for (const ref of tree.refs) {
    if (!ref.leafId) continue;
    leaves.set(ref.leafId, [...(leaves.get(ref.leafId) ?? []), ref.name]);
  }
  const shown = (/** @type {TreeEntry} */ entry) =>
    entry.role === 'user' || Boolean(entry.label) || leaves.has(entry.id) || entry.type === 'compaction' ||
    entry.type === 'branch_summary' || (children.get(entry.id)?.length ?? 0) > 1;

  // Depth-first, without recursion (a history can be thousands deep): each
  // fork opens a group per branch.
  const root = h('ul', { class: 'tree', 'aria-label': 'Entries' });
  /** @type {{entry: TreeEntry, group: HTMLElement}[]} */
  const stack = [];
  const roots = children.get(null) ?? [];
  const open = (/** @type {HTMLElement} */ parent, /** @type {TreeEntry[]} */ kids) => {
    if (kids.length === 1) return [{ entry: kids[0], group: parent }];
    return kids.map((kid, i) => {
      const list = h('ul');
      const branch = h('details', { open: '' }, h('summary', {}, `Branch ${i + 1} of ${kids.length}`), list);
      parent.append(h('li', { class: 'branch' }, branch));
      return { entry: kid, group: list };
    });
  };
  stack.push(...open(root, roots).reverse());
  /** @type {{entry: TreeEntry, group: HTMLElement}[]} */
  const rows = [];
  while (stack.length) {
    const item = /** @type {{entry: TreeEntry, group: HTMLElement}} */ (stack.pop());
    if (shown(item.entry)) rows.push(item);
    stack.push(...open(item.group, children.get(item.entry.id) ?? []).reverse());
  }
  // A long history: only the newest rows are drawn, unless asked for all.
  const first = all ? 0 : Math.max(0, rows.length - SHOWN);
  for (const { entry, group } of rows.slice(first)) group.append(row_of(entry, leaves.get(entry.id) ?? [], entry.id === selected, onSelect));
  // Redrawn under a keyboard user's focus: the focus stays on its entry.
  const focused = into.contains(document.activeElement)
    ? document.activeElement?.closest('li[data-entry]')?.getAttribute('data-entry') : null;
  into.replaceChildren(root);
  if (focused) /** @type {HTMLElement | null} */ (root.querySelector(`li[data-entry="${CSS.escape(focused)}"] button`))?.focus();
  if (first > 0) {
    const more = h('button', { type: 'button', class: 'more' }, `Show ${first} earlier rows`);
    more.addEventListener('click', () => drawTree(into, tree, selected, onSelect, true));
    into.prepend(more);
  }
}

/**
 * @param {TreeEntry} entry @param {string[]} refs @param {boolean} selected
 * @param {(entry: TreeEntry) => void} onSelect
 */
function row_of(entry, refs, selected, onSelect) {
  const what = entry.preview ?? (entry.type === 'message' ? entry.role ?? 'message' : entry.type.replaceAll('_', ' '));
  const button = h('button', { type: 'button', class: 'row', 'aria-pressed': String(selected) },
    h('span', { class: `kind ${entry.role ?? entry.type}` }, entry.role === 'user' ? '›' : '·'),
    h('span', { class: 'preview', title: what }, what));
  for (const ref of refs) button.append(h('span', { class: 'leaf', title: `the leaf of ${ref}` }, `● ${ref}`));
  if (entry.label) button.append(h('span', { class: 'label' }, entry.label));
  button.addEventListener('click', () => onSelect(entry));
  return h('li', { 'data-entry': entry.id }, button);
}
