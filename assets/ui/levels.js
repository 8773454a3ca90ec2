// @ts-check
// A chat's notification level (every message, mentions only, off = muted) and snooze, as two
// labelled selects; each change is saved at once (PUT /api/rooms/{roomId}/notifications).
import * as api from '../api.js';
import { h } from './dom.js';
import { toast } from './notice.js';

const SNOOZES = [
  ['', 'Not snoozed'],
  ['3600000', '1 hour'],
  ['28800000', '8 hours'],
  ['86400000', '1 day'],
  ['604800000', '1 week'],
];

/**
 * @param {string} roomId @param {Schemas['RoomNotifications']} current
 * @param {() => void} changed called after a save (the caller reloads the room)
 */
export function levelControls(roomId, current, changed) {
  const level = /** @type {HTMLSelectElement} */ (
    h(
      'select',
      { name: 'level' },
      [
        ['all', 'Every message'],
        ['mentions', 'Mentions only'],
        ['off', 'Off (muted)'],
      ].map(([v, t]) => h('option', { value: v, selected: v === current.level }, t)),
    )
  );
  const snoozedUntil = current.snoozeUntil ? new Date(current.snoozeUntil) : null;
  const snooze = /** @type {HTMLSelectElement} */ (
    h(
      'select',
      { name: 'snooze' },
      snoozedUntil
        ? h('option', { value: 'keep', selected: true }, `Snoozed until ${snoozedUntil.toLocaleString()}`)
        : null,
      SNOOZES.map(([v, t]) => h('option', { value: v, selected: !snoozedUntil && v === '' }, t)),
    )
  );
  const save = async () => {
    /** @type {{level: string, snoozeUntil?: number | null}} */
    const body = { level: level.value };
    if (snooze.value === 'keep') body.snoozeUntil = current.snoozeUntil;
    else if (snooze.value) body.snoozeUntil = Date.now() + Number(snooze.value);
    else body.snoozeUntil = null;
    try {
      await api.put(`/api/rooms/${api.seg(roomId)}/notifications`, body);
      changed();
    } catch (e) {
      toast(api.describe(e), true);
    }
  };
  level.addEventListener('change', save);
  snooze.addEventListener('change', save);
  return h('span', { class: 'levels' }, h('label', null, 'Notify ', level), ' ', h('label', null, 'Snooze ', snooze));
}
