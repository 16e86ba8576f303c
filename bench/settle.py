"""Run to a settled page: how long after the answer is the page still busy?

    python -m bench.settle [--repeat 5] [--long]

Starts `streamlit run app.py` on a free local port, opens it in Debian chromium
(playwright, never downloads a browser), and clicks Run on the lesson's defaults
`--repeat` times. For each click it records, in the page's own clock:

- answer: the answer box's "done" line of this run is on the page (the last
  token is drawn),
- settled: the script has stopped, no element is stale (greyed) and every figure
  image has loaded.

Prints each click's click->answer and answer->settled milliseconds and their
medians, and exits 1 if the median answer->settled time is over --goal-ms
(1500 ms: the page's goal, "settled within 1.5 s of the answer").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path


from bench.app_server import streamlit_server

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path(os.environ.get("PREFILL_DECODE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# In the page: note when the answer box's "done" line is drawn by this run. At the click every
# element turns stale (greyed); the done line is new once it is on the page and no longer stale.
# A MutationObserver sees every change, so nothing drawn and replaced within a frame is missed.
WATCH_JS = """() => {
  const s = window.__settle = {start: performance.now(), seen: null, gone: null};
  if (window.__settleObserver) window.__settleObserver.disconnect();
  const look = () => {
    const done = [...document.querySelectorAll('[data-testid=stMain] [data-testid=stAlert]')]
      .find(a => /完成：|Done:/.test(a.innerText));
    const stale = !done || !!done.closest('[data-stale="true"]');
    const now = performance.now();
    if (stale && s.seen === null) s.seen = now;
    if (!stale && s.seen !== null && s.gone === null) s.gone = now;
  };
  window.__settleObserver = new MutationObserver(look);
  window.__settleObserver.observe(document.body, {childList: true, subtree: true, characterData: true,
                                                  attributes: true, attributeFilter: ['data-stale']});
}"""
SETTLED_JS = """() => {
  const s = window.__settle;
  const state = document.querySelector('[data-test-script-state]');
  const idle = !!state && state.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-stale="true"]')
    && [...document.querySelectorAll('img')].every(i => i.complete);
  if (!(idle && s.gone !== null)) return false;
  s.settled = performance.now();
  return true;
}"""
IDLE_JS = """() => {
  const s = document.querySelector('[data-test-script-state]');
  return !!s && s.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-stale="true"]');
}"""


def wait_idle(page, timeout_ms: int = 120_000) -> None:
    page.wait_for_timeout(500)
    page.wait_for_function(IDLE_JS, timeout=timeout_ms)
    page.wait_for_timeout(300)


def one_run(page) -> tuple[float, float]:
    """(click -> answer ms, answer -> settled ms) for one click on Run."""
    page.evaluate(WATCH_JS)
    page.locator(".st-key-run button").click()
    page.wait_for_function(SETTLED_JS, timeout=120_000, polling=10)
    s = page.evaluate("() => window.__settle")
    return s["gone"] - s["start"], s["settled"] - s["gone"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--goal-ms", type=float, default=1500.0)
    parser.add_argument("--width", type=int, default=1440)
    parser.add_argument("--height", type=int, default=1000)
    parser.add_argument("--long", action="store_true",
                        help="the longest answer instead of the defaults: keep writing past end of sequence, "
                             "answer-length slider at its maximum (128 tokens)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        print(f"no chromium at {CHROMIUM}", file=sys.stderr)
        return 2
    artifacts = ROOT / "tests" / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    with streamlit_server(artifacts / "settle_server.log") as server, sync_playwright() as p:
        url = server.url
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True)
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(url, wait_until="domcontentloaded")
        wait_idle(page, 240_000)
        if args.long:
            page.locator(".st-key-ignore_eos label").click()
            wait_idle(page)
            page.locator(".st-key-output_len input[type=range]").focus()
            page.keyboard.press("End")
            wait_idle(page)
        answer, settle = one_run(page)  # the first click: nothing drawn for these settings is cached yet
        print(f"first: click->answer {answer:7.0f} ms   answer->settled {settle:7.0f} ms (cold caches)", flush=True)
        wait_idle(page)
        rows = []
        for i in range(args.repeat):
            answer, settle = one_run(page)
            rows.append((answer, settle))
            print(f"run {i + 1}: click->answer {answer:7.0f} ms   answer->settled {settle:7.0f} ms", flush=True)
            wait_idle(page)
        browser.close()
    answer = statistics.median(r[0] for r in rows)
    settle = statistics.median(r[1] for r in rows)
    print(f"median: click->answer {answer:.0f} ms, answer->settled {settle:.0f} ms "
          f"(goal {args.goal_ms:.0f} ms: ratio {settle / args.goal_ms:.2f})")
    return 0 if settle <= args.goal_ms else 1


if __name__ == "__main__":
    sys.exit(main())
