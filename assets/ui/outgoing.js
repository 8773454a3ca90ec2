// @ts-check
// Pieces of the e-mail compose form: files to attach (picker, drop, paste) uploaded at once
// and listed with their sizes, address completion for To/Cc/Bcc, and the "Undo send" toast.
import * as api from '../api.js';
import { h, replace } from './dom.js';
import { toast } from './notice.js';

/** Seconds a sent mail is held for Undo (a setting of this browser; 0 to 60, default 10). */
export const UNDO_KEY = 'switchboard.undoSeconds';
export function undoSeconds() {
  const v = Number(localStorage.getItem(UNDO_KEY) ?? '10');
  return Number.isInteger(v) && v >= 0 && v <= 60 ? v : 10;
}

/** "1.2 MB" for a byte count. @param {number} n */
export function size(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10240 ? 1 : 0)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * The attachment picker. Files are uploaded as soon as they are chosen, dropped on `zone` or
 * pasted into it; `ids()` are the uploads to send.
 * @param {HTMLElement} zone
 */
export function attachments(zone) {
  /** @type {{id: string, name: string, size: number}[]} */
  const files = [];
  const list = h('ul', { class: 'attachments', 'aria-label': 'Attachments' });
  const input = h('input', { type: 'file', multiple: true, class: 'visually-hidden', id: 'attach-input' });
  const pick = h('label', { class: 'button secondary', for: 'attach-input' }, 'Attach files');
  const render = () =>
    replace(
      list,
      ...files.map((f, i) =>
        h(
          'li',
          null,
          h('span', { class: 'name' }, f.name),
          ' ',
          h('span', { class: 'muted' }, size(f.size)),
          ' ',
          h(
            'button',
            {
              type: 'button',
              class: 'link',
              'aria-label': `Remove ${f.name}`,
              onclick: () => {
                files.splice(i, 1);
                render();
              },
            },
            'Remove',
          ),
        ),
      ),
    );
  /** @param {FileList | File[]} chosen */
  const add = async (chosen) => {
    for (const file of Array.from(chosen)) {
      const li = h('li', { class: 'muted' }, `Uploading ${file.name} (${size(file.size)})…`);
      list.append(li);
      try {
        const body = new FormData();
        body.append('file', file, file.name || 'pasted');
        /** @type {Schemas['EmailUpload']} */
        const up = await api.post('/api/email/attachments', body);
        files.push({ id: up.uploadId, name: up.name, size: up.size });
      } catch (e) {
        toast(`${file.name}: ${api.describe(e)}`, true);
      }
      li.remove();
      render();
    }
  };
  input.addEventListener('change', () => {
    if (input.files) add(input.files).then(() => (input.value = ''));
  });
  zone.addEventListener('dragover', (ev) => {
    if (ev.dataTransfer?.types.includes('Files')) ev.preventDefault();
  });
  zone.addEventListener('drop', (ev) => {
    if (!ev.dataTransfer?.files.length) return;
    ev.preventDefault();
    add(ev.dataTransfer.files);
  });
  zone.addEventListener('paste', (ev) => {
    const pasted = ev.clipboardData?.files;
    if (pasted?.length) {
      ev.preventDefault();
      add(pasted);
    }
  });
  return {
    el: h('div', { class: 'stack' }, h('div', { class: 'bar' }, pick, input), list),
    ids: () => files.map((f) => f.id),
    clear: () => {
      files.length = 0;
      render();
    },
  };
}

let completionSeq = 0;
/**
 * Completes the last address of a comma-separated field from `GET /api/email/addresses`.
 * @param {HTMLInputElement} input
 */
export function completeAddresses(input) {
  const id = `addresses-${++completionSeq}`;
  const list = h('datalist', { id });
  input.setAttribute('list', id);
  input.setAttribute('autocomplete', 'off');
  input.after(list);
  let timer = 0;
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = window.setTimeout(async () => {
      const parts = input.value.split(',');
      const last = (parts.pop() || '').trim();
      if (last.length < 2) return list.replaceChildren();
      const head = parts
        .map((p) => p.trim())
        .filter(Boolean)
        .join(', ');
      try {
        /** @type {Schemas['EmailAddressList']} */
        const found = await api.get('/api/email/addresses', { query: { q: last, limit: 8 } });
        replace(
          list,
          ...found.addresses.map((a) => {
            const one = a.name ? `${a.name} <${a.address}>` : a.address;
            return h('option', { value: head ? `${head}, ${one}` : one });
          }),
        );
      } catch {
        list.replaceChildren();
      }
    }, 200);
  });
}

/**
 * Shows "Sending…" with an Undo button until `sendAt`; resolves true when the user undid it
 * (the held mail is cancelled), false when it went.
 * @param {string} outboxId @param {string} sendAt
 * @returns {Promise<boolean>}
 */
export function undoToast(outboxId, sendAt) {
  return new Promise((resolve) => {
    const box = h('div', { class: 'toast undo', role: 'status', id: 'undo-toast' });
    const left = () => Math.max(0, Math.ceil((new Date(sendAt).getTime() - Date.now()) / 1000));
    const text = h('span', null, `Sending in ${left()} s`);
    let done = false;
    const finish = (/** @type {boolean} */ undone) => {
      if (done) return;
      done = true;
      clearInterval(tick);
      box.remove();
      resolve(undone);
    };
    const undo = h(
      'button',
      {
        type: 'button',
        onclick: async () => {
          try {
            await api.del(`/api/email/outbox/${api.seg(outboxId)}`);
            toast('Sending undone');
            finish(true);
          } catch (e) {
            toast(api.describe(e), true);
            finish(false);
          }
        },
      },
      'Undo',
    );
    box.append(text, ' ', undo);
    document.body.append(box);
    undo.focus();
    const tick = window.setInterval(() => {
      const s = left();
      text.textContent = `Sending in ${s} s`;
      if (s <= 0) finish(false);
    }, 250);
  });
}
