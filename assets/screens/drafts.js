// @ts-check
// Drafts of every connected mailbox, those written in other mail apps included.
import * as api from '../api.js';
import { h, when, fullTime } from '../ui/dom.js';
import { errorBox } from '../ui/notice.js';

/** @param {HTMLElement} main */
export async function render(main) {
  const list = h('ul', { class: 'list', 'aria-label': 'Drafts' });
  main.append(
    h(
      'div',
      { class: 'bar' },
      h('h1', null, 'Drafts'),
      h('a', { href: '/mail/compose', class: 'button' }, 'New e-mail'),
    ),
    list,
  );
  try {
    /** @type {Schemas['EmailDraftList']} */
    const { drafts } = await api.get('/api/email/drafts');
    if (!drafts.length) list.append(h('li', { class: 'muted' }, 'No drafts.'));
    for (const d of drafts) {
      list.append(
        h(
          'li',
          null,
          h(
            'a',
            { href: `/mail/compose?draft=${api.seg(d.id)}` },
            h('strong', null, d.subject || '(no subject)'),
            ' ',
            h('span', { class: 'muted' }, d.to.join(', ') || 'no recipient'),
            ' ',
            d.attachments.length ? h('span', { class: 'muted' }, `📎 ${d.attachments.length}`) : null,
            ' ',
            h('time', { datetime: d.updatedAt, title: fullTime(d.updatedAt) }, when(d.updatedAt)),
          ),
        ),
      );
    }
  } catch (e) {
    main.append(errorBox(e));
  }
}
