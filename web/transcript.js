// The transcript of one ref: its entries from the snapshot, the entries its
// records add, and the message that is streaming now. The snapshot holds
// only the newest entries, and only the newest of those are drawn at first;
// older ones are drawn (and, past the snapshot's, fetched) a page at a time
// as the reader scrolls up, so a session of ten thousand entries opens at
// once.

import { entryView, h, messageView, sandboxBadge } from './render.js';

const PAGE = 120;

export class Transcript {
  /**
   * @param {HTMLElement} scroller the element that scrolls @param {HTMLElement} list
   * @param {(before: string, limit: number) => Promise<any[]>} loadBefore the entries before an entry, oldest first
   */
  constructor(scroller, list, loadBefore) {
    this.scroller = scroller;
    this.list = list;
    this.loadBefore = loadBefore;
    /** entries of the transcript the snapshot left out, not fetched yet */
    this.omitted = 0;
    this.loading = false;
    /** @type {any[]} */
    this.entries = [];
    /** @type {Set<string>} ids of entries held */
    this.ids = new Set();
    /** toolCallId → toolResult message */
    this.results = new Map();
    /** toolCallId → the id of the assistant entry that made the call */
    this.callers = new Map();
    /** entry id → its drawn node */
    this.nodes = new Map();
    /** @type {Map<string, import('./runlog.js').Sandbox>} toolCallId → the sandbox its tool_started records */
    this.sandboxes = new Map();
    /** the index of the oldest entry drawn */
    this.firstDrawn = 0;
    this.live = h('div', { class: 'live', 'aria-live': 'off' });
    this.more = h('button', { type: 'button', class: 'more' }, 'Show earlier entries');
    this.more.addEventListener('click', () => void this.drawEarlier());
    this.observer = new IntersectionObserver((seen) => {
      if (seen.some((item) => item.isIntersecting)) void this.drawEarlier();
    }, { root: scroller, rootMargin: '400px 0px 0px 0px' });
  }

  /** Starts over from a snapshot's transcript. @param {any[]} entries @param {number} [omitted] older entries it left out */
  reset(entries, omitted = 0) {
    this.omitted = omitted;
    this.entries = [];
    this.ids.clear();
    this.results.clear();
    this.callers.clear();
    this.nodes.clear();
    for (const entry of entries) this.remember(entry);
    this.list.replaceChildren();
    this.firstDrawn = Math.max(0, this.entries.length - PAGE);
    const fragment = document.createDocumentFragment();
    for (let i = this.firstDrawn; i < this.entries.length; i++) {
      const node = this.draw(this.entries[i]);
      if (node) fragment.append(node);
    }
    this.list.append(this.more, fragment, this.live);
    this.more.hidden = !this.earlier();
    this.observer.disconnect();
    if (this.earlier()) this.observer.observe(this.more);
    this.scrollToEnd();
  }

  /** Whether there is more above what is drawn. */
  earlier() {
    return this.firstDrawn > 0 || this.omitted > 0;
  }

  /** @param {any} entry */
  remember(entry) {
    this.entries.push(entry);
    this.ids.add(entry.id);
    const message = entry.type === 'message' ? entry.message : null;
    if (message?.role === 'toolResult') this.results.set(message.toolCallId, message);
    if (message?.role === 'assistant') {
      for (const block of message.content ?? []) if (block.type === 'toolCall') this.callers.set(block.id, entry.id);
    }
  }

  /** @param {any} entry @returns {HTMLElement | null} */
  draw(entry) {
    const message = entry.type === 'message' ? entry.message : null;
    // A tool's result is drawn inside its call.
    if (message?.role === 'toolResult' && this.callers.has(message.toolCallId)) return null;
    const node = entryView(entry, this.results, this.sandboxes);
    if (node) {
      node.dataset.entry = entry.id;
      this.nodes.set(entry.id, node);
    }
    return node;
  }

