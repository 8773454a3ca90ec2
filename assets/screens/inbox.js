// @ts-check
// The unified inbox: rooms and e-mail threads in one list, sorted by importance, recency or
// unread; filters for active, pinned, muted, archived and invitations; live from /api/sync.
import * as api from '../api.js';
import { lastLine, listRooms, roomAction } from '../rooms.js';
import { on, platformName } from '../state.js';
import { h, replace, when, fullTime } from '../ui/dom.js';
import { errorBox, toast } from '../ui/notice.js';

/** @typedef {import('../rooms.js').RoomView} RoomView */

const FILTERS = [
  ['active', 'All'],
  ['unread', 'Unread'],
  ['pinned', 'Pinned'],
  ['muted', 'Muted'],
  ['invites', 'Invitations'],
  ['archived', 'Archived'],
];
const SORTS = [
  ['importance', 'Importance'],
  ['recent', 'Recent'],
  ['unread', 'Unread first'],
];

/** Remembered across visits in this tab. */
const prefs = { filter: 'active', sort: /** @type {'importance' | 'recent' | 'unread'} */ ('importance') };

/** @param {HTMLElement} main */
export function render(main) {
  const list = h('ul', { class: 'inbox', 'aria-label': 'Conversations', 'aria-busy': 'true' });
  const status = h('p', { class: 'muted', role: 'status' }, 'Loading conversations…');
  const filterBar = h(
    'div',
    { class: 'chips', role: 'group', 'aria-label': 'Filter' },
    FILTERS.map(([id, text]) =>
      h(
        'button',
        {
          type: 'button',
          class: 'chip',
          'aria-pressed': String(prefs.filter === id),
          onclick: () => {
            prefs.filter = id;
            mark();
            load();
          },
        },
        text,
      ),
    ),
  );
  const sortSel = h(
    'select',
    {
      'aria-label': 'Sort by',
      onchange: () => {
        prefs.sort = /** @type {any} */ (sortSel.value);
        load();
      },
    },
    SORTS.map(([id, text]) => h('option', { value: id, selected: prefs.sort === id }, text)),
  );
  main.append(
    h(
      'div',
      { class: 'bar' },
      h('h1', null, 'Inbox'),
      sortSel,
      h('a', { class: 'button', href: '/new' }, 'New chat'),
      h('a', { class: 'button secondary', href: '/mail/compose' }, 'Write e-mail'),
      h('a', { class: 'button secondary', href: '/mail/drafts' }, 'Drafts'),
    ),
    filterBar,
    status,
    list,
  );
  function mark() {
    filterBar.querySelectorAll('button').forEach((b, i) => {
      b.setAttribute('aria-pressed', String(FILTERS[i][0] === prefs.filter));
    });
  }

  let loading = 0;
  async function load() {
    const n = ++loading;
    list.setAttribute('aria-busy', 'true');
    try {
      const items = await gather(prefs.filter, prefs.sort);
      if (n !== loading) return;
      replace(
        list,
        items.map((it) => ('roomId' in it ? roomRow(it, load) : threadRow(it))),
      );
      status.textContent = items.length
        ? `${items.length} conversation${items.length === 1 ? '' : 's'}`
        : emptyText(prefs.filter);
    } catch (e) {
      if (n === loading) replace(status, errorBox(e));
    } finally {
      if (n === loading) list.setAttribute('aria-busy', 'false');
    }
  }
  load();

  let timer = 0;
  const soon = () => {
    clearTimeout(timer);
    timer = window.setTimeout(load, 250);
  };
  const offs = [
    on('sync', (ev) => {
      if (ev.type !== 'reminder.due' && ev.type !== 'scheduled.updated') soon();
    }),
    on('resync', soon),
  ];
  return () => {
    clearTimeout(timer);
    for (const off of offs) off();
  };
}

/** @param {string} filter */
function emptyText(filter) {
  if (filter === 'invites') return 'No invitations.';
  if (filter === 'archived') return 'No archived conversations.';
  return 'No conversations yet. Connect a chat app under Bridges or a mailbox under Settings.';
}

/**
 * Rooms of the filter, plus e-mail threads in the views where they belong.
 * @param {string} filter @param {'importance' | 'recent' | 'unread'} sort
 * @returns {Promise<(RoomView | Schemas['EmailThread'])[]>}
 */
async function gather(filter, sort) {
  const [rooms, threads] = await Promise.all([
    listRooms(sort, filter === 'archived' ? 'true' : 'false'),
    filter === 'active' || filter === 'unread' ? mailThreads() : Promise.resolve([]),
  ]);
  /** @type {(r: RoomView) => boolean} */
  const keep =
    {
      active: () => true,
      archived: () => true,
      // A room the user marked unread counts as unread whatever its count.
      unread: (/** @type {RoomView} */ r) => r.unreadCount > 0 || r.markedUnread,
      pinned: (/** @type {RoomView} */ r) => r.pinned,
      muted: (/** @type {RoomView} */ r) => r.muted,
      invites: (/** @type {RoomView} */ r) => r.membership === 'invite',
    }[filter] || (() => true);
  const shown = rooms.filter(keep);
  const mail = threads.filter((t) => filter !== 'unread' || t.unread);
  if (sort !== 'recent') return [...shown, ...mail];
  // Recent: one timeline of both, pinned rooms still first.
  /** @type {(x: RoomView | Schemas['EmailThread']) => number} */
  const at = (x) => ('roomId' in x ? x.lastMessageAt || 0 : Date.parse(x.lastMessageAt));
  const pinned = shown.filter((r) => r.pinned);
  const rest = [...shown.filter((r) => !r.pinned), ...mail].sort((a, b) => at(b) - at(a));
  return [...pinned, ...rest];
}

