// @ts-check
// Settings: profile, notifications, personal tokens, mailboxes, push devices, accounts, keys, Matrix encryption,
// device verification, sign-out.
import * as api from '../api.js';
import { enter, signOut } from '../router.js';
import { forgetKey } from '../crypto.js';
import { state } from '../state.js';
import { h, replace, field, fullTime } from '../ui/dom.js';
import { busy, errorBox, toast } from '../ui/notice.js';
import { table } from '../ui/table.js';
import { tokensSection } from '../ui/tokens.js';
import { mailboxesSection } from '../ui/mailboxes.js';
import { verificationsSection } from '../ui/verifications.js';
import { trustSection } from '../ui/trust.js';
import { notificationsSection } from '../ui/notifications.js';
import { setPreviewsEnabled } from '../ui/linkpreview.js';
import { setupForm } from './keys.js';

/** @param {HTMLElement} main */
export function render(main) {
  const verify = verificationsSection();
  main.append(
    h('h1', null, 'Settings'),
    h(
      'nav',
      { class: 'chips', 'aria-label': 'Sections' },
      [
        ['profile', 'Profile'],
        ['notifications', 'Notifications'],
        ['privacy', 'Privacy'],
        ['tokens', 'Personal tokens'],
        ['mail', 'Mailboxes'],
        ['devices', 'Push devices'],
        ['accounts', 'Accounts'],
        ['keys', 'Keys'],
        ['encryption', 'Matrix encryption'],
        ['verify', 'Device verification'],
      ].map(([id, t]) =>
        h(
          'a',
          {
            class: 'chip',
            href: `#${id}`,
            onclick: (/** @type {Event} */ ev) => {
              ev.preventDefault();
              document.getElementById(id)?.scrollIntoView();
            },
          },
          t,
        ),
      ),
    ),
    profileSection(),
    notificationsSection(),
    privacySection(),
    tokensSection(),
    mailboxesSection(),
    devicesSection(),
    accountsSection(),
    keysSection(),
    trustSection(),
    verify.section,
    h('section', { class: 'card' }, h('button', { type: 'button', class: 'secondary', onclick: signOut }, 'Sign out')),
  );
  return verify.cleanup;
}

function profileSection() {
  const u = /** @type {Schemas['UserProfile']} */ (state.user);
  const out = h('div', { class: 'out' });
  const form = h(
    'form',
    { class: 'stack' },
    field('Display name', { name: 'displayName', value: u.displayName || '', maxlength: 255 }),
    field('Username', {
      name: 'username',
      value: u.username || '',
      pattern: '[A-Za-z0-9_]{3,50}',
      title: '3 to 50 letters, digits or underscores',
    }),
    h('button', { type: 'submit' }, 'Save profile'),
    out,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const get = (/** @type {string} */ n) => /** @type {HTMLInputElement} */ (form.elements.namedItem(n)).value.trim();
    /** @type {Record<string, string>} */
    const body = {};
    if (get('displayName')) body.displayName = get('displayName');
    if (get('username')) body.username = get('username');
    busy(form, out, async () => {
      const res = await api.patch('/api/auth/profile', body);
      state.user = res.user;
      toast('Profile saved');
    });
  });
  return h(
    'section',
    { class: 'card', id: 'profile', 'aria-labelledby': 'h-profile' },
    h('h2', { id: 'h-profile' }, 'Profile'),
    h('p', null, `Signed in as ${u.email}`, u.matrixUserId ? ` (Matrix ${u.matrixUserId})` : ''),
    h(
      'p',
      { class: 'muted' },
      u.subscription.active
        ? `Subscription active${u.subscription.until ? ` until ${fullTime(u.subscription.until)}` : ''}`
        : 'No active subscription: personal tokens are refused until it is renewed.',
    ),
    form,
  );
}

