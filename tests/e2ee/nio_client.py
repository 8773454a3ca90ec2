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
"""
import asyncio
import base64
import hashlib
import json
import sys
import time
import urllib.request

from nio import (AsyncClient, AsyncClientConfig, Event, RoomKeyRequest, RoomMessageText,
                 RoomSendResponse, UploadResponse)
from nio.api import Api
from nio.crypto.attachments import decrypt_attachment, encrypt_attachment


class Driver:
    def __init__(self):
        self.client = None
        self.texts = []  # (room_id, sender, body, decrypted, session_id) of text messages
        self.key_requests = []  # (session_id, requesting_device_id) received
        self.events = []  # (room_id, event source, decrypted) of every room event
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
