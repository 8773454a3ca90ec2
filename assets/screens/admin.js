// @ts-check
// Administration (admins only): users with their subscription, each dependency's health, version.
import * as api from '../api.js';
import { state } from '../state.js';
import { h, replace, fullTime } from '../ui/dom.js';
import { busy, errorBox, toast } from '../ui/notice.js';
import { table } from '../ui/table.js';

/** @param {HTMLElement} main */
export function render(main) {
  if (!state.user?.isAdmin) {
    main.append(
      h('h1', null, 'Administration'),
      h('p', { role: 'alert' }, 'This area is for administrators of this server only.'),
    );
    return;
  }
  const health = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  const users = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  main.append(
    h('h1', null, 'Administration'),
    h('section', { class: 'card', 'aria-labelledby': 'h-health' }, h('h2', { id: 'h-health' }, 'Health'), health),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'h-users' },
      h('h2', { id: 'h-users' }, 'Users'),
      h(
        'p',
        { class: 'muted' },
        'Administrators are the addresses in [auth] admin_emails of the ' +
          'configuration; they become administrators when they sign in.',
      ),
      users,
    ),
  );
  loadHealth(health);
  loadUsers(users, 0);
}

/** @param {HTMLElement} into */
async function loadHealth(into) {
  try {
    // /health answers 503 with the same shape when a dependency is down: read it either way.
    const resp = await fetch('/health', { headers: { Accept: 'application/json' } });
    /** @type {Schemas['HealthResult']} */
    const res = await resp.json();
    replace(
      into,
      h('p', null, `Overall: ${res.status}; version ${res.version}`),
      table(
        ['Dependency', 'Status', 'Latency', 'Detail'],
        Object.entries(res.checks).map(([name, c]) =>
          h(
            'tr',
            { dataset: { check: name } },
            h('td', null, name),
            h('td', null, c.status),
            h('td', null, c.latencyMs === null || c.latencyMs === undefined ? '' : `${c.latencyMs} ms`),
            h('td', null, c.error || ''),
          ),
        ),
      ),
    );
  } catch (e) {
    replace(into, errorBox(e));
  }
}

const PAGE = 50;

/** @param {HTMLElement} into @param {number} offset */
async function loadUsers(into, offset) {
  const out = h('div', { class: 'out' });
  try {
    /** @type {Schemas['UserList']} */
    const res = await api.get('/api/admin/users', { query: { limit: PAGE, offset } });
    replace(
      into,
      out,
      table(
        ['E-mail', 'Name', 'Role', 'Subscription', 'Joined', ''],
        res.users.map((u) =>
          h(
            'tr',
            { dataset: { userId: u.id } },
            h('td', null, u.email),
            h('td', null, u.displayName || u.username || ''),
            h('td', null, u.isAdmin ? 'admin' : 'user'),
            h(
              'td',
              null,
              u.subscription.active
                ? `active${u.subscription.until ? ` until ${fullTime(u.subscription.until)}` : ''}`
                : 'none',
            ),
            h('td', null, fullTime(u.createdAt)),
            h(
              'td',
              null,
              h(
                'button',
                {
                  type: 'button',
                  class: 'secondary',
                  'aria-label': `${u.subscription.active ? 'End' : 'Grant'} the subscription of ${u.email}`,
                  onclick: (/** @type {Event} */ ev) =>
                    busy(/** @type {HTMLElement} */ (ev.currentTarget), out, async () => {
                      await api.put(`/api/admin/users/${api.seg(u.id)}/subscription`, {
                        active: !u.subscription.active,
                      });
                      toast('Subscription changed');
                      loadUsers(into, offset);
                    }),
                },
                u.subscription.active ? 'End subscription' : 'Grant subscription',
              ),
              u.isAdmin
                ? null
                : h(
                    'button',
                    {
                      type: 'button',
                      class: 'secondary',
                      'aria-label': `Make ${u.email} an administrator`,
                      onclick: (/** @type {Event} */ ev) =>
                        busy(/** @type {HTMLElement} */ (ev.currentTarget), out, async () => {
                          if (!confirm(`Make ${u.email} an administrator? Only the operator can take it back.`)) return;
                          await api.post(`/api/admin/users/${api.seg(u.id)}/promote`);
                          toast('Now an administrator');
                          loadUsers(into, offset);
                        }),
                    },
                    'Make admin',
                  ),
            ),
          ),
        ),
      ),
      h(
        'div',
        { class: 'bar' },
        offset > 0
          ? h(
              'button',
              { type: 'button', class: 'secondary', onclick: () => loadUsers(into, Math.max(0, offset - PAGE)) },
              'Previous',
            )
          : null,
        res.pagination.hasMore
          ? h('button', { type: 'button', class: 'secondary', onclick: () => loadUsers(into, offset + PAGE) }, 'Next')
          : null,
        h('span', { class: 'muted' }, `${res.pagination.total} users`),
      ),
    );
  } catch (e) {
    replace(into, errorBox(e));
  }
}
