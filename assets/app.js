// @ts-check
// Entry: the table of screens, the page-wide listeners, and the start that restores the
// session from the refresh cookie and makes sure the key is unlocked before the first screen.
// Screens are modules with `render(main, params)` returning an optional cleanup; links are
// intercepted by one delegated listener. Navigation itself lives in router.js.
import * as api from './api.js';
import { on } from './state.js';
import { errorBox, toast } from './ui/notice.js';
import { replace } from './ui/dom.js';
import { initPwa } from './pwa.js';
import { enter, navigate, setRoutes, show, signedOut } from './router.js';

/** @type {import('./router.js').Route[]} */
const routes = [
  [/^\/signin$/, () => import('./screens/signin.js'), false],
  [/^\/keys$/, () => import('./screens/keys.js'), false],
  [/^\/(?:inbox)?$/, () => import('./screens/inbox.js'), true],
  [/^\/rooms\/(?<roomId>[^/]+)$/, () => import('./screens/conversation.js'), true],
  [/^\/rooms\/(?<roomId>[^/]+)\/details$/, () => import('./screens/group_details.js'), true],
  [/^\/mail\/compose$/, () => import('./screens/compose.js'), true],
  [/^\/mail\/drafts$/, () => import('./screens/drafts.js'), true],
  [/^\/mail\/(?<threadId>[^/]+)$/, () => import('./screens/mail.js'), true],
  [/^\/search$/, () => import('./screens/search.js'), true],
  [/^\/new$/, () => import('./screens/newchat.js'), true],
  [/^\/groups\/new$/, () => import('./screens/group_new.js'), true],
  [/^\/bridges$/, () => import('./screens/bridges.js'), true],
  [/^\/settings$/, () => import('./screens/settings.js'), true],
  [/^\/admin$/, () => import('./screens/admin.js'), true],
];

function wire() {
  document.addEventListener('click', (ev) => {
    const a = /** @type {HTMLElement} */ (ev.target).closest?.('a[href]');
    if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
    const href = a.getAttribute('href') || '';
    if (!href.startsWith('/') || href.startsWith('//') || a.hasAttribute('download') || a.getAttribute('target'))
      return;
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
  setRoutes(routes);
  wire();
  const back = location.pathname + location.search;
  if (api.mayHaveSession() && (await api.refresh())) {
    try {
      const to = back === '/signin' || back === '/keys' ? undefined : back;
      await enter(to);
      return;
    } catch (e) {
      replace(/** @type {HTMLElement} */ (document.getElementById('main')), errorBox(e));
      return;
    }
  }
  navigate('/signin', true);
}

boot();
