// @ts-check
// Mailboxes (IMAP + SMTP of the user's own provider) and e-mail signatures.
import * as api from '../api.js';
import { undoSeconds, UNDO_KEY } from './outgoing.js';
import { h, replace, field, fullTime } from './dom.js';
import { busy, errorBox, toast } from './notice.js';

export function mailboxesSection() {
  const list = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  const sigs = h('div');
  const out = h('div', { class: 'out' });
  const load = async () => {
    try {
      /** @type {Schemas['EmailAccountList']} */
      const res = await api.get('/api/email/accounts');
      replace(
        list,
        res.accounts.length
          ? h(
              'ul',
              null,
              res.accounts.map((a) =>
                h(
                  'li',
                  null,
                  h('strong', null, a.email),
                  ` — ${statusWords(a)}`,
                  a.lastSyncAt ? `, synced ${fullTime(a.lastSyncAt)}` : '',
                  ' ',
                  h(
                    'button',
                    {
                      type: 'button',
                      class: 'secondary',
                      'aria-label': `Disconnect ${a.email}`,
                      onclick: (/** @type {Event} */ ev) =>
                        busy(/** @type {HTMLElement} */ (ev.currentTarget), out, async () => {
                          await api.del(`/api/email/accounts/${api.seg(a.id)}`);
                          toast('Mailbox disconnected');
                          load();
                        }),
                    },
                    'Disconnect',
                  ),
                ),
              ),
            )
          : h('p', null, 'No mailbox connected.'),
      );
    } catch (e) {
      replace(list, errorBox(e));
    }
    loadSignatures(sigs);
  };
  load();
  const sec = [
    ['tls', 'TLS'],
    ['starttls', 'STARTTLS'],
    ['none', 'None (local only)'],
  ];
  const form = h(
    'form',
    { class: 'stack' },
    field('E-mail address', { type: 'email', name: 'email', required: true }),
    field('Your name (sender)', { name: 'displayName' }),
    h(
      'div',
      { class: 'grid2' },
      h(
        'fieldset',
        null,
        h('legend', null, 'Incoming (IMAP)'),
        field('IMAP server', { name: 'imapHost', required: true }),
        field('IMAP port', { type: 'number', name: 'imapPort', value: '993', required: true }),
        field('IMAP security', { tag: 'select', name: 'imapSec', value: 'tls', options: sec }),
      ),
      h(
        'fieldset',
        null,
        h('legend', null, 'Outgoing (SMTP)'),
        field('SMTP server', { name: 'smtpHost', required: true }),
        field('SMTP port', { type: 'number', name: 'smtpPort', value: '465', required: true }),
        field('SMTP security', { tag: 'select', name: 'smtpSec', value: 'tls', options: sec }),
      ),
    ),
    field('User name (default: the address)', { name: 'username', autocomplete: 'off' }),
    field('Password or app password', { type: 'password', name: 'password', required: true, autocomplete: 'off' }),
    h('button', { type: 'submit' }, 'Connect mailbox'),
    out,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const v = (/** @type {string} */ n) => /** @type {HTMLInputElement} */ (form.elements.namedItem(n)).value.trim();
    const username = v('username') || v('email');
    const server = (/** @type {string} */ p) => ({
      host: v(`${p}Host`),
      port: Number(v(`${p}Port`)),
      security: v(`${p}Sec`),
      username,
      password: /** @type {HTMLInputElement} */ (form.elements.namedItem('password')).value,
    });
    busy(form, out, async () => {
      await api.post('/api/email/accounts', {
        email: v('email'),
        displayName: v('displayName') || null,
        imap: server('imap'),
        smtp: server('smtp'),
      });
      toast('Mailbox connected: its mail appears in the inbox as it syncs');
      form.reset();
      load();
    });
  });
  return h(
    'section',
    { class: 'card', id: 'mail', 'aria-labelledby': 'h-mail' },
    h('h2', { id: 'h-mail' }, 'Mailboxes'),
    list,
    h('details', null, h('summary', null, 'Connect a mailbox'), form),
    sigs,
    undoSetting(),
  );
}

/** How long a sent mail waits for Undo (this browser's setting). */
function undoSetting() {
  const input = h('input', {
    type: 'number',
    name: 'undoSeconds',
    min: 0,
    max: 60,
    step: 1,
    value: String(undoSeconds()),
  });
  input.addEventListener('change', () => {
    const n = Number(input.value);
    if (Number.isInteger(n) && n >= 0 && n <= 60) {
      localStorage.setItem(UNDO_KEY, String(n));
      toast(n ? `Sent mail can be undone for ${n} s` : 'Mail is sent at once (no Undo)');
    } else toast('Undo send: 0 to 60 seconds', true);
  });
  return h(
    'div',
    null,
    h('h3', null, 'Undo send'),
    h('label', { class: 'field' }, h('span', null, 'Seconds to undo a sent mail (0 to 60)'), input),
  );
}

/** @param {Schemas['EmailAccount']} a */
function statusWords(a) {
  if (a.status === 'ok') return 'connected';
  if (a.status === 'syncing') return `syncing${a.progress ? ` (${a.progress.fetched} of ${a.progress.total})` : ''}`;
  if (a.status === 'auth_failed') return `sign-in refused by the mail server${a.error ? `: ${a.error}` : ''}`;
  return `unreachable${a.error ? `: ${a.error}` : ''}`;
}

/** @param {HTMLElement} into */
async function loadSignatures(into) {
  const out = h('div', { class: 'out' });
  let list;
  try {
    /** @type {Schemas['EmailSignatureList']} */
    const res = await api.get('/api/email/signatures');
    list = res.signatures.length
      ? h(
          'ul',
          null,
          res.signatures.map((s) =>
            h(
              'li',
              null,
              h('strong', null, s.name),
              s.isDefault ? ' (default)' : '',
              h('pre', null, s.text),
              h(
                'button',
                {
                  type: 'button',
                  class: 'secondary',
                  'aria-label': `Delete signature ${s.name}`,
                  onclick: (/** @type {Event} */ ev) =>
                    busy(/** @type {HTMLElement} */ (ev.currentTarget), out, async () => {
                      await api.del(`/api/email/signatures/${api.seg(s.id)}`);
                      loadSignatures(into);
                    }),
                },
                'Delete',
              ),
            ),
          ),
        )
      : h('p', null, 'No signature yet.');
  } catch (e) {
    list = errorBox(e);
  }
  const form = h(
    'form',
    { class: 'stack' },
    field('Signature name', { name: 'name', required: true }),
    field('Signature text', { tag: 'textarea', name: 'text', rows: 3, required: true }),
    h('label', null, h('input', { type: 'checkbox', name: 'isDefault' }), ' Use by default'),
    h('button', { type: 'submit' }, 'Add signature'),
    out,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const el = (/** @type {string} */ n) => /** @type {HTMLInputElement} */ (form.elements.namedItem(n));
    busy(form, out, async () => {
      await api.post('/api/email/signatures', {
        name: el('name').value.trim(),
        text: el('text').value,
        isDefault: el('isDefault').checked,
      });
      toast('Signature added');
      loadSignatures(into);
    });
  });
  replace(into, h('h3', null, 'Signatures'), list, h('details', null, h('summary', null, 'Add a signature'), form));
}
