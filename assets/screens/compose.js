// @ts-check
// Write, reply to or forward an e-mail (?reply=<messageId> / ?forward=<messageId>), or go on
// with a draft (?draft=<draftId>): files attached by picker, drop or paste, addresses
// completed, the text saved as a draft in the mailbox while typing, and an Undo window after
// Send (Settings → E-mail).
import * as api from '../api.js';
import { navigate } from '../router.js';
import { h, field } from '../ui/dom.js';
import { busy, toast } from '../ui/notice.js';
import { attachments, completeAddresses, size, undoSeconds, undoToast } from '../ui/outgoing.js';

/** Autosave waits this long after the last keystroke. */
const AUTOSAVE_MS = 1500;

/** @param {HTMLElement} main */
export async function render(main) {
  const params = new URLSearchParams(location.search);
  const replyTo = params.get('reply');
  const forward = params.get('forward');
  let draftId = params.get('draft');
  /** @type {Schemas['EmailMessage'] | null} */
  let orig = null;
  /** @type {Schemas['EmailDraft'] | null} */
  let draft = null;
  /** @type {Schemas['EmailSignature'][]} */
  let signatures = [];
  /** @type {Schemas['EmailAccount'][]} */
  let accounts = [];
  try {
    [orig, draft, signatures, accounts] = await Promise.all([
      replyTo || forward ? api.get(`/api/email/messages/${api.seg(/** @type {string} */ (replyTo || forward))}`) : null,
      draftId ? api.get(`/api/email/drafts/${api.seg(draftId)}`) : null,
      api
        .get('/api/email/signatures')
        .then((r) => r.signatures)
        .catch(() => []),
      api
        .get('/api/email/accounts')
        .then((r) => r.accounts)
        .catch(() => []),
    ]);
  } catch (e) {
    toast(api.describe(e), true);
  }
  const subject = draft
    ? draft.subject
    : orig
      ? `${replyTo ? 'Re' : 'Fwd'}: ${orig.subject.replace(/^(re|fwd?):\s*/i, '')}`
      : '';
  const heading = !orig
    ? ''
    : replyTo
      ? `On ${new Date(orig.date).toLocaleString()}, ${orig.from?.name || orig.from?.email} wrote:`
      : '---------- Forwarded message ----------';
  const body = (orig?.text || '')
    .split('\n')
    .map((l) => (replyTo ? `> ${l}` : l))
    .join('\n');
  const quoted = orig ? `\n\n${heading}\n${body}` : '';
  const def = signatures.find((s) => s.isDefault);
  const out = h('div', { class: 'out' });
  const status = h('p', { class: 'muted', role: 'status', id: 'draft-status' });
  const files = attachments(main);
  const kept = draft?.attachments.length
    ? h(
        'ul',
        { class: 'attachments', 'aria-label': 'Attachments saved in the draft' },
        ...draft.attachments.map((a) =>
          h('li', null, a.filename || 'attachment', ' ', h('span', { class: 'muted' }, size(a.size))),
        ),
      )
    : null;
  const carry =
    forward && orig?.attachments.length
      ? field(`Include the ${orig.attachments.length} attached file(s)`, {
          type: 'checkbox',
          name: 'includeAttachments',
          checked: true,
        })
      : null;
  const form = h(
    'form',
    { class: 'card stack', 'aria-labelledby': 'compose-title' },
    h('h1', { id: 'compose-title' }, draft ? 'Draft' : replyTo ? 'Reply' : forward ? 'Forward' : 'New e-mail'),
    accounts.length > 1 && !draft
      ? field('From', {
          tag: 'select',
          name: 'accountId',
          options: accounts.map((a) => [a.id, a.email]),
          value: orig?.accountId,
        })
      : null,
    field('To', {
      name: 'to',
      required: true,
      value: draft ? draft.to.join(', ') : replyTo && orig?.from ? orig.from.email : '',
      placeholder: 'one or more addresses, comma separated',
    }),
    field('Cc', { name: 'cc', value: draft ? draft.cc.join(', ') : '' }),
    field('Bcc', { name: 'bcc', value: draft ? draft.bcc.join(', ') : '' }),
    field('Subject', { name: 'subject', value: subject, required: true }),
    field('Message', { tag: 'textarea', name: 'text', rows: 12, value: draft ? draft.text : quoted }),
    kept,
    carry,
    files.el,
    signatures.length
      ? field('Signature', {
          tag: 'select',
          name: 'signatureId',
          value: def?.id || '',
          options: [['', 'No signature'], ...signatures.map((s) => [s.id, s.name])],
        })
      : null,
    h(
      'div',
      { class: 'bar' },
      h('button', { type: 'submit' }, 'Send'),
      h('a', { href: '/mail/drafts', class: 'button secondary' }, 'Drafts'),
      h('a', { href: '/inbox', class: 'button secondary' }, 'Cancel'),
    ),
    status,
    out,
  );
  main.append(form);
  for (const name of ['to', 'cc', 'bcc'])
    completeAddresses(/** @type {HTMLInputElement} */ (form.elements.namedItem(name)));
  if (!accounts.length)
    out.append(
      h(
        'p',
        { class: 'error', role: 'alert' },
        'No mailbox is connected: connect one under Settings → Mailboxes first.',
      ),
    );
  const v = (/** @type {string} */ n) =>
    /** @type {HTMLInputElement | null} */ (form.elements.namedItem(n))?.value ?? '';
  const list = (/** @type {string} */ s) =>
    s
      .split(/[,;]/)
      .map((x) => x.trim())
      .filter(Boolean);
  const fields = () => ({
    to: list(v('to')),
    cc: list(v('cc')),
    bcc: list(v('bcc')),
    subject: v('subject'),
    text: v('text'),
  });

  // Autosave: the first save makes the draft, later ones replace it (same id).
  let timer = 0;
  let saving = Promise.resolve();
  let sending = false;
  const save = () => {
    saving = saving.then(async () => {
      if (sending) return;
      try {
        if (draftId) await api.put(`/api/email/drafts/${api.seg(draftId)}`, fields());
        else {
          /** @type {Schemas['EmailDraftSaved']} */
          const made = await api.post('/api/email/drafts', {
            ...fields(),
            accountId: v('accountId') || orig?.accountId || null,
            replyTo: replyTo || null,
          });
          draftId = made.id;
          history.replaceState(null, '', `/mail/compose?draft=${api.seg(draftId)}`);
        }
        status.textContent = `Draft saved ${new Date().toLocaleTimeString()}`;
      } catch (e) {
        status.textContent = `Draft not saved: ${api.describe(e)}`;
      }
    });
  };
  form.addEventListener('input', (ev) => {
    if (/** @type {HTMLElement} */ (ev.target).getAttribute('type') === 'file') return;
    clearTimeout(timer);
    timer = window.setTimeout(save, AUTOSAVE_MS);
  });

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    clearTimeout(timer);
    busy(form, out, async () => {
      await saving;
      sending = true;
      const undo = undoSeconds();
      // Whether a forward carries the original's files (its checkbox, ticked by default).
      const includeAttachments = () => {
        const box = /** @type {HTMLInputElement | null} */ (form.elements.namedItem('includeAttachments'));
        return box?.checked ?? false;
      };
      try {
        /** @type {any} */
        let answer;
        if (draftId) {
          // The draft carries everything: bring it up to date with the new files, then send it.
          await api.put(`/api/email/drafts/${api.seg(draftId)}`, { ...fields(), attachments: files.ids() });
          files.clear();
          answer = await api.post(`/api/email/drafts/${api.seg(draftId)}/send`, { undoSeconds: undo });
        } else {
          answer = await api.post('/api/email/compose', {
            ...fields(),
            accountId: v('accountId') || orig?.accountId || null,
            replyTo: replyTo || null,
            forward: forward || null,
            signatureId: v('signatureId') || null,
            attachments: files.ids(),
            includeAttachments: forward ? includeAttachments() : null,
            undoSeconds: undo,
          });
        }
        if (answer.outboxId) {
          if (await undoToast(answer.outboxId, answer.sendAt)) return;
          toast('Sent');
          // A reply joins its thread once sent; show that thread (or the inbox).
          navigate(replyTo && orig ? `/mail/${api.seg(orig.threadId)}` : '/inbox');
          return;
        }
        toast('Sent');
        navigate(`/mail/${api.seg(answer.threadId)}`);
      } finally {
        sending = false;
      }
    });
  });
  return () => clearTimeout(timer);
}
