// @ts-check
// The installable app: registers the service worker (/sw.js), shows the offline notice, opens
// the chat a clicked notification names, and turns Web Push on or off for this browser.
import * as api from './api.js';

/**
 * @param {(path: string) => void} navigate the router, for notification clicks
 */
export function initPwa(navigate) {
  const notice = document.getElementById('offline');
  // Offline: the browser says so, or the service worker (which answers the app when the
  // network does not) cannot reach the server.
  const update = async () => {
    let offline = !navigator.onLine;
    if (!offline && navigator.serviceWorker?.controller) {
      try {
        offline = (await (await fetch('/sw-online', { cache: 'no-store' })).text()) === 'offline';
      } catch {
        offline = true;
      }
    }
    if (notice) notice.hidden = !offline;
  };
  window.addEventListener('online', update);
  window.addEventListener('offline', update);
  update();
  if (!('serviceWorker' in navigator)) return;
  navigator.serviceWorker.addEventListener('controllerchange', update);
  navigator.serviceWorker.register('/sw.js', { scope: '/' }).catch(() => {
    /* the app works without it (no offline shell, no notifications) */
  });
  navigator.serviceWorker.addEventListener('message', (ev) => {
    const path = ev.data?.type === 'open' && typeof ev.data.path === 'string' ? ev.data.path : '';
    if (path.startsWith('/') && !path.startsWith('//')) navigate(path);
  });
}

/** Whether this browser can receive Web Push at all. */
export function pushSupported() {
  return 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
}

/** This browser's current subscription, if any. */
export async function currentSubscription() {
  if (!pushSupported()) return null;
  const reg = await navigator.serviceWorker.getRegistration('/');
  return reg ? reg.pushManager.getSubscription() : null;
}

/** @param {string} b64 base64url @returns {Uint8Array} */
function fromB64url(b64) {
  const s = atob(b64.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

/**
 * Asks for permission, subscribes with the server's VAPID key and registers the subscription.
 * Throws an Error with words when the browser or the user says no.
 */
export async function enablePush() {
  if (!pushSupported()) throw new Error('This browser cannot receive notifications.');
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') throw new Error('Notifications are blocked for this site in the browser settings.');
  const reg = await navigator.serviceWorker.ready;
  /** @type {Schemas['VapidKeyView']} */
  const { publicKey } = await api.get('/api/push/vapid');
  let sub = await reg.pushManager.getSubscription();
  if (!sub) {
    sub = await reg.pushManager.subscribe({
      userVisibleOnly: true,
      applicationServerKey: /** @type {BufferSource} */ (fromB64url(publicKey)),
    });
  }
  const json = sub.toJSON();
  await api.post('/api/push/subscriptions', { endpoint: json.endpoint, keys: json.keys });
}

/** Unsubscribes this browser and removes its registration (`id`) from the server. @param {string | null} id */
export async function disablePush(id) {
  const sub = await currentSubscription();
  if (sub) await sub.unsubscribe();
  if (id) await api.del(`/api/push/subscriptions/${api.seg(id)}`);
}
