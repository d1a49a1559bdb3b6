"""The README's screenshot: `python app.py` with its defaults, the first example question, in
headless chromium on this machine; prints the summary line the page shows.

    python assets/make_screenshot.py                      # writes assets/screenshot.png
    python assets/make_screenshot.py --theme dark --out runs/dark.png

Needs the dev requirements (playwright) and Debian's chromium. The first run is a warm-up
(caches, first-call costs); the screenshot and the summary are of the second.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.load import free_port, start_app  # noqa: E402  (the tests' own way to start the app)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(ROOT, "assets", "screenshot.png"))
    parser.add_argument("--theme", choices=["light", "dark"], default="light")
    parser.add_argument("--replay", action="store_true", help="also play the replay to its end before the screenshot")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("error: chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    port = free_port()
    with open(os.devnull, "w") as log:
        server = start_app(port, log)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                              "--disable-background-networking"])
            page = browser.new_page(viewport={"width": 1500, "height": 1500})
            for attempt in ("warm-up", "shown"):
                page.goto(f"http://127.0.0.1:{port}/?__theme={args.theme}")
                page.get_by_text("Write a short thank-you note").first.click()  # the first example
                page.locator("#send").click()
                page.locator("#summary").get_by_text("done.").wait_for(timeout=600_000)
                print(f"{attempt}: {page.locator('#summary').inner_text()}")
            if args.replay:
                page.locator("#replay .replay-button").click()
                page.locator('#replay .replay[data-state="finished"]').wait_for(timeout=600_000)
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            page.screenshot(path=args.out, full_page=True)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
