#!/usr/bin/env python3
"""The installable app in Debian's Chromium (Playwright for Python): the manifest reads
without errors (DevTools Page.getAppManifest), the service worker registers and keeps the
app shell but no API answer, a push delivered through DevTools
(ServiceWorker.deliverPushMessage) shows a notification with the chat as its tag, and the
app opens offline with its notice.

Run by tests/integration/webapp/pwa.rs with one JSON argument {base, chromium}. The last
line is `DONE <json>`: {"steps": {name: true}, "problems": [...], "notification": {...}}.
"""
import json
import sys

from playwright.sync_api import expect, sync_playwright

CFG = json.loads(sys.argv[1])
BASE = CFG["base"].rstrip("/")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
steps: dict = {}
problems: list = []
result: dict = {}
expect.set_options(timeout=20_000)


def log(*args):
    print("#", *args, file=sys.stderr, flush=True)


def step(name: str):
    steps[name] = True
    log("ok:", name)


def poll(page, script: str, arg=None, what="condition", timeout_ms=20_000):
    """Evaluates `script` until it returns something truthy (bounded)."""
    waited = 0
    while waited < timeout_ms:
        value = page.evaluate(script, arg)
        if value:
            return value
        page.wait_for_timeout(100)
        waited += 100
    raise AssertionError(f"{what} did not happen within {timeout_ms} ms")


def run(page, cdp):
    page.goto(BASE + "/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()

    manifest = cdp.send("Page.getAppManifest")
    assert manifest["url"] == BASE + "/manifest.webmanifest", manifest["url"]
    assert manifest["errors"] == [], manifest["errors"]
    data = json.loads(manifest["data"])
    assert data["display"] == "standalone" and data["start_url"] == "/inbox", data
    purposes = sorted(i.get("purpose", "any") for i in data["icons"])
    assert "maskable" in purposes and {i["sizes"] for i in data["icons"]} >= {"192x192", "512x512"}, data
    step("manifest_without_errors")
    for icon in data["icons"]:
        status = page.evaluate("u => fetch(u).then(r => r.status + ' ' + r.headers.get('content-type'))", icon["src"])
        assert status == "200 image/png", (icon, status)
    step("icons_served")

    scope = poll(page, "navigator.serviceWorker.ready.then(r => r.active && r.active.state === 'activated' && r.scope)",
                 what="the service worker activating")
    assert scope == BASE + "/", scope
    poll(page, "!!navigator.serviceWorker.controller", what="the page being controlled")
    step("service_worker_registered")

    # An API answer (through the service worker) must not be cached; the shell is.
    status = page.evaluate("fetch('/api/attestation').then(r => r.status)")
    assert status == 200, status
    cached = page.evaluate("""async () => {
        const names = await caches.keys();
        const out = {};
        for (const n of names) out[n] = (await (await caches.open(n)).keys()).map(r => new URL(r.url).pathname);
        return out;
    }""")
    assert len(cached) == 1, cached
    (name, paths), = cached.items()
    assert name.startswith("switchboard-shell-"), name
    assert "/" in paths and "/app.js" in paths and "/screens/signin.js" in paths, paths
    assert not any(p.startswith("/api/") for p in paths), paths
    step("shell_cached_without_api")

    # A push through DevTools: the service worker shows it, tagged with the room.
    registrations = []
    cdp.on("ServiceWorker.workerRegistrationUpdated", lambda e: registrations.extend(e["registrations"]))
    cdp.send("ServiceWorker.enable")
    waited = 0
    while not any(r["scopeURL"] == BASE + "/" and not r["isDeleted"] for r in registrations) and waited < 10_000:
        page.wait_for_timeout(100)
        waited += 100
    reg = next(r for r in registrations if r["scopeURL"] == BASE + "/" and not r["isDeleted"])
    payload = {"type": "message", "roomId": "!garden:example.org", "eventId": "$e1",
               "title": "Garden club", "body": "Mom: tomatoes are ripe", "unread": 3}
    cdp.send("ServiceWorker.deliverPushMessage",
             {"origin": BASE, "registrationId": reg["registrationId"], "data": json.dumps(payload)})
    shown = poll(page, """() => navigator.serviceWorker.ready
        .then(r => r.getNotifications())
        .then(ns => ns.length ? ns.map(n => ({title: n.title, body: n.body, tag: n.tag, url: n.data && n.data.url})) : null)""",
                 what="the notification")
    result["notification"] = shown[0]
    assert shown[0]["title"] == "Garden club" and shown[0]["body"] == "Mom: tomatoes are ripe", shown
    assert shown[0]["tag"] == "!garden:example.org", shown
    assert shown[0]["url"] == "/rooms/!garden%3Aexample.org", shown
    step("push_shows_notification")
    # A second push of the same chat replaces the first (same tag).
    payload["body"] = "Mom: and the beans"
    cdp.send("ServiceWorker.deliverPushMessage",
             {"origin": BASE, "registrationId": reg["registrationId"], "data": json.dumps(payload)})
    poll(page, """() => navigator.serviceWorker.ready.then(r => r.getNotifications())
        .then(ns => ns.length === 1 && ns[0].body === 'Mom: and the beans')""", what="the replacing notification")
    step("same_chat_replaces")

    # Offline: the app still opens, from the shell, with its notice.
    page.context.set_offline(True)
    page.reload()
    expect(page.locator("#offline")).to_be_visible()
    expect(page.locator("#offline")).to_contain_text("offline")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    step("offline_opens_with_notice")
    page.context.set_offline(False)


def main():
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CFG["chromium"], args=LAUNCH_ARGS)
        ctx = browser.new_context(viewport={"width": 1000, "height": 700})
        ctx.grant_permissions(["notifications"], origin=BASE)
        page = ctx.new_page()
        page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        try:
            run(page, ctx.new_cdp_session(page))
        except Exception as e:
            problems.append(f"failed: {type(e).__name__}: {e}")
        finally:
            browser.close()
    print("DONE " + json.dumps({"steps": steps, "problems": problems, **result}), flush=True)


if __name__ == "__main__":
    main()
