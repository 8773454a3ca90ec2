#!/usr/bin/env python3
"""Media in the app, in Chromium: an incoming image decoded inline (thumbnail, then full size),
an audio message in the browser's player, a link's preview card (title and image through
Switchboard), a pasted image and a dropped file shown before they are sent, a voice note
recorded with Chromium's fake microphone, every blob: URL revoked when the conversation closes,
and no card once previews are off.

Run by tests/integration/media_app/browser.rs with one JSON argument (base, email, roomId,
linkText, title, screenshots, chromium), on webapp.py's line protocol: `CODE <email>` -> the
mailed code; `FILE <name>` -> "yes" once Synapse holds the user's attachment of that name;
`VOICE` -> "yes" once Synapse holds the user's voice note. The last line is `DONE <json>`:
{"steps": {...}, "problems": [...]}.
"""
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from scenario import run  # noqa: E402
from webapp import CFG, ask, expect, go, problems, shot, step  # noqa: E402

FAKE_MEDIA = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
              "--autoplay-policy=no-user-gesture-required"]


def room_path():
    return "/rooms/" + CFG["roomId"].replace("!", "%21").replace(":", "%3A")


def decoded(page, locator):
    """Waits until the image is decoded from a blob: URL (natural size > 0)."""
    expect(locator).to_have_attribute("src", re.compile(r"^blob:"))
    locator.evaluate("img => img.decode()")
    width = locator.evaluate("img => img.naturalWidth")
    if width <= 0:
        raise RuntimeError(f"image not decoded: naturalWidth {width}")
    return width


def incoming(page):
    log_ = page.get_by_role("list", name="Messages")
    expect(log_.get_by_text(CFG["linkText"])).to_be_visible()
    img = log_.locator("figure.image img").first
    decoded(page, img)
    step("image_inline")
    log_.get_by_role("button", name="Show garden.png full size").click()
    full = page.locator("dialog.viewer img.full")
    if decoded(page, full) != 40:
        raise RuntimeError("the full-size image is not the original")
    page.locator("dialog.viewer").get_by_role("button", name="Close").click()
    expect(page.locator("dialog.viewer")).to_have_count(0)
    step("image_full")

    audio = log_.locator("figure.audio audio").first
    expect(audio).to_have_attribute("src", re.compile(r"^blob:"))
    page.wait_for_function("a => a.readyState >= 1 && a.duration > 0", arg=audio.element_handle())
    step("audio_player")

    card = log_.locator("aside.linkcard")
    expect(card).to_contain_text(CFG["title"])
    decoded(page, card.locator("img.linkimage"))
    step("link_preview")
    shot(page, "media-conversation.png")


def paste_and_drop(page):
    box = page.get_by_role("textbox", name="Message")
    box.evaluate("""async (el) => {
        const c = document.createElement('canvas');
        c.width = 24; c.height = 16;
        const g = c.getContext('2d'); g.fillStyle = '#0a5'; g.fillRect(0, 0, 24, 16);
        const blob = await new Promise((ok) => c.toBlob(ok, 'image/png'));
        const dt = new DataTransfer();
        dt.items.add(new File([blob], 'pasted-chart.png', { type: 'image/png' }));
        el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    }""")
    pending = page.get_by_role("group", name="File to send")
    decoded(page, pending.locator("img.preview"))
    expect(pending).to_contain_text("pasted-chart.png")
    pending.get_by_role("button", name="Send file").click()
    expect(pending).to_be_hidden()
    if ask("FILE pasted-chart.png") != "yes":
        raise RuntimeError("the pasted image did not reach Synapse")
    decoded(page, page.locator("li.msg.mine figure.image img").last)
    step("paste_sent")

    page.locator(".scroller").evaluate("""(el) => {
        const dt = new DataTransfer();
        dt.items.add(new File(['shopping list: pineapples'], 'notes.txt', { type: 'text/plain' }));
        el.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
        el.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    }""")
    expect(pending).to_contain_text("notes.txt")
    pending.get_by_role("button", name="Send file").click()
    expect(page.locator("li.msg.mine").get_by_role("button", name="Download notes.txt", exact=False)).to_be_visible()
    if ask("FILE notes.txt") != "yes":
        raise RuntimeError("the dropped file did not reach Synapse")
    step("drop_sent")


def voice(page):
    page.get_by_role("button", name="Record a voice note").click()
    expect(page.locator(".recording")).to_contain_text("Recording 0:02", timeout=15_000)
    page.get_by_role("button", name="Stop and send").click()
    note = page.locator("li.msg.mine figure.voice")
    expect(note).to_contain_text("Voice note")
    audio = note.locator("audio")
    expect(audio).to_have_attribute("src", re.compile(r"^blob:"))
    page.wait_for_function("a => a.readyState >= 1", arg=audio.element_handle())
    if ask("VOICE") != "yes":
        raise RuntimeError("the voice note did not reach Synapse as one")
    step("voice_sent")


def released(page):
    held = page.evaluate("""async () => {
        const m = await import('/ui/media.js');
        return { n: m.liveBlobCount(), src: document.querySelector('figure.image img').src };
    }""")
    if held["n"] < 4:
        raise RuntimeError(f"expected the conversation's blob: URLs, found {held['n']}")
    page.get_by_role("link", name="Back to the inbox").click()
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    after = page.evaluate("""async (src) => {
        const m = await import('/ui/media.js');
        // A revoked blob: URL no longer loads (img-src allows blob:, so only revocation fails it).
        const readable = await new Promise((done) => {
            const img = new Image();
            img.onload = () => done(true);
            img.onerror = () => done(false);
            img.src = src;
        });
        return { n: m.liveBlobCount(), readable };
    }""", held["src"])
    # Chromium logs the refused load of the revoked URL: that error is this check's, not the app's.
    problems[:] = [p for p in problems if held["src"] not in p]
    if after != {"n": 0, "readable": False}:
        raise RuntimeError(f"blob: URLs left after closing the conversation: {after} (before: {held['n']})")
    step("blobs_released")


def previews_off(page):
    go(page, "/settings")
    switch = page.get_by_label("Show link previews")
    expect(switch).to_be_checked()
    expect(switch).to_be_enabled()
    switch.uncheck()
    expect(page.get_by_text("Link previews turned off")).to_be_visible()
    go(page, room_path())
    log_ = page.get_by_role("list", name="Messages")
    expect(log_.get_by_text(CFG["linkText"])).to_be_visible()
    # The positive marker: the link's slot says previews are off; then no card exists.
    expect(log_.locator('.linkslot[data-preview="off"]')).to_have_count(1)
    expect(log_.locator("aside.linkcard")).to_have_count(0)
    step("previews_off")


def scenario(page):
    go(page, room_path())
    incoming(page)
    paste_and_drop(page)
    voice(page)
    shot(page, "media-sent.png")
    released(page)
    previews_off(page)


if __name__ == "__main__":
    run(scenario, height=800, launch_args=FAKE_MEDIA, permissions=["microphone"])
