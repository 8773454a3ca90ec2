// @ts-check
// Search across chats and mail; encrypted snippets (and senders) are opened here; a result
// opens its conversation or thread.
import * as api from '../api.js';
import { openJson, openText } from '../crypto.js';
import { state } from '../state.js';
import { h, replace, field, fullTime } from '../ui/dom.js';
import { busy } from '../ui/notice.js';

/** Last query of this tab, kept when coming back. */
let lastQuery = '';

/** @param {HTMLElement} main */
export function render(main) {
  const results = h('ol', { class: 'results', 'aria-label': 'Results' });
  const status = h('p', { class: 'muted', role: 'status' });
  const out = h('div', { class: 'out' });
  const q = field('Search messages and mail', {
    type: 'search',
    name: 'q',
    value: lastQuery,
    required: true,
    placeholder: 'words or "a phrase"',
  });
  const form = h('form', { class: 'bar', role: 'search' }, q, h('button', { type: 'submit' }, 'Search'));
  main.append(h('h1', null, 'Search'), form, out, status, results);
  const input = /** @type {HTMLInputElement} */ (q.querySelector('input'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    lastQuery = input.value.trim();
    busy(form, out, () => run(lastQuery, results, status));
  });
  input.focus();
  if (lastQuery) busy(form, out, () => run(lastQuery, results, status));
}

/** @param {string} query @param {HTMLElement} results @param {HTMLElement} status */
async function run(query, results, status) {
  status.textContent = 'Searching…';
  /** @type {Schemas['SearchPage']} */
  const page = await api.get('/api/search', { query: { q: query, limit: 50 } });
  const items = await Promise.all(
    page.results.map(async (r) => {
      const snippet = r.snippet ?? (await openText(state.keys, r.encryptedSnippet));
      return resultItem(r, snippet, await senderName(r));
    }),
  );
  replace(results, items);
  status.textContent = page.results.length
    ? `${page.results.length} result${page.results.length === 1 ? '' : 's'}`
    : `Nothing found for “${query}”.`;
}

/**
 * Who sent a message result, by name as in the conversation: `senderName`, or the one
 * sealed in `encryptedSender`; the Matrix ID only when neither opens; nothing for mail.
 * @param {Schemas['SearchResult']} r @returns {Promise<string>}
 */
async function senderName(r) {
  if (r.senderName) return r.senderName;
  const sealed = await openJson(state.keys, r.encryptedSender);
  return typeof sealed?.senderName === 'string' && sealed.senderName ? sealed.senderName : r.senderId || '';
}

/** @param {Schemas['SearchResult']} r @param {string | null} snippet @param {string} who */
function resultItem(r, snippet, who) {
  const href = r.kind === 'email' ? `/mail/${api.seg(r.threadId || r.id)}` : `/rooms/${api.seg(r.roomId || '')}`;
  const room = r.roomId ? state.meta.get(r.roomId) : null;
  const where = r.kind === 'email' ? 'E-mail' : room?.name || room?.recipientName || r.roomId || 'Conversation';
  return h(
    'li',
    null,
    h('a', { href }, where),
    h('span', { class: 'muted', title: r.senderId || '' }, ` · ${who} · ${fullTime(r.timestamp)}`),
    h(
      'p',
      null,
      snippet === null
        ? h('em', null, 'This snippet cannot be opened with the key of this browser.')
        : marked(snippet, r.highlights),
    ),
  );
}

/**
 * The snippet with its highlighted ranges (code points) in <mark>.
 * @param {string} text
 * @param {Schemas['SearchHighlight'][]} ranges
 */
function marked(text, ranges) {
  const chars = [...text];
  /** @type {(Node | string)[]} */
  const parts = [];
  let at = 0;
  for (const { start, end } of [...ranges].sort((a, b) => a.start - b.start)) {
    if (start < at) continue;
    parts.push(chars.slice(at, start).join(''), h('mark', null, chars.slice(start, end).join('')));
    at = end;
  }
  parts.push(chars.slice(at).join(''));
  return h('span', null, parts);
}
