// @ts-check
// The composer of a conversation: text (Enter sends, Shift+Enter adds a line), replies,
// scheduling, typing notices and the draft (ui/live.js); files chosen, pasted or dropped are
// shown first (a picture, a player or the name) and sent with "Send file", the text as their
// caption; voice notes recorded here (ui/recorder.js) go as voice notes.
import * as api from '../api.js';
import { h, replace } from './dom.js';
import { errorBox } from './notice.js';
import { scheduleForm } from './schedule.js';
import { draftKeeper, typingSender } from './live.js';
import { size } from './media.js';
import { voiceRecorder } from './recorder.js';

const txn = () => `web-${Date.now()}-${Math.random().toString(36).slice(2)}`;

/**
 * The form; other parts of the page hand it a file with `form.dispatchEvent(new
 * CustomEvent('attach', {detail: file}))` (a file dropped on the conversation).
 * @param {string} roomId @param {HTMLElement} out @param {() => void} sent
 */
export function composeForm(roomId, out, sent) {
  const text = h('textarea', {
    name: 'message',
    rows: 2,
    'aria-label': 'Message',
    placeholder: 'Write a message (Enter sends, Shift+Enter adds a line)',
    required: true,
  });
  /** The event the next message replies to. @type {string | null} */
  let replyTo = null;
  const replying = h('p', { class: 'replying muted', hidden: true });
  const clearReply = () => {
    replyTo = null;
    replying.hidden = true;
  };
  const file = h('input', { type: 'file', 'aria-label': 'Attach a file', class: 'attach' });
  const pending = h('div', { class: 'pending', hidden: true, 'aria-label': 'File to send', role: 'group' });
  const recorder = voiceRecorder((f, durationMs, waveform) =>
    upload(f, { voice: 'true', durationMs: String(durationMs), waveform: JSON.stringify(waveform) }),
  );
  const form = h(
    'form',
    { class: 'composer' },
    replying,
    pending,
    text,
    h('button', { type: 'submit' }, 'Send'),
    file,
    recorder,
    scheduleForm(
      roomId,
      () => text.value,
      () => {
        text.value = '';
      },
    ),
  );
  const typing = typingSender(roomId, text);
  const draft = draftKeeper(roomId, text);

  /**
   * Sends a file (the text as its caption) with extra form fields.
   * @param {File} f @param {Record<string, string>} [extra]
   */
  async function upload(f, extra = {}) {
    const body = new FormData();
    body.append('txnId', txn());
    if (text.value.trim()) body.append('caption', text.value.trim());
    if (replyTo) body.append('replyTo', replyTo);
    for (const [k, v] of Object.entries(extra)) body.append(k, v);
    body.append('file', f);
    out.replaceChildren();
    try {
      await api.request('POST', `/api/rooms/${api.seg(roomId)}/media`, { body });
      text.value = '';
      clearReply();
      sent();
    } catch (e) {
      out.replaceChildren(errorBox(e));
      throw e;
    }
  }

  /** The local preview's blob: URL (revoked when the file is sent or removed). @type {string | null} */
  let local = null;
  const unstage = () => {
    if (local) URL.revokeObjectURL(local);
    local = null;
    pending.hidden = true;
    pending.replaceChildren();
    file.value = '';
  };
  /** Shows `f` with "Send file" and "Remove". @param {File} f */
  function stage(f) {
    unstage();
    local = URL.createObjectURL(f);
    const type = f.type || '';
    const shown = type.startsWith('image/')
      ? h('img', { src: local, alt: `Preview of ${f.name}`, class: 'preview' })
      : type.startsWith('audio/')
        ? h('audio', { src: local, controls: true, 'aria-label': `Preview of ${f.name}` })
        : type.startsWith('video/')
          ? h('video', { src: local, controls: true, 'aria-label': `Preview of ${f.name}`, class: 'preview' })
          : null;
    const send = h('button', { type: 'button' }, 'Send file');
    send.addEventListener('click', async () => {
      send.disabled = true;
      try {
        await upload(f);
        unstage();
      } catch {
        send.disabled = false;
      }
    });
    replace(
      pending,
      shown,
      h('p', null, `${f.name || 'Pasted file'} (${size(f.size)})`),
      send,
      h('button', { type: 'button', class: 'secondary', onclick: unstage }, 'Remove'),
    );
    pending.hidden = false;
    send.focus();
  }

  form.addEventListener('attach', (ev) => stage(/** @type {CustomEvent<File>} */ (ev).detail));
  file.addEventListener('change', () => {
    const chosen = file.files?.[0];
    if (chosen) stage(chosen);
  });
  text.addEventListener('paste', (ev) => {
    const pasted = [...(ev.clipboardData?.files || [])][0];
    if (!pasted) return;
    ev.preventDefault();
    // A pasted screenshot is called "image.png" (or nothing): name it after what it is.
    const ext = (pasted.type.split('/')[1] || 'bin').replace(/[^a-z0-9]/g, '');
    stage(
      pasted.name && pasted.name !== 'image.png'
        ? pasted
        : new File([pasted], `Pasted file.${ext}`, { type: pasted.type }),
    );
  });
  form.addEventListener('draft', (ev) => {
    draft.restore(Boolean(/** @type {CustomEvent} */ (ev).detail));
  });
  form.addEventListener('reply', (ev) => {
    const { id, text: quoted } = /** @type {CustomEvent} */ (ev).detail;
    replyTo = id;
    replace(
      replying,
      `Replying to “${String(quoted).slice(0, 80)}” `,
      h('button', { type: 'button', class: 'link', onclick: clearReply }, 'Cancel reply'),
    );
    replying.hidden = false;
    text.focus();
  });
  text.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const content = text.value.trim();
    if (!content) return;
    // No draft save may land after the send (which deletes the draft on the server).
    draft.sent();
    text.disabled = true;
    out.replaceChildren();
    try {
      await api.post(`/api/rooms/${api.seg(roomId)}/messages`, { content, txnId: txn(), replyTo });
      typing.stop();
      draft.sent();
      text.value = '';
      clearReply();
      sent();
    } catch (e) {
      out.replaceChildren(errorBox(e));
    } finally {
      text.disabled = false;
      text.focus();
    }
  });
  /** Drops the local preview and stops a recording (the conversation closes: no microphone left on). */
  form.addEventListener('release', () => {
    unstage();
    recorder.dispatchEvent(new Event('release'));
  });
  return form;
}
