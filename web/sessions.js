// The sessions of the store, newest first, with each one's state, kept up
// to date while the list is on screen.

import { ApiError, call, seg } from './api.js';
import { h, statusText } from './render.js';

const POLL_MS = 3000;
const PAGE = 50;

/** @param {HTMLElement} main @returns {() => void} closes the view */
export function openSessions(main) {
  const search = /** @type {HTMLInputElement} */ (h('input', { type: 'search', 'aria-label': 'Search sessions', placeholder: 'Search id, name, directory' }));
  const filter = /** @type {HTMLSelectElement} */ (h('select', { 'aria-label': 'Show' }));
  for (const [value, text] of [['', 'every state'], ['running', 'running'], ['suspended', 'suspended'],
    ['awaiting_input', 'awaiting input'], ['faulted', 'faulted'], ['idle', 'idle']]) {
    filter.append(h('option', { value }, text));
  }
  const create = h('button', { type: 'button' }, 'New session');
  const body = h('tbody');
  const table = h('table', { class: 'sessions' },
    h('caption', {}, 'Sessions, newest first'),
    h('thead', {}, h('tr', {}, ...['Session', 'State', 'Directory', 'Model', 'Spend', 'Last activity'].map((name) => h('th', { scope: 'col' }, name)))),
    body);
  const error = h('p', { class: 'notice', role: 'alert' });
  error.hidden = true;
  const more = h('button', { type: 'button', class: 'more' }, 'More');
  more.hidden = true;
  main.replaceChildren(h('section', { class: 'list', 'aria-labelledby': 'sessions-title' },
    h('h1', { id: 'sessions-title' }, 'Sessions'),
    h('div', { class: 'toolbar' }, search, filter, create), error, table, more));

  /** @type {any[]} */
  let headers = [];
  /** @type {string | null} */
  let next = null;
  let closed = false;
  let timer = 0;

  // The list's summary of a session: live for the sessions the server has
  // open, from the log for the others (which looking does not open).
  const state = (/** @type {any} */ summary) => {
    if (!summary) return 'loading';
    if (summary.error) return summary.error.code === 'locked' ? 'held elsewhere' : 'unreadable';
    return String(summary.status);
  };

  const draw = () => {
    const needle = search.value.trim().toLowerCase();
    const rows = [];
    for (const header of headers) {
      const info = header.summary;
      const status = state(info);
      if (filter.value && status !== filter.value && !(filter.value === 'running' && status === 'cancelling')) continue;
      const name = info?.name ?? '';
      if (needle && ![header.id, name, header.cwd].some((text) => String(text).toLowerCase().includes(needle))) continue;
      const model = info?.model ? `${info.model.provider}/${info.model.id}` : '';
      const activity = info?.activity;
      // Each cell names its column (shown where the table is a list of
      // cards, on a narrow screen), and long text keeps its whole self in a title.
      const cell = (/** @type {string} */ column, /** @type {Node | string} */ content, /** @type {string} */ full = '') =>
        h('td', full ? { 'data-label': column, title: full } : { 'data-label': column }, content);
      rows.push(h('tr', {},
        h('th', { scope: 'row', 'data-label': 'Session' }, h('a', { href: `#/s/${seg(header.id)}/main`, title: name ? `${name} (${header.id})` : header.id }, name || header.id),
          name ? h('span', { class: 'muted id' }, ` ${header.id}`) : null),
        cell('State', h('span', info?.open === false && status !== 'idle'
          ? { class: `badge ${status.replace(' ', '-')}`, title: 'as its log says: this server does not have it open' }
          : { class: `badge ${status.replace(' ', '-')}` }, statusText(status))),
        cell('Directory', String(header.cwd), String(header.cwd)),
        cell('Model', model, model),
        cell('Spend', activity ? `$${Number(activity.cost).toFixed(4)}` : ''),
        cell('Last activity', activity?.updatedAt ? new Date(activity.updatedAt).toLocaleString() : new Date(header.timestamp).toLocaleString())));
    }
    body.replaceChildren(...rows);
    if (!rows.length) body.append(h('tr', {}, h('td', { colspan: '6' }, headers.length ? 'No session matches.' : 'No sessions yet.')));
    more.hidden = !next;
  };

  const load = async (/** @type {boolean} */ again) => {
    try {
      const count = again ? Math.max(PAGE, headers.length) : PAGE;
      const page = await call('GET', `/v1/sessions?limit=${count}`);
      headers = page.sessions;
      next = page.next;
      error.hidden = true;
    } catch (e) {
      error.hidden = false;
      error.textContent = e instanceof ApiError ? e.message : String(e);
    }
    if (closed) return;
    draw();
    timer = window.setTimeout(() => void load(true), POLL_MS);
  };

  search.addEventListener('input', draw);
  filter.addEventListener('change', draw);
  more.addEventListener('click', async () => {
    if (!next) return;
    const page = await call('GET', `/v1/sessions?limit=${PAGE}&after=${seg(next)}`);
    headers = headers.concat(page.sessions);
    next = page.next;
    draw();
  });
  create.addEventListener('click', async () => {
    try {
      const made = await call('POST', '/v1/sessions', {});
      location.hash = `#/s/${seg(made.session.id)}/main`;
    } catch (e) {
      error.hidden = false;
      error.textContent = e instanceof ApiError ? e.message : String(e);
    }
  });
  void load(false);
  return () => {
    closed = true;
    clearTimeout(timer);
  };
}
