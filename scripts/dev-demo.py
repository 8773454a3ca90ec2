#!/usr/bin/env python3
"""The demo conversation of scripts/dev-stack.sh (standard library only), so a newcomer's inbox is
not empty on first sign-in: a second local Synapse user, Anna Berg, opens a direct chat with the
developer's Matrix account and says hello.

Arguments: the app's URL, its log (mail transport "log": the sign-in code is read there), the
homeserver's URL, the developer's e-mail address; the homeserver's registration shared secret in
the environment as MATRIX_SHARED_SECRET (not on the command line, where `ps` shows it).

Steps: signs the developer in through the API as the web app does (`X-Switchboard-Client: web`,
which opens no Matrix device and leaves the developer's other sessions alone; the first run
creates the account and its Matrix user); registers Anna with the shared secret
(or logs her in, her password derived from the secret); and, unless Anna's `m.direct` already
lists the developer's Matrix ID (a second run), creates the direct chat, invites the developer
and sends the greeting. Every wait is bounded; a failure is printed and exits non-zero.
"""
import hashlib
import hmac
import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

APP, LOG, HS, EMAIL = sys.argv[1].rstrip("/"), Path(sys.argv[2]), sys.argv[3].rstrip("/"), sys.argv[4]
SECRET = os.environ["MATRIX_SHARED_SECRET"]
ANNA, ANNA_NAME = "anna", "Anna Berg"
HELLO = ("Hello! I'm Anna, a demo user on your local Synapse. scripts/dev-stack.sh started this chat so your "
         "inbox is not empty; reply and I get it (scripts/dev-stack.sh --no-demo skips me).")


def call(method, url, token=None, body=None, web=False):
    headers = {"Content-Type": "application/json", **({"X-Switchboard-Client": "web"} if web else {})}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, method=method, data=data, headers=headers)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"null")


def wait_healthy():
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            urllib.request.urlopen(APP + "/health", timeout=5).close()
            return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    sys.exit(f"{APP}/health did not answer within 120 s")


def developer_matrix_id():
    """Signs the developer in (creating the account the first time), returns the Matrix ID."""
    seen = LOG.stat().st_size if LOG.exists() else 0
    call("POST", APP + "/api/auth/code", body={"email": EMAIL}, web=True)
    deadline, code = time.time() + 30, None
    while code is None and time.time() < deadline:
        with LOG.open("rb") as f:
            f.seek(seen)
            fresh = f.read().decode("utf-8", "replace")
        found = re.findall(r"\b(\d{6})\b", "\n".join(line for line in fresh.splitlines() if EMAIL in line))
        code = found[-1] if found else time.sleep(0.2)
    if code is None:
        sys.exit(f"no sign-in code for {EMAIL} in {LOG} within 30 s")
    signed = call("POST", APP + "/api/auth/verify", body={"email": EMAIL, "code": code}, web=True)
    mxid = signed["user"].get("matrixUserId")
    if not mxid:
        sys.exit("the developer's account has no Matrix ID (is the homeserver configured?)")
    return mxid


def anna_token():
    """Anna's access token: registered with the shared secret, or logged in on a later run."""
    password = hmac.new(SECRET.encode(), b"dev-stack demo user anna", hashlib.sha256).hexdigest()
    nonce = call("GET", HS + "/_synapse/admin/v1/register")["nonce"]
    mac = hmac.new(SECRET.encode(), b"\0".join(s.encode() for s in (nonce, ANNA, password, "notadmin")), hashlib.sha1)
    try:
        return call("POST", HS + "/_synapse/admin/v1/register", body={
            "nonce": nonce, "username": ANNA, "password": password, "displayname": ANNA_NAME,
            "admin": False, "mac": mac.hexdigest()})["access_token"]
    except urllib.error.HTTPError as e:
        if e.code != 400:
            raise
    return call("POST", HS + "/_matrix/client/v3/login", body={
        "type": "m.login.password", "identifier": {"type": "m.id.user", "user": ANNA},
        "password": password})["access_token"]


def main():
    wait_healthy()
    me = developer_matrix_id()
    token = anna_token()
    anna = call("GET", HS + "/_matrix/client/v3/account/whoami", token)["user_id"]
    direct_url = f"{HS}/_matrix/client/v3/user/{urllib.parse.quote(anna)}/account_data/m.direct"
    try:
        direct = call("GET", direct_url, token)
    except urllib.error.HTTPError as e:
        if e.code != 404:
            raise
        direct = {}
    if direct.get(me):
        print(f"demo: {ANNA_NAME} already has a chat with {me}", file=sys.stderr)
        return
    room = call("POST", HS + "/_matrix/client/v3/createRoom", token, {
        "preset": "trusted_private_chat", "is_direct": True, "invite": [me]})["room_id"]
    call("PUT", direct_url, token, {**direct, me: [room]})
    txn = f"dev-demo-{int(time.time() * 1000)}"
    call("PUT", f"{HS}/_matrix/client/v3/rooms/{urllib.parse.quote(room)}/send/m.room.message/{txn}", token,
         {"msgtype": "m.text", "body": HELLO})
    print(f"demo: {ANNA_NAME} ({anna}) opened a chat with {me} and said hello", file=sys.stderr)


if __name__ == "__main__":
    try:
        main()
    except urllib.error.HTTPError as e:
        sys.exit(f"demo: {e.url}: {e.code} {e.read()[:300]!r}")
    except (urllib.error.URLError, OSError, KeyError) as e:
        sys.exit(f"demo: {type(e).__name__}: {e}")
