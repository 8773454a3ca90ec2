"""An independent Matrix E2EE client for the integration tests (matrix-nio + vodozemac).

Reads one JSON command per line on stdin and answers one JSON line on stdout, on one
asyncio loop. Commands (all answer {"ok": true, ...} or {"ok": false, "error": ...}):
  login        {base, user_id, password, store}        -> device_id
  create_room  {invite: [mxid], encryption?: {...}}    -> room_id (encrypted, private chat)
  wait_joined  {room, user_id, timeout}                -> the user joined
  join         {room, timeout}                         -> accepts an invitation (waits for it)
  send         {room, text}                            -> event_id (room keys shared first)
  send_late    {room, text}                            -> event_id; its room key is NOT sent
  share_late   {room}                                  -> sends the held-back room key
  wait_device  {room, user_id, device_id, timeout}     -> nio knows the device; new room key
  wait_text    {room, text, timeout}                   -> sender of an m.text, whether it
                                                          arrived encrypted (decrypted) and
                                                          its megolm session_id
  whoami       {}                                      -> user_id, device_id
  wait_key_request {session_id, timeout}               -> an m.room_key_request for that
                                                          session reached this device
  send_event   {room, type, content}                   -> event_id (encrypted like send)
  send_file    {room, data_b64, msgtype, mimetype, name} -> event_id: the bytes encrypted
                                                          with nio's attachment cipher,
                                                          uploaded, sent with `file`
  wait_event   {room, match, timeout}                  -> the first room event (decrypted
                                                          when it was encrypted) whose
                                                          fields match `match` ("a.b": v),
                                                          as {event, decrypted}
  fetch_file   {file}                                  -> downloads an encrypted attachment
                                                          (authenticated media API) and
                                                          decrypts it: {sha256, size}
  sas_start    {device_id?, user_id?, timeout}         -> waits until nio knows another device
                                                          with keys of user_id (default: our
                                                          own; the only one, or device_id),
                                                          sends it a bare
                                                          m.key.verification.start (nio's
                                                          legacy flow): transaction_id,
                                                          device_id
  sas_request  {device_id, timeout}                    -> sends m.key.verification.request:
                                                          transaction_id (then sas_start with
                                                          it once ready arrived)
  wait_to_device {type, transaction_id, timeout}       -> the first to-device event of that
                                                          type and flow: {event}
  to_device_raw {event_type, device_id, content}        -> sends that to-device event to an own
                                                          device as given (no checks)
  sas_done     {transaction_id, device_id}             -> sends m.key.verification.done
  sas_wait     {transaction_id, until, timeout}        -> syncs (sending nio's answers) until
                                                          the SAS is "keys" (emoji shown),
                                                          "verified" or "canceled":
                                                          {state, emoji: [[symbol, name]],
                                                          cancel_code}
  sas_confirm  {transaction_id}                        -> the emoji match (sends nio's MAC)
  sas_cancel   {transaction_id}                        -> cancels (m.user)
  sync_for     {seconds}                               -> syncs (answering key requests)
  device_trust {device_id}                             -> {verified}: nio trusts that own
                                                          device
"""
import asyncio
import base64
import hashlib
import json
import sys
import time
import urllib.request

from nio import (AsyncClient, AsyncClientConfig, Event, RoomKeyRequest, RoomMessageText,
                 RoomSendResponse, ToDeviceEvent, UploadResponse)
from nio.crypto.sas import Sas
from nio.event_builders import ToDeviceMessage
from nio.api import Api
from nio.crypto.attachments import decrypt_attachment, encrypt_attachment


def _spec_commitment(self, key: str):
    """The SAS commitment as the Matrix spec defines it: unpadded base64 of the SHA-256
    (matrix-nio 0.26 compares a hex digest, which no spec client sends; the SAS keys,
    info strings and MACs stay nio's own)."""
    content = Api.to_canonical_json(self.start_verification().content)
    digest = hashlib.sha256(key.encode() + content.encode()).digest()
    return self.commitment == base64.b64encode(digest).decode().rstrip("=")


