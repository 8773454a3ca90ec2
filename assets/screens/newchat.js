// @ts-check
// A new conversation: find a contact on a platform (or type a phone number, username or Matrix
// ID) and open or start the direct chat (GET /api/contacts, POST /api/chats).
import * as api from '../api.js';
import { navigate } from '../router.js';
import { platformName } from '../state.js';
import { h, replace, field } from '../ui/dom.js';
import { busy } from '../ui/notice.js';

const PLATFORMS = [
  ['', 'All platforms'],
  ['whatsapp', 'WhatsApp'],
  ['telegram', 'Telegram'],
  ['discord', 'Discord'],
  ['matrix', 'Matrix'],
];

/** @param {HTMLElement} main */
export function render(main) {
  const out = h('div', { class: 'out' });
  const list = h('ul', { class: 'results', 'aria-label': 'Contacts' });
  const status = h('p', { class: 'muted', role: 'status' });
  const form = h(
    'form',
    { class: 'card stack', role: 'search' },
    field('Platform', { tag: 'select', name: 'platform', value: '', options: PLATFORMS }),
    field('Name, number or username', { type: 'search', name: 'q', maxlength: 200 }),
    h(
      'div',
      { class: 'bar' },
      h('button', { type: 'submit' }, 'Find'),
      h('button', { type: 'button', class: 'secondary', onclick: () => startTyped() }, 'Write to exactly this'),
    ),
    out,
  );
  main.append(
    h(
      'div',
      { class: 'bar' },
      h('h1', null, 'New chat'),
      h('a', { class: 'button secondary', href: '/groups/new' }, 'New group'),
    ),
    form,
    status,
    list,
  );
  const value = (/** @type {string} */ n) => /** @type {HTMLInputElement} */ (form.elements.namedItem(n)).value.trim();

  /** @param {string} platform @param {string} identifier */
  const start = (platform, identifier) =>
    busy(form, out, async () => {
      /** @type {{roomId: string, created: boolean}} */
      const res = await api.post('/api/chats', { platform, identifier });
      navigate(`/rooms/${api.seg(res.roomId)}`);
    });
  const startTyped = () => {
    if (!value('platform'))
      return replace(out, h('p', { class: 'error', role: 'alert' }, 'Choose the platform to write on.'));
    if (!value('q'))
      return replace(out, h('p', { class: 'error', role: 'alert' }, 'Type a phone number, username or Matrix ID.'));
    start(value('platform'), value('q'));
  };
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    busy(form, out, async () => {
      const res = await api.get('/api/contacts', { query: { platform: value('platform'), q: value('q'), limit: 50 } });
      /** @type {any[]} */
      const contacts = res.contacts || [];
      replace(
        list,
        contacts.map((c) =>
          h(
            'li',
            null,
            h('strong', null, c.name || c.id),
            ` · ${platformName(c.platform)}`,
            c.identifiers?.length ? h('span', { class: 'muted' }, ` · ${c.identifiers.join(', ')}`) : null,
            ' ',
            c.roomId
              ? h('a', { href: `/rooms/${api.seg(c.roomId)}`, class: 'button secondary' }, 'Open chat')
              : h(
                  'button',
                  {
                    type: 'button',
                    class: 'secondary',
                    'aria-label': `Start a chat with ${c.name || c.id}`,
                    onclick: () => start(c.platform, c.id),
                  },
                  'Start chat',
                ),
          ),
        ),
      );
      const notes = [];
      if (res.supported === false)
        notes.push('This platform cannot list contacts: type a number or username and choose “Write to exactly this”.');
      if (res.unavailable?.length) notes.push(`Not reachable now: ${res.unavailable.map(platformName).join(', ')}.`);
      status.textContent = `${contacts.length} contact${contacts.length === 1 ? '' : 's'}. ${notes.join(' ')}`;
    });
  });
}
