#!/usr/bin/env python3
"""A person's journey through the web app in Debian's Chromium (Playwright for Python).

Run by tests/integration/webapp/browser.rs with one JSON argument (base URL, addresses, the room
the Synapse user wrote to, where screenshots go). What only the test can do is asked on stdout,
one line each, and answered on stdin: `CODE <email>` -> the mailed sign-in code; `SAY <text>` ->
the Synapse user writes <text> to the room; `QR <processId>` -> the emulator rotates the QR code;
`SCAN <processId>` -> the emulator completes the login.
The last line is `DONE <json>`: {"steps": {name: true}, "reply": str, "problems": [...]}.
`problems` collects console errors (CSP violations land there), page errors and any request
that leaves the origin (aborted by a route handler). Progress goes to stderr.
"""
import json
import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

CFG = json.loads(sys.argv[1])
BASE = CFG["base"].rstrip("/")
PASSPHRASE = "correct horse battery staple"
SHOTS = Path(CFG["screenshots"])
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
steps: dict = {}
problems: list = []
expect.set_options(timeout=20_000)


def log(*args):
    print("#", *args, file=sys.stderr, flush=True)


def ask(line: str) -> str:
    print(line, flush=True)
    return sys.stdin.readline().strip()


def step(name: str):
    steps[name] = True
    log("ok:", name)