def _spec_emoji(self, extra_info: str):
    """The emoji of the SAS: vodozemac's `emoji_indices` are the seven 6-bit indices
    already (matrix-nio 0.26 splits them into bits again, which matches no spec client)."""
    return [self.emoji[i] for i in self.established_sas.bytes(extra_info).emoji_indices]


def _patch_sas():
    """Three spec bugs of matrix-nio 0.26's SAS, fixed for the tests: the two above, and
    its MACs, which are vodozemac's correct base64 but announced as the legacy
    `hkdf-hmac-sha256` (whose MACs spec clients encode the old, broken way): nio offers
    `hkdf-hmac-sha256.v2`, which is what it computes."""
    from nio.crypto.sas import Sas
    Sas._check_commitment = _spec_commitment
    Sas._generate_emoji = _spec_emoji
    Sas._mac_normal = "hkdf-hmac-sha256.v2"
    Sas._mac_v1 = [Sas._mac_normal]


_patch_sas()


class Driver:
    def __init__(self):
        self.client = None
        self.texts = []  # (room_id, sender, body, decrypted, session_id) of text messages
        self.key_requests = []  # (session_id, requesting_device_id) received
        self.events = []  # (room_id, event source, decrypted) of every room event
        self.to_device = []  # source of every to-device event
        self.base = None

    async def sync(self, timeout=0):
        resp = await self.client.sync(timeout=timeout, full_state=False)
        if self.client.should_upload_keys:
            await self.client.keys_upload()
        if self.client.should_query_keys:
            await self.client.keys_query()
        if self.client.should_claim_keys:
            await self.client.keys_claim(self.client.get_users_for_key_claiming())
        return resp

    async def login(self, base, user_id, password, store):
        self.base = base
        cfg = AsyncClientConfig(encryption_enabled=True, store_sync_tokens=True)
        self.client = AsyncClient(base, user_id, store_path=store, config=cfg)
        resp = await self.client.login(password, device_name="nio test client")
        if not getattr(resp, "device_id", None):
            raise RuntimeError(f"login failed: {resp}")
        await self.started()
        return {"device_id": resp.device_id}

    async def started(self):
        def on_text(room, event):
            # `decrypted` is set only for events that arrived as m.room.encrypted.
            self.texts.append((room.room_id, event.sender, event.body,
                               bool(getattr(event, "decrypted", False)),
                               getattr(event, "session_id", None)))

        self.client.add_event_callback(on_text, RoomMessageText)

        def on_event(room, event):
            self.events.append((room.room_id, event.source,
                                bool(getattr(event, "decrypted", False))))

        self.client.add_event_callback(on_event, Event)
        self.client.add_to_device_callback(lambda e: self.to_device.append(e.source), ToDeviceEvent)
        # nio hands key requests to callbacks only when it holds the key and the
        # requester is unverified; the test wants to see every request that arrives.
        olm = self.client.olm
        handle = olm._handle_key_requests

        def recording(event):
            if isinstance(event, RoomKeyRequest):
                self.key_requests.append((event.session_id, event.requesting_device_id))
            return handle(event)

        olm._handle_key_requests = recording
        await self.client.keys_upload()
        await self.sync()

    async def create_room(self, invite, encryption=None):
        content = {"algorithm": "m.megolm.v1.aes-sha2", **(encryption or {})}
        resp = await self.client.room_create(
            invite=invite,
            is_direct=True,
            initial_state=[{"type": "m.room.encryption", "state_key": "", "content": content}],
        )
        if not getattr(resp, "room_id", None):
            raise RuntimeError(f"room_create failed: {resp}")
        await self.sync()
        return {"room_id": resp.room_id}

    async def wait_joined(self, room, user_id, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            await self.sync(timeout=500)
            r = self.client.rooms.get(room)
            if r is not None and user_id in r.users:
                await self.client.joined_members(room)
                if self.client.should_query_keys:
                    await self.client.keys_query()
                return {}
        raise RuntimeError(f"{user_id} did not join {room} within {timeout}s")

    async def join(self, room, timeout=30):
        deadline = time.monotonic() + timeout
        while room not in self.client.invited_rooms and room not in self.client.rooms:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no invitation to {room} within {timeout}s")
            await self.sync(timeout=500)
        resp = await self.client.join(room)
        if not getattr(resp, "room_id", None):
            raise RuntimeError(f"join failed: {resp}")
        await self.sync()
        await self.client.joined_members(room)
        if self.client.should_query_keys:
            await self.client.keys_query()
        return {"room_id": resp.room_id}

    async def send(self, room, text):
        await self.sync()
        resp = await self.client.room_send(
            room, "m.room.message", {"msgtype": "m.text", "body": text},
            ignore_unverified_devices=True)
        if not isinstance(resp, RoomSendResponse):
            raise RuntimeError(f"room_send failed: {resp}")
        return {"event_id": resp.event_id}

    async def send_many(self, room, prefix, count):
        """Sends `count` texts "<prefix> <i>" in one megolm session (nio would rotate after 100)."""
        await self.sync()
        ids = []
        for i in range(count):
            session = self.client.olm.outbound_group_sessions.get(room)
            if session is not None:
                session.max_messages = 1_000_000
            resp = await self.client.room_send(
                room, "m.room.message", {"msgtype": "m.text", "body": f"{prefix} {i}"},
                ignore_unverified_devices=True)
            if not isinstance(resp, RoomSendResponse):
                raise RuntimeError(f"room_send failed: {resp}")
            ids.append(resp.event_id)
        return {"event_ids": ids}

    async def send_late(self, room, text):
        """Encrypts with a new megolm session whose key is held back (see share_late)."""
        await self.sync()
        olm = self.client.olm
        olm.create_outbound_group_session(room)
        session = olm.outbound_group_sessions[room]
        key = session.session_key  # index 0, before the message ratchets it
        pinned = type("PinnedKey", (type(session),), {"session_key": property(lambda s: key)})
        session.__class__ = pinned
        session.shared = True
        content = olm.group_encrypt(room, {"type": "m.room.message",
                                           "content": {"msgtype": "m.text", "body": text}})
        session.shared = False
        method, path, data = Api.room_send(
            self.client.access_token, room, "m.room.encrypted", content, f"late-{time.time_ns()}")
        resp = await self.client._send(RoomSendResponse, method, path, data, (room,))
        if not isinstance(resp, RoomSendResponse):
            raise RuntimeError(f"send failed: {resp}")
        return {"event_id": resp.event_id, "session_id": content["session_id"]}

    async def share_late(self, room):
        await self.sync()
        await self.client.joined_members(room)
        if self.client.should_query_keys:
            await self.client.keys_query()
        resp = await self.client.share_group_session(room, ignore_unverified_devices=True)
        return {"shared": str(type(resp).__name__)}

    async def wait_device(self, room, user_id, device_id, timeout):
        """Until nio knows `device_id` of `user_id`; then starts a new room key for `room`
        (shared with the devices known now)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            await self.sync(timeout=500)
            await self.client.keys_query() if self.client.should_query_keys else None
            known = [d.id for d in self.client.device_store.active_user_devices(user_id)]
            if device_id in known:
                self.client.invalidate_outbound_session(room)
                return {}
        raise RuntimeError(f"device {device_id} of {user_id} not seen within {timeout}s")

    async def wait_text(self, room, text, timeout):
        deadline = time.monotonic() + timeout
        while True:
            for r, sender, body, decrypted, session in self.texts:
                if r == room and body == text:
                    return {"sender": sender, "decrypted": decrypted, "session_id": session}
            if time.monotonic() > deadline:
                seen = [b for r, _, b, _, _ in self.texts if r == room]
                raise RuntimeError(f"{text!r} not decrypted within {timeout}s; saw {seen}")
            await self.sync(timeout=500)

    async def whoami(self):
        return {"user_id": self.client.user_id, "device_id": self.client.device_id}

    async def wait_key_request(self, session_id, timeout):
        deadline = time.monotonic() + timeout
        while True:
            for session, device in self.key_requests:
                if session == session_id:
                    return {"requesting_device_id": device}
            if time.monotonic() > deadline:
                raise RuntimeError(f"no key request for {session_id} within {timeout}s; "
                                   f"saw {self.key_requests}")
            await self.sync(timeout=500)

    async def send_event(self, room, type, content):
        await self.sync()
        resp = await self.client.room_send(room, type, content, ignore_unverified_devices=True)
        if not isinstance(resp, RoomSendResponse):
            raise RuntimeError(f"room_send failed: {resp}")
        return {"event_id": resp.event_id}

    async def send_file(self, room, data_b64, msgtype, mimetype, name):
        data = base64.b64decode(data_b64)
        cipher, keys = encrypt_attachment(data)
        import io
        up, _ = await self.client.upload(io.BytesIO(cipher), content_type="application/octet-stream",
                                         filename=name, filesize=len(cipher))
        if not isinstance(up, UploadResponse):
            raise RuntimeError(f"upload failed: {up}")
        content = {"msgtype": msgtype, "body": name,
                   "info": {"mimetype": mimetype, "size": len(data)},
                   "file": {"url": up.content_uri, **keys}}
        return await self.send_event(room, "m.room.message", content)

    async def wait_event(self, room, match, timeout):
        def field(source, path):
            for part in path.split("|"):
                if not isinstance(source, dict):
                    return None
                source = source.get(part)
            return source

        deadline = time.monotonic() + timeout
        while True:
            for r, source, decrypted in self.events:
                if r == room and all(field(source, k) == v for k, v in match.items()):
                    return {"event": source, "decrypted": decrypted}
            if time.monotonic() > deadline:
                raise RuntimeError(f"no event matching {match} within {timeout}s")
            await self.sync(timeout=500)

    async def fetch_file(self, file):
        server, media_id = file["url"][len("mxc://"):].split("/", 1)
        url = f"{self.base}/_matrix/client/v1/media/download/{server}/{media_id}"
        req = urllib.request.Request(url, headers={
            "Authorization": f"Bearer {self.client.access_token}"})
        loop = asyncio.get_running_loop()
        cipher = await loop.run_in_executor(None, lambda: urllib.request.urlopen(req).read())
        plain = decrypt_attachment(cipher, file["key"]["k"], file["hashes"]["sha256"], file["iv"])
        return {"sha256": hashlib.sha256(plain).hexdigest(), "size": len(plain)}

    async def sas_start(self, timeout, device_id=None, user_id=None, transaction_id=None):
        user_id = user_id or self.client.user_id
        deadline = time.monotonic() + timeout
        while True:
            await self.sync(timeout=500)
            devices = [d for d in self.client.device_store.active_user_devices(user_id)
                       if d.id != self.client.device_id and (device_id is None or d.id == device_id)]
            if len(devices) == 1:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"no single other device of {user_id} within {timeout}s: "
                                   f"{[d.id for d in devices]}")
            self.client.olm.users_for_key_query.add(user_id)
            await self.client.keys_query()
        device = devices[0]
        if transaction_id is None:
            resp = await self.client.start_key_verification(device)
            sas = [s for s in self.client.key_verifications.values()
                   if s.other_olm_device.id == device.id and s.we_started_it][-1]
        else:  # the SAS of a request flow keeps the request's transaction id
            olm = self.client.olm
            sas = Sas(olm.user_id, olm.device_id, olm.account.identity_keys["ed25519"], device,
                      transaction_id)
            olm.key_verifications[transaction_id] = sas
            resp = await self.client.to_device(sas.start_verification())
        if type(resp).__name__ != "ToDeviceResponse":
            raise RuntimeError(f"start failed: {resp}")
        return {"transaction_id": sas.transaction_id, "device_id": device.id}

    async def sas_request(self, device_id, timeout):
        """Sends m.key.verification.request (nio has no request flow of its own)."""
        await self.sync()
        tx = f"req-{time.time_ns()}"
        content = {"from_device": self.client.device_id, "methods": ["m.sas.v1"],
                   "timestamp": int(time.time() * 1000), "transaction_id": tx}
        msg = ToDeviceMessage("m.key.verification.request", self.client.user_id, device_id, content)
        resp = await self.client.to_device(msg)
        if type(resp).__name__ != "ToDeviceResponse":
            raise RuntimeError(f"request failed: {resp}")
        return {"transaction_id": tx}

    async def wait_to_device(self, type, transaction_id, timeout):
        deadline = time.monotonic() + timeout
        while True:
            for e in self.to_device:
                if e.get("type") == type and e.get("content", {}).get("transaction_id") == transaction_id:
                    return {"event": e}
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {type} for {transaction_id} within {timeout}s; saw "
                                   f"{[e.get('type') for e in self.to_device]}")
            await self.sync(timeout=500)

    async def sas_done(self, transaction_id, device_id):
        msg = ToDeviceMessage("m.key.verification.done", self.client.user_id, device_id,
                              {"transaction_id": transaction_id})
        resp = await self.client.to_device(msg)
        if type(resp).__name__ != "ToDeviceResponse":
            raise RuntimeError(f"done failed: {resp}")
        return {}

    async def to_device_raw(self, event_type, device_id, content):
        """Sends one to-device event of the caller's own account as given (no checks)."""
        msg = ToDeviceMessage(event_type, self.client.user_id, device_id, content)
        resp = await self.client.to_device(msg)
        if type(resp).__name__ != "ToDeviceResponse":
            raise RuntimeError(f"to-device failed: {resp}")
        return {}

    def sas_view(self, sas):
        from nio.crypto.sas import SasState
        if sas.canceled:
            state = "canceled"
        elif sas.verified:
            state = "verified"
        elif sas.state in (SasState.key_received, SasState.mac_received):
            state = "keys"
        else:
            state = sas.state.name
        emoji = [list(e) for e in sas.get_emoji()] if state in ("keys", "verified") else []
        return {"state": state, "emoji": emoji, "cancel_code": sas.cancel_code}

    async def sas_wait(self, transaction_id, until, timeout):
        deadline = time.monotonic() + timeout
        sas = self.client.key_verifications.get(transaction_id)
        if sas is None:
            raise RuntimeError(f"no verification {transaction_id}")
        while True:
            await self.client.send_to_device_messages()
            view = self.sas_view(sas)
            if view["state"] == until or (view["state"] == "canceled" and until != "canceled"):
                return view
            if time.monotonic() > deadline:
                raise RuntimeError(f"verification not {until} within {timeout}s: {view}")
            await self.sync(timeout=500)

    async def sas_confirm(self, transaction_id):
        resp = await self.client.confirm_short_auth_string(transaction_id)
        if type(resp).__name__ != "ToDeviceResponse":
            raise RuntimeError(f"confirm failed: {resp}")
        return self.sas_view(self.client.key_verifications[transaction_id])

    async def sas_cancel(self, transaction_id):
        resp = await self.client.cancel_key_verification(transaction_id)
        if type(resp).__name__ != "ToDeviceResponse":
            raise RuntimeError(f"cancel failed: {resp}")
        return {}

    async def sync_for(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await self.sync(timeout=500)
            # nio collects key requests only in a sync that brought something new.
            await self.client._collect_key_requests()
            if self.client.should_claim_keys:
                await self.client.keys_claim(self.client.get_users_for_key_claiming())
            await self.client.send_to_device_messages()
        return {}

    async def device_trust(self, device_id):
        device = self.client.device_store[self.client.user_id][device_id]
        return {"verified": self.client.olm.is_device_verified(device)}


async def main():
    driver = Driver()
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        cmd = json.loads(line)
        op = cmd.pop("op")
        try:
            result = await getattr(driver, op)(**cmd)
            answer = {"ok": True, **result}
        except Exception as e:  # reported to the test, which fails with it
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    if driver.client:
        await driver.client.close()


asyncio.run(main())
