// @ts-check
// Matrix encryption trust (docs/design.md): the sync device's cross-signing and key backup status,
// and the recovery key, shown once (a new one only by resetting, which makes a new backup).
// A reset proves the person with the current recovery key or a fresh sign-in code: an access
// token alone is not enough for a key that opens secret storage.
import * as api from '../api.js';
import { state } from '../state.js';
import { h, replace } from './dom.js';
import { busy, errorBox, toast } from './notice.js';

/** @param {Schemas['E2eeStatus']} s */
function statusList(s) {
  const yes = (/** @type {boolean} */ b) => (b ? 'yes' : 'no');
  return h(
    'dl',
    { class: 'facts' },
    h('dt', null, 'Sync device'),
    h('dd', null, s.deviceId),
    h('dt', null, 'Cross-signed'),
    h(
      'dd',
      { dataset: { trust: 'signed' } },
      s.crossSigning.deviceSigned
        ? 'yes'
        : s.crossSigning.exists && !s.crossSigning.madeBySwitchboard
          ? 'no (cross-signing was set up by another app; verify this device there)'
          : 'no',
    ),
    h('dt', null, 'Key backup'),
    h(
      'dd',
      { dataset: { trust: 'backup' } },
      s.backup.enabled
        ? `on (version ${s.backup.version}, ${s.backup.keysBackedUp} of ${s.backup.keysTotal} keys)`
        : 'off',
    ),
    h('dt', null, 'Recovery key shown'),
    h('dd', null, yes(s.recoveryKeyShown)),
    s.error ? h('dt', null, 'Last problem') : null,
    s.error ? h('dd', { class: 'warning' }, s.error) : null,
  );
}

export function trustSection() {
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  const shown = h('div', { 'aria-live': 'polite' });
  const out = h('div', { class: 'out' });
  const currentKey = h('input', {
    type: 'text',
    name: 'recoveryKey',
    id: 'reset-recovery-key',
    autocomplete: 'off',
    spellcheck: false,
  });
  const code = h('input', {
    type: 'text',
    name: 'code',
    id: 'reset-code',
    inputmode: 'numeric',
    autocomplete: 'one-time-code',
    maxlength: 6,
  });
  const codeField = h('p', { hidden: true }, h('label', { for: 'reset-code' }, 'Sign-in code from the e-mail'), code);
  /** @param {boolean} reset @param {HTMLElement} btn */
  const fetchKey = (reset, btn) =>
    busy(btn, out, async () => {
      /** @type {Schemas['RecoveryKeyRequest']} */
      const body = { reset };
      if (reset) {
        const key = /** @type {HTMLInputElement} */ (currentKey).value.trim();
        const typed = /** @type {HTMLInputElement} */ (code).value.trim();
        if (key) body.recoveryKey = key;
        else if (typed) body.code = typed;
        // The server would refuse it (403 reauth_required): say so without asking.
        else
          throw new Error(
            'To make a new recovery key, enter your current recovery key, or ' +
              'e-mail yourself a sign-in code and enter it.',
          );
      }
      try {
        /** @type {Schemas['RecoveryKeyResult']} */
        const res = await api.post('/api/e2ee/recovery-key', body);
        /** @type {HTMLInputElement} */ (currentKey).value = '';
        /** @type {HTMLInputElement} */ (code).value = '';
        replace(
          shown,
          h(
            'div',
            { class: 'card secret' },
            h(
              'p',
              { class: 'warning' },
              'Write this recovery key down now: it is shown once. Element and other ' +
                'Matrix apps restore your encrypted history with it.',
            ),
            h('code', { class: 'recovery-key', dataset: { recoveryKey: '' } }, res.recoveryKey),
            h(
              'button',
              {
                type: 'button',
                class: 'secondary',
                onclick: () => navigator.clipboard?.writeText(res.recoveryKey).then(() => toast('Recovery key copied')),
              },
              'Copy',
            ),
          ),
        );
        load();
      } catch (e) {
        if (e instanceof api.ApiError && e.error === 'recovery_key_shown') {
          throw new Error(
            'The recovery key was shown already. Make a new one if you lost it (this starts a new key backup).',
          );
        }
        if (e instanceof api.ApiError && e.error === 'reauth_required') {
          throw new Error(
            'To make a new recovery key, enter your current recovery key, or ' +
              'e-mail yourself a sign-in code and enter it.',
          );
        }
        throw e;
      }
    });
  const show = h(
    'button',
    {
      type: 'button',
      onclick: (/** @type {Event} */ ev) => fetchKey(false, /** @type {HTMLElement} */ (ev.currentTarget)),
    },
    'Show my recovery key',
  );
  const sendCode = h(
    'button',
    {
      type: 'button',
      class: 'secondary',
      onclick: (/** @type {Event} */ ev) =>
        busy(/** @type {HTMLElement} */ (ev.currentTarget), out, async () => {
          if (!state.user) throw new Error('Not signed in.');
          await api.post('/api/auth/code', { email: state.user.email });
          codeField.hidden = false;
          code.focus();
          toast(`A sign-in code was sent to ${state.user.email}`);
        }),
    },
    'E-mail me a sign-in code',
  );
  const reset = h(
    'button',
    {
      type: 'button',
      class: 'danger',
      onclick: (/** @type {Event} */ ev) => {
        // Irreversible for the old key: its backup is deleted on the homeserver.
        if (!confirm('Make a new recovery key? The key backup is replaced and the old recovery key stops working.'))
          return;
        fetchKey(true, /** @type {HTMLElement} */ (ev.currentTarget));
      },
    },
    'Make a new recovery key',
  );
  const proof = h(
    'div',
    { class: 'reset-proof' },
    h('p', null, 'Prove it is you: enter the current recovery key, or, if it is lost, e-mail yourself a sign-in code.'),
    h('p', null, h('label', { for: 'reset-recovery-key' }, 'Current recovery key'), currentKey),
    h('p', null, sendCode),
    codeField,
  );
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
  return h(
    'section',
    { class: 'card', id: 'encryption', 'aria-labelledby': 'h-encryption' },
    h('h2', { id: 'h-encryption' }, 'Matrix encryption'),
    h(
      'p',
      null,
      'Switchboard’s sync device decrypts your encrypted chats. It is cross-signed so your other ' +
        'Matrix apps and bridges trust it, and it backs room keys up to your homeserver.',
    ),
    body,
    show,
    h(
      'details',
      null,
      h('summary', null, 'Lost the recovery key?'),
      h(
        'p',
        null,
        'A new recovery key replaces the key backup: the old one is deleted and the old recovery key stops working.',
      ),
      proof,
      reset,
    ),
    shown,
    out,
  );
}
