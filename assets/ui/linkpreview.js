// @ts-check
// Preview cards under messages with a link: title, description and image as the homeserver
// read the page (GET /api/preview), so this browser never contacts the linked site; the image
// comes through Switchboard as a blob: URL of the conversation's scope. None when the user
// turned previews off (Settings → Link previews) or the page has nothing to show.
import * as api from '../api.js';
import { h } from './dom.js';

/** The first http(s) link of a text, without trailing punctuation. @param {string} text */
export function firstLink(text) {
  const found = /\bhttps?:\/\/[^\s<>"']+/i.exec(text);
  if (!found) return null;
  const url = found[0].replace(/[).,;:!?\]}]+$/, '');
  return url.length <= 2048 ? url : null;
}

/**
 * Previews asked this session, by URL (a redraw of the message asks nothing again).
 * @type {Map<string, Promise<Schemas['LinkPreviewObject'] | null>>}
 */
const asked = new Map();

/** @param {string} url */
function previewOf(url) {
  let p = asked.get(url);
  if (!p) {
    p = api.get('/api/preview', { query: { url } }).catch(() => null);
    asked.set(url, p);
    // Failures are not remembered for long: the page may come back.
    p.then((r) => {
      if (!r) setTimeout(() => asked.delete(url), 60_000);
    });
  }
  return p;
}

/**
 * Whether previews are on, asked once per page load (the settings screen updates it).
 * @type {Promise<boolean> | null}
 */
let enabled = null;

export function previewsEnabled() {
  if (!enabled)
    enabled = api
      .get('/api/settings/previews')
      .then((s) => Boolean(s.enabled))
      .catch(() => false);
  return enabled;
}

/** After the setting changed in this page. @param {boolean} on */
export function setPreviewsEnabled(on) {
  enabled = Promise.resolve(on);
}

/**
 * A slot under a message that fills with the card of its first link.
 * @param {import('./media.js').BlobScope} scope @param {string} text
 */
export function previewSlot(scope, text) {
  const url = firstLink(text);
  if (!url) return null;
  const slot = h('div', { class: 'linkslot' });
  scope.whenVisible(slot, async () => {
    if (!(await previewsEnabled())) {
      slot.dataset.preview = 'off';
      return;
    }
    const p = await previewOf(url);
    if (!p || scope.closed || (!p.title && !p.description)) {
      slot.dataset.preview = 'none';
      return;
    }
    const img = h('img', { alt: '', class: 'linkimage', hidden: true });
    let host = url;
    try {
      host = new URL(p.url).host;
    } catch {
      /* shown whole */
    }
    slot.append(
      h(
        'aside',
        { class: 'linkcard', 'aria-label': `Link preview: ${p.title || host}` },
        img,
        h(
          'div',
          null,
          h('a', { href: p.url, target: '_blank', rel: 'noopener noreferrer', class: 'linktitle' }, p.title || host),
          p.description ? h('p', { class: 'muted small' }, p.description) : null,
          h('span', { class: 'muted small' }, host),
        ),
      ),
    );
    slot.dataset.preview = 'shown';
    if (p.imageUrl) {
      scope
        .fetch(p.imageUrl)
        .then((src) => {
          if (src) {
            img.src = src;
            img.hidden = false;
          }
        })
        .catch(() => {});
    }
  });
  return slot;
}
