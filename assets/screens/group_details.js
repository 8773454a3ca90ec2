// @ts-check
// A group's details: its members (GET /api/rooms/{roomId}/members, with what the user may
// change), rename, topic, picture, invite, remove (with a reason) and leave. Controls the room's
// power levels do not allow are not offered; the homeserver's refusal is shown in words.
import * as api from '../api.js';
import { navigate } from '../router.js';
import { getRoom } from '../rooms.js';
import { platformName, state } from '../state.js';
import { h, replace, field } from '../ui/dom.js';
import { busy, errorBox, toast } from '../ui/notice.js';

/** @param {HTMLElement} main @param {{roomId: string}} params */
export async function render(main, { roomId }) {
  const base = `/api/rooms/${api.seg(roomId)}`;
  const head = h('div', { class: 'bar' }, h('h1', null, 'Group details'));
  const body = h('div', { class: 'stack' });
  main.append(head, body);
  /** @type {import('../rooms.js').RoomView} */
  let room;
  /** @type {Schemas['GroupMembersResult']} */
  let members;
  try {
    [room, members] = await Promise.all([getRoom(roomId), api.get(`${base}/members`)]);
  } catch (e) {
    body.append(errorBox(e));
    return;
  }
  const can = members.permissions;
  const back = `/rooms/${api.seg(roomId)}`;

  /**
   * A one-field form that PUTs or POSTs and reloads the screen.
   * @param {string} title
   * @param {HTMLElement} input
   * @param {(v: string) => Promise<unknown>} act
   * @param {string} done
   */
  const oneField = (title, input, act, done) => {
    const out = h('div', { class: 'out' });
    const form = h(
      'form',
      { class: 'card stack', 'aria-label': title },
      h('h2', null, title),
      input,
      h('button', { type: 'submit' }, title),
      out,
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const v = /** @type {HTMLInputElement} */ (input.querySelector('input, textarea')).value;
      busy(form, out, async () => {
        await act(v);
        toast(done);
        await reload();
      });
    });
    return form;
  };

  async function reload() {
    main.replaceChildren();
    await render(main, { roomId });
  }

  replace(
    head,
    h('a', { href: back, class: 'back', 'aria-label': 'Back to the conversation' }, '←'),
    h('h1', null, room.title),
    h('span', { class: `platform ${room.platform || 'matrix'}` }, platformName(room.platform)),
  );
  const topic = room.meta?.topic ?? room.topic ?? '';
  if (topic) body.append(h('p', { class: 'muted' }, topic));

  if (can.rename)
    body.append(
      oneField(
        'Rename',
        field('Group name', { name: 'name', value: room.meta?.name ?? room.title, maxlength: 255 }),
        (v) => api.put(`${base}/name`, { name: v }),
        'Renamed',
      ),
    );
  if (can.setTopic)
    body.append(
      oneField(
        'Set topic',
        field('Topic', { tag: 'textarea', name: 'topic', value: topic, maxlength: 2048 }),
        (v) => api.put(`${base}/topic`, { topic: v }),
        'Topic set',
      ),
    );
  if (can.setAvatar) {
    const out = h('div', { class: 'out' });
    const form = h(
      'form',
      { class: 'card stack', 'aria-label': 'Picture' },
      h('h2', null, 'Picture'),
      field('Image (PNG, JPEG, GIF or WebP, at most 5 MB)', {
        type: 'file',
        name: 'file',
        accept: 'image/png,image/jpeg,image/gif,image/webp',
        required: true,
      }),
      h('button', { type: 'submit' }, 'Set picture'),
      out,
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const file = /** @type {HTMLInputElement} */ (form.elements.namedItem('file')).files?.[0];
      if (!file) return;
      if (file.size > 5 * 1024 * 1024)
        return replace(out, h('p', { class: 'error', role: 'alert' }, 'The picture is larger than 5 MB.'));
      const data = new FormData();
      data.append('file', file, file.name);
      busy(form, out, async () => {
        await api.post(`${base}/avatar`, data);
        toast('Picture set');
      });
    });
    body.append(form);
  }
  if (can.invite)
    body.append(
      oneField(
        'Invite',
        field('Matrix ID (a bridged contact: its Matrix ID from New chat)', {
          name: 'userId',
          placeholder: '@alice:example.org',
          maxlength: 255,
        }),
        (v) => api.post(`${base}/members`, { userId: v.trim() }),
        'Invited',
      ),
    );

  const list = h(
    'ul',
    { class: 'results', 'aria-label': 'Members' },
    members.members.map((m) => {
      const label = m.displayName || m.userId;
      const badge = m.membership === 'join' ? '' : m.membership === 'invite' ? ' · invited' : ' · banned';
      return h(
        'li',
        null,
        h('strong', null, label),
        h('span', { class: 'muted' }, ` ${m.userId}${badge}${m.powerLevel >= 100 ? ' · admin' : ''} `),
        can.remove && m.membership !== 'ban' && m.userId !== state.user?.matrixUserId
          ? h(
              'button',
              {
                type: 'button',
                class: 'secondary',
                'aria-label': `Remove ${label}`,
                onclick: (/** @type {Event} */ ev) =>
                  removeMember(/** @type {HTMLElement} */ (ev.target), m.userId, label),
              },
              'Remove',
            )
          : null,
      );
    }),
  );
  body.append(h('section', { class: 'card' }, h('h2', null, `Members (${members.total})`), list));

  /** @param {HTMLElement} button @param {string} userId @param {string} label */
  function removeMember(button, userId, label) {
    const reason = window.prompt(`Remove ${label}? A reason shown to the group (optional):`, '');
    if (reason === null) return;
    busy(button, null, async () => {
      await api.del(`${base}/members/${api.seg(userId)}`, {
        body: reason.trim() ? { reason: reason.trim() } : undefined,
      });
      toast(`${label} removed`);
      await reload();
    });
  }

  const leave = h(
    'button',
    {
      type: 'button',
      class: 'danger',
      onclick: () => {
        if (!window.confirm(`Leave ${room.title}?`)) return;
        busy(leave, null, async () => {
          await api.post(`${base}/leave`);
          toast('You left the group');
          navigate('/inbox');
        });
      },
    },
    'Leave group',
  );
  body.append(h('section', { class: 'card' }, leave));
}
