// @ts-check
// One message of a conversation, from its visible metadata and its opened envelope
// (`{body, content}`, plus the rich fields msgtype, media, replyTo, editedAt, reactions when the
// server sends them). Undecryptable and deleted messages say so.
import * as api from '../api.js';
import { h, when, fullTime } from './dom.js';
import { toast } from './notice.js';

/**
 * @param {string} roomId @param {Schemas['EncryptedMessage']} m @param {any} c opened content or null
 */
export function messageItem(roomId, m, c) {
  const who = m.isMine ? 'You' : m.senderId;
  const meta = h('div', { class: 'meta' },
    h('span', { class: 'sender' }, who),
    h('time', { title: fullTime(m.timestamp) }, when(m.timestamp)),
    m.edited || c?.editedAt ? h('span', { class: 'edited' }, '(edited)') : null,
  );
  let body;
  if (m.redacted) body = h('p', { class: 'gone' }, 'This message was deleted.');
  else if (!c) body = h('p', { class: 'gone' }, 'This message cannot be opened with the key of this browser.');
  else body = content(roomId, m, c);
  return h('li', { class: `msg${m.isMine ? ' mine' : ''}`, dataset: { eventId: m.eventId, id: m.id } },
    meta, body, c ? reactions(c) : null);
}

/** @param {string} roomId @param {Schemas['EncryptedMessage']} m @param {any} c */
function content(roomId, m, c) {
  const text = typeof c.body === 'string' ? c.body : '';
  const parts = [];
  if (c.replyTo) parts.push(h('blockquote', { class: 'reply' }, `In reply to ${typeof c.replyTo === 'string' ? c.replyTo : c.replyTo.eventId || 'a message'}`));
  const media = c.media;
  if (media && typeof media === 'object') parts.push(mediaBox(roomId, m, media));
  const msgtype = c.msgtype || c.content?.msgtype || m.msgtype;
  if (text && !(media && text === media.name)) {
    parts.push(h('p', { class: msgtype === 'm.emote' ? 'text emote' : msgtype === 'm.notice' ? 'text notice' : 'text' }, text));
  }
  if (!parts.length) parts.push(h('p', { class: 'gone' }, `Unsupported message (${msgtype || 'unknown'}).`));
  return h('div', { class: 'body' }, parts);
}

/**
 * Media: an image thumbnail loads on request (bytes through the API with the bearer token, shown
 * from a blob: URL); other files download.
 * @param {string} roomId @param {Schemas['EncryptedMessage']} m @param {any} media
 */
function mediaBox(roomId, m, media) {
  const label = `${media.name || 'file'} (${media.mimetype || 'file'}, ${Math.ceil((media.size || 0) / 1024)} KB)`;
  const box = h('div', { class: 'media' });
  const path = `/api/rooms/${api.seg(roomId)}/media/${api.seg(m.eventId)}`;
  const isImage = String(media.mimetype || '').startsWith('image/');
  const button = h('button', { type: 'button', class: 'secondary' }, isImage ? `Show image ${label}` : `Download ${label}`);
  button.addEventListener('click', async () => {
    try {
      const resp = await api.send('GET', path, { query: isImage && media.hasThumbnail ? { thumbnail: 'true' } : {} });
      const url = URL.createObjectURL(await resp.blob());
      if (isImage) box.replaceChildren(h('img', { src: url, alt: media.name || 'image', width: media.width, height: media.height }));
      else {
        const a = h('a', { href: url, download: media.name || 'file' }, `Save ${label}`);
        box.replaceChildren(a);
        a.click();
      }
    } catch (e) {
      toast(api.describe(e), true);
    }
  });
  box.append(button);
  return box;
}

/** @param {any} c */
function reactions(c) {
  if (!Array.isArray(c.reactions) || !c.reactions.length) return null;
  return h('ul', { class: 'reactions', 'aria-label': 'Reactions' },
    c.reactions.map((/** @type {{key: string, count: number, mine: boolean}} */ r) =>
      h('li', { class: r.mine ? 'mine' : '' }, `${r.key} ${r.count}`)));
}
