// @ts-check
// Device verification (SAS emoji): the user's other Matrix apps (Element, …) verify Switchboard's
// sync device. Lists GET /api/e2ee/verifications, shows the emoji to compare, and answers with
// accept / confirm ("They match") / cancel; re-reads on `verification.updated` from the stream.
import * as api from '../api.js';
import { on } from '../state.js';
import { h, replace } from './dom.js';
import { busy, errorBox } from './notice.js';

/** What each state asks of the user. @type {Record<string, string>} */
const STATES = {
  requested: 'wants to verify this Switchboard. Accept to compare emoji.',
  ready: 'accepted: waiting for that device to start the emoji comparison.',
  started: 'started an emoji comparison.',
  keys_exchanged: 'shows emoji: compare them with the ones below.',
  done: 'is verified.',
  cancelled: 'verification was cancelled; nothing was trusted.',
};

/**
 * The "Device verification" section and its cleanup (stops listening to the stream).
 * @returns {{section: HTMLElement, cleanup: () => void}}
 */
export function verificationsSection() {
  const list = h('div', { 'aria-live': 'polite' });
  const out = h('div', { class: 'out' });

  /** @param {string} id @param {'accept' | 'confirm' | 'cancel'} action @param {Event} ev */
  const act = (id, action, ev) =>
    busy(/** @type {HTMLElement} */ (ev.currentTarget), out, async () => {
      await api.post(`/api/e2ee/verifications/${api.seg(id)}/${action}`);
      await load();
    });

  /** @param {Schemas['Verification']} v */
  const item = (v) => {
    const buttons = [];
    const open = v.state !== 'done' && v.state !== 'cancelled';
    // A `started` one may be accepted already (it stays `started` until the keys arrive): a
    // second accept is a 409 shown in words.
    if (v.state === 'requested' || v.state === 'started') {
      buttons.push(
        h('button', { type: 'button', onclick: (/** @type {Event} */ ev) => act(v.id, 'accept', ev) }, 'Accept'),
      );
    }
    if (v.state === 'keys_exchanged' && !v.weConfirmed) {
      buttons.push(
        h('button', { type: 'button', onclick: (/** @type {Event} */ ev) => act(v.id, 'confirm', ev) }, 'They match'),
      );
    }
    if (open) {
      buttons.push(
        h(
          'button',
          { type: 'button', class: 'secondary', onclick: (/** @type {Event} */ ev) => act(v.id, 'cancel', ev) },
          v.state === 'keys_exchanged' ? 'They don’t match' : 'Cancel',
        ),
      );
    }
    return h(
      'li',
      { class: 'verification', dataset: { id: v.id, state: v.state } },
      h('p', null, h('strong', null, `Device ${v.otherDeviceId}`), ' ', STATES[v.state] || v.state),
      v.emoji.length
        ? h(
            'ol',
            { class: 'sas-emoji', 'aria-label': 'Emoji to compare' },
            v.emoji.map((e) =>
              h(
                'li',
                null,
                h('span', { class: 'symbol', 'aria-hidden': 'true' }, e.symbol),
                h('span', null, e.description),
              ),
            ),
          )
        : null,
      v.weConfirmed && open
        ? h('p', { class: 'muted' }, 'You confirmed; waiting for the other device to confirm too.')
        : null,
      v.cancelCode ? h('p', { class: 'muted' }, `Reason: ${v.cancelCode}`) : null,
      buttons.length ? h('div', { class: 'actions' }, buttons) : null,
    );
  };

  /**
   * The flows on screen by id: the JSON each was drawn from and its node.
   * @type {Map<string, {sig: string, node: HTMLElement}>}
   */
  let shown = new Map();
  /** The list the flows are drawn into while there are any. @type {HTMLElement | null} */
  let ul = null;
  /** Bumped by every load, so an older answer arriving late does not overwrite a newer one. */
  let generation = 0;

  /**
   * Draws the flows keyed by id, touching only the ones that changed and inserting new ones
   * around the others: a `verification.updated` must not replace or move the button a person
   * is pressing, or the press is lost between mouse down and mouse up.
   * @param {Schemas['Verification'][]} newest
   */
  const draw = (newest) => {
    if (!newest.length) {
      shown = new Map();
      ul = null;
      replace(
        list,
        h(
          'p',
          { class: 'muted' },
          'No verification in progress. Start one from another Matrix app, e.g. ' +
            'Element: Settings → Sessions → the “Switchboard” session → Verify.',
        ),
      );
      return;
    }
    if (!ul) {
      ul = h('ul', { class: 'verifications' });
      replace(list, ul);
    }
    const wanted = new Set(newest.map((v) => v.id));
    for (const [id, old] of shown) if (!wanted.has(id)) old.node.remove();
    const next = new Map();
    newest.forEach((v, i) => {
      const sig = JSON.stringify(v);
      const old = shown.get(v.id);
      let node = old?.node;
      if (!old || old.sig !== sig) {
        node = item(v);
        if (old) old.node.replaceWith(node);
      }
      const el = /** @type {HTMLElement} */ (node);
      const here = /** @type {HTMLElement} */ (ul).children[i];
      if (here !== el) /** @type {HTMLElement} */ (ul).insertBefore(el, here || null);
      next.set(v.id, { sig, node: el });
    });
    shown = next;
  };

  const load = async () => {
    const mine = ++generation;
    try {
      /** @type {Schemas['VerificationList']} */
      const res = await api.get('/api/e2ee/verifications');
      if (mine !== generation) return;
      draw(res.verifications.slice().reverse());
    } catch (e) {
      if (mine !== generation) return;
      shown = new Map();
      ul = null;
      replace(list, errorBox(e));
    }
  };

  const off = on('sync', (/** @type {any} */ data) => {
    if (data && data.type === 'verification.updated') load();
  });
  load();
  const section = h(
    'section',
    { class: 'card', id: 'verify', 'aria-labelledby': 'h-verify' },
    h('h2', { id: 'h-verify' }, 'Device verification'),
    h(
      'p',
      null,
      'Verify Switchboard with your other Matrix apps: they then trust it, and it accepts the message keys they ' +
        'forward. Only confirm when the emoji are the same on both devices, in the same order.',
    ),
    list,
    out,
  );
  return { section, cleanup: off };
}
