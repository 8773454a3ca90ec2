// @ts-check
// Attachments in a conversation: images and stickers inline (the thumbnail first, the full
// size on click), audio and video in the browser's own players, voice notes with their
// length, other files to save. Every byte comes through the media route with the session's
// token and is shown from a `blob:` URL; a conversation's URLs belong to its BlobScope and are
// revoked together when it closes, so the memory goes with it.
import * as api from '../api.js';
import { h, replace } from './dom.js';
import { toast } from './notice.js';

/** Every blob: URL made here and not revoked yet (for the tests and the memory benchmark). @type {Set<string>} */
const live = new Set();

/** How many blob: URLs of attachments exist now. */
export function liveBlobCount() {
  return live.size;
}

/** Downloads at once per page: a conversation of 50 photos must not open 50 connections. */
const PARALLEL = 4;
let running = 0;
/** @type {(() => void)[]} */
const waiting = [];

/**
 * Runs `job` when one of the PARALLEL slots is free.
 * @template T
 * @param {() => Promise<T>} job
 * @returns {Promise<T>}
 */
async function queued(job) {
  if (running >= PARALLEL) await new Promise((/** @type {(v?: any) => void} */ go) => waiting.push(go));
  running += 1;
  try {
    return await job();
  } finally {
    running -= 1;
    waiting.shift()?.();
  }
}

/** Files loaded as soon as they are on screen, up to this size; larger ones wait for a click. */
const AUTO_BYTES = 25 * 1024 * 1024;

/** The blob: URLs of one conversation, and what loads them when they scroll into view. */
export class BlobScope {
  /** @param {Element | null} [root] the scrolling pane the attachments are shown in */
  constructor(root = null) {
    /** @type {Set<string>} */
    this.urls = new Set();
    this.closed = false;
    /** @type {Map<Element, () => void>} */
    this.pending = new Map();
    this.observer =
      typeof IntersectionObserver === 'function'
        ? new IntersectionObserver(
            (entries) => {
              for (const e of entries) {
                if (!e.isIntersecting) continue;
                const load = this.pending.get(e.target);
                this.pending.delete(e.target);
                this.observer?.unobserve(e.target);
                load?.();
              }
            },
            { root, rootMargin: '300px 0px' },
          )
        : null;
  }

  /** Calls `load` once `el` is near the screen. @param {Element} el @param {() => void} load */
  whenVisible(el, load) {
    if (!this.observer) return load();
    this.pending.set(el, load);
    this.observer.observe(el);
  }

  /**
   * The bytes at `path` (with the session's token) as a blob: URL of this scope; null when
   * the scope closed meanwhile.
   * @param {string} path @param {Record<string, string>} [query]
   */
  async fetch(path, query) {
    const blob = await queued(async () => (await api.send('GET', path, { query })).blob());
    if (this.closed) return null;
    const url = URL.createObjectURL(blob);
    this.urls.add(url);
    live.add(url);
    return url;
  }

  /** Revokes one URL early (a full-size image closed again). @param {string} url */
  drop(url) {
    URL.revokeObjectURL(url);
    this.urls.delete(url);
    live.delete(url);
  }

  /**
   * Revokes every URL of the conversation and stops loading. The elements showing them let go
   * first (an image or player still pointing at a revoked URL keeps its decoded pixels or
   * buffered media until it is collected).
   */
  release() {
    this.closed = true;
    this.observer?.disconnect();
    this.pending.clear();
    for (const el of document.querySelectorAll('img[src^="blob:"], audio[src^="blob:"], video[src^="blob:"]')) {
      const media = /** @type {HTMLImageElement | HTMLMediaElement} */ (el);
      if (!this.urls.has(media.src)) continue;
      media.removeAttribute('src');
      if (media instanceof HTMLMediaElement) media.load();
    }
    for (const url of this.urls) this.drop(url);
  }
}

