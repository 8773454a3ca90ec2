// @ts-check
// Key setup (first use: a new X25519 key, wrapped under a recovery passphrase) and unlock (a new
// browser: the passphrase opens the stored recovery blob). "Start over" rotates the key.
import * as api from '../api.js';
import * as crypto from '../crypto.js';
import { enter, signOut } from '../router.js';
import { state } from '../state.js';
import { h, field } from '../ui/dom.js';
import { busy, errorBox } from '../ui/notice.js';

/** Fewest characters a recovery passphrase may have. */
export const MIN_PASSPHRASE = 10;

/** @param {HTMLElement} main */
export async function render(main) {
  if (!state.user) return;
  /** @type {Schemas['KeyInfoResult']} */
  let info;
  try {
    info = await api.get('/api/keys/info');
  } catch (e) {
    main.append(errorBox(e));
    return;
  }
  const out = h('button', { type: 'button', class: 'link', onclick: signOut }, 'Sign out');
  if (!info.hasKeys) main.append(setupForm('register'), out);
  else if (!info.hasRecoveryKey) {
    main.append(
      h(
        'section',
        { class: 'card' },
        h('h1', null, 'This account has a key without recovery'),
        h(
          'p',
          null,
          'Another app registered your key without a recovery passphrase, so this browser cannot open ' +
            'your messages. You can start over with a new key here; ' +
            'the other app then loses access to messages sealed to the old key.',
        ),
      ),
      setupForm('rotate'),
      out,
    );
  } else main.append(unlockForm(), out);
}

/** Passphrase + confirmation; registers (or rotates to) a new key. @param {'register' | 'rotate'} mode */
export function setupForm(mode) {
  const out = h('div', { class: 'out' });
  const pass = field('Recovery passphrase', {
    type: 'password',
    name: 'passphrase',
    required: true,
    minlength: MIN_PASSPHRASE,
    autocomplete: 'new-password',
  });
  const again = field('Repeat the passphrase', {
    type: 'password',
    name: 'again',
    required: true,
    autocomplete: 'new-password',
  });
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': `setup-${mode}` },
    h('h1', { id: `setup-${mode}` }, mode === 'register' ? 'Set up your key' : 'Start over with a new key'),
    h(
      'p',
      null,
      'Your messages are sealed to a key that only your devices hold. Choose a recovery passphrase: ' +
        'it opens your key in a new browser. Switchboard cannot recover it for you.',
    ),
    mode === 'rotate'
      ? h(
          'p',
          { class: 'warning' },
          'Warning: devices that still use the old key lose access to your messages until they are set up again.',
        )
      : null,
    pass,
    again,
    h('button', { type: 'submit' }, mode === 'register' ? 'Create my key' : 'Replace my key'),
    out,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = /** @type {HTMLInputElement} */ (pass.querySelector('input')).value;
    const a = /** @type {HTMLInputElement} */ (again.querySelector('input')).value;
    busy(form, out, async () => {
      if (p.length < MIN_PASSPHRASE) throw new Error(`The passphrase needs at least ${MIN_PASSPHRASE} characters.`);
      if (p !== a) throw new Error('The two passphrases differ.');
      const { pair, encryptedMasterKey } = await crypto.generateKeyPair(p);
      const body = { publicKey: crypto.toBase64(pair.publicKey), encryptedMasterKey };
      if (mode === 'register') await api.post('/api/keys/register', body);
      else await api.put('/api/keys', body);
      await unlocked(pair);
    });
  });
  return form;
}

/** @param {crypto.KeyPair} pair */
async function unlocked(pair) {
  state.keys = pair;
  state.meta.clear();
  await crypto.rememberKey(/** @type {any} */ (state.user).id, pair);
  await enter('/inbox');
}

function unlockForm() {
  const out = h('div', { class: 'out' });
  const pass = field('Recovery passphrase', {
    type: 'password',
    name: 'passphrase',
    required: true,
    autocomplete: 'current-password',
  });
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'unlock-title' },
    h('h1', { id: 'unlock-title' }, 'Unlock your messages'),
    h(
      'p',
      null,
      'This browser does not hold your key yet. Enter the recovery passphrase you chose when you set it up.',
    ),
    pass,
    h('button', { type: 'submit' }, 'Unlock'),
    out,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = /** @type {HTMLInputElement} */ (pass.querySelector('input')).value;
    busy(form, out, async () => {
      /** @type {Schemas['RecoveryResult']} */
      const rec = await api.get('/api/keys/recovery');
      let pair;
      try {
        pair = await crypto.unwrapPrivateKey(rec.encryptedMasterKey, p);
      } catch (e) {
        const why = /** @type {Error} */ (e).message;
        throw new Error(
          why === 'wrong_passphrase'
            ? 'That passphrase does not open your key. Try again.'
            : 'The stored recovery key is in a format this app cannot read.',
        );
      }
      const registered = await api.get(`/api/keys/public/${api.seg(/** @type {any} */ (state.user).id)}`);
      if (registered.publicKey !== crypto.toBase64(pair.publicKey)) {
        throw new Error(
          'The recovery passphrase opened an older key; your current key ' +
            'was set up elsewhere without updating recovery.',
        );
      }
      await unlocked(pair);
    });
  });
  const forgot = h(
    'details',
    { class: 'card' },
    h('summary', null, 'Forgot the passphrase?'),
    h(
      'p',
      null,
      'You can start over with a new key. Messages sealed to the old key stay ' +
        'unreadable here, and your other devices must be set up again.',
    ),
    setupForm('rotate'),
  );
  return h('div', null, form, forgot);
}
