// @ts-check
// A new group: pick people from the contacts of one platform (GET /api/contacts, every platform
// or one), or add a number, username or Matrix ID by hand, give it a name, and create it
// (POST /api/chats with participants). A group lives on one platform: the first person picked
// fixes it until the selection is empty again.
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
/** Most people besides the user (the server's limit). */
const MAX_PARTICIPANTS = 100;

/** @typedef {{platform: string, id: string, label: string}} Pick */

/** @param {HTMLElement} main */
export function render(main) {
  /** @type {Map<string, Pick>} picked people by `platform:id` */
  const picked = new Map();
  const out = h('div', { class: 'out' });
  const list = h('ul', { class: 'results', 'aria-label': 'Contacts' });
  const chosen = h('ul', { class: 'chips', 'aria-label': 'Group members' });
  const status = h('p', { class: 'muted', role: 'status' });
  const search = h(
    'form',
    { class: 'card stack', role: 'search' },
    field('Platform', { tag: 'select', name: 'platform', value: '', options: PLATFORMS }),
    field('Name, number or username', { type: 'search', name: 'q', maxlength: 200 }),
    h(
      'div',
      { class: 'bar' },
      h('button', { type: 'submit' }, 'Find'),
      h('button', { type: 'button', class: 'secondary', onclick: () => addTyped() }, 'Add exactly this'),
    ),
  );
  const create = h(
    'form',
    { class: 'card stack' },
    h('h2', null, 'The group'),
    chosen,
    field('Group name', { name: 'name', maxlength: 255, required: true }),
    h('button', { type: 'submit' }, 'Create group'),
    out,
  );
  main.append(
    h(
      'div',
      { class: 'bar' },
      h('h1', null, 'New group'),
      h('a', { class: 'button secondary', href: '/new' }, 'New chat instead'),
    ),
    search,
    status,
    list,
    create,
  );
  const value = (/** @type {HTMLFormElement} */ form, /** @type {string} */ n) =>
    /** @type {HTMLInputElement} */ (form.elements.namedItem(n)).value.trim();
  const platformOf = () => [...picked.values()][0]?.platform || '';

  function showChosen() {
    replace(
      chosen,
      [...picked.entries()].map(([key, p]) =>
        h(
          'li',
          null,
          `${p.label} · ${platformName(p.platform)} `,
          h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              'aria-label': `Remove ${p.label}`,
              onclick: () => {
                picked.delete(key);
                showChosen();
              },
            },
            '×',
          ),
        ),
      ),
    );
    if (!picked.size) chosen.append(h('li', { class: 'muted' }, 'Nobody yet: find people above.'));
    for (const box of list.querySelectorAll('input[type=checkbox]')) {
      const b = /** @type {HTMLInputElement} */ (box);
      b.checked = picked.has(b.value);
      b.disabled =
        !b.checked && (picked.size >= MAX_PARTICIPANTS || (!!platformOf() && b.dataset.platform !== platformOf()));
    }
  }

  /** @param {Pick} p */
  function pick(p) {
    const key = `${p.platform}:${p.id}`;
    if (platformOf() && platformOf() !== p.platform) {
      status.textContent = `A group is on one platform: this one is on ${platformName(platformOf())}.`;
      return;
    }
    if (picked.size >= MAX_PARTICIPANTS && !picked.has(key)) return;
    picked.set(key, p);
    showChosen();
  }

  function addTyped() {
    const platform = value(search, 'platform') || platformOf();
    const q = value(search, 'q');
    if (!platform) return replace(out, h('p', { class: 'error', role: 'alert' }, 'Choose the platform first.'));
    if (!q)
      return replace(out, h('p', { class: 'error', role: 'alert' }, 'Type a phone number, username or Matrix ID.'));
    pick({ platform, id: q, label: q });
  }

  search.addEventListener('submit', (ev) => {
    ev.preventDefault();
    busy(search, out, async () => {
      const res = await api.get('/api/contacts', {
        query: { platform: value(search, 'platform'), q: value(search, 'q'), limit: 50 },
      });
      /** @type {Schemas['Contact'][]} */
      const contacts = res.contacts || [];
      replace(
        list,
        contacts.map((c) => {
          const label = c.name || c.id;
          return h(
            'li',
            null,
            h(
              'label',
              null,
              h('input', {
                type: 'checkbox',
                value: `${c.platform}:${c.id}`,
                dataset: { platform: c.platform },
                'aria-label': `Add ${label}`,
                onchange: (/** @type {Event} */ ev) => {
                  const box = /** @type {HTMLInputElement} */ (ev.target);
                  if (box.checked) pick({ platform: c.platform, id: c.id, label });
                  else {
                    picked.delete(box.value);
                    showChosen();
                  }
                },
              }),
              ' ',
              h('strong', null, label),
              ` · ${platformName(c.platform)}`,
              c.identifiers?.length ? h('span', { class: 'muted' }, ` · ${c.identifiers.join(', ')}`) : null,
            ),
          );
        }),
      );
      const unlisted =
        res.supported === false
          ? ' This platform cannot list contacts: type a number or username and choose “Add exactly this”.'
          : '';
      status.textContent = `${contacts.length} contact${contacts.length === 1 ? '' : 's'}.${unlisted}`;
      showChosen();
    });
  });

  create.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (!picked.size) return replace(out, h('p', { class: 'error', role: 'alert' }, 'Add at least one person.'));
    busy(create, out, async () => {
      /** @type {Schemas['StartedChat']} */
      const res = await api.post('/api/chats', {
        platform: platformOf(),
        participants: [...picked.values()].map((p) => p.id),
        name: value(create, 'name'),
      });
      navigate(`/rooms/${api.seg(res.roomId)}`);
    });
  });
  showChosen();
}
