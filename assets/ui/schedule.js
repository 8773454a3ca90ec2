// @ts-check
// "Send later": the text is sealed in the browser to the server key of /api/attestation, after
// its Ed25519 signature checks out, and stored with POST /api/messages/schedule.
import * as api from '../api.js';
import { seal, verifyAttestation, fromBase64 } from '../crypto.js';
import { h } from './dom.js';
import { toast } from './notice.js';

/** The server key, checked once per page load. @type {Promise<Schemas['AttestationResult']> | null} */
let attested = null;

async function serverKey() {
  if (!attested) {
    attested = (async () => {
      /** @type {Schemas['AttestationResult']} */
      const att = await api.get('/api/attestation', { auth: false });
      if (!(await verifyAttestation(att)))
        throw new Error('The server key signature does not verify: nothing was scheduled.');
      return att;
    })();
    attested.catch(() => (attested = null));
  }
  return attested;
}

/** A local "YYYY-MM-DDTHH:MM" a few minutes from now, for the picker. */
function soon() {
  const d = new Date(Date.now() + 10 * 60000);
  d.setSeconds(0, 0);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

/**
 * @param {string} roomId @param {() => string} text @param {() => void} done
 */
export function scheduleForm(roomId, text, done) {
  const at = h('input', { type: 'datetime-local', name: 'scheduledFor', value: soon(), 'aria-label': 'Send at' });
  const button = h('button', { type: 'button', class: 'secondary' }, 'Schedule');
  button.addEventListener('click', async () => {
    const body = text().trim();
    if (!body) return toast('Write the message first.', true);
    const when = new Date(at.value);
    if (Number.isNaN(when.getTime()) || when.getTime() <= Date.now())
      return toast('Choose a time in the future.', true);
    button.disabled = true;
    try {
      const att = await serverKey();
      const env = await seal(fromBase64(att.serverPublicKey), new TextEncoder().encode(body));
      await api.post('/api/messages/schedule', {
        roomId,
        encryptedBody: env.ciphertext,
        nonce: env.nonce,
        ephemeralPubkey: env.ephemeralPubkey,
        scheduledFor: when.toISOString(),
      });
      toast(`Scheduled for ${when.toLocaleString()}`);
      done();
    } catch (e) {
      toast(api.describe(e), true);
    } finally {
      button.disabled = false;
    }
  });
  return h('details', { class: 'later' }, h('summary', null, 'Send later'), at, button);
}
