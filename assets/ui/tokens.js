// @ts-check
// Personal API tokens: create (with an expiry), shown once with a copy button; list with last
// use; opt in to the newest allowlist; revoke.
import * as api from '../api.js';
import { h, replace, field, fullTime } from './dom.js';
import { busy, errorBox, toast } from './notice.js';
import { table } from './table.js';

export function tokensSection() {
  const list = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  const shown = h('div', { 'aria-live': 'polite' });
  const out = h('div', { class: 'out' });
  const load = async () => {
    try {
      /** @type {Schemas['TokenList']} */
      const res = await api.get('/api/developer/tokens');
      const live = res.tokens.filter((t) => !t.revokedAt);
      if (!live.length) return replace(list, h('p', null, 'No personal tokens.'));
      replace(
        list,
        table(
          ['Name', 'Ends in', 'Created', 'Last used', 'Expires', 'Routes', ''],
          live.map((t) =>
            h(
              'tr',
              { dataset: { tokenId: t.id } },
              h('td', null, t.name),
              h('td', null, `…${t.lastFour}`),
              h('td', null, fullTime(t.createdAt)),
              h('td', null, t.lastUsedAt ? fullTime(t.lastUsedAt) : 'never'),
              h('td', null, t.expiresAt ? fullTime(t.expiresAt) : 'never'),
              h(
                'td',
                null,
                t.optedInVersion >= res.currentAllowlistVersion
                  ? 'all current'
                  : h(
                      'button',
                      {
                        type: 'button',
                        class: 'secondary',
                        'aria-label': `Opt ${t.name} in to the newest routes`,
                        onclick: (/** @type {Event} */ ev) =>
                          busy(/** @type {HTMLElement} */ (ev.currentTarget), out, async () => {
                            await api.patch(`/api/developer/tokens/${api.seg(t.id)}`, { optIn: true });
                            toast('Token opted in');
                            load();
                          }),
                      },
                      'Opt in',
                    ),
              ),
              h(
                'td',
                null,
                h(
                  'button',
                  {
                    type: 'button',
                    class: 'danger',
                    'aria-label': `Revoke ${t.name}`,
                    onclick: (/** @type {Event} */ ev) =>
                      busy(/** @type {HTMLElement} */ (ev.currentTarget), out, async () => {
                        await api.del(`/api/developer/tokens/${api.seg(t.id)}`);
                        toast(`Revoked ${t.name}`);
                        load();
                      }),
                  },
                  'Revoke',
                ),
              ),
            ),
          ),
          { class: 'tokens' },
        ),
      );
    } catch (e) {
      replace(list, errorBox(e));
    }
  };
  load();
  const form = h(
    'form',
    { class: 'stack' },
    field('Token name', { name: 'name', required: true, maxlength: 100, placeholder: 'e.g. backup script' }),
    field('Expires after', {
      tag: 'select',
      name: 'expires',
      value: '30',
      options: [
        ['30', '30 days'],
        ['90', '90 days'],
        ['365', '1 year'],
        ['', 'Never'],
      ],
    }),
    h('button', { type: 'submit' }, 'Create token'),
    out,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const name = /** @type {HTMLInputElement} */ (form.elements.namedItem('name')).value.trim();
    const days = /** @type {HTMLSelectElement} */ (form.elements.namedItem('expires')).value;
    busy(form, out, async () => {
      /** @type {Schemas['CreatedToken']} */
      const created = await api.post('/api/developer/tokens', { name, expiresInDays: days ? Number(days) : null });
      form.reset();
      const secret = h('p', { class: 'secret', id: 'new-token', 'aria-label': 'New token' }, created.token);
      const copy = h('button', { type: 'button', class: 'secondary' }, 'Copy token');
      copy.addEventListener('click', async () => {
        try {
          await navigator.clipboard.writeText(created.token);
          toast('Token copied');
        } catch {
          getSelection()?.selectAllChildren(secret);
          toast('Press Ctrl+C to copy the selected token');
        }
      });
      replace(
        shown,
        h(
          'div',
          { class: 'card', role: 'status' },
          h('p', null, h('strong', null, `Token “${created.name}” created. `), 'Copy it now: it is shown only once.'),
          secret,
          copy,
          ' ',
          h('button', { type: 'button', class: 'link', onclick: () => shown.replaceChildren() }, 'Done, hide it'),
        ),
      );
      load();
    });
  });
  return h(
    'section',
    { class: 'card', id: 'tokens', 'aria-labelledby': 'h-tokens' },
    h('h2', { id: 'h-tokens' }, 'Personal tokens'),
    h(
      'p',
      { class: 'muted' },
      'Scripts use a personal token as a bearer token on the allowed routes (rooms, ' +
        'readable messages, e-mail, reminders). A token is shown once.',
    ),
    form,
    shown,
    list,
  );
}
