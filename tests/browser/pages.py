"""What the browser tests share: where screenshots go, how chromium is started, and waiting
for a Streamlit page to finish its run."""

from __future__ import annotations

from tests.factories import ROOT

ARTIFACTS = ROOT / "tests" / "artifacts"  # gitignored
SCREENSHOTS = ROOT / "docs" / "screenshots"  # the README's pictures, refreshed with UPDATE_SCREENSHOTS=1
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
PROJECTORS = [(1280, 720), (1024, 768)]  # a 16:9 and a 4:3 projector, in CSS pixels
IDLE = """() => {
  const s = document.querySelector('[data-test-script-state]');
  return !!s && s.getAttribute('data-test-script-state') === 'notRunning'
      && !document.querySelector('[data-stale="true"]');
}"""


def wait_idle(page, first: bool = False) -> None:
    """Until the script has finished and no element is stale."""
    page.wait_for_timeout(600)
    page.wait_for_function(IDLE, timeout=240_000 if first else 120_000)
    page.wait_for_timeout(400)


def open_page(browser, url: str, width: int, height: int):
    """A fresh context (its own session) of `width` x `height` at `url`, once its first run finished."""
    page = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1).new_page()
    page.goto(url, wait_until="domcontentloaded")
    wait_idle(page, first=True)
    return page


def fresh_tab(context, url: str):
    """A new tab of `context` at `url` (a session of its own: the lesson's defaults, whatever ran before),
    once its first run finished."""
    tab = context.new_page()
    tab.goto(url, wait_until="domcontentloaded")
    wait_idle(tab, first=True)
    return tab
