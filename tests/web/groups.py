#!/usr/bin/env python3
"""Groups in the web app, in Chromium: the New group screen picks a contact from GET
/api/contacts and a typed Matrix ID, names the group and creates it; the group shows in the
inbox; the group's details screen (from the conversation header) renames it, which the test
checks on Synapse.

Run by tests/integration/groups/browser.rs with one JSON argument (base, email, bobName,
carolId, screenshots, chromium), on webapp.py's line protocol: `CODE <email>`, `CREATED
<roomId>` (the test checks the room on Synapse and answers `ok` or what is wrong) and `NAME
<roomId>` (the test answers the room's name as Synapse has it). The last line is `DONE <json>`:
{"steps": {...}, "problems": [...]}.
"""
import sys
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from scenario import run  # noqa: E402
from webapp import CFG, ask, expect, go, shot, step  # noqa: E402


def groups(page):
    page.get_by_role("link", name="New chat").click()
    page.get_by_role("link", name="New group").click()
    expect(page.get_by_role("heading", name="New group")).to_be_visible()
    # Bob is a contact (the user's direct chat partner on Matrix); Carol is typed.
    page.get_by_label("Platform").select_option("matrix")
    page.get_by_role("button", name="Find").click()
    page.get_by_role("checkbox", name="Add " + CFG["bobName"]).check()
    page.get_by_label("Name, number or username").fill(CFG["carolId"])
    page.get_by_role("button", name="Add exactly this").click()
    chosen = page.get_by_role("list", name="Group members")
    expect(chosen).to_contain_text(CFG["bobName"])
    expect(chosen).to_contain_text(CFG["carolId"])
    step("picked_members")
    page.get_by_label("Group name").fill("Climbers")
    shot(page, "group-new.png")
    page.get_by_role("button", name="Create group").click()
    page.wait_for_url("**/rooms/**")
    room = urllib.parse.unquote(page.url.split("/rooms/", 1)[1])
    answer = ask(f"CREATED {room}")
    if answer != "ok":
        raise RuntimeError(f"the group on Synapse: {answer}")
    step("created_on_synapse")
    go(page, "/inbox")
    row = page.locator(f'li[data-room-id="{room}"]')
    expect(row).to_contain_text("Climbers")
    step("group_in_inbox")
    row.get_by_role("link").first.click()
    page.get_by_role("link", name="Group details").click()
    expect(page.get_by_role("list", name="Members")).to_contain_text(CFG["carolId"])
    step("details_members")
    rename = page.get_by_role("form", name="Rename")
    rename.get_by_label("Group name").fill("Climbers united")
    rename.get_by_role("button", name="Rename").click()
    expect(page.get_by_role("heading", name="Climbers united")).to_be_visible()
    shot(page, "group-details.png")
    name = ask(f"NAME {room}")
    if name != "Climbers united":
        raise RuntimeError(f"Synapse has the name {name!r}")
    step("renamed_on_synapse")


if __name__ == "__main__":
    run(groups, height=800)
