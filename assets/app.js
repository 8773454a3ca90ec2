// @ts-check
// Entry and router: restores the session from the refresh cookie, makes sure the key is
// unlocked, then shows the screen of the URL. Screens are modules with `render(main, params)`
// returning an optional cleanup; links are intercepted by one delegated listener.
import * as api from './api.js';
import { forgetKey, recallKey } from './crypto.js';
import { state, on } from './state.js';
import { startSync, stopSync } from './sync.js';
import { errorBox, toast } from './ui/notice.js';
import { h, replace } from './ui/dom.js';
import { initPwa } from './pwa.js';

/**
 * @typedef {(main: HTMLElement, params: any) => (void | (() => void) | Promise<void | (() => void)>)} Screen
 */

/** [pattern, loader, needs an unlocked key] */
/** @type {[RegExp, () => Promise<{render: Screen}>, boolean][]} */
const routes = [
  [/^\/signin$/, () => import('./screens/signin.js'), false],
  [/^\/keys$/, () => import('./screens/keys.js'), false],
  [/^\/(?:inbox)?$/, () => import('./screens/inbox.js'), true],
  [/^\/rooms\/(?<roomId>[^/]+)$/, () => import('./screens/conversation.js'), true],
  [/^\/mail\/compose$/, () => import('./screens/compose.js'), true],
  [/^\/mail\/drafts$/, () => import('./screens/drafts.js'), true],
  [/^\/mail\/(?<threadId>[^/]+)$/, () => import('./screens/mail.js'), true],
  [/^\/search$/, () => import('./screens/search.js'), true],
  [/^\/new$/, () => import('./screens/newchat.js'), true],
  [/^\/bridges$/, () => import('./screens/bridges.js'), true],
  [/^\/settings$/, () => import('./screens/settings.js'), true],
  [/^\/admin$/, () => import('./screens/admin.js'), true],
];

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

async function show() {
  const gen = ++generation;
  if (typeof cleanup === 'function') cleanup();
  cleanup = undefined;
  const path = location.pathname;
  if (!state.user && path !== '/signin') return navigate('/signin', true);
  if (state.user && !state.keys && path !== '/keys' && path !== '/signin') return navigate('/keys', true);
  const match = routes.find(([re]) => re.test(path));
  markNav(path);
  if (!match) {
    replace(main, h('h1', null, 'Not found'), h('p', null, 'There is no page here. ', h('a', { href: '/inbox' }, 'Go to the inbox')));
    return;
  }
  const params = Object.fromEntries(
    Object.entries(match[0].exec(path)?.groups || {}).map(([k, v]) => [k, decodeURIComponent(v)]),
  );
  try {
    const mod = await match[1]();
    if (gen !== generation) return;
    main.replaceChildren();
    cleanup = await mod.render(main, params);
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
    if (path.startsWith(href) || (href === '/inbox' && (path === '/' || path.startsWith('/rooms') || path.startsWith('/mail')))) a.setAttribute('aria-current', 'page');
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

function wire() {
  document.addEventListener('click', (ev) => {
    const a = /** @type {HTMLElement} */ (ev.target).closest?.('a[href]');
    if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
    const href = a.getAttribute('href') || '';
    if (!href.startsWith('/') || href.startsWith('//') || a.hasAttribute('download') || a.getAttribute('target')) return;
    ev.preventDefault();
    navigate(href);
  });
  window.addEventListener('popstate', () => show());
  api.onSessionLost(signedOut);
  initPwa(navigate);
  const live = /** @type {HTMLElement} */ (document.getElementById('live'));
  on('sync', (/** @type {any} */ data) => {
    if (data?.type === 'verification.updated' && data.state === 'requested' && location.pathname !== '/settings') {
      toast('Another of your Matrix devices wants to verify Switchboard: see Settings → Device verification.');
    }
  });
  on('live', (up) => {
    live.textContent = up ? 'Live' : 'Reconnecting…';
    live.className = up ? 'live up' : 'live';
  });
}

async function boot() {
  wire();
  const back = location.pathname + location.search;
  if (api.mayHaveSession() && (await api.refresh())) {
    try {
      const to = back === '/signin' || back === '/keys' ? undefined : back;
      await enter(to);
      return;
    } catch (e) {
      replace(main, errorBox(e));
      return;
    }
  }
  navigate('/signin', true);
}

boot();