/** "1:05" for milliseconds. @param {number | null | undefined} ms */
export function clock(ms) {
  const s = Math.max(0, Math.floor((ms || 0) / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** "340 KB", "2.1 MB". @param {number | null | undefined} n */
export function size(n) {
  const b = n || 0;
  return b >= 1024 * 1024 ? `${(b / 1024 / 1024).toFixed(1)} MB` : `${Math.max(1, Math.ceil(b / 1024))} KB`;
}

/** What kind of player an attachment gets. @param {string} msgtype @param {string} mimetype */
function kindOf(msgtype, mimetype) {
  if (msgtype === 'm.sticker' || msgtype === 'm.image' || mimetype.startsWith('image/')) return 'image';
  if (msgtype === 'm.audio' || mimetype.startsWith('audio/')) return 'audio';
  if (msgtype === 'm.video' || mimetype.startsWith('video/')) return 'video';
  return 'file';
}

/**
 * The attachment of message `m`.
 * @param {BlobScope} scope @param {string} roomId @param {Schemas['EncryptedMessage']} m
 * @param {any} media `{mimetype, size, name, width?, height?, durationMs?, hasThumbnail}`
 * @param {any} c the opened content (its `content` is the Matrix event content)
 */
export function mediaBox(scope, roomId, m, media, c) {
  const path = `/api/rooms/${api.seg(roomId)}/media/${api.seg(m.eventId)}`;
  const mimetype = String(media.mimetype || '');
  const msgtype = String(c.msgtype || c.content?.msgtype || m.msgtype || '');
  const name = String(media.name || 'file');
  const kind = kindOf(msgtype, mimetype);
  if (kind === 'image') return imageBox(scope, path, media, name, msgtype === 'm.sticker');
  if (kind === 'audio' || kind === 'video') {
    const voice = Boolean(c.content?.['org.matrix.msc3245.voice']);
    return playerBox(scope, path, media, name, kind, voice);
  }
  return fileBox(scope, path, media, name);
}

/** @param {BlobScope} scope @param {string} path @param {any} media @param {string} name @param {boolean} sticker */
function imageBox(scope, path, media, name, sticker) {
  const img = h('img', {
    alt: name,
    width: media.width || undefined,
    height: media.height || undefined,
    class: 'inline',
  });
  const status = h('span', { class: 'muted small', role: 'status' }, 'Loading image…');
  const button = h('button', { type: 'button', class: 'thumb', 'aria-label': `Show ${name} full size` }, img);
  const box = h('figure', { class: `media image${sticker ? ' sticker' : ''}` }, button, status);
  const small = media.hasThumbnail || (media.size || 0) <= AUTO_BYTES;
  const load = async () => {
    try {
      const url = await scope.fetch(path, media.hasThumbnail ? { thumbnail: 'true' } : undefined);
      if (url) {
        img.src = url;
        status.remove();
      }
    } catch (e) {
      status.textContent = `The image could not be loaded: ${api.describe(e)}`;
    }
  };
  if (small) scope.whenVisible(box, load);
  else status.textContent = `${name} (${size(media.size)}): open it to load`;
  button.addEventListener('click', () => showFull(scope, path, name));
  return box;
}

/**
 * The full-size image in a modal dialog; its blob goes when the dialog closes.
 * @param {BlobScope} scope
 * @param {string} path
 * @param {string} name
 */
async function showFull(scope, path, name) {
  const img = h('img', { alt: name, class: 'full' });
  const close = h('button', { type: 'button', class: 'secondary' }, 'Close');
  const dialog = h(
    'dialog',
    { class: 'viewer', 'aria-label': name },
    h('p', { class: 'muted', role: 'status' }, 'Loading…'),
    close,
  );
  document.body.append(dialog);
  /** @type {string | null} */
  let url = null;
  const done = () => {
    if (url) scope.drop(url);
    dialog.remove();
  };
  close.addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', done);
  dialog.showModal();
  try {
    url = await scope.fetch(path);
    if (!url || !dialog.isConnected) {
      if (url) scope.drop(url);
      return;
    }
    img.src = url;
    replace(dialog, img, h('p', null, name), close);
    close.focus();
  } catch (e) {
    replace(dialog, h('p', { role: 'alert' }, `The image could not be loaded: ${api.describe(e)}`), close);
  }
}

/**
 * Audio (and voice notes) load when on screen; video on a click (it may be large).
 * @param {BlobScope} scope
 * @param {string} path
 * @param {any} media
 * @param {string} name
 * @param {'audio' | 'video'} kind
 * @param {boolean} voice
 */
function playerBox(scope, path, media, name, kind, voice) {
  const label = voice
    ? `Voice note${media.durationMs ? ` · ${clock(media.durationMs)}` : ''}`
    : `${name}${media.durationMs ? ` · ${clock(media.durationMs)}` : ''} (${size(media.size)})`;
  const player =
    kind === 'audio'
      ? h('audio', { controls: true, preload: 'metadata', 'aria-label': voice ? 'Voice note' : `Audio ${name}` })
      : h('video', {
          controls: true,
          preload: 'metadata',
          playsinline: true,
          'aria-label': `Video ${name}`,
          width: media.width || undefined,
          height: media.height || undefined,
        });
  const status = h('span', { class: 'muted small', role: 'status' });
  const box = h(
    'figure',
    { class: `media ${kind}${voice ? ' voice' : ''}` },
    h('figcaption', null, label),
    player,
    status,
  );
  const load = async () => {
    status.textContent = 'Loading…';
    try {
      const url = await scope.fetch(path);
      if (url) player.src = url;
      status.textContent = '';
      return Boolean(url);
    } catch (e) {
      status.textContent = `It could not be loaded: ${api.describe(e)}`;
      return false;
    }
  };
  if (kind === 'audio' && (media.size || 0) <= AUTO_BYTES) scope.whenVisible(box, load);
  else {
    player.hidden = true;
    const start = h(
      'button',
      { type: 'button', class: 'secondary' },
      `Play ${kind === 'video' ? 'video' : 'audio'} ${name} (${size(media.size)})`,
    );
    start.addEventListener('click', async () => {
      start.disabled = true;
      if (await load()) {
        start.remove();
        player.hidden = false;
        player.play().catch(() => {});
      } else start.disabled = false;
    });
    box.append(start);
  }
  return box;
}

/** @param {BlobScope} scope @param {string} path @param {any} media @param {string} name */
function fileBox(scope, path, media, name) {
  const label = `${name} (${media.mimetype || 'file'}, ${size(media.size)})`;
  const button = h('button', { type: 'button', class: 'secondary' }, `Download ${label}`);
  const box = h('div', { class: 'media file' }, button);
  button.addEventListener('click', async () => {
    try {
      const url = await scope.fetch(path);
      if (!url) return;
      const a = h('a', { href: url, download: name }, `Save ${label}`);
      box.replaceChildren(a);
      a.click();
    } catch (e) {
      toast(api.describe(e), true);
    }
  });
  return box;
}
