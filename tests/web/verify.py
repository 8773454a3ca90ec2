#!/usr/bin/env python3
"""Device verification in the web app (Settings -> Device verification), in Chromium.

Run by tests/integration/verification/browser.rs with one JSON argument (base, email,
screenshots, chromium), on webapp.py's line protocol: `CODE <email>` -> the mailed code;
`START` -> matrix-nio (the same Matrix account) starts a SAS with the sync device, answered
with its id; `KEYS <id>` -> nio's emoji symbols (JSON) once nio has the keys; `CONFIRM <id>`
-> nio confirmed too. The last line is `DONE <json>`: {"steps": {...}, "problems": [...]}.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from scenario import run  # noqa: E402
from webapp import ask, expect, go, shot, step  # noqa: E402


def verify(page):
    go(page, "/settings")
    section = page.locator("#verify")
    expect(section.get_by_role("heading", name="Device verification")).to_be_visible()
    expect(section).to_contain_text("No verification in progress")
    step("section_shown")
    vid = ask("START")
    # It appears through `verification.updated` on the live stream (no reload).
    item = section.locator(f'li.verification[data-id="{vid}"]')
    expect(item).to_have_attribute("data-state", "started")
    step("listed_live")
    # The accept POST is the positive marker that the press reached the app: a press lost to
    # a redrawn list fails here, by name, instead of as nio's wait for keys.
    with page.expect_response(lambda r: r.url.endswith("/accept") and r.request.method == "POST") as accepted:
        item.get_by_role("button", name="Accept").click()
    if accepted.value.status != 200:
        raise RuntimeError(f"accept answered {accepted.value.status}: {accepted.value.text()}")
    theirs = json.loads(ask(f"KEYS {vid}"))
    expect(item).to_have_attribute("data-state", "keys_exchanged")
    shown = item.locator(".sas-emoji .symbol").all_inner_texts()
    if shown != theirs:
        raise RuntimeError(f"emoji shown {shown} differ from nio's {theirs}")
    step("emoji_shown")
    shot(page, "verification.png")
    # As with Accept: the confirm POST proves the press reached the app (a list redrawn by a
    # late `verification.updated` can swallow a click; nio would then wait for our MAC).
    with page.expect_response(lambda r: r.url.endswith("/confirm") and r.request.method == "POST") as confirmed:
        item.get_by_role("button", name="They match").click()
    if confirmed.value.status != 200:
        raise RuntimeError(f"confirm answered {confirmed.value.status}: {confirmed.value.text()}")
    ask(f"CONFIRM {vid}")
    expect(item).to_have_attribute("data-state", "done")
    expect(item).to_contain_text("is verified.")
    expect(item.get_by_role("button")).to_have_count(0)
    step("verified")


if __name__ == "__main__":
    run(verify)
