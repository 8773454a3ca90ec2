// @ts-check
// The service worker (scope /): keeps the app shell so the app opens offline, and shows
// the pushes the server sends (Web Push). It never caches the API: `/api/*` and the other
// server paths always go to the network.
//
// The server fills in SHELL_VERSION (a hash of every app file) and SHELL_FILES (their
// paths) when it serves this file, so a new build installs a new cache and the old one is
// dropped on activate.
//
// tsc checks assets/ with the DOM library, which has no service worker scope: the few
// members used here are typed below.
/**
 * @typedef {{ waitUntil(p: Promise<any>): void }} ExtendableEvent
 * @typedef {ExtendableEvent & { request: Request, respondWith(r: Promise<Response>): void }} FetchEvent
 * @typedef {ExtendableEvent & { data: { json(): any } | null }} PushEvent
 * @typedef {ExtendableEvent & { notification: Notification }} NotificationEvent
 * @typedef {{ url: string, focus(): Promise<any>, postMessage(m: any): void }} WindowClient
 * @typedef {{
 *   location: Location,
 *   navigator: any,
 *   registration: ServiceWorkerRegistration,
 *   clients: { claim(): Promise<void>, matchAll(o: any): Promise<WindowClient[]>, openWindow(url: string): Promise<any>
 * },
 *   skipWaiting(): Promise<void>,
 *   addEventListener(type: string, fn: (event: any) => void): void,
 * }} WorkerScope
 */
const sw = /** @type {WorkerScope} */ (/** @type {unknown} */ (self));

const SHELL_VERSION = '__SHELL_VERSION__';
/** @type {string[]} */
const SHELL_FILES = JSON.parse('__SHELL_FILES__');
const CACHE = `switchboard-shell-${SHELL_VERSION}`;
/** Paths that are never the app shell (never cached). */
const SERVER_PATHS = ['/api/', '/health', '/openapi.yaml', '/mcp', '/metrics'];
/** Answered by this worker itself (see the fetch handler). */
const ONLINE_PROBE = '/sw-online';

sw.addEventListener('install', (/** @type {ExtendableEvent} */ event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(['/', ...SHELL_FILES.filter((f) => f !== '/sw.js')]))
      .then(() => sw.skipWaiting()),
  );
});

sw.addEventListener('activate', (/** @type {ExtendableEvent} */ event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) =>
        Promise.all(
          names.filter((n) => n.startsWith('switchboard-shell-') && n !== CACHE).map((n) => caches.delete(n)),
        ),
      )
      .then(() => sw.clients.claim()),
  );
});

sw.addEventListener('fetch', (/** @type {FetchEvent} */ event) => {
  const req = event.request;
  const url = new URL(req.url);
  if (req.method !== 'GET' || url.origin !== sw.location.origin) return;
  // The app asks here whether the server can be reached (a failed fetch of its own would be
  // an error in the page's console): any answer of /health means online.
  if (url.pathname === ONLINE_PROBE) {
    event.respondWith(
      fetch('/health', { cache: 'no-store' }).then(
        () => new Response('online'),
        () => new Response('offline'),
      ),
    );
    return;
  }
  if (SERVER_PATHS.some((p) => url.pathname === p || url.pathname.startsWith(p))) return;
  // Network first (a new build is seen at once), the shell when offline; client-side
  // routes (/inbox, /rooms/…) are the app's index page.
  const shellKey = req.mode === 'navigate' ? '/' : url.pathname;
  event.respondWith(
    fetch(req).catch(async () => {
      const hit = await caches.match(shellKey, { cacheName: CACHE });
      return hit || Response.error();
    }),
  );
});

/** @param {any} data */
function target(data) {
  if (data.type === 'email' && data.threadId) return `/mail/${encodeURIComponent(data.threadId)}`;
  if (data.roomId) return `/rooms/${encodeURIComponent(data.roomId)}`;
  return '/inbox';
}

sw.addEventListener('push', (/** @type {PushEvent} */ event) => {
  /** @type {any} */
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = {};
  }
  const title = typeof data.title === 'string' && data.title ? data.title : 'Switchboard';
  const body = typeof data.body === 'string' ? data.body : '';
  // One notification per chat (or mail thread): a newer one replaces it.
  const tag = data.roomId || data.threadId || 'switchboard';
  const shown = sw.registration.showNotification(title, {
    body,
    tag,
    icon: '/icons/icon-192.png',
    data: { url: target(data) },
  });
  const nav = /** @type {any} */ (sw.navigator);
  const unread = Number(data.unread);
  const badge =
    typeof nav.setAppBadge === 'function' && Number.isFinite(unread)
      ? (unread > 0 ? nav.setAppBadge(unread) : nav.clearAppBadge()).catch(() => {})
      : Promise.resolve();
  event.waitUntil(Promise.all([shown, badge]));
});

sw.addEventListener('notificationclick', (/** @type {NotificationEvent} */ event) => {
  event.notification.close();
  const url = new URL(event.notification.data?.url || '/inbox', sw.location.origin).href;
  event.waitUntil(
    sw.clients.matchAll({ type: 'window', includeUncontrolled: true }).then(async (list) => {
      for (const client of list) {
        if (new URL(client.url).origin === sw.location.origin) {
          // The open app moves to the chat itself (no reload, its session stays).
          await client.focus();
          client.postMessage({ type: 'open', path: new URL(url).pathname });
          return;
        }
      }
      await sw.clients.openWindow(url);
    }),
  );
});
