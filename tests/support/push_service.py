#!/usr/bin/env python3
"""A Web Push service for the integration tests (RFC 8030), written independently of the
server's code with `cryptography`.

usage: push_service.py PORT

Listens on 127.0.0.1:PORT, prints "ready", and exits when its stdin closes.

- `POST /_control/subscriptions` makes a subscription as a browser would: a fresh P-256
  key pair and 16-byte auth secret; answers `{id, endpoint, keys: {p256dh, auth}}`.
- `POST /_control/vapid {publicKey}` sets the key VAPID JWTs must verify with (the
  server's `GET /api/push/vapid`).
- `POST /_control/answer/<id> {status, retryAfter?}` sets what pushes to that subscription
  are answered (default 201).
- `GET /_control/requests` lists every push received, oldest first: `{sub, at, answered,
  headers: {ttl, urgency, topic, contentEncoding}, vapid: {ok, error, claims}, payload,
  decryptError}`.
- `POST /push/<id>`: a push. The VAPID `Authorization` is checked (ES256 over the JWT with
  the `k` key, which must be the configured one; `aud` this origin; `exp` in the future and
  at most 24 h ahead; `sub` present), the `aes128gcm` body is decrypted with the
  subscription's private key (RFC 8291 / RFC 8188), and the answer is the configured one.
"""
import base64
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

LOCK = threading.Lock()
SUBS = {}  # id -> {"key": private key, "auth": bytes, "answer": {...}}
REQUESTS = []
STATE = {"vapid": None}
MAX_BODY = 8192


def b64d(s):
    s = s.strip()
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def b64e(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def hkdf(salt, ikm, info, length):
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(ikm)


def decrypt(body, private_key, auth):
    """RFC 8291 §3.4 and RFC 8188 §2, one record."""
    salt, rs, idlen = body[:16], int.from_bytes(body[16:20], "big"), body[20]
    as_public = body[21 : 21 + idlen]
    record = body[21 + idlen :]
    if idlen != 65 or rs < 18 or len(record) > rs:
        raise ValueError("bad aes128gcm header (idlen %d, rs %d, record %d)" % (idlen, rs, len(record)))
    ua_public = private_key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    peer = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), as_public)
    secret = private_key.exchange(ec.ECDH(), peer)
    ikm = hkdf(auth, secret, b"WebPush: info\x00" + ua_public + as_public, 32)
    cek = hkdf(salt, ikm, b"Content-Encoding: aes128gcm\x00", 16)
    nonce = hkdf(salt, ikm, b"Content-Encoding: nonce\x00", 12)
    plain = AESGCM(cek).decrypt(nonce, record, None)
    plain = plain.rstrip(b"\x00")
    if not plain.endswith(b"\x02"):
        raise ValueError("the last record does not end with the 0x02 delimiter")
    return plain[:-1]


def check_vapid(header, origin):
    """Verifies `vapid t=<jwt>, k=<key>`; returns (ok, error, claims)."""
    if not header or not header.startswith("vapid "):
        return False, "no vapid authorization", None
    params = {}
    for part in header[len("vapid ") :].split(","):
        k, _, v = part.strip().partition("=")
        params[k] = v
    jwt, key = params.get("t"), params.get("k")
    if not jwt or not key:
        return False, "t or k missing", None
    if STATE["vapid"] is None or key != STATE["vapid"]:
        return False, "k is not the server's VAPID key", None
    try:
        h64, c64, s64 = jwt.split(".")
        head = json.loads(b64d(h64))
        claims = json.loads(b64d(c64))
        sig = b64d(s64)
        if head.get("alg") != "ES256" or len(sig) != 64:
            return False, "not ES256", claims
        pub = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64d(key))
        der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
        pub.verify(der, (h64 + "." + c64).encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False, "bad signature", None
    except Exception as e:  # malformed JWT
        return False, "malformed JWT: %s" % e, None
    now = time.time()
    if claims.get("aud") != origin:
        return False, "aud %r is not %r" % (claims.get("aud"), origin), claims
    exp = claims.get("exp")
    if not isinstance(exp, int) or exp <= now or exp > now + 24 * 3600:
        return False, "exp %r not within 24 h" % exp, claims
    if not claims.get("sub"):
        return False, "no sub", claims
    return True, None, claims


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=None, headers=()):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(min(n, MAX_BODY)) if n else b""

    def do_GET(self):
        if self.path == "/_control/requests":
            with LOCK:
                return self.reply(200, list(REQUESTS))
        self.reply(404, {"error": "not found"})

    def do_POST(self):
        body = self.read_body()
        if self.path == "/_control/subscriptions":
            key = ec.generate_private_key(ec.SECP256R1())
            auth = uuid.uuid4().bytes
            sid = uuid.uuid4().hex
            with LOCK:
                SUBS[sid] = {"key": key, "auth": auth, "answer": {"status": 201}}
            port = self.server.server_address[1]
            pub = key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
            return self.reply(
                200,
                {
                    "id": sid,
                    "endpoint": "http://127.0.0.1:%d/push/%s" % (port, sid),
                    "keys": {"p256dh": b64e(pub), "auth": b64e(auth)},
                },
            )
        if self.path == "/_control/vapid":
            STATE["vapid"] = json.loads(body)["publicKey"]
            return self.reply(200, {})
        if self.path.startswith("/_control/answer/"):
            sid = self.path.rsplit("/", 1)[1]
            with LOCK:
                SUBS[sid]["answer"] = json.loads(body)
            return self.reply(200, {})
        if self.path.startswith("/push/"):
            return self.push(self.path.rsplit("/", 1)[1], body)
        self.reply(404, {"error": "not found"})

    def push(self, sid, body):
        with LOCK:
            sub = SUBS.get(sid)
        if sub is None:
            return self.reply(404, {"error": "no such subscription"})
        port = self.server.server_address[1]
        ok, error, claims = check_vapid(self.headers.get("Authorization"), "http://127.0.0.1:%d" % port)
        payload, decrypt_error = None, None
        try:
            payload = json.loads(decrypt(body, sub["key"], sub["auth"]))
        except Exception as e:
            decrypt_error = repr(e)
        answer = dict(sub["answer"])
        status = int(answer.get("status", 201))
        with LOCK:
            REQUESTS.append(
                {
                    "sub": sid,
                    "at": time.time(),
                    "answered": status,
                    "size": len(body),
                    "headers": {
                        "ttl": self.headers.get("TTL"),
                        "urgency": self.headers.get("Urgency"),
                        "topic": self.headers.get("Topic"),
                        "contentEncoding": self.headers.get("Content-Encoding"),
                    },
                    "vapid": {"ok": ok, "error": error, "claims": claims},
                    "payload": payload,
                    "decryptError": decrypt_error,
                }
            )
        headers = []
        if "retryAfter" in answer:
            headers.append(("Retry-After", str(answer["retryAfter"])))
        if status == 201:
            headers.append(("Location", "/message/%s" % uuid.uuid4().hex))
        self.reply(status, None if status == 201 else {"error": "as told"}, headers)


def main():
    port = int(sys.argv[1])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
