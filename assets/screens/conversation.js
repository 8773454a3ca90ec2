// @ts-check
// One conversation: history paged back as you scroll up, envelopes opened in the browser, send
// (Enter sends, Shift+Enter adds a line), schedule, read marker, room actions, linked group;
// who is typing, "Seen" and the draft (ui/live.js); attachments shown inline from blob: URLs
// that are all revoked when the conversation closes (ui/media.js), files dropped on it sent
// through the composer (ui/composer.js).
import * as api from '../api.js';
import { openJson } from '../crypto.js';
import { navigate } from '../router.js';
import { getRoom, roomAction } from '../rooms.js';
import { state, on, platformName } from '../state.js';
import { h, replace } from '../ui/dom.js';
import { errorBox, toast } from '../ui/notice.js';
import { messageItem } from '../ui/message.js';
import { levelControls } from '../ui/levels.js';
import { showSeen, typingLine } from '../ui/live.js';
import { BlobScope } from '../ui/media.js';
import { composeForm } from '../ui/composer.js';

const PAGE = 50;

/** @param {HTMLElement} main @param {{roomId: string}} params */
export async function render(main, { roomId }) {
  const head = h('div', { class: 'bar convhead' }, h('h1', null, 'Conversation'));
  const info = h('div', { class: 'roominfo' });
  const log = h('ol', { class: 'messages', 'aria-label': 'Messages', 'aria-live': 'polite', tabindex: '0' });
  const more = h('p', { class: 'muted center', role: 'status' });
  const out = h('div', { class: 'out' });
  const pane = h('div', { class: 'scroller' }, more, log);
  // Attachments load when they come near the visible part of the message pane.
  const scope = new BlobScope(pane);
  /** @type {import('../ui/message.js').MessageCtx} */
  const ctx = {
    roomId,
    scope,
    reply: (id, text) => composer.dispatchEvent(new CustomEvent('reply', { detail: { id, text } })),
    changed: () => refreshNewest(),
  };
  const composer = composeForm(roomId, out, () => refreshNewest(true));
  // A file dropped on the messages or the composer is staged in the composer. (Not on `main`:
  // it outlives the screen, and its listeners would keep the conversation alive.)
  /** @param {DragEvent} ev */
  const dragOver = (ev) => {
    if (ev.dataTransfer?.types.includes('Files')) ev.preventDefault();
  };
  /** @param {DragEvent} ev */
  const drop = (ev) => {
    const dropped = ev.dataTransfer?.files?.[0];
    if (!dropped || composer.hidden) return;
    ev.preventDefault();
    composer.dispatchEvent(new CustomEvent('attach', { detail: dropped }));
  };
  pane.addEventListener('dragover', dragOver);
  pane.addEventListener('drop', drop);
  composer.addEventListener('dragover', dragOver);
  composer.addEventListener('drop', drop);
  const typing = typingLine((id) => nameOf(id));
  main.append(head, info, pane, typing.el, out, composer);
  main.classList.add('conversation');

  /** @type {import('../rooms.js').RoomView} */
  let room;
  try {
    room = await getRoom(roomId);
  } catch (e) {
    replace(head, h('h1', null, 'Conversation'));
    main.append(errorBox(e));
    composer.hidden = true;
    return () => scope.release();
  }
  renderHead();
  composer.dispatchEvent(new CustomEvent('draft', { detail: room.hasDraft }));
  const linked = h('div');
  info.after(linked);
  linkedGroup(roomId, linked);

  function renderHead() {
    /**
     * A flag's button, labelled with what it does now ("Archive" / "Unarchive").
     * @param {'pinned' | 'muted' | 'favorite' | 'archived'} flag
     * @param {string} on_
     * @param {string} off
     * @param {string} label
     * @param {string} undo
     */
    const toggle = (flag, on_, off, label, undo) =>
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          'aria-pressed': String(!!room[flag]),
          onclick: async () => {
            try {
              await roomAction(roomId, room[flag] ? off : on_);
              room = await getRoom(roomId);
              renderHead();
            } catch (e) {
              toast(api.describe(e), true);
            }
          },
        },
        room[flag] ? undo : label,
      );
    replace(
      head,
      h('a', { href: '/inbox', class: 'back', 'aria-label': 'Back to the inbox' }, '←'),
      h('h1', null, room.title),
      h('span', { class: `platform ${room.platform || 'matrix'}` }, platformName(room.platform)),
      h(
        'div',
        { class: 'actions', role: 'group', 'aria-label': 'Conversation actions' },
        room.isDirect
          ? null
          : h('a', { href: `/rooms/${api.seg(roomId)}/details`, class: 'button secondary' }, 'Group details'),
        toggle('pinned', 'pin', 'unpin', 'Pin', 'Unpin'),
        levelControls(roomId, room.notifications, async () => {
          room = await getRoom(roomId);
          renderHead();
        }),
        toggle('favorite', 'favorite', 'unfavorite', 'Favourite', 'Unfavourite'),
        toggle('archived', 'archive', 'unarchive', 'Archive', 'Unarchive'),
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            onclick: async () => {
              try {
                await roomAction(roomId, 'unread');
                toast('Marked unread');
                navigate('/inbox');
              } catch (e) {
                toast(api.describe(e), true);
              }
            },
          },
          'Mark unread',
        ),
      ),
    );
    if (room.membership === 'invite') {
      composer.hidden = true;
      replace(
        info,
        h('p', null, `You are invited${room.invitedBy ? ` by ${room.invitedBy}` : ''}. `),
        h(
          'button',
          {
            type: 'button',
            onclick: async () => {
              await roomAction(roomId, 'accept');
              location.reload();
            },
          },
          'Accept',
        ),
      );
    } else replace(info, room.meta?.topic ? h('p', { class: 'muted' }, room.meta.topic) : '');
  }

  /** @type {Map<string, HTMLElement>} */
  const shown = new Map();
  /** @type {Map<string, string>} */
  const signature = new Map();
  /** Timestamps of the shown messages by event id (where receipts land). @type {Map<string, number>} */
  const times = new Map();
  /** @param {string} userId */
  const nameOf = (userId) => (userId === room?.recipientId ? room.meta?.recipientName || room.title : userId);
  async function loadReceipts() {
    try {
      /** @type {Schemas['ReceiptsResult']} */
      const res = await api.get(`/api/rooms/${api.seg(roomId)}/receipts`);
      showSeen(log, times, res.receipts, room.isDirect, nameOf);
    } catch {
      /* none shown */
    }
  }
  let oldest = Infinity;
  let exhausted = false;
  let loadingOlder = false;

  /**
   * Opens and places a page of messages (newest first from the server).
   * @param {Schemas['EncryptedMessage'][]} page
   * @param {'top' | 'bottom'} where
   */
  async function place(page, where) {
    const opened = await Promise.all(
      page.map(async (m) => ({ m, c: m.redacted ? null : await openJson(state.keys, m.encryptedContent) })),
    );
    /** @type {HTMLElement[]} */
    const fresh = [];
    for (const { m, c } of opened.reverse()) {
      oldest = Math.min(oldest, m.timestamp);
      times.set(m.eventId, m.timestamp);
      // Redraw a known message only when what it shows changed (keeps open pickers).
      const sig = JSON.stringify([m.edited, m.redacted, c]);
      const old = shown.get(m.id);
      if (old && signature.get(m.id) === sig) continue;
      signature.set(m.id, sig);
      const el = messageItem(ctx, m, c);
      shown.set(m.id, el);
      if (old) old.replaceWith(el);
      else fresh.push(el);
    }
    if (where === 'top') log.prepend(...fresh);
    else log.append(...fresh);
    return fresh.length;
  }

  async function loadOlder() {
    if (exhausted || loadingOlder) return;
    loadingOlder = true;
    more.textContent = 'Loading earlier messages…';
    const scroller = /** @type {HTMLElement} */ (log.parentElement);
    const before = scroller.scrollHeight;
    try {
      /** @type {{messages: Schemas['EncryptedMessage'][]}} */
      const page = await api.get('/api/messages', {
        query: { roomId, limit: PAGE, before: Number.isFinite(oldest) ? oldest : undefined },
      });
      await place(page.messages, 'top');
      exhausted = page.messages.length < PAGE;
      more.textContent = exhausted ? (shown.size ? 'Beginning of the conversation' : 'No messages yet.') : '';
      scroller.scrollTop += scroller.scrollHeight - before;
    } catch (e) {
      replace(more, errorBox(e));
    } finally {
      loadingOlder = false;
    }
  }

  /** @param {boolean} [toEnd] scroll to the newest (after the user's own send) */
  async function refreshNewest(toEnd = false) {
    try {
      const page = await api.get('/api/messages', { query: { roomId, limit: 20 } });
      const scroller = /** @type {HTMLElement} */ (log.parentElement);
      const atEnd = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
      // Known messages are redrawn in place (edits, reactions, deletions), new ones appended;
      // only new ones move the read marker (a read answers room.updated, which refreshes).
      const fresh = await place(page.messages, 'bottom');
      if (atEnd || toEnd) scroller.scrollTop = scroller.scrollHeight;
      loadReceipts();
      if (fresh) markRead();
    } catch (e) {
      toast(api.describe(e), true);
    }
  }

  function markRead() {
    if (room.membership === 'join' && document.visibilityState === 'visible')
      roomAction(roomId, 'read').catch(() => {});
  }

  await loadOlder();
  loadReceipts();
  const scroller = /** @type {HTMLElement} */ (log.parentElement);
  scroller.scrollTop = scroller.scrollHeight;
  scroller.addEventListener('scroll', () => {
    if (scroller.scrollTop < 120) loadOlder();
  });
  markRead();

  const offs = [
    on('sync', (ev) => {
      if (ev.roomId !== roomId) return;
      if (ev.type === 'message.created') refreshNewest();
      if (ev.type === 'typing') typing.show(ev.userIds || []);
      if (ev.type === 'receipt') loadReceipts();
      if (ev.type === 'draft.updated') {
        getRoom(roomId)
          .then((r) => composer.dispatchEvent(new CustomEvent('draft', { detail: r.hasDraft })))
          .catch(() => {});
      }
      if (ev.type === 'room.updated') {
        getRoom(roomId)
          .then((r) => {
            const changed =
              ['pinned', 'muted', 'favorite', 'archived', 'membership'].some(
                (k) => /** @type {any} */ (r)[k] !== /** @type {any} */ (room)[k],
              ) ||
              r.notifications.level !== room.notifications.level ||
              r.notifications.snoozeUntil !== room.notifications.snoozeUntil;
            room = r;
            if (changed) renderHead();
          })
          .catch(() => {});
        refreshNewest();
      }
    }),
    on('resync', () => refreshNewest()),
  ];
  return () => {
    for (const off of offs) off();
    // Every attachment's blob: URL (and a staged file's preview) goes with the conversation.
    scope.release();
    composer.dispatchEvent(new Event('release'));
  };
}

/** The linked group of the room, with links to its other rooms. @param {string} roomId @param {HTMLElement} into */
async function linkedGroup(roomId, into) {
  try {
    /** @type {Schemas['RoomLinkedGroupResult']} */
    const res = await api.get(`/api/rooms/${api.seg(roomId)}/linked-group`);
    const g = res.linkedGroup;
    if (!g) return;
    into.append(
      h(
        'nav',
        { class: 'linked', 'aria-label': 'Linked conversations' },
        h('span', null, `Linked group${g.name ? ` “${g.name}”` : ''}: `),
        g.rooms
          .filter((r) => r.roomId !== roomId)
          .map((r) =>
            h(
              'a',
              { href: `/rooms/${api.seg(r.roomId)}`, class: 'chip' },
              `${state.meta.get(r.roomId)?.name || r.roomId} (${platformName(r.platform)})`,
            ),
          ),
      ),
    );
  } catch {
    /* no group */
  }
}
