#!/usr/bin/env python3
"""The web app's media figures (run by scripts/bench-webapp-media.sh; see there). Arguments: the
app's base URL, the server log (sign-in codes are written there), the homeserver URL, the number
of chats, the number of photos in the conversation whose memory is measured."""
import concurrent.futures
import json
import os
import random
import re
import struct
import sys
import time
import urllib.parse
import urllib.request
import zlib
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

BASE, LOG, HS = sys.argv[1].rstrip("/"), Path(sys.argv[2]), sys.argv[3].rstrip("/")
ROOMS, IMAGES = int(sys.argv[4]), int(sys.argv[5])
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
EMAIL = f"bench.media.{int(time.time())}@example.test"
PASSPHRASE = "bench passphrase 1234"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--enable-precise-memory-info"]


def code(nth: int) -> str:
    """The nth sign-in code of EMAIL from the server log (mail transport "log")."""
    for _ in range(100):
        codes = re.findall(r"\b(\d{6})\b", "\n".join(l for l in LOG.read_text().splitlines() if EMAIL in l))
        if len(codes) > nth:
            return codes[nth]
        time.sleep(0.1)
    sys.exit(f"no sign-in code #{nth} for {EMAIL} in {LOG}")


def call(method, url, token=None, body=None, raw=None, ctype="application/json"):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    headers = {"Content-Type": ctype, **({"Authorization": f"Bearer {token}"} if token else {})}
    req = urllib.request.Request(url, method=method, data=data, headers=headers)
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read() or b"null")


def png(w: int, h: int, seed: int) -> bytes:
    """A w×h RGB PNG of noise (it does not compress: a photo's weight)."""
    rnd = random.Random(seed)
    rows = b"".join(b"\0" + bytes(rnd.getrandbits(8) for _ in range(w * 3)) for _ in range(h))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 6)) + chunk(b"IEND", b""))


def make_rooms():
    """ROOMS rooms of the user's own Matrix account, each with a photo as its last message; the
    first also holds IMAGES photos. Returns that room's id."""
    call("POST", BASE + "/api/auth/code", body={"email": EMAIL})
    signed = call("POST", BASE + "/api/auth/verify", body={"email": EMAIL, "code": code(1)})
    mx = signed["matrixAccessToken"]
    photos = []
    for i in range(5):
        data = png(320, 240, i)
        up = call("POST", HS + "/_matrix/media/v3/upload?filename=photo.png", mx, raw=data, ctype="image/png")
        photos.append((up["content_uri"], len(data)))
    txn = iter(range(10**9))

    def send_photo(room, i):
        uri, size = photos[i % len(photos)]
        content = {"msgtype": "m.image", "body": f"photo-{i}.png", "url": uri,
                   "info": {"mimetype": "image/png", "size": size, "w": 320, "h": 240}}
        call("PUT", f"{HS}/_matrix/client/v3/rooms/{urllib.parse.quote(room)}/send/m.room.message/b{next(txn)}-{os.getpid()}", mx, content)

    def one(i):
        room = call("POST", HS + "/_matrix/client/v3/createRoom", mx, {"preset": "private_chat", "name": f"Bench room {i:03}"})["room_id"]
        send_photo(room, i)
        return room

    began = time.time()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        rooms = list(pool.map(one, range(ROOMS)))
    gallery = rooms[0]
    for i in range(1, IMAGES):
        send_photo(gallery, i)
    jwt = signed["accessToken"]
    while True:
        n, cursor = 0, None
        while True:
            page = call("GET", BASE + "/api/rooms?limit=100" + (f"&cursor={cursor}" if cursor else ""), jwt)
            n += sum(1 for r in page["rooms"] if r.get("lastMessageAt"))
            cursor = page.get("nextCursor")
            if not cursor:
                break
        if n >= ROOMS:
            break
        time.sleep(0.5)
    print(f"setup: {ROOMS} chats with a photo each and {IMAGES} photos in one, synced in {time.time() - began:.1f} s",
          file=sys.stderr)
    return gallery


