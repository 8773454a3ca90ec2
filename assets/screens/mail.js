// @ts-check
// One e-mail thread: its messages (HTML in a sandboxed frame, remote images held back), reply,
// forward, labels and thread actions.
import * as api from '../api.js';
import { navigate } from '../router.js';
import { h, replace, fullTime } from '../ui/dom.js';
import { errorBox, toast } from '../ui/notice.js';
import { mailFrame } from '../ui/mailbody.js';

/** @param {HTMLElement} main @param {{threadId: string}} params */
export async function render(main, { threadId }) {
  const head = h('div', { class: 'bar' }, h('h1', null, 'E-mail'));
  const actions = h('div', { class: 'chips', role: 'group', 'aria-label': 'Thread actions' });
  const body = h('div', { class: 'stack' }, h('p', { class: 'muted' }, 'Loading…'));
  main.append(head, actions, body);
  /** @type {Schemas['EmailThread']} */
  let thread;
  try {
    thread = await api.get(`/api/email/threads/${api.seg(threadId)}`);
  } catch (e) {
    replace(body, errorBox(e));
    return;
  }
  replace(
    head,
    h('a', { href: '/inbox', class: 'back', 'aria-label': 'Back to the inbox' }, '←'),
    h('h1', null, thread.subject || '(no subject)'),
  );
  /** @param {string} action @param {string} [label] */
  const act = async (action, label) => {
    try {
      thread = await api.put(`/api/email/threads/${api.seg(threadId)}`, { action, label });
      toast('Done');
      if (action === 'archive' || action === 'trash' || action === 'delete') navigate('/inbox');
      else drawActions();
    } catch (e) {
      toast(api.describe(e), true);
    }
  };
  const drawActions = async () => {
    /** @type {Schemas['EmailLabel'][]} */
    let labels = [];
    try {
      labels = (await api.get('/api/email/labels')).labels.filter(
        (/** @type {Schemas['EmailLabel']} */ l) => l.type === 'user',
      );
    } catch {
      /* no labels */
    }
    const pick = h(
      'select',
      { 'aria-label': 'Add a label' },
      h('option', { value: '' }, 'Add label…'),
      labels.filter((l) => !thread.labels.includes(l.name)).map((l) => h('option', { value: l.name }, l.name)),
    );
    pick.addEventListener('change', () => pick.value && act('addLabel', pick.value));
    replace(
      actions,
      h(
        'button',
        { type: 'button', class: 'chip', onclick: () => act(thread.unread ? 'read' : 'unread') },
        thread.unread ? 'Mark read' : 'Mark unread',
      ),
      h(
        'button',
        { type: 'button', class: 'chip', onclick: () => act(thread.starred ? 'unstar' : 'star') },
        thread.starred ? 'Unstar' : 'Star',
      ),
      h('button', { type: 'button', class: 'chip', onclick: () => act('archive') }, 'Archive'),
      h('button', { type: 'button', class: 'chip', onclick: () => act('trash') }, 'Move to trash'),
      thread.labels
        .filter((l) => !l.startsWith('\\') && l !== 'INBOX')
        .map((l) =>
          h(
            'button',
            { type: 'button', class: 'chip', 'aria-label': `Remove label ${l}`, onclick: () => act('removeLabel', l) },
            `${l} ✕`,
          ),
        ),
      labels.length ? pick : null,
    );
  };
  drawActions();
  try {
    /** @type {Schemas['EmailMessage'][]} */
    const messages = await Promise.all(thread.messageIds.map((id) => api.get(`/api/email/messages/${api.seg(id)}`)));
    replace(body, messages.map(messageCard));
    if (thread.unread) act('read');
  } catch (e) {
    replace(body, errorBox(e));
  }
}

/** @param {Schemas['EmailPerson'] | null | undefined} p */
const person = (p) => (p ? (p.name ? `${p.name} <${p.email}>` : p.email) : '');

/** @param {Schemas['EmailMessage']} m */
function messageCard(m) {
  let content;
  let remoteNote = null;
  if (m.html) {
    const { frame, remote } = mailFrame(m.html);
    content = frame;
    if (remote.length) {
      const list = h(
        'ul',
        { hidden: true },
        remote.map((u) => h('li', null, h('a', { href: u, target: '_blank', rel: 'noopener noreferrer' }, u))),
      );
      remoteNote = h(
        'div',
        { class: 'muted' },
        `${remote.length} remote image${remote.length === 1 ? ' is' : 's are'} not loaded ` +
          '(loading tells the sender you opened the mail). ',
        h(
          'button',
          {
            type: 'button',
            class: 'link',
            onclick: () => {
              list.hidden = false;
            },
          },
          'Show their addresses',
        ),
        list,
      );
    }
  } else content = h('pre', { class: 'mailtext' }, m.text || '');
  return h(
    'article',
    { class: 'card', 'aria-label': `Message from ${person(m.from)}` },
    h('p', null, h('strong', null, person(m.from)), h('span', { class: 'muted' }, ` · ${fullTime(m.date)}`)),
    h(
      'p',
      { class: 'muted' },
      `To: ${m.to.map(person).join(', ')}`,
      m.cc.length ? ` · Cc: ${m.cc.map(person).join(', ')}` : '',
    ),
    remoteNote,
    content,
    m.attachments.length
      ? h(
          'ul',
          { class: 'attachments', 'aria-label': 'Attachments' },
          m.attachments.map((a) =>
            h(
              'li',
              null,
              h(
                'button',
                { type: 'button', class: 'secondary', onclick: () => download(m.id, a) },
                `${a.filename || 'attachment'} (${Math.ceil(a.size / 1024)} KB)`,
              ),
            ),
          ),
        )
      : null,
    h(
      'div',
      { class: 'bar' },
      h('a', { class: 'button secondary', href: `/mail/compose?reply=${api.seg(m.id)}` }, 'Reply'),
      h('a', { class: 'button secondary', href: `/mail/compose?forward=${api.seg(m.id)}` }, 'Forward'),
    ),
  );
}

/** @param {string} id @param {Schemas['EmailAttachment']} a */
async function download(id, a) {
  try {
    const resp = await api.send('GET', `/api/email/messages/${api.seg(id)}/attachments/${a.index}`);
    const url = URL.createObjectURL(await resp.blob());
    const link = h('a', { href: url, download: a.filename || 'attachment' });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    toast(api.describe(e), true);
  }
}
