// @ts-check
// The one store: who is signed in, the unlocked key, room names opened in the browser, and a
// small event bus screens subscribe to (sync events, route changes). Screens re-render their
// own region when what they show changes.
import { openJson } from './crypto.js';

/**
 * @typedef {Schemas['UserProfile']} User
 * @typedef {{
 *   name: string | null, topic: string | null, avatarUrl: string | null, recipientName: string | null,
 * }} RoomMeta
 */

export const state = {
  /** @type {User | null} */
  user: null,
  /** @type {import('./crypto.js').KeyPair | null} */
  keys: null,
  /** Opened sealedMeta per room id. @type {Map<string, RoomMeta | null>} */
  meta: new Map(),
  /** Whether the live stream is connected. */
  live: false,
};

/** @type {Map<string, Set<(data: any) => void>>} */
const listeners = new Map();

/** Subscribes to `type`; returns the unsubscribe function. @param {string} type @param {(data: any) => void} fn */
export function on(type, fn) {
  if (!listeners.has(type)) listeners.set(type, new Set());
  listeners.get(type)?.add(fn);
  return () => listeners.get(type)?.delete(fn);
}

/** @param {string} type @param {any} [data] */
export function emit(type, data) {
  for (const fn of [...(listeners.get(type) || [])]) {
    try {
      fn(data);
    } catch (e) {
      console.warn('listener failed', e);
    }
  }
}

/**
 * Opens a room's sealedMeta once and remembers it.
 * @param {Schemas['Room'] & {sealedMeta?: any}} room @returns {Promise<RoomMeta | null>}
 */
export async function roomMeta(room) {
  const sealed = room.sealedMeta;
  if (!sealed) return state.meta.get(room.roomId) ?? null;
  const meta = await openJson(state.keys, sealed);
  state.meta.set(room.roomId, meta);
  return meta;
}

/** Platform names as people write them. @param {string | null | undefined} p */
export function platformName(p) {
  return { whatsapp: 'WhatsApp', telegram: 'Telegram', discord: 'Discord', email: 'E-mail' }[p || ''] || 'Matrix';
}

/**
 * The name to show for a room: its sealed name, the direct partner, else its id.
 * @param {Schemas['Room']} room @param {RoomMeta | null} meta
 */
export function roomTitle(room, meta) {
  return meta?.name || meta?.recipientName || room.name || room.recipientId || room.roomId;
}