/** What reading and typing tell the other side (like Beeper's incognito mode). */
function privacySection() {
  const out = h('div', { class: 'out' });
  const receipts = h('input', { type: 'checkbox', name: 'readReceipts', disabled: true });
  const typing = h('input', { type: 'checkbox', name: 'typing', disabled: true });
  /** @param {Schemas['PresenceSettingsObject']} s */
  const show = (s) => {
    receipts.checked = s.readReceipts === 'public';
    typing.checked = s.typing;
    receipts.disabled = typing.disabled = false;
  };
  api
    .get('/api/settings/presence')
    .then(show)
    .catch((e) => out.replaceChildren(errorBox(e)));
  /** @param {Record<string, any>} body */
  const save = async (body) => {
    out.replaceChildren();
    try {
      show(await api.put('/api/settings/presence', body));
      toast('Privacy settings saved');
    } catch (e) {
      out.replaceChildren(errorBox(e));
    }
  };
  receipts.addEventListener('change', () => save({ readReceipts: receipts.checked ? 'public' : 'private' }));
  typing.addEventListener('change', () => save({ typing: typing.checked }));
  const previews = h('input', { type: 'checkbox', name: 'previews', disabled: true });
  /** @param {Schemas['PreviewSettingsObject']} s */
  const showPreviews = (s) => {
    previews.checked = s.enabled;
    previews.disabled = false;
    setPreviewsEnabled(s.enabled);
  };
  api
    .get('/api/settings/previews')
    .then(showPreviews)
    .catch((e) => out.replaceChildren(errorBox(e)));
  previews.addEventListener('change', async () => {
    out.replaceChildren();
    try {
      showPreviews(await api.put('/api/settings/previews', { enabled: previews.checked }));
      toast(`Link previews turned ${previews.checked ? 'on' : 'off'}`);
    } catch (e) {
      out.replaceChildren(errorBox(e));
    }
  });
  return h(
    'section',
    { class: 'card', id: 'privacy', 'aria-labelledby': 'h-privacy' },
    h('h2', { id: 'h-privacy' }, 'Privacy'),
    h('label', { class: 'switch' }, receipts, ' Send read receipts'),
    h(
      'p',
      { class: 'muted' },
      'Off: the people you chat with (also on WhatsApp and the other networks) do not see ' +
        'when you have read their messages; your own Matrix apps still do.',
    ),
    h('label', { class: 'switch' }, typing, ' Send typing notices'),
    h('p', { class: 'muted' }, 'Off: nobody sees when you are typing.'),
    h('label', { class: 'switch' }, previews, ' Show link previews'),
    h(
      'p',
      { class: 'muted' },
      'Your Matrix server fetches the linked page for the card (this browser never contacts the ' +
        'site). Off: no cards, and links you receive make no server fetch anything.',
    ),
    out,
  );
}

function devicesSection() {
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  (async () => {
    try {
      /** @type {[Schemas['DeviceList'], Schemas['PushStatus']]} */
      const [list, push] = await Promise.all([api.get('/api/devices'), api.get('/api/devices/status')]);
      const rows = list.devices.map((d) =>
        h(
          'tr',
          null,
          h('td', null, d.deviceName || d.deviceModel || 'Device'),
          h('td', null, d.environment),
          h('td', null, fullTime(d.lastUsedAt || d.updatedAt)),
          h(
            'td',
            null,
            h(
              'button',
              {
                type: 'button',
                class: 'secondary',
                'aria-label': `Remove ${d.deviceName || 'device'}`,
                onclick: async () => {
                  try {
                    await api.del(`/api/devices/${api.seg(d.tokenId)}`);
                    toast('Device removed');
                    replace(body, h('p', null, 'Removed. Reload to refresh the list.'));
                  } catch (e) {
                    toast(api.describe(e), true);
                  }
                },
              },
              'Remove',
            ),
          ),
        ),
      );
      replace(
        body,
        h(
          'p',
          { class: 'muted' },
          push.configured
            ? `Push notifications are configured (${push.environment}).`
            : 'Push notifications are not configured on this server.',
        ),
        rows.length
          ? table(['Device', 'Environment', 'Last used', ''], rows)
          : h('p', null, 'No phone is registered for push notifications. The mobile apps register themselves.'),
      );
    } catch (e) {
      replace(body, errorBox(e));
    }
  })();
  return h(
    'section',
    { class: 'card', id: 'devices', 'aria-labelledby': 'h-devices' },
    h('h2', { id: 'h-devices' }, 'Push devices'),
    body,
  );
}

