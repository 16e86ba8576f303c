"""What one app replica costs in memory: `streamlit run app.py`, its pages run by its engine worker.

    .venv/bin/python bench/replica_memory.py [--sessions 1,4]

Starts the app on a free local port, reads the server process's resident memory (VmRSS, and
its peak VmHWM, from /proc) when idle, then after N browser sessions (Debian chromium via
playwright) have each loaded the lesson page and its run, and prints one line per point. The
model lives in the engine worker, a process of its own (not counted here: docs/operators.md), so
a session adds its page state, never a model. Linux only (/proc). The server is always terminated.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_server import streamlit_server  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get("PREFILL_DECODE_CHROMIUM", "/usr/bin/chromium"))
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
IDLE = """() => {
  const s = document.querySelector('[data-test-script-state]');
  return !!s && s.getAttribute('data-test-script-state') === 'notRunning'
      && !document.querySelector('[data-stale="true"]');
}"""


def rss_mib(pid: int) -> tuple[float, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def measure(server, sessions: str) -> None:
    from playwright.sync_api import sync_playwright

    time.sleep(1.0)
    rss, peak = rss_mib(server.pid)
    print(f"idle server (no session yet): RSS {rss:.0f} MiB, peak {peak:.0f} MiB")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        pages = []
        for target in (int(v) for v in sessions.split(",")):
            while len(pages) < target:
                page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
                page.goto(server.url, wait_until="domcontentloaded")
                page.wait_for_timeout(800)
                page.wait_for_function(IDLE, timeout=240_000)
                pages.append(page)
            time.sleep(1.0)
            rss, peak = rss_mib(server.pid)
            print(f"{len(pages)} session(s), each page run once: RSS {rss:.0f} MiB, "
                  f"peak {peak:.0f} MiB")
        browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", default="1,4", help="browser sessions open at each point (cumulative)")
    args = parser.parse_args()
    with streamlit_server() as server:  # always stopped, even when a measurement fails
        measure(server, args.sessions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
