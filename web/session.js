// One session: its tree beside the live transcript of a ref, and every
// action a person takes on a run — prompt, steer, follow up, abort, resume,
// answer an approval or a question, navigate, fork, label, change the model.

import { ApiError, LiveStream, call, seg } from './api.js';
import { callDiff } from './diff.js';
import { h, sandboxBadge, statusText } from './render.js';
import { RunLog } from './runlog.js';
import { Timeline } from './timeline.js';
import { Transcript } from './transcript.js';
import { drawTree } from './tree.js';

const SNAPSHOT_ENTRIES = 240;
// The log records read for the timeline when the page opens: the newest
// ones, enough for the last runs of a ref (a 20-step run is ~100 records).
const TIMELINE_RECORDS = 2000;

const TREE_TYPES = new Set(['message', 'model_change', 'thinking_level_change', 'active_tools_change', 'compaction',
  'branch_summary', 'custom', 'custom_message', 'label', 'session_info', 'damaged_entry']);

/** @param {HTMLElement} main @param {string} id @param {string} refName @param {(state: string) => void} onConnection */
export function openSession(main, id, refName, onConnection) {
  const view = new SessionView(main, id, refName, onConnection);
  return () => view.close();
}

class SessionView {
  /** @param {HTMLElement} main @param {string} id @param {string} refName @param {(state: string) => void} onConnection */
  constructor(main, id, refName, onConnection) {
    this.id = id;
    this.ref = refName;
    this.onConnection = onConnection;
    this.base = `/v1/sessions/${seg(id)}`;
    this.refBase = `${this.base}/refs/${seg(refName)}`;
    /** @type {string | null} */
    this.leaf = null;
    /** @type {string} */
    this.status = 'idle';
    /** @type {any} */
    this.context = null;
    /** @type {any} */
    this.selected = null;
    /** @type {any} */
    this.tree = null;
    this.refreshTimer = 0;
    this.closed = false;

    this.title = h('h1', { class: 'title' }, id);
    this.refs = h('nav', { class: 'refs', 'aria-label': 'Refs' });
    this.treeBox = h('div', { class: 'tree-box' });
    this.entryActions = h('div', { class: 'entry-actions', 'aria-live': 'polite' });
    this.children = h('div', { class: 'children' });
    /** The status and time the subagents list was last asked for. @type {string | undefined} */
    this.childrenStatus = undefined;
    this.childrenAt = 0;
    this.statusLine = h('p', { class: 'status-line', role: 'status', 'aria-live': 'polite' });
    this.notice = h('p', { class: 'notice', role: 'alert' });
    this.notice.hidden = true;
    const list = h('div', { class: 'transcript' });
    this.scroller = h('div', { class: 'scroller', tabindex: '0', role: 'region', 'aria-label': 'Transcript' }, list);
    this.transcript = new Transcript(this.scroller, list, async (before, limit) => {
      try {
        return (await call('GET', `${this.refBase}/branch?before=${seg(before)}&limit=${limit}`)).entries;
      } catch (error) {
        // The entry left the ref's branch (it was moved): a new snapshot.
        if (error instanceof ApiError && error.code === 'unknown_entry') this.restart();
        throw error;
      }
    });
    // The runs' timeline, from the log's records: those before the
    // snapshot's cursor read once, the newer ones as the stream brings them
    // (and, while an open timeline shows a running run, as the log holds them).
    this.runLog = new RunLog(refName);
    /** the seq up to which the session's records were read for it */
    this.recordsRead = -1;
    this.readingNewer = false;
    this.timeline = new Timeline((step) => {
      if (step.entryId) void this.transcript.reveal(step.entryId, step.callId);
    }, () => void this.readNewer());
    this.timelineFrame = 0;
    this.inputs = h('div', { class: 'inputs', 'aria-live': 'polite' });
    this.operation = h('div', { class: 'operation', 'aria-live': 'polite' });
    this.sendButton = h('button', { type: 'submit', class: 'primary' }, 'Send');
    this.followButton = h('button', { type: 'button' }, 'Follow up');
    this.abortButton = h('button', { type: 'button', class: 'danger' }, 'Abort');
    this.modelSelect = /** @type {HTMLSelectElement} */ (h('select', { 'aria-label': 'Model' }));
    this.thinkingSelect = /** @type {HTMLSelectElement} */ (h('select', { 'aria-label': 'Thinking level' }));
    /** @type {string | null} */
    this.model = null;
    /** @type {string | null} */
    this.thinking = null;
    this.treeTimer = 0;
    /** counts the run_start and run_end events seen */
    this.epoch = 0;
    this.reconnecting = false;
    this.sessionCost = 0;
    this.messageBox = /** @type {HTMLTextAreaElement} */ (h('textarea', { rows: '3', 'aria-label': 'Message', placeholder: 'Message (Enter sends, Shift+Enter: new line)' }));
    this.composer = this.makeComposer();
    this.settings = this.makeSettings();

    main.replaceChildren(
      h('div', { class: 'session' },
        h('aside', { class: 'side', 'aria-label': 'Tree' }, this.title, this.refs, h('h2', {}, 'Tree'), this.treeBox,
          this.entryActions, this.children),
        h('section', { class: 'chat', 'aria-label': `Ref ${refName}` }, this.statusLine, this.notice, this.timeline.node, this.scroller,
          this.inputs, this.operation, this.composer, this.settings)));

    // The transcript first: the tree and the settings are asked for once
    // its snapshot is drawn (a long session's tree is megabytes too).
    this.stream = this.openStream();
    this.treeLoaded = false;
    void this.refresh();
  }