function accountsSection() {
  const list = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  const out = h('div', { class: 'out' });
  const load = async () => {
    try {
      /** @type {Schemas['AccountList']} */
      const res = await api.get('/api/accounts');
      replace(
        list,
        h(
          'ul',
          null,
          res.accounts.map((a) =>
            h(
              'li',
              null,
              `${a.displayName || a.email} (${a.email})`,
              a.isPrimary ? ' — primary' : '',
              a.isActive ? ' — active' : ' ',
              a.isActive
                ? null
                : h(
                    'button',
                    {
                      type: 'button',
                      class: 'secondary',
                      'aria-label': `Switch to ${a.email}`,
                      onclick: (/** @type {Event} */ ev) =>
                        busy(/** @type {HTMLElement} */ (ev.currentTarget), out, async () => {
                          const sw = await api.post(`/api/accounts/${api.seg(a.id)}/switch`);
                          api.setSession(sw);
                          state.keys = null;
                          state.meta.clear();
                          await enter();
                        }),
                    },
                    'Switch',
                  ),
            ),
          ),
        ),
      );
    } catch (e) {
      replace(list, errorBox(e));
    }
  };
  load();
  const email = field('E-mail of the account to add', { type: 'email', name: 'email', required: true });
  const code = field('Code from that mailbox', {
    name: 'code',
    inputmode: 'numeric',
    pattern: '[0-9]{6}',
    hidden: true,
  });
  code.hidden = true;
  const add = h('form', { class: 'stack' }, email, code, h('button', { type: 'submit' }, 'Add account'));
  add.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const e = /** @type {HTMLInputElement} */ (email.querySelector('input')).value.trim();
    const c = /** @type {HTMLInputElement} */ (code.querySelector('input'));
    busy(add, out, async () => {
      if (code.hidden) {
        await api.post('/api/accounts/add/code', { email: e });
        code.hidden = false;
        c.hidden = false;
        c.required = true;
        c.focus();
        toast(`Code sent to ${e}`);
      } else {
        await api.post('/api/accounts/add/verify', { email: e, code: c.value.trim() });
        toast('Account added');
        code.hidden = true;
        add.reset();
        load();
      }
    });
  });
  return h(
    'section',
    { class: 'card', id: 'accounts', 'aria-labelledby': 'h-accounts' },
    h('h2', { id: 'h-accounts' }, 'Accounts'),
    list,
    h('h3', null, 'Add an account'),
    add,
    out,
  );
}

const DELETE_PHRASE = 'DELETE MY MESSAGES';

function keysSection() {
  const out = h('div', { class: 'out' });
  const confirm = field(`Type ${DELETE_PHRASE} to confirm`, { name: 'confirm', autocomplete: 'off' });
  const del = h(
    'form',
    { class: 'stack' },
    h(
      'p',
      { class: 'warning' },
      'Deleting your key makes every message sealed to it unreadable, for ' +
        'good, on every device. The search index is destroyed too.',
    ),
    confirm,
    h('button', { type: 'submit', class: 'danger' }, 'Delete my key'),
    out,
  );
  del.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const typed = /** @type {HTMLInputElement} */ (confirm.querySelector('input')).value.trim();
    busy(del, out, async () => {
      if (typed !== DELETE_PHRASE) throw new Error(`Type ${DELETE_PHRASE} exactly to delete the key.`);
      await api.del('/api/keys', { headers: { 'X-Confirm-Key-Deletion': 'PERMANENTLY_DELETE_ALL_MY_MESSAGES' } });
      await forgetKey(/** @type {any} */ (state.user).id);
      state.keys = null;
      state.meta.clear();
      toast('Key deleted');
      await enter('/keys');
    });
  });
  return h(
    'section',
    { class: 'card', id: 'keys', 'aria-labelledby': 'h-keys' },
    h('h2', { id: 'h-keys' }, 'Keys'),
    h('p', null, 'Your key is unlocked in this browser. Its recovery passphrase unlocks it in another browser.'),
    h('details', null, h('summary', null, 'Start over with a new key'), setupForm('rotate')),
    h('details', null, h('summary', null, 'Delete my key'), del),
  );
}
