// @ts-check
// One message of a conversation, from its visible metadata and its opened envelope
// (`{body, content}`, plus the rich fields msgtype, media, replyTo, editedAt, reactions when the
// server sends them). Undecryptable and deleted messages say so.
import * as api from '../api.js';
import { h, when, fullTime } from './dom.js';
import { toast } from './notice.js';
import { mediaBox } from './media.js';
import { previewSlot } from './linkpreview.js';

/**
 * What a message's buttons do in its conversation; `scope` holds the conversation's blob: URLs.
 * @typedef {{
 *   roomId: string,
 *   reply: (eventId: string, text: string) => void,
 *   changed: () => void,
 *   scope: import('./media.js').BlobScope,
 * }} MessageCtx
 */

/** Quick reactions offered on every message. */
const QUICK = ['👍', '❤️', '😂', '😮', '🙏'];

/**
 * Avatar images already fetched (blob: URLs by avatar route), shared by every message.
 * @type {Map<string, Promise<string | null>>}
 */
const avatars = new Map();

/**
 * The sender's avatar: initials at once, the image once fetched (with the bearer token, shown
 * from a blob: URL; none when the member has no avatar or it cannot be fetched).
 * @param {string} name @param {string | null | undefined} url
 */
export function senderAvatar(name, url) {
  const box = h('span', { class: 'avatar small', 'aria-hidden': 'true' }, initials(name));
  if (typeof url === 'string' && url.startsWith('/api/')) {
    if (!avatars.has(url)) {
      avatars.set(
        url,
        api
          .send('GET', url)
          .then(async (r) => URL.createObjectURL(await r.blob()))
          .catch(() => null),
      );
    }
    avatars.get(url)?.then((src) => {
      if (src) box.replaceChildren(h('img', { src, alt: '' }));
    });
  }
  return box;
}

