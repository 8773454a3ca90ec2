// @ts-check
// Room data for the screens: the list (every page, names opened from sealedMeta), one room,
// and the room actions.
import * as api from './api.js';
import { openJson } from './crypto.js';
import { roomMeta, roomTitle, state } from './state.js';

/** Most rooms the inbox loads (pages of 100). */
const MAX_ROOMS = 1000;

/**
 * @typedef {Schemas['RoomLastMessage']} LastMessage
 * @typedef {Schemas['Room'] & {
 *   sealedMeta?: any, title: string, meta: import('./state.js').RoomMeta | null, last: LastMessage | null,
 * }} RoomView
 */

/** @param {Schemas['Room']} room @returns {Promise<RoomView>} */
export async function view(room) {
  const [meta, last] = await Promise.all([roomMeta(room), lastMessage(room)]);
  return Object.assign(room, { meta, last, title: roomTitle(room, meta) });
}

/**
 * The room's last message, opened from sealedLastMessage.
 * @param {Schemas['Room']} room
 * @returns {Promise<LastMessage | null>}
 */
async function lastMessage(room) {
  if (room.lastMessage) return room.lastMessage;
  if (!room.sealedLastMessage || !state.keys) return null;
  try {
    return await openJson(state.keys, room.sealedLastMessage);
  } catch {
    return null;
  }
}

/**
 * The inbox line of a last message: "Anna: see you Saturday", "You: 📷 Photo".
 * @param {LastMessage | null} last @param {boolean} direct
 */
export function lastLine(last, direct) {
  if (!last) return '';
  const what =
    {
      'm.image': '📷 Photo',
      'm.audio': '🎤 Voice note',
      'm.video': '🎥 Video',
      'm.sticker': 'Sticker',
      'm.file': `📎 ${last.text || 'File'}`,
      'm.room.encrypted': '🔒 Encrypted message',
    }[last.msgtype] || last.text;
  const who = last.isMine ? 'You' : direct ? '' : last.senderName.split(' ')[0];
  return who ? `${who}: ${what}` : what;
}

/**
 * All rooms of a sort and archive filter, names opened.
 * @param {'importance' | 'recent' | 'unread'} sortBy @param {'false' | 'true' | 'all'} archived
 * @returns {Promise<RoomView[]>}
 */
export async function listRooms(sortBy, archived) {
  /** @type {Schemas['Room'][]} */
  const rooms = [];
  const seen = new Set();
  /** @type {string | null | undefined} */
  let cursor = null;
  do {
    /** @type {Schemas['RoomListResult']} */
    const page = await api.get('/api/rooms', { query: { sortBy, archived, limit: 100, cursor } });
    for (const r of page.rooms) {
      if (!seen.has(r.roomId)) {
        seen.add(r.roomId);
        rooms.push(r);
      }
    }
    cursor = page.nextCursor;
  } while (cursor && rooms.length < MAX_ROOMS);
  return Promise.all(rooms.map(view));
}

/** @param {string} roomId @returns {Promise<RoomView>} */
export async function getRoom(roomId) {
  const { room } = await api.get(`/api/rooms/${api.seg(roomId)}`);
  return view(room);
}

/**
 * A room action: archive, unarchive, mute, unmute, pin, unpin, favorite, unfavorite, read,
 * accept, decline.
 * @param {string} roomId @param {string} action
 */
export function roomAction(roomId, action) {
  return api.post(`/api/rooms/${api.seg(roomId)}/${action}`);
}
