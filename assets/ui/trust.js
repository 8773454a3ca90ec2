// @ts-check
// Matrix encryption trust (docs/design.md): the sync device's cross-signing and key backup status,
// and the recovery key, shown once (a new one only by resetting, which makes a new backup).
import * as api from '../api.js';
import { h, replace } from './dom.js';
import { busy, errorBox, toast } from './notice.js';

/** @param {Schemas['E2eeStatus']} s */
function statusList(s) {
  const yes = (/** @type {boolean} */ b) => (b ? 'yes' : 'no');
  return h('dl', { class: 'facts' },
    h('dt', null, 'Sync device'), h('dd', null, s.deviceId),
    h('dt', null, 'Cross-signed'), h('dd', { dataset: { trust: 'signed' } }, s.crossSigning.deviceSigned ? 'yes' : s.crossSigning.exists && !s.crossSigning.madeBySwitchboard ? 'no (cross-signing was set up by another app; verify this device there)' : 'no'),
    h('dt', null, 'Key backup'), h('dd', { dataset: { trust: 'backup' } }, s.backup.enabled ? `on (version ${s.backup.version}, ${s.backup.keysBackedUp} of ${s.backup.keysTotal} keys)` : 'off'),
    h('dt', null, 'Recovery key shown'), h('dd', null, yes(s.recoveryKeyShown)),
    s.error ? h('dt', null, 'Last problem') : null, s.error ? h('dd', { class: 'warning' }, s.error) : null);
}

export function trustSection() {
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  const shown = h('div', { 'aria-live': 'polite' });
  const out = h('div', { class: 'out' });
  /** @param {boolean} reset @param {HTMLElement} btn */
  const fetchKey = (reset, btn) => busy(btn, out, async () => {
    try {
      /** @type {Schemas['RecoveryKeyResult']} */
      const res = await api.post('/api/e2ee/recovery-key', { reset });
      replace(shown, h('div', { class: 'card secret' },
        h('p', { class: 'warning' }, 'Write this recovery key down now: it is shown once. Element and other Matrix apps restore your encrypted history with it.'),
        h('code', { class: 'recovery-key', dataset: { recoveryKey: '' } }, res.recoveryKey),
        h('button', { type: 'button', class: 'secondary', onclick: () => navigator.clipboard?.writeText(res.recoveryKey).then(() => toast('Recovery key copied')) }, 'Copy')));
      load();
    } catch (e) {
      if (e instanceof api.ApiError && e.error === 'recovery_key_shown') {
        throw new Error('The recovery key was shown already. Make a new one if you lost it (this starts a new key backup).');
      }
      throw e;
    }
  });
  const show = h('button', { type: 'button', onclick: (/** @type {Event} */ ev) => fetchKey(false, /** @type {HTMLElement} */ (ev.currentTarget)) }, 'Show my recovery key');
  const reset = h('button', {
    type: 'button',
    class: 'danger',
    onclick: (/** @type {Event} */ ev) => {
      // Irreversible for the old key: its backup is deleted on the homeserver.
      if (!confirm('Make a new recovery key? The key backup is replaced and the old recovery key stops working.')) return;
      fetchKey(true, /** @type {HTMLElement} */ (ev.currentTarget));
    },
  }, 'Make a new recovery key');
  const load = async () => {
    try {
      /** @type {Schemas['E2eeStatus']} */
      const s = await api.get('/api/e2ee/status');
      replace(body, statusList(s));
      show.hidden = s.recoveryKeyShown;
    } catch (e) {
      replace(body, errorBox(e));
    }
  };
  load();
  return h('section', { class: 'card', id: 'encryption', 'aria-labelledby': 'h-encryption' },
    h('h2', { id: 'h-encryption' }, 'Matrix encryption'),
    h('p', null, 'Switchboard’s sync device decrypts your encrypted chats. It is cross-signed so your other Matrix apps and bridges trust it, and it backs room keys up to your homeserver.'),
    body, show, h('details', null, h('summary', null, 'Lost the recovery key?'), h('p', null, 'A new recovery key replaces the key backup: the old one is deleted and the old recovery key stops working.'), reset), shown, out);
}