/** Up to two initials of a name ("Anna Berg" → "AB"). @param {string} name */
export function initials(name) {
  const words = name
    .replace(/^[@!#+]/, '')
    .split(/[\s:_.-]+/)
    .filter(Boolean);
  const letters = words
    .slice(0, 2)
    .map((w) => [...w][0] || '')
    .join('');
  return (letters || '?').toUpperCase();
}

/**
 * @param {MessageCtx} ctx @param {Schemas['EncryptedMessage']} m @param {any} c opened content or null
 */
export function messageItem(ctx, m, c) {
  // The name as it was when the message was sent (sealed with the content); the Matrix ID
  // only when the envelope cannot be opened.
  const name = typeof c?.senderName === 'string' && c.senderName ? c.senderName : m.senderId;
  const who = m.isMine ? 'You' : name;
  const meta = h(
    'div',
    { class: 'meta' },
    m.isMine ? null : senderAvatar(name, c?.senderAvatarUrl),
    h('span', { class: 'sender', title: m.senderId }, who),
    h('time', { title: fullTime(m.timestamp) }, when(m.timestamp)),
    m.edited || c?.editedAt ? h('span', { class: 'edited' }, '(edited)') : null,
  );
  let body;
  if (m.redacted) body = h('p', { class: 'gone' }, 'This message was deleted.');
  else if (!c) body = h('p', { class: 'gone' }, 'This message cannot be opened with the key of this browser.');
  else body = content(ctx, m, c);
  return h(
    'li',
    { class: `msg${m.isMine ? ' mine' : ''}`, dataset: { eventId: m.eventId, id: m.id } },
    meta,
    body,
    c ? reactions(ctx, m, c) : null,
    c && !m.redacted ? actions(ctx, m, c) : null,
  );
}

/** @param {MessageCtx} ctx @param {string} eventId @param {string} method @param {string} [key] */
async function react(ctx, eventId, method, key) {
  const base = `/api/rooms/${api.seg(ctx.roomId)}/messages/${api.seg(eventId)}/reactions`;
  try {
    if (method === 'POST') await api.post(base, { key });
    else await api.del(`${base}/${api.seg(key || '')}`);
    ctx.changed();
  } catch (e) {
    toast(api.describe(e), true);
  }
}

/**
 * Reply, react, and for one's own text: edit and delete for everyone.
 * @param {MessageCtx} ctx
 * @param {Schemas['EncryptedMessage']} m
 * @param {any} c
 */
function actions(ctx, m, c) {
  const text = typeof c.body === 'string' ? c.body : '';
  const path = `/api/rooms/${api.seg(ctx.roomId)}/messages/${api.seg(m.eventId)}`;
  const picker = h(
    'span',
    { class: 'picker', hidden: true },
    QUICK.map((k) =>
      h(
        'button',
        {
          type: 'button',
          class: 'link',
          'aria-label': `React with ${k}`,
          onclick: () => react(ctx, m.eventId, 'POST', k),
        },
        k,
      ),
    ),
  );
  const isText = !c.media && (c.msgtype || m.msgtype) === 'm.text';
  return h(
    'div',
    { class: 'msgactions' },
    h(
      'button',
      {
        type: 'button',
        class: 'link',
        'aria-label': `Reply to ${text.slice(0, 40) || 'this message'}`,
        onclick: () => ctx.reply(m.eventId, text),
      },
      'Reply',
    ),
    h(
      'button',
      {
        type: 'button',
        class: 'link',
        'aria-expanded': 'false',
        onclick: (/** @type {Event} */ ev) => {
          picker.hidden = !picker.hidden;
          /** @type {HTMLElement} */ (ev.currentTarget).setAttribute('aria-expanded', String(!picker.hidden));
        },
      },
      'React',
    ),
    picker,
    m.isMine && isText
      ? h(
          'button',
          {
            type: 'button',
            class: 'link',
            onclick: async () => {
              const next = prompt('Edit your message', text);
              if (next === null || !next.trim() || next === text) return;
              try {
                await api.put(path, { content: next.trim() });
                ctx.changed();
              } catch (e) {
                toast(api.describe(e), true);
              }
            },
          },
          'Edit',
        )
      : null,
    m.isMine
      ? h(
          'button',
          {
            type: 'button',
            class: 'link',
            onclick: async () => {
              if (!confirm('Delete this message for everyone in the conversation?')) return;
              try {
                await api.del(path);
                ctx.changed();
              } catch (e) {
                toast(api.describe(e), true);
              }
            },
          },
          'Delete',
        )
      : null,
  );
}

/** @param {MessageCtx} ctx @param {Schemas['EncryptedMessage']} m @param {any} c */
function content(ctx, m, c) {
  const text = typeof c.body === 'string' ? c.body : '';
  const parts = [];
  if (c.replyTo)
    parts.push(
      h(
        'blockquote',
        { class: 'reply' },
        `In reply to ${typeof c.replyTo === 'string' ? c.replyTo : c.replyTo.eventId || 'a message'}`,
      ),
    );
  const media = c.media;
  if (media && typeof media === 'object') parts.push(mediaBox(ctx.scope, ctx.roomId, m, media, c));
  const msgtype = c.msgtype || c.content?.msgtype || m.msgtype;
  if (text && !(media && text === media.name)) {
    parts.push(
      h('p', { class: msgtype === 'm.emote' ? 'text emote' : msgtype === 'm.notice' ? 'text notice' : 'text' }, text),
    );
    if (!media) parts.push(previewSlot(ctx.scope, text));
  }
  if (!parts.length) parts.push(h('p', { class: 'gone' }, `Unsupported message (${msgtype || 'unknown'}).`));
  return h('div', { class: 'body' }, parts);
}

/**
 * Reaction chips; one's own toggles off.
 * @param {MessageCtx} ctx
 * @param {Schemas['EncryptedMessage']} m
 * @param {any} c
 */
function reactions(ctx, m, c) {
  if (!Array.isArray(c.reactions) || !c.reactions.length) return null;
  return h(
    'ul',
    { class: 'reactions', 'aria-label': 'Reactions' },
    c.reactions.map((/** @type {{key: string, count: number, mine: boolean}} */ r) =>
      h(
        'li',
        null,
        h(
          'button',
          {
            type: 'button',
            class: r.mine ? 'chip mine' : 'chip',
            'aria-pressed': String(r.mine),
            'aria-label': `${r.key} ${r.count}${r.mine ? ', yours: remove' : ': add yours'}`,
            onclick: () => react(ctx, m.eventId, r.mine ? 'DELETE' : 'POST', r.key),
          },
          `${r.key} ${r.count}`,
        ),
      ),
    ),
  );
}