/** E-mail threads of the inbox; none when no mailbox is connected. */
async function mailThreads() {
  try {
    /** @type {Schemas['EmailThreadList']} */
    const page = await api.get('/api/email/threads', { query: { label: 'INBOX', limit: 50 } });
    return page.threads;
  } catch {
    return [];
  }
}

/** @param {RoomView} room @param {() => void} reload */
function roomRow(room, reload) {
  const badges = h(
    'span',
    { class: 'badges' },
    h('span', { class: `platform ${room.platform || 'matrix'}` }, platformName(room.platform)),
    room.pinned ? h('span', { class: 'flag', title: 'Pinned' }, 'Pinned') : null,
    room.muted ? h('span', { class: 'flag', title: 'Muted' }, 'Muted') : null,
    room.favorite ? h('span', { class: 'flag', title: 'Favourite' }, '★') : null,
    room.hasDraft ? h('span', { class: 'flag draft', title: 'Draft' }, 'Draft') : null,
  );
  const unread =
    room.unreadCount > 0
      ? h('span', { class: 'count', 'aria-label': `${room.unreadCount} unread` }, String(room.unreadCount))
      : room.markedUnread
        ? h('span', { class: 'count marked', 'aria-label': 'marked unread' }, '•')
        : null;
  if (room.membership === 'invite') {
    const act = (/** @type {string} */ action) => async () => {
      try {
        await roomAction(room.roomId, action);
        toast(action === 'accept' ? `Joined ${room.title}` : `Declined ${room.title}`);
        reload();
      } catch (e) {
        toast(api.describe(e), true);
      }
    };
    return h(
      'li',
      { class: 'row invite', dataset: { roomId: room.roomId } },
      h('div', { class: 'avatar', 'aria-hidden': 'true' }, initial(room.title)),
      h(
        'div',
        { class: 'main' },
        h('span', { class: 'title' }, room.title),
        h('span', { class: 'sub' }, `Invitation${room.invitedBy ? ` from ${room.invitedBy}` : ''}`),
        badges,
      ),
      h(
        'div',
        { class: 'actions' },
        h(
          'button',
          { type: 'button', onclick: act('accept'), 'aria-label': `Accept invitation to ${room.title}` },
          'Accept',
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            onclick: act('decline'),
            'aria-label': `Decline invitation to ${room.title}`,
          },
          'Decline',
        ),
      ),
    );
  }
  return h(
    'li',
    { class: `row${room.unreadCount || room.markedUnread ? ' unread' : ''}`, dataset: { roomId: room.roomId } },
    h(
      'a',
      { href: `/rooms/${api.seg(room.roomId)}`, class: 'rowlink' },
      h('div', { class: 'avatar', 'aria-hidden': 'true' }, initial(room.title)),
      h(
        'div',
        { class: 'main' },
        h('span', { class: 'title' }, room.title),
        room.last
          ? h('span', { class: 'sub last' }, lastLine(room.last, room.isDirect))
          : room.meta?.topic
            ? h('span', { class: 'sub' }, room.meta.topic)
            : null,
        badges,
      ),
      h('div', { class: 'side' }, h('time', { title: fullTime(room.lastMessageAt) }, when(room.lastMessageAt)), unread),
    ),
  );
}

/** @param {Schemas['EmailThread']} t */
function threadRow(t) {
  const who = t.participants
    .map((p) => p.name || p.email)
    .slice(0, 3)
    .join(', ');
  return h(
    'li',
    { class: `row mail${t.unread ? ' unread' : ''}`, dataset: { threadId: t.id } },
    h(
      'a',
      { href: `/mail/${api.seg(t.id)}`, class: 'rowlink' },
      h('div', { class: 'avatar', 'aria-hidden': 'true' }, '@'),
      h(
        'div',
        { class: 'main' },
        h('span', { class: 'title' }, t.subject || '(no subject)'),
        h('span', { class: 'sub' }, `${who} — ${t.snippet}`),
        h(
          'span',
          { class: 'badges' },
          h('span', { class: 'platform email' }, 'E-mail'),
          t.starred ? h('span', { class: 'flag' }, '★') : null,
        ),
      ),
      h(
        'div',
        { class: 'side' },
        h('time', { title: fullTime(t.lastMessageAt) }, when(t.lastMessageAt)),
        t.unread ? h('span', { class: 'count', 'aria-label': 'unread' }, String(t.messageCount)) : null,
      ),
    ),
  );
}

/** @param {string} s */
function initial(s) {
  const c = s.replace(/^[@!#+]/, '').trim()[0] || '?';
  return c.toUpperCase();
}
