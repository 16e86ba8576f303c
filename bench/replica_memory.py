"""What one app replica costs in memory: `streamlit run app.py` with the embedded default model.

    .venv/bin/python bench/replica_memory.py [--sessions 1,4]

Starts the app on a free local port, reads the server process's resident memory (VmRSS, and
its peak VmHWM, from /proc) when idle, then after N browser sessions (Debian chromium via
playwright) have each loaded the lesson page and its live run, and prints one line per
point. The model is cached once per process (st.cache_resource), so a session adds its page
state, not another model. Linux only (/proc). The server is always terminated.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", default="1,4", help="browser sessions open at each point (cumulative)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFILL_DECODE_")}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
                             "--server.port", str(port), "--server.headless", "true",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("streamlit did not start") from None
                time.sleep(0.5)
        time.sleep(1.0)
        rss, peak = rss_mib(proc.pid)
        print(f"idle server (no session, no model): RSS {rss:.0f} MiB, peak {peak:.0f} MiB")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
            pages = []
            for target in (int(v) for v in args.sessions.split(",")):
                while len(pages) < target:
                    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
                    page.goto(url, wait_until="domcontentloaded")
                    page.wait_for_timeout(800)
                    page.wait_for_function(IDLE, timeout=240_000)
                    pages.append(page)
                time.sleep(1.0)
                rss, peak = rss_mib(proc.pid)
                print(f"{len(pages)} session(s), each page run once (model loaded once): RSS {rss:.0f} MiB, "
                      f"peak {peak:.0f} MiB")
            browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