  close() {
    this.closed = true;
    this.stream.close();
    this.timeline.close();
    clearTimeout(this.refreshTimer);
  }

  openStream() {
    // The snapshot brings the newest entries; older ones are asked for as
    // the reader scrolls up.
    return new LiveStream(`${this.refBase}/events?transcript=${SNAPSHOT_ENTRIES}`, {
      onFrame: (frame) => this.frame(frame),
      onState: (state, detail) => {
        this.onConnection(state === 'live' ? 'live' : state === 'reconnecting' ? 'reconnecting…' : 'stream ended');
        if (state === 'ended' && detail) this.say(`The live stream ended: ${detail}`);
        if (state === 'reconnecting') this.say('The connection dropped; reconnecting from where it was…', 'info');
        if (state === 'live' && this.notice.dataset.kind === 'info') this.say(null);
        if (state === 'live' && this.reconnecting) {
          // Back after a drop: the records come from the cursor on, but the
          // run the page saw may be gone (a server that stopped): its
          // half-streamed message goes (a live run's next update draws it
          // again), and the ref's state is looked at afresh.
          this.transcript.streaming(null);
          this.epoch += 1;
          this.scheduleRefresh();
        }
        this.reconnecting = state === 'reconnecting';
      },
    });
  }

  /** Starts the stream over from a fresh snapshot (the ref's branch changed under it). */
  restart() {
    this.stream.close();
    this.stream = this.openStream();
  }

  /** @param {any} frame */
  frame(frame) {
    switch (frame.type) {
      case 'snapshot':
        this.leaf = frame.leafId ?? null;
        this.transcript.reset(frame.transcript ?? [], Number(frame.transcriptOmitted ?? 0));
        this.transcript.streaming(frame.run?.streamingMessage ?? null);
        this.drawSpend();
        this.scheduleRefresh();
        void this.readRecords(Number(frame.cursor ?? -1));
        if (!this.treeLoaded) {
          this.treeLoaded = true;
          void this.loadTree();
          void this.loadSettings();
        }
        return;
      case 'message_start':
      case 'message_update':
        if (frame.message?.role === 'assistant') this.transcript.streaming(frame.message);
        break;
      case 'message_end':
        if (frame.message?.role === 'assistant') this.transcript.streaming(null);
        break;
      case 'context_usage':
        this.context = frame.context ?? null;
        this.drawSpend();
        break;
      case 'run_start':
      case 'run_end':
        // The stream says it first: the ref's status follows at the next look.
        this.epoch += 1;
        this.status = frame.type === 'run_start' ? 'running' : 'idle';
        this.drawState(null);
        this.scheduleRefresh();
        break;
      case 'input_requested':
      case 'input_resolved':
        this.scheduleRefresh();
        break;
      default:
        break;
    }
    if (frame.record) this.record(frame.record);
  }

