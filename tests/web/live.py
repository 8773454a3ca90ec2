#!/usr/bin/env python3
"""A conversation that feels alive, in Chromium: "… is typing" when the friend types, "Seen"
after the friend's read receipt, the typing notices the page sends while the user writes, Mark
unread in the room's menu, the privacy switches, and a draft typed in one browser context that
appears in a second.

Run by tests/integration/conversation/browser.rs with one JSON argument (base, email, roomId,
incoming, screenshots, chromium), on webapp.py's line protocol: `CODE <email>` -> the mailed
code; `TYPE` -> the friend starts typing on Synapse; `TYPED` -> "yes" once the friend's sync
saw the user typing; `READ <text>` -> the friend sends a read receipt on the user's message
with that text; `UNREAD` -> the room's markedUnread through the API ("true"/"false"). The last
line is `DONE <json>`: {"steps": {...}, "problems": [...]}.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from scenario import run  # noqa: E402
from webapp import CFG, PASSPHRASE, ask, expect, go, shot, sign_in, step, watch  # noqa: E402

DRAFT = "a half-written reply, carried over"


def open_room(page):
    go(page, "/rooms/" + CFG["roomId"].replace("!", "%21").replace(":", "%3A"))
    expect(page.get_by_role("list", name="Messages").get_by_text(CFG["incoming"])).to_be_visible()


def first(page):
    open_room(page)
    step("room_open")

    # The friend types: "… is typing" appears.
    ask("TYPE")
    expect(page.locator("p.typing")).to_contain_text("is typing")
    step("typing_shown")

    # The user writes: the page sends typing notices (throttled) the friend sees.
    box = page.get_by_role("textbox", name="Message")
    box.press_sequentially("hello from the web", delay=30)
    if ask("TYPED") != "yes":
        raise RuntimeError("the friend never saw the user typing")
    step("typing_sent")
    box.press("Enter")
    mine = page.locator("li.msg.mine", has_text="hello from the web")
    expect(mine).to_be_visible()
    # The friend reads it: "Seen" on the user's message (live, from the receipt event).
    ask("READ hello from the web")
    expect(mine.locator(".seen")).to_be_visible()
    step("seen_shown")
    shot(page, "seen.png")

    # A draft typed here is saved (debounced) and sealed before it leaves the page.
    with page.expect_response(lambda r: r.url.endswith("/draft") and r.request.method == "PUT") as resp:
        box.fill(DRAFT)
        box.dispatch_event("input")
    sent = resp.value.request.post_data_json
    if "carried over" in sent["content"]:
        raise RuntimeError("the draft left the page in plain text")
    step("draft_saved_sealed")

    # Mark unread from the room's menu: back to the inbox, the room marked.
    page.get_by_role("button", name="Mark unread").click()
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    if ask("UNREAD") != "true":
        raise RuntimeError("the room is not marked unread")
    row = page.locator(f'li[data-room-id="{CFG["roomId"]}"]')
    expect(row.locator(".count.marked")).to_be_visible()
    step("marked_unread")

    # Privacy switches: both shown and saved.
    go(page, "/settings")
    receipts = page.get_by_label("Send read receipts")
    expect(receipts).to_be_checked()
    expect(receipts).to_be_enabled()
    receipts.uncheck()
    expect(page.get_by_text("Privacy settings saved")).to_be_visible()
    page.reload()
    expect(page.get_by_label("Send read receipts")).not_to_be_checked()
    expect(page.get_by_label("Send typing notices")).to_be_checked()
    step("privacy_switches")


def second(browser):
    ctx = browser.new_context(viewport={"width": 1000, "height": 700})
    watch(ctx, "second browser")
    page = ctx.new_page()
    sign_in(page, CFG["email"])
    expect(page.get_by_role("heading", name="Unlock your messages")).to_be_visible()
    form = page.locator("form", has=page.get_by_role("button", name="Unlock"))
    form.get_by_label("Recovery passphrase").fill(PASSPHRASE)
    form.get_by_role("button", name="Unlock").click()
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    expect(page.locator(f'li[data-room-id="{CFG["roomId"]}"] .draft')).to_be_visible()
    open_room(page)
    expect(page.get_by_role("textbox", name="Message")).to_have_value(DRAFT)
    step("draft_restored")


def scenario(page):
    first(page)
    second(page.context.browser)


if __name__ == "__main__":
    run(scenario)
