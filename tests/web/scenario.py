"""The frame of every browser scenario beside webapp.py: Debian's Chromium with the test's launch
arguments, one context whose requests and console are watched, the user signed in with a new key
(unless the scenario does that itself), the scenario, and the `DONE <json>` line the Rust test
reads ({"steps": {...}, "problems": [...]}). A failure is recorded as a problem with the page's
text in the log, never lost."""
import json

from playwright.sync_api import sync_playwright
from webapp import CFG, LAUNCH_ARGS, log, problems, set_up_key, sign_in, steps, watch


def run(scenario, *, height=700, launch_args=(), signed_in=True, **context):
    """Runs `scenario(page)` in a 1000 x `height` page; `context` goes to `new_context`.
    `page.context.browser` opens a second context when the scenario needs one."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CFG["chromium"], args=LAUNCH_ARGS + list(launch_args))
        ctx = browser.new_context(viewport={"width": 1000, "height": height}, **context)
        watch(ctx, "browser")
        page = ctx.new_page()
        try:
            if signed_in:
                sign_in(page, CFG["email"])
                set_up_key(page)
            scenario(page)
        except Exception as e:
            problems.append(f"failed: {type(e).__name__}: {e}")
            log("page", page.url, "\n", page.inner_text("body")[:2000])
        finally:
            browser.close()
    print("DONE " + json.dumps({"steps": steps, "problems": problems}), flush=True)
