// @ts-check
// Write, reply to or forward an e-mail (?reply=<messageId> / ?forward=<messageId>), with a
// signature.
import * as api from '../api.js';
import { navigate } from '../app.js';
import { h, field } from '../ui/dom.js';
import { busy, toast } from '../ui/notice.js';

/** @param {HTMLElement} main */
export async function render(main) {
  const params = new URLSearchParams(location.search);
  const replyTo = params.get('reply');
  const forward = params.get('forward');
  /** @type {Schemas['EmailMessage'] | null} */
  let orig = null;
  /** @type {Schemas['EmailSignature'][]} */
  let signatures = [];
  /** @type {Schemas['EmailAccount'][]} */
  let accounts = [];
  try {
    [orig, signatures, accounts] = await Promise.all([
      replyTo || forward ? api.get(`/api/email/messages/${api.seg(/** @type {string} */ (replyTo || forward))}`) : null,
      api.get('/api/email/signatures').then((r) => r.signatures).catch(() => []),
      api.get('/api/email/accounts').then((r) => r.accounts).catch(() => []),
    ]);
  } catch (e) {
    toast(api.describe(e), true);
  }
  const subject = orig ? `${replyTo ? 'Re' : 'Fwd'}: ${orig.subject.replace(/^(re|fwd?):\s*/i, '')}` : '';
  const quoted = orig ? `\n\n${replyTo ? `On ${new Date(orig.date).toLocaleString()}, ${orig.from?.name || orig.from?.email} wrote:` : '---------- Forwarded message ----------'}\n${(orig.text || '').split('\n').map((l) => (replyTo ? `> ${l}` : l)).join('\n')}` : '';
  const def = signatures.find((s) => s.isDefault);
  const out = h('div', { class: 'out' });
  const form = h('form', { class: 'card stack', 'aria-labelledby': 'compose-title' },
    h('h1', { id: 'compose-title' }, replyTo ? 'Reply' : forward ? 'Forward' : 'New e-mail'),
    accounts.length > 1 ? field('From', { tag: 'select', name: 'accountId', options: accounts.map((a) => [a.id, a.email]), value: orig?.accountId }) : null,
    field('To', { name: 'to', required: true, value: replyTo && orig?.from ? orig.from.email : '', placeholder: 'one or more addresses, comma separated' }),
    field('Cc', { name: 'cc' }),
    field('Subject', { name: 'subject', value: subject, required: true }),
    field('Message', { tag: 'textarea', name: 'text', rows: 12, value: quoted }),
    signatures.length ? field('Signature', { tag: 'select', name: 'signatureId', value: def?.id || '', options: [['', 'No signature'], ...signatures.map((s) => [s.id, s.name])] }) : null,
    h('div', { class: 'bar' }, h('button', { type: 'submit' }, 'Send'), h('a', { href: '/inbox', class: 'button secondary' }, 'Cancel')),
    out);
  main.append(form);
  if (!accounts.length) out.append(h('p', { class: 'error', role: 'alert' }, 'No mailbox is connected: connect one under Settings → Mailboxes first.'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const v = (/** @type {string} */ n) => /** @type {HTMLInputElement | null} */ (form.elements.namedItem(n))?.value ?? '';
    const list = (/** @type {string} */ s) => s.split(/[,;]/).map((x) => x.trim()).filter(Boolean);
    busy(form, out, async () => {
      /** @type {Schemas['EmailComposeResult']} */
      const sent = await api.post('/api/email/compose', {
        accountId: v('accountId') || orig?.accountId || null, to: list(v('to')), cc: list(v('cc')), subject: v('subject'), text: v('text'),
        replyTo: replyTo || null, forward: forward || null, signatureId: v('signatureId') || null,
      });
      toast('Sent');
      navigate(`/mail/${api.seg(sent.threadId)}`);
    });
  });
}
