"""The README's screenshot: `python app.py` with its defaults, the first example question, in
headless chromium on this machine; prints the summary line the page shows.

    python assets/make_screenshot.py --replay end          # writes assets/screenshot.png
    python assets/make_screenshot.py --replay midway --out assets/replay_midway.png
    python assets/make_screenshot.py --theme dark --out assets/screenshot_dark.png

Needs the dev requirements (playwright) and Debian's chromium. The first run is a warm-up
(caches, first-call costs); the screenshot and the summary are of the second.
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from eagle3.report import system_chromium  # noqa: E402
from tests.load import free_port, headless_page, start_app  # noqa: E402  (the tests' own way to start the app)

REPLAY_SHOWN = {"end": '#replay .replay[data-state="finished"]',
                "midway": '#replay .replay:not([data-finished=""])'}  # one decoder's replay has finished


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(ROOT, "assets", "screenshot.png"))
    parser.add_argument("--theme", choices=["light", "dark"], default="light")
    parser.add_argument("--replay", choices=["end", "midway"], default=None,
                        help="also play the replay, to its end or until the first decoder has finished")
    args = parser.parse_args(argv)
    chromium = system_chromium()
    if chromium is None:
        print("error: chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    port = free_port()
    with open(os.devnull, "w") as log:
        server = start_app(port, log)
    try:
        with sync_playwright() as p:
            page = headless_page(p, chromium)
            for attempt in ("warm-up", "shown"):
                page.goto(f"http://127.0.0.1:{port}/?__theme={args.theme}")
                page.get_by_text("Write a short thank-you note").first.click()  # the first example
                # The example reaches the box in a server round trip; Generate before that sends "".
                page.wait_for_function("document.querySelector('#prompt textarea').value.length > 0")
                page.locator("#send").click()
                page.locator("#summary").get_by_text("done.").wait_for(timeout=600_000)
                print(f"{attempt}: {page.locator('#summary').inner_text()}")
            if args.replay:
                page.locator("#replay .replay-button").click()
                page.locator(REPLAY_SHOWN[args.replay]).wait_for(timeout=600_000)
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            page.screenshot(path=args.out, full_page=args.replay != "midway")  # midway: the panes and charts
            page.context.browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
