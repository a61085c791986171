// A run's timeline: a waterfall of its steps (each model request, with its
// retries, each tool call, each wait for a person) as bars on a time axis
// drawn from the log's timestamps, coloured by kind and outcome; a bar's
// title gives its times, tokens and cost, and choosing it shows its entry in
// the transcript. Live: a running run's open bars grow until they end, and
// each second it asks (onLive) for the records the log holds by then.

import { h } from './dom.js';

/** @typedef {import('./runlog.js').Run} Run @typedef {import('./runlog.js').Step} Step */

/** @param {number} ms */
export function duration(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

/** @param {number} cost */
const dollars = (cost) => `$${cost.toFixed(4)}`;

const OUTCOMES = /** @type {Record<string, string>} */ ({
  ok: 'done', failed: 'failed', retried: 'failed, retried', aborted: 'aborted', interrupted: 'did not finish',
  denied: 'denied', running: 'running',
});

export class Timeline {
  /** @param {(step: Step) => void} onChoose a bar was chosen @param {() => void} onLive a second passed while a run shown runs */
  constructor(onChoose, onLive) {
    this.onChoose = onChoose;
    this.onLive = onLive;
    /** @type {Run[]} */
    this.runs = [];
    /** the run shown; null: the newest */
    this.chosen = /** @type {string | null} */ (null);
    this.select = /** @type {HTMLSelectElement} */ (h('select', { 'aria-label': 'Run' }));
    this.select.addEventListener('change', () => {
      const newest = this.runs.at(-1);
      this.chosen = this.select.value === newest?.id ? null : this.select.value;
      this.draw();
    });
    this.total = h('p', { class: 'timeline-total' });
    this.chart = h('div', { class: 'timeline-chart' });
    this.summary = h('summary', {}, 'Timeline');
    this.node = /** @type {HTMLDetailsElement} */ (h('details', { class: 'timeline' }, this.summary,
      h('div', { class: 'timeline-head' }, h('label', {}, 'Run ', this.select), this.total), this.chart,
      h('p', { class: 'timeline-legend muted' }, h('span', { class: 'key model' }, 'model request'), ' ', h('span', { class: 'key tool' }, 'tool call'), ' ',
        h('span', { class: 'key wait' }, 'waiting for you'), ' ', h('span', { class: 'key failed' }, 'failed'), ' ', h('span', { class: 'key running' }, 'running'))));
    this.node.addEventListener('toggle', () => this.draw());
    this.timer = 0;
  }

  /** @param {Run[]} runs */
  update(runs) {
    this.runs = runs;
    this.draw();
  }

  close() {
    clearInterval(this.timer);
  }

  /** The run shown. */
  current() {
    return this.runs.find((run) => run.id === this.chosen) ?? this.runs.at(-1) ?? null;
  }

  draw() {
    const run = this.current();
    this.node.hidden = !run;
    if (!run) return;
    const runs = this.runs;
    this.select.replaceChildren(...runs.map((item, i) => {
      const steps = item.steps.filter((step) => step.kind === 'model').length;
      const option = h('option', { value: item.id },
        `${i + 1}. ${new Date(item.start).toLocaleTimeString()} · ${item.kind === 'run' ? '' : `${item.kind} · `}${steps} step${steps === 1 ? '' : 's'}${item.end === null ? ' · running' : ''}`);
      return option;
    }));
    this.select.value = run.id;
    const live = run.end === null;
    const end = live ? Math.max(Date.now(), ...run.steps.map((step) => step.end ?? step.start)) : run.end ?? run.start;
    const span = Math.max(1, end - run.start);
    const tokens = run.steps.reduce((sum, step) => sum + step.tokens, 0);
    const cost = run.steps.reduce((sum, step) => sum + step.cost, 0);
    const requests = run.steps.filter((step) => step.kind === 'model').length;
    const calls = run.steps.filter((step) => step.kind === 'tool').length;
    const total = `${requests} model request${requests === 1 ? '' : 's'}, ${calls} tool call${calls === 1 ? '' : 's'} · ${duration(span)} · ${tokens} tokens · ${dollars(cost)}${live ? ' · running' : run.outcome && run.outcome !== 'completed' ? ` · ${run.outcome}` : ''}`;
    this.total.textContent = total;
    this.summary.textContent = `Timeline · ${total}`;
    // Drawn only when open: a closed timeline costs nothing while a run streams.
    clearInterval(this.timer);
    if (!this.node.open) return;
    if (live) {
      this.timer = window.setInterval(() => {
        this.onLive();
        this.draw();
      }, 1000);
    }
    // The axis is laid out as a row, so that its ticks stand over the tracks.
    const ticks = h('span', { class: 'track axis-track' });
    for (const part of [0, 0.25, 0.5, 0.75, 1]) {
      const tick = h('span', { class: 'tick' }, duration(part * span));
      tick.style.left = `${part * 100}%`;
      ticks.append(tick);
    }
    const axis = h('div', { class: 'timeline-row timeline-axis', 'aria-hidden': 'true' }, h('span', { class: 'step-label' }), ticks);
    const list = h('ol', { class: 'timeline-rows', 'aria-label': 'Steps of the run' });
    for (const step of run.steps) list.append(this.row(step, run.start, span, live));
    this.chart.replaceChildren(axis, list);
  }

  /** @param {Step} step @param {number} origin @param {number} span @param {boolean} live */
  row(step, origin, span, live) {
    const stepEnd = step.end ?? (live ? Date.now() : origin + span);
    const from = step.start - origin;
    const to = Math.max(from, stepEnd - origin);
    const outcome = step.end === null ? (live ? 'running' : 'interrupted') : step.outcome;
    const words = [`${step.label}: ${OUTCOMES[outcome] ?? outcome}`, `from ${duration(from)} to ${duration(to)} (${duration(to - from)})`];
    if (step.kind === 'model' && step.end !== null) words.push(`${step.tokens} tokens, ${dollars(step.cost)}`);
    const bar = h('button', {
      type: 'button', class: `bar ${step.kind} ${outcome}`, title: words.join('\n'), 'aria-label': words.join(', '),
      'data-kind': step.kind, 'data-start-ms': String(from), 'data-end-ms': String(to), 'data-seq': String(step.seq),
    });
    // Positions through the CSSOM: the page's policy forbids style attributes, not this.
    bar.style.left = `${(from / span) * 100}%`;
    bar.style.width = `${((to - from) / span) * 100}%`;
    bar.addEventListener('click', () => this.onChoose(step));
    return h('li', { class: 'timeline-row' }, h('span', { class: 'step-label', title: step.label }, step.label), h('span', { class: 'track' }, bar));
  }
}
