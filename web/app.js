// The viewer's entry: asks once for the token (kept for this browser tab),
// then shows the view the address names: #/ the sessions, #/s/ID/REF one
// session's ref.

import { ApiError, call, setToken, token } from './api.js';
import { h } from './render.js';
import { openSession } from './session.js';
import { openSessions } from './sessions.js';

const main = /** @type {HTMLElement} */ (document.getElementById('main'));
const crumbs = /** @type {HTMLElement} */ (document.getElementById('crumbs'));
const connection = /** @type {HTMLElement} */ (document.getElementById('connection'));
const signOut = /** @type {HTMLButtonElement} */ (document.getElementById('sign-out'));

/** @type {(() => void) | null} */
let closeView = null;

function askForToken(/** @type {string} */ why = '') {
  closeView?.();
  closeView = null;
  signOut.hidden = true;
  const field = /** @type {HTMLInputElement} */ (h('input', { id: 'token', type: 'password', autocomplete: 'off', required: '' }));
  const problem = h('p', { class: 'notice', role: 'alert' }, why);
  problem.hidden = !why;
  const form = h('form', { class: 'token-form', 'aria-labelledby': 'token-title' },
    h('h1', { id: 'token-title' }, 'Sign in to this cairn server'),
    h('p', {}, 'Paste one of the server\'s bearer tokens (its --token-file). It is kept for this tab only and sent only in request headers.'),
    h('label', { for: 'token' }, 'Token'), field, problem, h('button', { type: 'submit', class: 'primary' }, 'Sign in'));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    setToken(field.value.trim());
    try {
      await call('GET', '/v1/models');
      route();
    } catch (error) {
      setToken(null);
      problem.hidden = false;
      problem.textContent = error instanceof ApiError && (error.status === 401 || error.status === 403)
        ? 'The server does not accept that token.' : `Cannot check the token: ${error instanceof Error ? error.message : String(error)}`;
      field.focus();
    }
  });
  main.replaceChildren(form);
  crumbs.replaceChildren();
  field.focus();
}

function route() {
  if (!token()) {
    askForToken();
    return;
  }
  closeView?.();
  connection.textContent = '';
  signOut.hidden = false;
  const match = /^#\/s\/([^/]+)\/([^/]+)$/.exec(location.hash);
  if (match) {
    const id = decodeURIComponent(match[1]);
    const ref = decodeURIComponent(match[2]);
    crumbs.replaceChildren(h('a', { href: '#/' }, 'Sessions'), ' / ', h('span', {}, id), ' / ', h('span', {}, ref));
    document.title = `${id} · cairn`;
    closeView = openSession(main, id, ref, (state) => (connection.textContent = state));
  } else {
    crumbs.replaceChildren(h('span', {}, 'Sessions'));
    document.title = 'Sessions · cairn';
    closeView = openSessions(main);
  }
  main.focus({ preventScroll: true });
}

signOut.addEventListener('click', () => {
  setToken(null);
  askForToken();
});
window.addEventListener('hashchange', route);
// An unhandled refusal of the token anywhere sends the person back to the form.
window.addEventListener('unhandledrejection', (event) => {
  if (event.reason instanceof ApiError && (event.reason.status === 401 || event.reason.status === 403)) {
    setToken(null);
    askForToken('The server no longer accepts the token.');
  }
});
route();
