#!/usr/bin/env python3
"""Who said what in the web app, in Chromium: the inbox row's last line, the sender's name and
avatar above the message, and the room actions labelled as actions.

Run by tests/integration/names/browser.rs with one JSON argument (base, email, roomId, roomName,
senderId, screenshots, chromium), on webapp.py's line protocol (`CODE <email>`). The last line
is `DONE <json>`: {"steps": {...}, "problems": [...]}.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from scenario import run  # noqa: E402
from webapp import CFG, expect, room_row, shot, step  # noqa: E402


def names(page):
    row = room_row(page)
    expect(row).to_contain_text(CFG["roomName"])
    row.get_by_role("button", name="Accept invitation to " + CFG["roomName"]).click()
    # Joined: the row shows who said what last (the first word of the name in a group),
    # opened from sealedLastMessage in the browser.
    expect(row.locator(".sub.last")).to_have_text("Anna: see you Saturday")
    step("last_line_in_inbox")
    shot(page, "inbox-last-line.png")
    row.get_by_role("link").click()
    log_ = page.get_by_role("list", name="Messages")
    theirs = log_.locator("li.msg", has_text="see you Saturday")
    expect(theirs.locator(".sender")).to_have_text("Anna Berg")
    if CFG["senderId"] in log_.inner_text():
        raise RuntimeError(f"the Matrix ID {CFG['senderId']} is shown in the conversation")
    step("name_not_id")
    # The avatar arrives through /api/rooms/{roomId}/members/{userId}/avatar (initials before).
    img = theirs.locator(".avatar img")
    expect(img).to_be_visible()
    if not img.evaluate("i => i.complete && i.naturalWidth > 0"):
        raise RuntimeError("the avatar image did not load")
    step("avatar_shown")
    shot(page, "conversation-names.png")
    actions = page.get_by_role("group", name="Conversation actions")
    actions.get_by_role("button", name="Archive", exact=True).click()
    expect(actions.get_by_role("button", name="Unarchive", exact=True)).to_be_visible()
    actions.get_by_role("button", name="Unarchive", exact=True).click()
    expect(actions.get_by_role("button", name="Archive", exact=True)).to_be_visible()
    step("archive_reads_as_action")


if __name__ == "__main__":
    run(names)
