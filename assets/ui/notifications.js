// @ts-check
// Settings → Notifications: turn pushes on for this browser, previews, and the devices that get
// pushes (with the last push their push service accepted).
import * as api from '../api.js';
import { currentSubscription, disablePush, enablePush, pushSupported } from '../pwa.js';
import { h, replace, fullTime } from './dom.js';
import { busy, errorBox, toast } from './notice.js';
import { table } from './table.js';

export function notificationsSection() {
  const status = h('p', { id: 'push-status' });
  const out = h('div', { class: 'out' });
  const list = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  const toggle = h('button', { type: 'button', id: 'push-toggle' }, 'Turn on notifications on this device');
  const previews = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', id: 'push-previews' }));
  /** The server's id of this browser's subscription, when it has one. */
  /** @type {string | null} */
  let mine = null;

  const load = async () => {
    try {
      /** @type {[Schemas['SubscriptionList'], Schemas['PushSettings'], PushSubscription | null]} */
      const [subs, settings, current] = await Promise.all([
        api.get('/api/push/subscriptions'),
        api.get('/api/push/settings'),
        currentSubscription().catch(() => null),
      ]);
      previews.checked = settings.previews;
      const origin = current ? new URL(current.endpoint).origin : null;
      mine = null;
      if (current) {
        // The server shows origins only; this browser's entry is the newest of its origin.
        const same = subs.subscriptions.filter((s) => s.endpointOrigin === origin);
        mine = same.length ? same[same.length - 1].id : null;
      }
      const on = !!(current && mine);
      toggle.textContent = on ? 'Turn off notifications on this device' : 'Turn on notifications on this device';
      status.textContent = !pushSupported()
        ? 'This browser cannot receive notifications.'
        : on
          ? 'Notifications are on for this device.'
          : Notification.permission === 'denied'
            ? 'Notifications are blocked for this site in the browser settings.'
            : 'Notifications are off for this device.';
      toggle.disabled = !pushSupported();
      const rows = subs.subscriptions.map((s) =>
        h(
          'tr',
          null,
          h('td', null, s.endpointOrigin, s.id === mine ? ' (this device)' : ''),
          h('td', null, s.lastSuccessAt ? fullTime(s.lastSuccessAt) : 'never'),
          h('td', null, String(s.failures)),
          h(
            'td',
            null,
            h(
              'button',
              {
                type: 'button',
                class: 'secondary',
                'aria-label': `Remove the device at ${s.endpointOrigin}`,
                onclick: (/** @type {Event} */ ev) =>
                  busy(/** @type {HTMLElement} */ (ev.currentTarget), out, async () => {
                    if (s.id === mine) await disablePush(s.id);
                    else await api.del(`/api/push/subscriptions/${api.seg(s.id)}`);
                    toast('Device removed');
                    await load();
                  }),
              },
              'Remove',
            ),
          ),
        ),
      );
      replace(
        list,
        rows.length
          ? table(['Device (push service)', 'Last push', 'Failures', ''], rows)
          : h('p', null, 'No device gets notifications yet.'),
      );
    } catch (e) {
      replace(list, errorBox(e));
    }
  };

  toggle.addEventListener('click', () =>
    busy(toggle, out, async () => {
      const current = await currentSubscription().catch(() => null);
      if (current && mine) {
        await disablePush(mine);
        toast('Notifications turned off on this device');
      } else {
        await enablePush();
        toast('Notifications turned on on this device');
      }
      await load();
    }),
  );
  previews.addEventListener('change', () =>
    busy(previews, out, async () => {
      await api.put('/api/push/settings', { previews: previews.checked });
      toast(previews.checked ? 'Notifications show the message' : 'Notifications hide the message');
    }),
  );
  load();
  return h(
    'section',
    { class: 'card', id: 'notifications', 'aria-labelledby': 'h-notifications' },
    h('h2', { id: 'h-notifications' }, 'Notifications'),
    status,
    toggle,
    h('p', null, h('label', null, previews, ' Show the chat and the message in notifications')),
    h(
      'p',
      { class: 'muted' },
      'With this off, notifications only say “New message”: neither the push service nor the lock screen ' +
        'sees who wrote or what. ' +
        'Each chat can notify for every message, only mentions, or nothing, and be snoozed: open the chat.',
    ),
    h('h3', null, 'Devices that get notifications'),
    list,
    out,
  );
}
