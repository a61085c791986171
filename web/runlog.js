// A ref's runs as its log records them: each operation (operation_started …
// operation_finished) with its steps — every model request
// (generation_started until the assistant message it produced, or the next
// attempt when it failed and was retried), every tool call (tool_started
// until its result entry) and every wait for a person (input_requested until
// input_resolved) — with their times from the records' timestamps, and the
// sandbox each tool call ran under. Built afresh from the records held, in
// seq order, so records that arrive late or twice change nothing.

/**
 * @typedef {{kind: 'model' | 'tool' | 'wait', label: string, start: number, end: number | null,
 *   outcome: string, tokens: number, cost: number, entryId: string | null, callId: string | null, seq: number}} Step
 * @typedef {{id: string, kind: string, start: number, end: number | null, outcome: string | null,
 *   steps: Step[], seq: number}} Run
 * @typedef {{mode: string, network: boolean, networkGranted?: boolean}} Sandbox
 */

/** @param {any} record */
const timeOf = (record) => Date.parse(String(record.timestamp ?? ''));

export class RunLog {
  /** @param {string} ref */
  constructor(ref) {
    this.ref = ref;
    /** @type {Map<number, any>} the ref's records held, by seq */
    this.records = new Map();
    /** the newest seq held */
    this.newest = -1;
  }

  /** A record of the session: kept when it is this ref's. @param {any} record @returns {boolean} whether it was new */
  add(record) {
    if (!record || typeof record.seq !== 'number' || this.records.has(record.seq)) return false;
    if (record.ref !== this.ref) return false;
    this.records.set(record.seq, record);
    this.newest = Math.max(this.newest, record.seq);
    return true;
  }

  /** The sandbox of each tool call held (a tool_started without one: an older log). @returns {Map<string, Sandbox>} */
  sandboxes() {
    /** @type {Map<string, Sandbox>} */
    const out = new Map();
    for (const record of this.records.values()) {
      if (record.type === 'tool_started' && record.sandbox && typeof record.sandbox.mode === 'string') {
        out.set(String(record.toolCallId), { mode: record.sandbox.mode, network: Boolean(record.sandbox.network) });
      }
    }
    return out;
  }

  /** The runs held, oldest first. @returns {Run[]} */
  runs() {
    /** @type {Map<string, Run>} */
    const runs = new Map();
    /** @type {Run | null} the ref's open operation */
    let open = null;
    /** @type {Map<string, Step>} open tool steps by call id */
    const tools = new Map();
    /** @type {Map<string, Step>} open waits by request id */
    const waits = new Map();
    /** @type {Step | null} */
    let request = null;
    const close = (/** @type {Step | null} */ step, /** @type {number} */ at, /** @type {string} */ outcome) => {
      if (step && step.end === null) {
        step.end = at;
        step.outcome = outcome;
      }
    };
    for (const seq of [...this.records.keys()].sort((a, b) => a - b)) {
      const record = this.records.get(seq);
      const at = timeOf(record);
      if (Number.isNaN(at)) continue;
      const run = typeof record.runId === 'string' ? runs.get(record.runId) ?? null : open;
      /** @param {Omit<Step, 'start' | 'end' | 'outcome' | 'tokens' | 'cost' | 'seq'>} fields */
      const step = (fields) => {
        /** @type {Step} */
        const made = { ...fields, start: at, end: null, outcome: 'running', tokens: 0, cost: 0, seq };
        run?.steps.push(made);
        return made;
      };
      switch (record.type) {
        case 'operation_started':
          open = { id: String(record.id), kind: String(record.intent?.kind ?? 'run'), start: at, end: null, outcome: null, steps: [], seq };
          runs.set(open.id, open);
          request = null;
          break;
        case 'generation_started': {
          if (!run) break;
          // A request whose answer never came: this attempt replaces it.
          close(request, at, 'retried');
          const attempt = Number(record.attempt ?? 1);
          const model = record.model ? `${record.model.provider}/${record.model.modelId ?? record.model.id ?? ''}` : '';
          const label = `${record.purpose && record.purpose !== 'step' ? record.purpose : 'model'}${attempt > 1 ? ` · attempt ${attempt}` : ''}`;
          request = step({ kind: 'model', label: model ? `${label} (${model})` : label, entryId: null, callId: null });
          break;
        }
        case 'tool_started': {
          if (!run) break;
          const made = step({ kind: 'tool', label: String(record.toolName), entryId: String(record.assistantEntryId ?? '') || null, callId: String(record.toolCallId) });
          tools.set(String(record.toolCallId), made);
          break;
        }
        case 'input_requested': {
          if (!run) break;
          const label = record.kind === 'question' ? 'waiting for an answer' : `waiting for approval of ${record.toolName ?? 'a call'}`;
          waits.set(String(record.id), step({ kind: 'wait', label, entryId: String(record.assistantEntryId ?? '') || null, callId: record.toolCallId ? String(record.toolCallId) : null }));
          break;
        }
        case 'input_resolved':
          close(waits.get(String(record.requestId)) ?? null, at, record.decision === 'deny' ? 'denied' : 'ok');
          break;
        case 'message': {
          const message = record.message ?? {};
          if (message.role === 'assistant' && request && request.end === null) {
            const usage = message.usage ?? {};
            close(request, at, message.stopReason === 'error' ? 'failed' : message.stopReason === 'aborted' ? 'aborted' : 'ok');
            request.tokens = Number(usage.totalTokens ?? 0);
            request.cost = Number(usage.cost?.total ?? 0);
            request.entryId = String(record.id);
          } else if (message.role === 'toolResult') {
            close(tools.get(String(message.toolCallId)) ?? null, at, message.isError ? 'failed' : 'ok');
          }
          break;
        }
        case 'operation_finished':
          if (!run) break;
          run.end = at;
          run.outcome = String(record.outcome ?? 'completed');
          // What was still open when the operation ended did not finish.
          for (const item of run.steps) close(item, at, 'interrupted');
          if (open === run) open = null;
          break;
        default:
          break;
      }
    }
    return [...runs.values()].filter((run) => run.kind === 'run' || run.steps.length > 0);
  }
}
