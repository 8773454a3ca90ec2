// @ts-check
// Navigation between screens: shows the screen of the URL, and the session's way in and out
// (enter after sign-in or unlock, sign out). The table of screens is handed in by app.js, so
// that screens can navigate without importing the module that loads them.
import * as api from './api.js';
import { forgetKey, recallKey } from './crypto.js';
import { state } from './state.js';
import { startSync, stopSync } from './sync.js';
import { errorBox } from './ui/notice.js';
import { h, replace } from './ui/dom.js';

/**
 * @typedef {(main: HTMLElement, params: any) => (void | (() => void) | Promise<void | (() => void)>)} Screen
 * @typedef {[RegExp, () => Promise<{render: Screen}>, boolean]} Route [pattern, loader, needs an unlocked key]
 */

/** @type {Route[]} */
let routes = [];

/** Sets the table of screens (once, from app.js). @param {Route[]} table */
export function setRoutes(table) {
  routes = table;
}

const main = /** @type {HTMLElement} */ (document.getElementById('main'));
/** @type {(() => void) | void} */
let cleanup;
let generation = 0;

/** Goes to `path` (pushes history unless `replaceState`). @param {string} path @param {boolean} [replaceState] */
export function navigate(path, replaceState = false) {
  if (replaceState) history.replaceState(null, '', path);
  else if (location.pathname + location.search !== path) history.pushState(null, '', path);
  show();
}

/** Shows the screen of the current URL. */
export async function show() {
  const gen = ++generation;
  if (typeof cleanup === 'function') cleanup();
  cleanup = undefined;
  const path = location.pathname;
  if (!state.user && path !== '/signin') return navigate('/signin', true);
  if (state.user && !state.keys && path !== '/keys' && path !== '/signin') return navigate('/keys', true);
  const match = routes.find(([re]) => re.test(path));
  markNav(path);
  if (!match) {
    replace(
      main,
      h('h1', null, 'Not found'),
      h('p', null, 'There is no page here. ', h('a', { href: '/inbox' }, 'Go to the inbox')),
    );
    return;
  }
  const params = Object.fromEntries(
    Object.entries(match[0].exec(path)?.groups || {}).map(([k, v]) => [k, decodeURIComponent(v)]),
  );
  try {
    const mod = await match[1]();
    if (gen !== generation) return;
    main.replaceChildren();
    const done = await mod.render(main, params);
    // Left meanwhile: the screen's cleanup runs now (a conversation's blob: URLs, listeners).
    if (gen !== generation) {
      if (typeof done === 'function') done();
    } else cleanup = done;
  } catch (e) {
    if (gen === generation) replace(main, h('h1', null, 'Something went wrong'), errorBox(e));
  }
}

/** @param {string} path */
function markNav(path) {
  const top = /** @type {HTMLElement} */ (document.getElementById('top'));
  top.hidden = !state.user || !state.keys;
  for (const a of top.querySelectorAll('nav a')) {
    const href = a.getAttribute('href') || '';
    if (
      path.startsWith(href) ||
      (href === '/inbox' && (path === '/' || path.startsWith('/rooms') || path.startsWith('/mail')))
    )
      a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const admin = /** @type {HTMLElement} */ (document.getElementById('nav-admin'));
  admin.hidden = !state.user?.isAdmin;
}

/** After sign-in, switch or unlock: load the profile and the key, then go on. @param {string} [to] */
export async function enter(to) {
  state.user = await api.get('/api/auth/me');
  if (!state.keys) state.keys = await recallKey(/** @type {any} */ (state.user).id);
  if (state.keys) startSync();
  navigate(to || (state.keys ? '/inbox' : '/keys'), true);
}

/** Signs out: ends the session on the server and forgets this browser's copy of the key. */
export async function signOut() {
  try {
    await api.post('/api/auth/logout');
  } catch {
    /* signed out here anyway */
  }
  if (state.user) await forgetKey(state.user.id);
  signedOut();
}

/** Forgets the session in this tab and shows sign-in. */
export function signedOut() {
  stopSync();
  api.clearSession();
  state.user = null;
  state.keys = null;
  state.meta.clear();
  navigate('/signin', true);
}