  async drawEarlier() {
    if (this.firstDrawn === 0 && this.omitted > 0) {
      if (this.loading || !this.entries.length) return;
      this.loading = true;
      try {
        const older = await this.loadBefore(this.entries[0].id, Math.min(PAGE, this.omitted));
        const held = this.entries;
        this.entries = [];
        this.results.clear();
        this.callers.clear();
        for (const entry of [...older, ...held]) this.remember(entry);
        this.firstDrawn += older.length;
        this.omitted = older.length ? this.omitted - older.length : 0;
      } catch {
        return;  // the button stays: another scroll, or a click, asks again
      } finally {
        this.loading = false;
      }
    }
    if (this.firstDrawn === 0) return;
    const from = Math.max(0, this.firstDrawn - PAGE);
    const fragment = document.createDocumentFragment();
    for (let i = from; i < this.firstDrawn; i++) {
      const node = this.draw(this.entries[i]);
      if (node) fragment.append(node);
    }
    // Keep what the reader looks at where it is.
    const before = this.scroller.scrollHeight;
    this.more.after(fragment);
    this.scroller.scrollTop += this.scroller.scrollHeight - before;
    this.firstDrawn = from;
    this.more.hidden = !this.earlier();
    // Observed afresh: a reader still at the top (the page drawn was
    // shorter than the view) hears at once that more is wanted.
    this.observer.disconnect();
    if (this.earlier()) this.observer.observe(this.more);
  }

  /** An entry a record added to this ref's branch. @param {any} entry @returns {boolean} false when it was held already */
  add(entry) {
    if (this.ids.has(entry.id)) return false;
    const follow = this.atEnd();
    this.remember(entry);
    const message = entry.type === 'message' ? entry.message : null;
    if (message?.role === 'toolResult' && this.callers.has(message.toolCallId)) {
      // Redraw the call with its result.
      const caller = this.callers.get(message.toolCallId);
      const old = this.nodes.get(caller);
      const index = this.entries.findIndex((item) => item.id === caller);
      if (old && index >= 0) {
        const fresh = this.draw(this.entries[index]);
        if (fresh) old.replaceWith(fresh);
      }
    } else {
      const node = this.draw(entry);
      if (node) this.live.before(node);
    }
    if (follow) this.scrollToEnd();
    return true;
  }

  /** The message streaming now (null: none). @param {any | null} message */
  streaming(message) {
    const follow = this.atEnd();
    this.live.replaceChildren();
    if (message) {
      const node = messageView(message, this.results, this.sandboxes);
      node.classList.add('streaming');
      this.live.append(node);
    }
    if (follow) this.scrollToEnd();
  }

  /**
   * The sandboxes of the calls, as the log's tool_started records say: a
   * call drawn before its record was read gets its badge now.
   * @param {Map<string, import('./runlog.js').Sandbox>} sandboxes
   */
  setSandboxes(sandboxes) {
    this.sandboxes = sandboxes;
    for (const summary of this.list.querySelectorAll('.tool[data-tool-call] > details > summary')) {
      const id = summary.parentElement?.parentElement?.getAttribute('data-tool-call') ?? '';
      if (summary.querySelector('.sandbox-badge')) continue;
      const badge = sandboxBadge(sandboxes.get(id));
      if (badge) summary.append(' ', badge);
    }
  }

  /**
   * Shows an entry (drawing the older pages down to it when it is held but
   * not drawn yet) and, within it, a tool call; false when it is not held.
   * @param {string} entryId @param {string | null} [callId]
   */
  async reveal(entryId, callId = null) {
    const index = this.entries.findIndex((entry) => entry.id === entryId);
    if (index < 0 && !this.nodes.has(entryId)) return false;
    while (index >= 0 && index < this.firstDrawn) await this.drawEarlier();
    const node = this.nodes.get(entryId);
    if (!node) return false;
    const call = callId ? /** @type {HTMLElement | null} */ (node.querySelector(`[data-tool-call="${CSS.escape(callId)}"]`)) : null;
    const target = call ?? node;
    target.scrollIntoView({ block: 'center' });
    target.classList.add('chosen');
    setTimeout(() => target.classList.remove('chosen'), 2000);
    const focusable = /** @type {HTMLElement | null} */ (target.querySelector('summary'));
    focusable?.focus({ preventScroll: true });
    return true;
  }

  atEnd() {
    return this.scroller.scrollHeight - this.scroller.scrollTop - this.scroller.clientHeight < 80;
  }

  scrollToEnd() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  /** The newest assistant message's usage, or null. */
  lastUsage() {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const message = this.entries[i].type === 'message' ? this.entries[i].message : null;
      if (message?.role === 'assistant' && message.usage) return message.usage;
    }
    return null;
  }
}