def watch(context, name: str):
    """Route every request: off-origin ones are aborted and recorded; console and page errors too."""
    def route(r, request):
        url = request.url
        if url.startswith(BASE + "/") or url == BASE or url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            problems.append(f"{name}: request off the origin: {url}")
            r.abort()
    context.route("**/*", route)

    def on_page(page):
        page.on("console", lambda m: problems.append(f"{name}: console {m.type}: {m.text} at {m.location.get('url')}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(f"{name}: page error: {e}"))
    context.on("page", on_page)


def http(method: str, path: str, token: str) -> int:
    req = urllib.request.Request(BASE + path, method=method, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def sign_in(page, email: str):
    page.goto(BASE + "/")
    page.get_by_label("E-mail address").fill(email)
    page.get_by_role("button", name="Send code").click()
    page.get_by_label("6-digit code").wait_for()
    page.get_by_label("6-digit code").fill(ask(f"CODE {email}"))
    page.get_by_role("button", name="Sign in").click()


def set_up_key(page):
    expect(page.get_by_role("heading", name="Set up your key")).to_be_visible()
    page.get_by_label("Recovery passphrase").fill(PASSPHRASE)
    page.get_by_label("Repeat the passphrase").fill(PASSPHRASE)
    page.get_by_role("button", name="Create my key").click()
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()


def assert_key_not_raw(page, when: str):
    """The app's key in memory is the non-extractable CryptoKey and the public half only: no raw
    private bytes in `state.keys` (the module instance the app itself uses)."""
    held = page.evaluate("""async () => {
        const { state } = await import('/state.js');
        const k = state.keys;
        if (!k) return null;
        const fields = {};
        for (const [name, v] of Object.entries(k)) {
            fields[name] = v instanceof CryptoKey
                ? { cryptoKey: true, type: v.type, extractable: v.extractable }
                : { bytes: v instanceof Uint8Array ? v.length : null };
        }
        return fields;
    }""")
    assert held is not None, f"{when}: no key in state"
    assert sorted(held) == ["privateKey", "publicKey"], f"{when}: {held}"
    assert held["privateKey"] == {"cryptoKey": True, "type": "private", "extractable": False}, f"{when}: {held}"
    assert held["publicKey"] == {"bytes": 32}, f"{when}: {held}"


def room_row(page):
    return page.locator(f'li[data-room-id="{CFG["roomId"]}"]')


def go(page, path: str):
    """In-app navigation (the router's history API), as a click on a link would do."""
    page.evaluate("p => { history.pushState(null, '', p); dispatchEvent(new PopStateEvent('popstate')); }", path)


def shot(page, name: str):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name))


def conversation(page):
    """Sign-in, key, invitation, reading, replying, Enter vs Shift+Enter, search."""
    sign_in(page, CFG["alice"])
    step("signed_in")
    set_up_key(page)
    assert_key_not_raw(page, "after setup")
    step("key_set_up")
    # A reload keeps the session (HttpOnly refresh cookie) and the key (IndexedDB): no sign-in.
    page.reload()
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    assert page.evaluate("document.cookie") == "", "a cookie is readable by page scripts"
    step("reload_keeps_session")
    row = room_row(page)
    expect(row).to_be_visible()
    # The room's name comes from sealedMeta, opened in the browser.
    expect(row).to_contain_text(CFG["roomName"])
    row.get_by_role("button", name=re.compile("^Accept invitation")).click()
    link = row.get_by_role("link")
    expect(link).to_be_visible()
    step("invitation_accepted")
    shot(page, "inbox.png")
    link.click()
    log_ = page.get_by_role("list", name="Messages")
    expect(log_.get_by_text(CFG["incoming"])).to_be_visible()
    step("message_read")

    box = page.get_by_label("Message", exact=True)
    box.fill("first line")
    box.press("Shift+Enter")
    box.type("second line")
    assert box.input_value() == "first line\nsecond line", box.input_value()
    assert log_.get_by_text("second line").count() == 0
    step("shift_enter_newline")
    reply = f"Reply from the browser {int(time.time())}"
    box.fill(reply)
    box.press("Enter")
    expect(log_.get_by_text(reply)).to_be_visible()
    expect(box).to_have_value("")
    step("replied")
    # Live: a message the Synapse user writes now appears without a reload (/api/sync).
    live = f"Live from Synapse {int(time.time())}"
    ask(f"SAY {live}")
    expect(log_.get_by_text(live)).to_be_visible()
    step("live_update")
    # Rich actions: a reaction on Bob's message, an edit of Alice's reply.
    theirs = log_.locator("li.msg", has_text=CFG["incoming"])
    theirs.get_by_role("button", name="React", exact=True).click()
    theirs.get_by_role("button", name="React with 👍").click()
    expect(theirs.get_by_role("button", name=re.compile("^👍 1"))).to_be_visible()
    step("reacted")
    mine = log_.locator("li.msg", has_text=reply).last
    page.once("dialog", lambda d: d.accept(reply + " (fixed)"))
    mine.get_by_role("button", name="Edit").click()
    edited = log_.locator("li.msg", has_text=reply + " (fixed)")
    expect(edited.get_by_text("(edited)")).to_be_visible()
    step("edited")
    # Send later: sealed in the browser to the attested server key; the server opens it (201).
    box.fill("A message for later")
    page.get_by_text("Send later").click()
    page.get_by_role("button", name="Schedule").click()
    expect(page.locator("#toast")).to_contain_text("Scheduled for")
    step("scheduled")
    pin = page.get_by_role("group", name="Conversation actions").get_by_role("button", name="Pin")
    pin.click()
    expect(pin).to_have_attribute("aria-pressed", "true")
    step("pinned")
    shot(page, "conversation.png")

    page.get_by_role("link", name="Search").click()
    page.get_by_label("Search messages and mail").fill(CFG["searchWord"])
    page.get_by_role("button", name="Search", exact=True).click()
    results = page.get_by_role("list", name="Results")
    hit = results.locator("li").filter(has_text=CFG["incoming"])
    expect(hit).to_be_visible()
    expect(hit.locator("mark")).to_have_text(re.compile(CFG["searchWord"], re.I))
    hit.get_by_role("link").click()
    expect(page).to_have_url(re.compile(r"/rooms/"))
    expect(page.get_by_role("list", name="Messages").get_by_text(CFG["incoming"])).to_be_visible()
    step("searched")
    return reply


def whatsapp(page):
    """QR login through the emulator: the code is drawn, replaced when rotated, then scanned."""
    page.get_by_role("link", name="Bridges").click()
    card = page.locator('section[data-platform="whatsapp"]')
    card.get_by_role("button", name="Connect WhatsApp").click()
    card.get_by_role("button", name="QR", exact=True).click()
    qr = card.get_by_role("img", name=re.compile("QR code"))
    expect(qr).to_be_visible()
    expect(card.get_by_role("timer")).to_contain_text("Time left")
    process = card.locator("[data-process-id]").get_attribute("data-process-id")
    first = qr.get_attribute("data-qr")
    assert qr.evaluate("img => img.naturalWidth > 0"), "QR image did not render"
    ask(f"QR {process}")
    expect(qr).not_to_have_attribute("data-qr", first)
    step("qr_rotated")
    ask(f"SCAN {process}")
    expect(card.get_by_text("WhatsApp is connected.")).to_be_visible()
    expect(card.locator(".bridge-status")).to_have_text("Connected", timeout=30_000)
    step("whatsapp_connected")
    # Telegram has no bridge here: Alice (no administrator) is told who can set it up.
    telegram = page.locator('section[data-platform="telegram"]')
    expect(telegram.locator(".bridge-status")).to_have_text("Not configured on this server")
    expect(telegram.locator(".bridge-setup")).to_have_text("The administrator of this server can set it up.")
    step("bridge_unconfigured_shown")


def tokens(page):
    page.get_by_role("link", name="Settings").click()
    section = page.locator("#tokens")
    section.get_by_label("Token name").fill("browser test")
    section.get_by_role("button", name="Create token").click()
    secret = section.locator("#new-token")
    expect(secret).to_have_text(re.compile(r"^csk_"))
    token = secret.inner_text().strip()
    assert len(token) == 52, token
    assert http("GET", "/api/rooms", token) == 200
    row = section.locator("tr", has_text="browser test")
    expect(row).to_contain_text("…" + token[-4:])
    step("token_used")
    row.get_by_role("button", name="Revoke browser test").click()
    expect(row).to_have_count(0)
    assert http("GET", "/api/rooms", token) == 401
    step("token_revoked")
    # Matrix encryption: the sync device is cross-signed; the recovery key is shown once.
    trust = page.locator("#encryption")
    expect(trust.locator("[data-trust=signed]")).to_have_text("yes", timeout=30000)
    trust.get_by_role("button", name="Show my recovery key").click()
    expect(trust.locator("[data-recovery-key]")).to_have_text(re.compile(r"^(\w{4} ){11}\w{4}$"))
    expect(trust.get_by_role("button", name="Show my recovery key")).to_be_hidden()
    step("recovery_key_shown")
    # A new key only after a confirmation (dismissed: nothing is asked) and with proof of the
    # person: without it the app says what it needs and the key stays; with the current
    # recovery key, a new key.
    key = trust.locator("[data-recovery-key]")
    first = key.inner_text()
    resets = []
    page.on("request", lambda r: resets.append(r.post_data or "")
            if r.method == "POST" and r.url.endswith("/api/e2ee/recovery-key") else None)
    trust.get_by_text("Lost the recovery key?").click()
    page.once("dialog", lambda d: d.dismiss())
    trust.get_by_role("button", name="Make a new recovery key").click()
    page.once("dialog", lambda d: d.accept())
    trust.get_by_role("button", name="Make a new recovery key").click()
    expect(trust.get_by_text("enter your current recovery key")).to_be_visible()
    expect(key).to_have_text(first)
    step("recovery_key_reset_needs_proof")
    trust.get_by_label("Current recovery key").fill(first)
    page.once("dialog", lambda d: d.accept())
    trust.get_by_role("button", name="Make a new recovery key").click()
    expect(key).to_have_text(re.compile(r"^(\w{4} ){11}\w{4}$"))
    expect(key).not_to_have_text(first, timeout=30000)
    bodies = [json.loads(r) for r in resets]
    # Without a proof the app asked nothing (the server's 403 reauth_required is tested in
    # tests/integration/trust/backup.rs); with the key, one request carrying it.
    assert len(bodies) == 1 and bodies[0].get("reset") is True, resets
    assert bodies[0].get("recoveryKey") == first, resets
    # The other proof (a mailed sign-in code) is offered too; it is exercised against the API
    # in tests/integration/trust/backup.rs (a fourth code to Alice here would hit the
    # three-codes-per-ten-minutes limit before the second browser signs in).
    expect(trust.get_by_role("button", name="E-mail me a sign-in code")).to_be_visible()
    step("recovery_key_reset_confirmed")
    # Alice is no administrator: no link, and the page says so.
    expect(page.get_by_role("link", name="Admin")).to_be_hidden()
    go(page, "/admin")
    expect(page.get_by_text("administrators of this server only")).to_be_visible()
    step("admin_hidden")


def email(page):
    """Connect the Dovecot mailbox, read the HTML mail in its sandboxed frame, reply."""
    go(page, "/settings")
    section = page.locator("#mail")
    section.get_by_text("Connect a mailbox").click()
    section.get_by_label("E-mail address").fill(CFG["mailbox"])
    section.get_by_label("IMAP server").fill("127.0.0.1")
    section.get_by_label("IMAP port").fill(str(CFG["imapPort"]))
    section.get_by_label("IMAP security").select_option("none")
    section.get_by_label("SMTP server").fill("127.0.0.1")
    section.get_by_label("SMTP port").fill(str(CFG["smtpPort"]))
    section.get_by_label("SMTP security").select_option("none")
    section.get_by_label("Password or app password").fill(CFG["mailPassword"])
    section.get_by_role("button", name="Connect mailbox").click()
    expect(section.get_by_text(CFG["mailbox"])).to_be_visible()
    step("mailbox_connected")
    page.get_by_role("link", name="Inbox").click()
    thread = page.locator("li.mail", has_text=CFG["mailSubject"])
    expect(thread).to_be_visible(timeout=60_000)
    thread.get_by_role("link").click()
    expect(page.get_by_role("heading", name=CFG["mailSubject"])).to_be_visible()
    frame = page.frame_locator("iframe.mailbody")
    expect(frame.get_by_text("did well this quarter")).to_be_visible()
    # The mail's inline style survives (applied through CSSOM, so the CSP is not violated).
    color = frame.locator("p").first.evaluate("p => getComputedStyle(p).color")
    assert color == "rgb(0, 170, 85)", color
    sandbox = page.locator("iframe.mailbody").get_attribute("sandbox")
    assert "allow-scripts" not in sandbox, sandbox
    step("mail_read")
    expect(page.get_by_text("1 remote image is not loaded")).to_be_visible()
    assert frame.locator("img").count() == 0
    step("remote_image_held_back")
    page.get_by_role("link", name="Reply").click()
    expect(page.get_by_label("Subject")).to_have_value("Re: Quarterly garden report")
    reply = f"Thanks for the report {int(time.time())}"
    body = page.get_by_label("Message", exact=True)
    body.fill(reply + "\n" + body.input_value())
    page.get_by_role("button", name="Send", exact=True).click()
    # Held for the Undo window (10 s by default), then sent: the thread is shown.
    expect(page.get_by_role("button", name="Undo")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/mail/[0-9a-f]{8}-"), timeout=30_000)
    step("mail_replied")
    outgoing(page)
    return reply


def outgoing(page):
    """A new mail with an attached file, autosaved as a draft, sent and undone from the
    toast; the draft is listed under Drafts and reopens with its text and file."""
    stamp = int(time.time())
    subject = f"Undo me {stamp}"
    go(page, "/mail/compose")
    page.get_by_label("To").fill("undo@example.org")
    page.get_by_label("Subject").fill(subject)
    page.get_by_label("Message", exact=True).fill("never sent")
    page.locator("#attach-input").set_input_files(
        {"name": "note.txt", "mimeType": "text/plain", "buffer": b"hello file"}
    )
    attached = page.get_by_label("Attachments", exact=True)
    expect(attached.get_by_text("note.txt")).to_be_visible()
    expect(attached.get_by_text("10 B")).to_be_visible()
    step("mail_attached")
    expect(page.locator("#draft-status")).to_contain_text("Draft saved", timeout=15_000)
    page.get_by_role("button", name="Send", exact=True).click()
    page.get_by_role("button", name="Undo").click()
    expect(page.get_by_text("Sending undone")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/mail/compose\?draft="))
    step("mail_undone")
    go(page, "/mail/drafts")
    link = page.get_by_role("link", name=re.compile(subject))
    expect(link).to_be_visible(timeout=30_000)
    link.click()
    expect(page.get_by_label("Subject")).to_have_value(subject)
    expect(page.get_by_label("Message", exact=True)).to_have_value(re.compile("never sent"))
    expect(page.get_by_label("Attachments saved in the draft").get_by_text("note.txt")).to_be_visible()
    step("draft_reopened")


def second_browser(browser):
    """A new browser (context): the passphrase unlocks; a wrong one is refused."""
    ctx = browser.new_context(viewport={"width": 1000, "height": 700})
    watch(ctx, "second browser")
    page = ctx.new_page()
    sign_in(page, CFG["alice"])
    expect(page.get_by_role("heading", name="Unlock your messages")).to_be_visible()
    form = page.locator("form", has=page.get_by_role("button", name="Unlock"))
    form.get_by_label("Recovery passphrase").fill("not the passphrase")
    form.get_by_role("button", name="Unlock").click()
    expect(page.get_by_role("alert")).to_contain_text("does not open your key")
    step("wrong_passphrase_refused")
    form.get_by_label("Recovery passphrase").fill(PASSPHRASE)
    form.get_by_role("button", name="Unlock").click()
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    assert_key_not_raw(page, "after unlock")
    step("unlocked_key_not_raw")
    room_row(page).get_by_role("link").click()
    expect(page.get_by_role("list", name="Messages").get_by_text(CFG["incoming"])).to_be_visible()
    step("unlocked")
    narrow(page)


def narrow(page):
    """360 px: no screen scrolls sideways; the conversation still sends."""
    page.set_viewport_size({"width": 360, "height": 740})
    for path in ["/inbox", "/rooms/" + CFG["roomId"], "/bridges", "/settings", "/search"]:
        go(page, path)
        expect(page.locator("main h1").first).to_be_visible()
        page.wait_for_timeout(500)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 360, f"{path} is {width} px wide at 360"
        if path == "/inbox":
            shot(page, "inbox-360.png")
    step("narrow_ok")


def admin(browser):
    ctx = browser.new_context(viewport={"width": 1000, "height": 700})
    watch(ctx, "admin browser")
    page = ctx.new_page()
    sign_in(page, CFG["admin"])
    set_up_key(page)
    page.get_by_role("link", name="Admin").click()
    expect(page.locator('tr[data-check="database"]')).to_contain_text("ok")
    expect(page.get_by_role("table").filter(has_text=CFG["alice"])).to_be_visible()
    # Promote Alice: the browser's confirm() is answered, her row then says admin.
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name=f"Make {CFG['alice']} an administrator").click()
    row = page.locator("tr").filter(has_text=CFG["alice"])
    expect(row.locator("td").nth(2)).to_have_text("admin")
    step("admin_shown")
    # An administrator is told where the docs explain running and configuring a bridge.
    page.get_by_role("link", name="Bridges").click()
    setup = page.locator('section[data-platform="telegram"] .bridge-setup')
    expect(setup.locator("code")).to_have_text("docs/operations.md#bridges")
    step("bridge_setup_docs")


def main():
    reply = mail_reply = None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CFG["chromium"], args=LAUNCH_ARGS)
        ctx = browser.new_context(viewport={"width": 1000, "height": 640})
        watch(ctx, "first browser")
        page = ctx.new_page()
        try:
            reply = conversation(page)
            whatsapp(page)
            tokens(page)
            mail_reply = email(page)
            second_browser(browser)
            admin(browser)
        except Exception as e:  # report what failed, with the page's text, to the test
            problems.append(f"failed: {type(e).__name__}: {e}")
            for c in browser.contexts:
                for pg in c.pages:
                    log("page", pg.url, "\n", pg.inner_text("body")[:2000])
        finally:
            browser.close()
    print("DONE " + json.dumps({"steps": steps, "reply": reply, "mailReply": mail_reply, "problems": problems}), flush=True)


if __name__ == "__main__":
    main()
