// @ts-check
// What makes a conversation feel alive: "… is typing" from the `typing` events, typing notices
// sent while the user writes (throttled), "Seen" on the user's own messages from the other
// members' read receipts, and the draft saved as the user types (sealed to the user's own key
// in this browser first, so the server only ever holds ciphertext) and restored in any other
// browser of the user.
import * as api from '../api.js';
import { openText, seal } from '../crypto.js';
import { state } from '../state.js';
import { h, replace } from './dom.js';

/** A typing notice is sent at most this often while the user keeps typing (ms). */
const TYPING_EVERY = 4000;
/** After this long without a keystroke the user has stopped typing (ms). */
const TYPING_IDLE = 5000;
/** How long one notice lasts on the homeserver without a renewal (ms). */
const TYPING_TIMEOUT = 8000;
/** The draft is saved this long after the last keystroke (ms). */
const DRAFT_DEBOUNCE = 700;
/** Who is typing is forgotten after this long without news (the homeserver's own limit). */
const TYPING_FORGET = 30000;

/**
 * "… is typing" for a room: `show(userIds)` on every `typing` event of the room.
 * @param {(userId: string) => string} nameOf
 */
export function typingLine(nameOf) {
  const el = h('p', { class: 'typing muted', 'aria-live': 'polite', hidden: true });
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let forget;
  /** @param {string[]} userIds */
  const show = (userIds) => {
    clearTimeout(forget);
    const names = userIds.map(nameOf);
    el.hidden = names.length === 0;
    replace(
      el,
      names.length === 0 ? '' : names.length === 1 ? `${names[0]} is typing…` : `${names.join(', ')} are typing…`,
    );
    if (names.length) forget = setTimeout(() => show([]), TYPING_FORGET);
  };
  return { el, show };
}

/**
 * Typing notices while the user writes in `text`: one at most every few seconds, and "stopped"
 * after a pause or when the message is sent (`stop()`).
 * @param {string} roomId @param {HTMLTextAreaElement} text
 */
export function typingSender(roomId, text) {
  const path = `/api/rooms/${api.seg(roomId)}/typing`;
  let last = 0;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let idle;
  /** @param {boolean} typing */
  const send = (typing) => api.put(path, typing ? { typing, timeoutMs: TYPING_TIMEOUT } : { typing }).catch(() => {});
  const stop = () => {
    clearTimeout(idle);
    if (last) send(false);
    last = 0;
  };
  text.addEventListener('input', () => {
    if (!text.value.trim()) return stop();
    const now = Date.now();
    if (now - last >= TYPING_EVERY) {
      last = now;
      send(true);
    }
    clearTimeout(idle);
    idle = setTimeout(stop, TYPING_IDLE);
  });
  return { stop };
}

/**
 * Marks the user's own messages in `log` that the other members have read: "Seen" in a direct
 * chat, "Seen by …" in a group, on the newest own message each reader has reached.
 * @param {HTMLElement} log @param {Map<string, number>} times event id → timestamp of the shown messages
 * @param {{userId: string, eventId: string, ts: number}[]} receipts @param {boolean} direct
 * @param {(userId: string) => string} nameOf
 */
export function showSeen(log, times, receipts, direct, nameOf) {
  for (const e of log.querySelectorAll('.seen')) e.remove();
  const items = /** @type {HTMLElement[]} */ ([...log.querySelectorAll('li.msg')]);
  /** @type {Map<HTMLElement, string[]>} */
  const readers = new Map();
  for (const r of receipts) {
    // Where the reader is: their event when it is shown, else by time.
    let upTo = items.findIndex((li) => li.dataset.eventId === r.eventId);
    if (upTo < 0) {
      const at = times.get(r.eventId) ?? r.ts;
      upTo = items.reduce((found, li, i) => ((times.get(li.dataset.eventId || '') ?? Infinity) <= at ? i : found), -1);
    }
    for (let i = upTo; i >= 0; i--) {
      if (items[i].classList.contains('mine')) {
        readers.set(items[i], [...(readers.get(items[i]) || []), r.userId]);
        break;
      }
    }
  }
  for (const [li, who] of readers) {
    const label = direct ? 'Seen' : `Seen by ${who.map(nameOf).join(', ')}`;
    li.querySelector('.meta')?.append(h('span', { class: 'seen', title: who.join(', ') }, label));
  }
}

/**
 * The room's draft: restored into `text` when it opens (and when another session saves one
 * while this one is idle), saved as the user types, deleted when emptied. Drafts are sealed to
 * the user's own public key here, so only the user's browsers can read them.
 * @param {string} roomId @param {HTMLTextAreaElement} text
 */
export function draftKeeper(roomId, text) {
  const path = `/api/rooms/${api.seg(roomId)}/draft`;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  let saved = '';
  const save = async () => {
    const value = text.value;
    if (value === saved) return;
    saved = value;
    try {
      if (!value.trim()) await api.del(path);
      else {
        if (!state.keys) return;
        const env = await seal(state.keys.publicKey, new TextEncoder().encode(value));
        await api.put(path, { content: JSON.stringify(env) });
      }
    } catch {
      saved = '';
    }
  };
  /** Shows the stored draft (`hasDraft` from the room), unless the user is writing here. @param {boolean} hasDraft */
  const restore = async (hasDraft) => {
    if (document.activeElement === text) return;
    if (!hasDraft) {
      text.value = saved = '';
      return;
    }
    try {
      /** @type {Schemas['DraftObject']} */
      const d = await api.get(path);
      const value = await openText(state.keys, JSON.parse(d.content));
      if (value !== null && document.activeElement !== text) text.value = saved = value;
    } catch {
      /* deleted meanwhile, or not ours to open */
    }
  };
  text.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(save, DRAFT_DEBOUNCE);
  });
  return {
    restore,
    /** The message was sent: the server deleted the draft. */
    sent: () => {
      clearTimeout(timer);
      saved = '';
    },
  };
}