  /** A record of this ref, in seq order. @param {any} record */
  record(record) {
    if (this.runLog.add(record)) this.drawRuns(record.type === 'tool_started');
    if (TREE_TYPES.has(record.type) && 'parentId' in record) {
      if ((record.parentId ?? null) === this.leaf) {
        this.transcript.add(record);
        this.leaf = record.id;
        if (record.type === 'message' && record.message?.role === 'assistant') this.drawSpend();
        this.scheduleTree();
      } else {
        // Not on the branch the page shows: the leaf moved meanwhile.
        this.restart();
      }
      return;
    }
    if (record.type === 'leaf') {
      this.restart();
      this.scheduleTree();
      return;
    }
    if (record.type.startsWith('operation_') || record.type.startsWith('input_') || record.type === 'queue_enqueued') {
      this.scheduleRefresh();
    }
  }

  /**
   * Reads the log's records up to the snapshot's cursor that the timeline
   * has not seen: the newest TIMELINE_RECORDS when the page opens, then what
   * a restarted stream's snapshot skipped. @param {number} cursor
   */
  async readRecords(cursor) {
    let after = Math.max(this.recordsRead, cursor - TIMELINE_RECORDS);
    let added = false;
    try {
      while (after < cursor && !this.closed) {
        const page = await call('GET', `${this.base}/records?after=${after}&limit=${Math.min(TIMELINE_RECORDS, cursor - after)}`);
        for (const record of page.records) added = this.runLog.add(record) || added;
        const last = page.records.at(-1)?.seq;
        if (typeof last !== 'number' || page.next === null) break;
        after = last;
      }
      this.recordsRead = Math.max(this.recordsRead, cursor);
    } catch {
      return;  // the timeline shows what the stream brings; the next snapshot reads again
    }
    if (added) this.drawRuns(true);
  }

  /**
   * Reads the log's records after the newest held. The stream brings a
   * record no event announces (generation_started: a model request begins)
   * only with the next one that has an event — for a slow answer, when the
   * answer ends — so the open timeline of a running run asks the log.
   */
  async readNewer() {
    if (this.readingNewer || this.closed) return;
    this.readingNewer = true;
    try {
      const page = await call('GET', `${this.base}/records?after=${this.runLog.newest}&limit=${TIMELINE_RECORDS}`);
      let added = false;
      let calls = false;
      for (const record of page.records) {
        if (!this.runLog.add(record)) continue;
        added = true;
        calls ||= record.type === 'tool_started';
      }
      if (added) this.drawRuns(calls);
    } catch {
      // The stream brings them later.
    } finally {
      this.readingNewer = false;
    }
  }

  /** Redraws the timeline (once a frame at most) and, when calls started, their sandbox badges. @param {boolean} calls */
  drawRuns(calls) {
    if (calls) this.transcript.setSandboxes(this.runLog.sandboxes());
    if (this.timelineFrame) return;
    this.timelineFrame = requestAnimationFrame(() => {
      this.timelineFrame = 0;
      this.timeline.update(this.runLog.runs());
    });
  }

  scheduleRefresh() {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = window.setTimeout(() => void this.refresh(), 50);
  }

  scheduleTree() {
    clearTimeout(this.treeTimer);
    this.treeTimer = window.setTimeout(() => void this.loadTree(), 300);
  }

  /** @param {string | null} text @param {string} [kind] */
  say(text, kind = 'error') {
    this.notice.hidden = !text;
    this.notice.textContent = text ?? '';
    this.notice.dataset.kind = kind;
  }

  /** Runs an action, saying its error. @param {() => Promise<any>} action */
  async act(action) {
    try {
      const result = await action();
      this.say(null);
      return result;
    } catch (error) {
      this.say(error instanceof ApiError ? `${error.message} (${error.code})` : String(error));
      return null;
    } finally {
      this.scheduleRefresh();
    }
  }

  // ---- the ref's state -------------------------------------------------------------