def renderer_rss_mib() -> float:
    """Resident memory of the renderer processes of this run's Chromium (the tab), MiB: only
    descendants of this script (other browsers may run on the machine)."""
    parent = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text()
                parent[int(proc.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    def ours(pid):
        while pid > 1:
            if pid == os.getpid():
                return True
            pid = parent.get(pid, 0)
        return False
    total = 0
    for pid in parent:
        if not ours(pid):
            continue
        try:
            if b"--type=renderer" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        m = re.search(r"VmRSS:\s+(\d+) kB", status)
        total += int(m.group(1)) if m else 0
    return total / 1024


def memory(cdp, page) -> dict:
    """After a forced garbage collection and a critical memory-pressure signal (Chromium then
    drops its decoded-image and allocator caches, as it would on a phone short of memory): JS
    heap, DOM nodes, renderer RSS, live blob: URLs."""
    for _ in range(2):
        cdp.send("HeapProfiler.collectGarbage")
    cdp.send("Memory.simulatePressureNotification", {"level": "critical"})
    page.wait_for_timeout(1000)
    heap = cdp.send("Runtime.getHeapUsage")
    dom = cdp.send("Memory.getDOMCounters")
    blobs = page.evaluate("async () => (await import('/ui/media.js')).liveBlobCount()")
    return {"heap_mib": heap["usedSize"] / 2**20, "nodes": dom["nodes"], "rss_mib": renderer_rss_mib(), "blobs": blobs}


def show(label, m):
    print(f"  {label:<40} JS heap {m['heap_mib']:6.1f} MiB, DOM nodes {m['nodes']:6d}, "
          f"renderer RSS {m['rss_mib']:6.1f} MiB, blob: URLs {m['blobs']}")


def open_gallery(page, gallery):
    """Opens the conversation of photos and scrolls up through it until every one is decoded."""
    began = time.perf_counter()
    page.evaluate("p => { history.pushState(null, '', p); dispatchEvent(new PopStateEvent('popstate')); }",
                  "/rooms/" + urllib.parse.quote(gallery, safe=""))
    pane = page.locator(".scroller")
    expect(page.locator("figure.image img")).to_have_count(IMAGES, timeout=30_000)
    done = 0
    for _ in range(300):
        done = page.evaluate("""() => [...document.querySelectorAll('figure.image img')]
            .filter((i) => i.src.startsWith('blob:') && i.complete && i.naturalWidth > 0).length""")
        if done >= IMAGES:
            break
        pane.evaluate("el => { el.scrollTop = Math.max(0, el.scrollTop - el.clientHeight / 2); }")
        page.wait_for_timeout(100)
    else:
        sys.exit(f"only {done} of {IMAGES} photos decoded")
    print(f"  all {IMAGES} photos fetched, decoded and shown in {(time.perf_counter() - began) * 1000:.0f} ms")


def rows(page):
    return page.locator("ul.inbox > li")


def main():
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        page = ctx.new_page()
        cdp = ctx.new_cdp_session(page)
        page.goto(BASE + "/")
        page.get_by_label("E-mail address").fill(EMAIL)
        page.get_by_role("button", name="Send code").click()
        page.get_by_label("6-digit code").fill(code(0))
        page.get_by_role("button", name="Sign in").click()
        page.get_by_label("Recovery passphrase").fill(PASSPHRASE)
        page.get_by_label("Repeat the passphrase").fill(PASSPHRASE)
        page.get_by_role("button", name="Create my key").click()
        expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
        gallery = make_rooms()

        # (1) The inbox of ROOMS chats whose last message is a photo.
        page.get_by_role("link", name="Settings").click()
        expect(page.get_by_role("heading", name="Settings")).to_be_visible()
        began = time.perf_counter()
        page.get_by_role("link", name="Inbox").click()
        expect(rows(page)).to_have_count(ROOMS, timeout=30_000)
        click_ms = (time.perf_counter() - began) * 1000
        began = time.perf_counter()
        page.reload()
        expect(rows(page)).to_have_count(ROOMS, timeout=30_000)
        reload_ms = (time.perf_counter() - began) * 1000
        print(f"inbox of {ROOMS} chats with photos rendered: {click_ms:.0f} ms from a click on Inbox, "
              f"{reload_ms:.0f} ms from a reload (goal <= 1000 ms)")

        # (2) Memory around a conversation of IMAGES photos, every one decoded on screen.
        print(f"memory of the tab around a conversation of {IMAGES} photos (320x240 PNG, ~230 KB each):")
        start = memory(cdp, page)
        show("before opening it (inbox)", start)
        # Several rounds (BENCH_ROUNDS, 3): whether what stays after the first is held or reused.
        for round_ in range(1, ROUNDS + 1):
            open_gallery(page, gallery)
            show(f"round {round_}: with the {IMAGES} photos on screen", memory(cdp, page))
            page.get_by_role("link", name="Back to the inbox").click()
            expect(rows(page)).to_have_count(ROOMS, timeout=30_000)
            after = memory(cdp, page)
            show(f"round {round_}: after closing it (inbox)", after)
            print(f"  round {round_}: difference to the start: JS heap {after['heap_mib'] - start['heap_mib']:+.1f} MiB, "
                  f"DOM nodes {after['nodes'] - start['nodes']:+d}, renderer RSS {after['rss_mib'] - start['rss_mib']:+.1f} MiB, "
                  f"blob: URLs {after['blobs'] - start['blobs']:+d}")
        browser.close()


if __name__ == "__main__":
    main()
