// @ts-check
// Keys stay in the browser: the X25519 key pair (WebCrypto), the recovery blob that wraps the
// private key under a passphrase, and the seal of docs/api.md both ways. The only cipher not in
// WebCrypto, XChaCha20-Poly1305, comes from the vendored, audited @noble/ciphers.
import { xchacha20poly1305 } from './vendor/noble-ciphers-2.0.1/chacha.js';

const subtle = globalThis.crypto.subtle;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** HKDF info of every seal (docs/api.md, "Native envelopes"). */
const SEAL_INFO = enc.encode('switchboard-v1');
/** PKCS#8 prefix of an X25519 private key (RFC 8410): the 32 raw bytes follow it. */
const PKCS8_X25519 = Uint8Array.from([
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04, 0x20,
]);

/** Recovery blob version 1 (docs/security.md, "The recovery format"). */
export const RECOVERY_VERSION = 1;
/** PBKDF2-SHA256 iterations written into new blobs (OWASP 2023 minimum). */
export const RECOVERY_ITERATIONS = 600_000;
const HEADER = 1 + 4 + 16 + 12;

/** @typedef {Uint8Array<ArrayBuffer>} Bytes */

/** @param {Uint8Array} bytes */
export function toBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

/** @param {string} text standard base64 with padding */
export function fromBase64(text) {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** @param {number} n */
export function randomBytes(n) {
  return globalThis.crypto.getRandomValues(new Uint8Array(n));
}

/**
 * The user's key pair in memory: `privateKey` is a non-extractable WebCrypto key. The 32 raw
 * private bytes are never kept: they exist only while a key is made and wrapped, or unwrapped
 * and imported, and are zeroed right after (a page script or a heap dump finds no key to copy).
 * @typedef {{ privateKey: CryptoKey, publicKey: Bytes }} KeyPair
 */

/**
 * Imports 32 private bytes as a non-extractable key; zeroes `raw` (and its PKCS#8 copies).
 * @param {Bytes} raw 32 private bytes @returns {Promise<KeyPair>}
 */
async function keyPairFromRaw(raw) {
  const pkcs8 = new Uint8Array(PKCS8_X25519.length + 32);
  pkcs8.set(PKCS8_X25519);
  pkcs8.set(raw, PKCS8_X25519.length);
  try {
    // Extractable once, to read the public half; the kept key is not extractable.
    const tmp = await subtle.importKey('pkcs8', pkcs8, { name: 'X25519' }, true, ['deriveBits']);
    const jwk = await subtle.exportKey('jwk', tmp);
    const publicKey = fromBase64Url(String(jwk.x));
    jwk.d = '';
    const privateKey = await subtle.importKey('pkcs8', pkcs8, { name: 'X25519' }, false, ['deriveBits']);
    return { privateKey, publicKey };
  } finally {
    pkcs8.fill(0);
    raw.fill(0);
  }
}

/**
 * A new X25519 key pair, and its private bytes wrapped under `passphrase` (`encryptedMasterKey`,
 * see {@link wrapPrivateKey}); the raw bytes are zeroed before this returns.
 * @param {string} passphrase @returns {Promise<{ pair: KeyPair, encryptedMasterKey: string }>}
 */
export async function generateKeyPair(passphrase) {
  const made = /** @type {CryptoKeyPair} */ (await subtle.generateKey({ name: 'X25519' }, true, ['deriveBits']));
  const pkcs8 = new Uint8Array(await subtle.exportKey('pkcs8', made.privateKey));
  const raw = pkcs8.slice(pkcs8.length - 32);
  pkcs8.fill(0);
  try {
    const encryptedMasterKey = await wrapPrivateKey(raw, passphrase);
    return { pair: await keyPairFromRaw(raw), encryptedMasterKey };
  } finally {
    raw.fill(0);
  }
}

/** @param {string} text base64url without padding */
function fromBase64Url(text) {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/');
  return fromBase64(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
}

/**
 * PBKDF2-SHA256 → AES-256-GCM key.
 * @param {string} passphrase @param {Bytes} salt @param {number} iterations
 */
async function passphraseKey(passphrase, salt, iterations) {
  const base = await subtle.importKey('raw', enc.encode(passphrase.normalize('NFC')), 'PBKDF2', false, ['deriveKey']);
  return subtle.deriveKey(
    { name: 'PBKDF2', hash: 'SHA-256', salt, iterations },
    base,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  );
}

/**
 * Wraps the 32 private bytes under `passphrase` (recovery format v1, docs/security.md):
 * `version(1) | iterations(u32 BE) | salt(16) | nonce(12) | AES-256-GCM(key) + tag(16)`,
 * the first 5 bytes as associated data. Returns standard base64 (`encryptedMasterKey`).
 * @param {Bytes} raw @param {string} passphrase
 */
async function wrapPrivateKey(raw, passphrase) {
  const salt = randomBytes(16);
  const nonce = randomBytes(12);
  const head = new Uint8Array(HEADER);
  head[0] = RECOVERY_VERSION;
  new DataView(head.buffer).setUint32(1, RECOVERY_ITERATIONS, false);
  head.set(salt, 5);
  head.set(nonce, 21);
  const key = await passphraseKey(passphrase, salt, RECOVERY_ITERATIONS);
  const sealed = new Uint8Array(
    await subtle.encrypt({ name: 'AES-GCM', iv: nonce, additionalData: head.subarray(0, 5) }, key, raw),
  );
  const out = new Uint8Array(HEADER + sealed.length);
  out.set(head);
  out.set(sealed, HEADER);
  return toBase64(out);
}

/**
 * Opens a recovery blob; throws `Error('wrong_passphrase')` when the passphrase does not open it.
 * @param {string} blob base64 @param {string} passphrase @returns {Promise<KeyPair>}
 */
export async function unwrapPrivateKey(blob, passphrase) {
  const bytes = fromBase64(blob);
  if (bytes.length < HEADER + 48 || bytes[0] !== RECOVERY_VERSION) {
    throw new Error('unsupported_recovery_format');
  }
  const iterations = new DataView(bytes.buffer).getUint32(1, false);
  if (iterations < RECOVERY_ITERATIONS) throw new Error('unsupported_recovery_format');
  const key = await passphraseKey(passphrase, bytes.subarray(5, 21), iterations);
  let raw;
  try {
    raw = new Uint8Array(
      await subtle.decrypt(
        { name: 'AES-GCM', iv: bytes.subarray(21, 33), additionalData: bytes.subarray(0, 5) },
        key,
        bytes.subarray(HEADER),
      ),
    );
  } catch {
    throw new Error('wrong_passphrase');
  }
  return keyPairFromRaw(raw);
}

/** Shared keys per private key and ephemeral public key. @type {WeakMap<CryptoKey, Map<string, Uint8Array>>} */
const sharedKeys = new WeakMap();

/** @param {CryptoKey} privateKey @param {CryptoKey} publicKey */
async function sealKey(privateKey, publicKey) {
  const shared = await subtle.deriveBits({ name: 'X25519', public: publicKey }, privateKey, 256);
  const ikm = await subtle.importKey('raw', shared, 'HKDF', false, ['deriveBits']);
  const bits = await subtle.deriveBits(
    { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: SEAL_INFO },
    ikm,
    256,
  );
  return new Uint8Array(bits);
}

/** @param {Bytes} raw */
function importPublic(raw) {
  return subtle.importKey('raw', raw, { name: 'X25519' }, false, []);
}

/**
 * Opens an envelope sealed to `pair`; returns the plaintext bytes (throws when it does not open).
 * @param {KeyPair} pair @param {{ephemeralPubkey: string, nonce: string, ciphertext: string}} env
 */
export async function openEnvelope(pair, env) {
  // The server may seal a whole response with one ephemeral key: derive each shared key once.
  let cache = sharedKeys.get(pair.privateKey);
  if (!cache) {
    cache = new Map();
    sharedKeys.set(pair.privateKey, cache);
  }
  let key = cache.get(env.ephemeralPubkey);
  if (!key) {
    key = await sealKey(pair.privateKey, await importPublic(fromBase64(env.ephemeralPubkey)));
    if (cache.size > 256) cache.clear();
    cache.set(env.ephemeralPubkey, key);
  }
  return xchacha20poly1305(key, fromBase64(env.nonce)).decrypt(fromBase64(env.ciphertext));
}

/**
 * Opens an envelope holding UTF-8 JSON; `null` when it cannot be opened (another key, damage).
 * @param {KeyPair | null} pair
 * @param {{ephemeralPubkey: string, nonce: string, ciphertext: string} | null | undefined} env
 * @returns {Promise<any>}
 */
export async function openJson(pair, env) {
  if (!pair || !env) return null;
  try {
    return JSON.parse(dec.decode(await openEnvelope(pair, env)));
  } catch {
    return null;
  }
}

/**
 * Seals `plaintext` to the X25519 public key `recipient` (a fresh ephemeral key, random nonce).
 * @param {Bytes} recipient @param {Uint8Array} plaintext
 */
export async function seal(recipient, plaintext) {
  const eph = /** @type {CryptoKeyPair} */ (await subtle.generateKey({ name: 'X25519' }, true, ['deriveBits']));
  const key = await sealKey(eph.privateKey, await importPublic(recipient));
  const nonce = randomBytes(24);
  const ciphertext = xchacha20poly1305(key, nonce).encrypt(plaintext);
  const ephPublic = new Uint8Array(await subtle.exportKey('raw', eph.publicKey));
  return { ephemeralPubkey: toBase64(ephPublic), nonce: toBase64(nonce), ciphertext: toBase64(ciphertext) };
}

/**
 * Checks the attestation's Ed25519 signature over
 * `"switchboard-attestation-v1\n" + serverPublicKey + "\n" + keyVersion + "\n" + version`.
 * @param {{
 *   serverPublicKey: string, keyVersion: number, signingPublicKey: string, signature: string, version: string,
 * }} att
 */
export async function verifyAttestation(att) {
  const key = await subtle.importKey('raw', fromBase64(att.signingPublicKey), { name: 'Ed25519' }, false, ['verify']);
  const text = `switchboard-attestation-v1\n${att.serverPublicKey}\n${att.keyVersion}\n${att.version}`;
  return subtle.verify({ name: 'Ed25519' }, key, fromBase64(att.signature), enc.encode(text));
}

// ---- the unlocked key of this browser, kept in IndexedDB as a non-extractable CryptoKey ----

const DB = 'switchboard';
const STORE = 'keys';

/** @returns {Promise<IDBDatabase>} */
function openDb() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/**
 * Remembers the unlocked key of `userId` in this browser (the raw bytes are not stored).
 * @param {string} userId @param {KeyPair} pair
 */
export async function rememberKey(userId, pair) {
  const db = await openDb();
  await new Promise((resolve, reject) => {
    const tx = db.transaction(STORE, 'readwrite');
    tx.objectStore(STORE).put({ privateKey: pair.privateKey, publicKey: pair.publicKey }, userId);
    tx.oncomplete = () => resolve(undefined);
    tx.onerror = () => reject(tx.error);
  });
  db.close();
}

/** @param {string} userId @returns {Promise<KeyPair | null>} */
export async function recallKey(userId) {
  try {
    const db = await openDb();
    const value = await new Promise((resolve, reject) => {
      const req = db.transaction(STORE).objectStore(STORE).get(userId);
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    db.close();
    if (!value) return null;
    return { privateKey: value.privateKey, publicKey: value.publicKey };
  } catch {
    return null;
  }
}

/** Forgets the key of `userId` in this browser (sign-out, key deletion). @param {string} userId */
export async function forgetKey(userId) {
  try {
    const db = await openDb();
    await new Promise((resolve) => {
      const tx = db.transaction(STORE, 'readwrite');
      tx.objectStore(STORE).delete(userId);
      tx.oncomplete = () => resolve(undefined);
      tx.onerror = () => resolve(undefined);
    });
    db.close();
  } catch {
    /* nothing stored */
  }
}

/**
 * Opens an envelope holding UTF-8 text; `null` when it cannot be opened.
 * @param {KeyPair | null} pair
 * @param {{ephemeralPubkey: string, nonce: string, ciphertext: string} | null | undefined} env
 */
export async function openText(pair, env) {
  if (!pair || !env) return null;
  try {
    return dec.decode(await openEnvelope(pair, env));
  } catch {
    return null;
  }
}