  async refresh() {
    if (this.closed) return;
    const epoch = this.epoch;
    let info;
    try {
      info = await call('GET', this.base);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'locked') {
        this.status = 'held elsewhere';
        this.say(`${error.message}: this page follows its records; acting on it is for the process that holds it.`, 'info');
        this.drawState(null);
      } else if (error instanceof ApiError && error.code === 'network') {
        // The server is away (restarting): look again in a moment.
        clearTimeout(this.refreshTimer);
        this.refreshTimer = window.setTimeout(() => void this.refresh(), 2000);
      }
      return;
    }
    this.title.textContent = info.name ?? this.id;
    this.sessionCost = Number(info.activity?.cost ?? 0);
    this.refs.replaceChildren(...info.refs.map((/** @type {any} */ ref) => {
      const link = h('a', { href: `#/s/${seg(this.id)}/${seg(ref.name)}`, title: `${ref.name} · ${statusText(ref.status)}` }, `${ref.name} · ${statusText(ref.status)}`);
      if (ref.name === this.ref) link.setAttribute('aria-current', 'page');
      return link;
    }));
    const mine = info.refs.find((/** @type {any} */ ref) => ref.name === this.ref);
    // A run that started or ended while this look was on its way: its
    // event is newer than the answer, which is looked at again.
    if (epoch !== this.epoch) {
      this.scheduleRefresh();
      return;
    }
    this.status = info.faulted ? 'faulted' : mine?.status ?? 'unknown';
    this.drawState(mine ?? null);
    // The events say when a run starts and ends, but the ref's status can
    // change a moment after its last event: look again while it is busy.
    if (this.status === 'running' || this.status === 'cancelling') {
      clearTimeout(this.refreshTimer);
      this.refreshTimer = window.setTimeout(() => void this.refresh(), 1500);
    }
    const inputs = mine?.run?.awaitingInput ?? [];
    if (this.status === 'awaiting_input' && !inputs.length) {
      const listed = await call('GET', `${this.refBase}/inputs`).catch(() => ({ inputs: [] }));
      this.drawInputs(listed.inputs);
    } else {
      this.drawInputs(inputs);
    }
    // The subagents list changes only with a run: asked for when the page
    // opens, when the ref's status changes, and otherwise every 15 s (not at
    // each look while a run goes).
    const now = Date.now();
    if (this.status === this.childrenStatus && now - this.childrenAt < 15000) return;
    this.childrenStatus = this.status;
    this.childrenAt = now;
    const children = await call('GET', `/v1/sessions?parent=${seg(this.id)}`).catch(() => ({ sessions: [] }));
    const parent = info.session.parentSession;
    this.children.replaceChildren(
      ...(parent ? [h('p', {}, info.session.child ? 'Subagent of ' : 'Forked from ', h('a', { href: `#/s/${seg(parent)}/main` }, parent))] : []),
      ...(children.sessions.length ? [h('h2', {}, 'Subagents'), h('ul', {}, ...children.sessions.map((/** @type {any} */ child) =>
        h('li', {}, h('a', { href: `#/s/${seg(child.id)}/main` }, child.child?.agent ? `${child.child.agent}: ${child.id}` : child.id))))] : []));
  }

  /** @param {any} ref */
  drawState(ref) {
    this.composer.dataset.status = this.status;
    const running = this.status === 'running' || this.status === 'cancelling';
    this.sendButton.textContent = running ? 'Steer' : 'Send';
    this.followButton.hidden = !running;
    this.abortButton.hidden = !(running || this.status === 'awaiting_input');
    this.operation.replaceChildren();
    if (this.status === 'suspended' && ref) {
      const resume = h('button', { type: 'button' }, 'Resume');
      const abort = h('button', { type: 'button' }, 'Abort it');
      resume.addEventListener('click', () => void this.act(() => call('POST', `${this.refBase}/resume`)));
      abort.addEventListener('click', () => void this.act(() => call('POST', `${this.refBase}/abort`)));
      this.operation.append(h('div', { class: 'banner', role: 'region', 'aria-label': 'Suspended run' },
        h('p', {}, 'This run stopped mid-way (the server stopped while it ran). Its log says where it was: resume it, or abort it.'),
        h('div', { class: 'buttons' }, resume, abort)));
    }
    this.drawSpend();
  }

  drawSpend() {
    const last = this.transcript.lastUsage();
    const parts = [`${this.ref}: ${statusText(this.status)}`];
    if (this.model) parts.push(this.model);
    if (this.thinking) parts.push(`thinking ${this.thinking}`);
    if (last) parts.push(`${last.totalTokens ?? 0} tokens`);
    parts.push(`session $${this.sessionCost.toFixed(4)}`);
    if (this.context && typeof this.context.percent === 'number') parts.push(`context ${this.context.percent.toFixed(1)}%`);
    this.statusLine.textContent = parts.join(' · ');
  }

  // ---- approvals and questions -----------------------------------------------------

  /** @param {any[]} inputs */
  drawInputs(inputs) {
    this.inputs.replaceChildren(...inputs.map((input) => this.inputCard(input)));
  }

  /** @param {any} input */
  inputCard(input) {
    const answer = (/** @type {object} */ body) =>
      void this.act(() => call('POST', `${this.refBase}/inputs/${seg(input.id)}`, { ...body, by: 'web' }));
    if (input.kind === 'question') {
      const field = h('input', { type: 'text', 'aria-label': 'Your answer' });
      const send = h('button', { type: 'button' }, 'Answer');
      const decline = h('button', { type: 'button' }, 'Decline');
      send.addEventListener('click', () => answer({ decision: 'answer', answer: /** @type {HTMLInputElement} */ (field).value }));
      decline.addEventListener('click', () => answer({ decision: 'deny' }));
      const choices = (input.choices ?? []).map((/** @type {string} */ choice) => {
        const button = h('button', { type: 'button' }, choice);
        button.addEventListener('click', () => answer({ decision: 'answer', answer: choice }));
        return button;
      });
      return h('div', { class: 'input-card', role: 'region', 'aria-label': 'A question' },
        h('p', {}, h('strong', {}, 'The agent asks: '), String(input.question ?? '')), ...choices, field, send, decline);
    }
    const args = h('textarea', { 'aria-label': 'The call\'s arguments (JSON)', rows: '4', spellcheck: 'false' });
    /** @type {HTMLTextAreaElement} */ (args).value = JSON.stringify(input.arguments ?? {}, null, 2);
    const allow = h('button', { type: 'button', class: 'primary' }, 'Allow');
    const always = h('button', { type: 'button' }, 'Always allow');
    const deny = h('button', { type: 'button' }, 'Deny');
    const reason = h('input', { type: 'text', 'aria-label': 'Why not (optional)', placeholder: 'why not (optional)' });
    const edited = () => {
      const text = /** @type {HTMLTextAreaElement} */ (args).value;
      if (text === JSON.stringify(input.arguments ?? {}, null, 2)) return undefined;
      return JSON.parse(text);
    };
    const allowWith = (/** @type {boolean} */ remember) => {
      let changed;
      try {
        changed = edited();
      } catch {
        this.say('The arguments are not valid JSON.');
        return;
      }
      answer({ decision: 'allow', ...(changed ? { arguments: changed } : {}), ...(remember ? { remember: true } : {}) });
    };
    allow.addEventListener('click', () => allowWith(false));
    always.addEventListener('click', () => allowWith(true));
    deny.addEventListener('click', () => {
      const why = /** @type {HTMLInputElement} */ (reason).value;
      answer({ decision: 'deny', ...(why ? { reason: why } : {}) });
    });
    // An edit or a write is shown as the diff it would make, above its arguments.
    const diff = callDiff(String(input.toolName), input.arguments ?? {});
    return h('div', { class: 'input-card', role: 'region', 'aria-label': `Approval for ${input.toolName}` },
      h('p', {}, h('strong', {}, `${input.toolName}`), ' wants to run. Edit the arguments to change what it runs. ',
        sandboxBadge(input.sandbox, true) ?? ''),
      diff, args, h('div', { class: 'buttons' }, allow, always, deny, reason));
  }

  // ---- the composer and settings ---------------------------------------------------

  makeComposer() {
    const text = this.messageBox;
    this.followButton.hidden = true;
    this.abortButton.hidden = true;
    const form = /** @type {HTMLFormElement} */ (h('form', { class: 'composer', 'aria-label': 'Send a message' }, text,
      h('div', { class: 'buttons' }, this.sendButton, this.followButton, this.abortButton)));
    // Both go through the prompt route, which starts a run on an idle ref
    // and queues the message on a running one, in one request: the page's
    // idea of the ref's state can be a moment old.
    const send = async (/** @type {'steer' | 'followUp'} */ whileRunning) => {
      const message = text.value.trim();
      if (!message) return;
      const done = await this.act(() => call('POST', `${this.refBase}/prompt`, { text: message, whileRunning }));
      if (done) text.value = '';
    };
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void send('steer');
    });
    text.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    this.followButton.addEventListener('click', () => void send('followUp'));
    this.abortButton.addEventListener('click', () => void this.act(() => call('POST', `${this.refBase}/abort`)));
    return form;
  }

  makeSettings() {
    for (const level of ['off', 'minimal', 'low', 'medium', 'high', 'xhigh']) this.thinkingSelect.append(h('option', { value: level }, level));
    const apply = h('button', { type: 'button' }, 'Apply');
    apply.addEventListener('click', () => void this.act(async () => {
      const config = await call('PATCH', `${this.refBase}/config`, { model: this.modelSelect.value, thinkingLevel: this.thinkingSelect.value });
      this.drawConfig(config);
    }));
    return h('details', { class: 'settings' }, h('summary', {}, 'Model and thinking'),
      h('label', {}, 'Model ', this.modelSelect), h('label', {}, 'Thinking ', this.thinkingSelect), apply);
  }

  async loadSettings() {
    try {
      const [models, config] = await Promise.all([call('GET', '/v1/models'), call('GET', `${this.refBase}/config`)]);
      this.modelSelect.replaceChildren(...models.models.filter((/** @type {any} */ m) => m.available).map((/** @type {any} */ m) => h('option', { value: m.id }, m.id)));
      this.drawConfig(config);
    } catch {
      // A session held elsewhere has no settings to change here.
    }
  }

  /** @param {any} config */
  drawConfig(config) {
    this.model = `${config.model.provider}/${config.model.id}`;
    this.thinking = config.thinkingLevel;
    this.modelSelect.value = this.model;
    this.thinkingSelect.value = config.thinkingLevel;
    this.drawSpend();
  }

  // ---- the tree ----------------------------------------------------------------------

  async loadTree() {
    const first = !this.tree;
    try {
      this.tree = await call('GET', `${this.base}/tree`);
    } catch {
      return;
    }
    this.drawTreeNow();
    // Opened: the tree shows where this ref is.
    const leaf = this.tree.refs.find((/** @type {any} */ ref) => ref.name === this.ref)?.leafId;
    if (first && leaf) this.treeBox.querySelector(`li[data-entry="${CSS.escape(leaf)}"]`)?.scrollIntoView({ block: 'nearest' });
  }

  drawTreeNow() {
    drawTree(this.treeBox, this.tree, this.selected?.id ?? null, (entry) => {
      this.selected = entry;
      this.drawTreeNow();
      this.drawEntryActions();
      const row = /** @type {HTMLElement | null} */ (this.treeBox.querySelector(`li[data-entry="${CSS.escape(entry.id)}"] button`));
      row?.focus();
    });
  }

  drawEntryActions() {
    const entry = this.selected;
    if (!entry) {
      this.entryActions.replaceChildren();
      return;
    }
    const summarize = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox' }));
    const go = h('button', { type: 'button' }, 'Go here');
    const fork = h('button', { type: 'button' }, 'Fork from here');
    const label = /** @type {HTMLInputElement} */ (h('input', { type: 'text', 'aria-label': 'Label', placeholder: 'label' }));
    label.value = entry.label ?? '';
    const setLabel = h('button', { type: 'button' }, 'Set label');
    go.addEventListener('click', () => void this.act(async () => {
      const moved = await call('POST', `${this.refBase}/navigate`, { targetId: entry.id, ...(summarize.checked ? { summarize: true } : {}) });
      // Back to a prompt: its text is offered again, to edit and resend.
      if (typeof moved?.editorText === 'string') this.messageBox.value = moved.editorText;
      this.restart();
      await this.loadTree();
    }));
    fork.addEventListener('click', () => void this.act(async () => {
      const made = await call('POST', `${this.base}/fork`, { ref: this.ref, entryId: entry.id });
      location.hash = `#/s/${seg(made.session.id)}/main`;
    }));
    setLabel.addEventListener('click', () => void this.act(async () => {
      await call('POST', `${this.refBase}/label`, { entryId: entry.id, label: label.value || null });
      await this.loadTree();
    }));
    this.entryActions.replaceChildren(h('div', { class: 'entry-box', role: 'region', 'aria-label': 'The chosen entry' },
      h('p', {}, h('strong', {}, 'Chosen: '), entry.preview ?? entry.type),
      h('label', {}, summarize, ' summarise the branch left behind'), go, fork,
      h('div', { class: 'buttons' }, label, setLabel)));
  }
}
