"""What the browser tests share: where screenshots go, how chromium is started, and waiting
for a Streamlit page to finish its run."""

from __future__ import annotations

import time

from tests.factories import ROOT

try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # no playwright: every browser test skips (tests/conftest.py's chromium fixture)
    PlaywrightTimeout = TimeoutError

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


# A run under way: the script running, or the page's elements marked stale while it redraws them.
BUSY = """() => {
  const s = document.querySelector('[data-test-script-state]');
  return (!!s && s.getAttribute('data-test-script-state') === 'running')
      || !!document.querySelector('[data-stale="true"]');
}"""
START_S = 0.6  # how long an action may take to start its run (a key that starts none costs this much)

# Installed in every page before Streamlit's own scripts (`watch`): a run the page has asked the server for
# is pending until the page's script state next changes or the server says a run finished. The server may
# take seconds to start a run on a busy machine, and the page still says "not running" until it does: a test
# that only looked at the state went on before its click's run had started (its next click, or its reading,
# then met the page before it). A run of a few tens of milliseconds may never change the state on the page
# (its "running" and "not running" drawn in one go), hence the server's word too: a ForwardMsg with field 6,
# `script_finished`. A rerun request is the BackMsg whose first byte is 0x5A (field 11, `rerun_script`, the
# only field set); the page's other messages (a table's chunk, a deferred download) start no run and are
# not counted. The last events are kept for a failure's message (`__pdLog`); a request nothing answered
# within a minute no longer counts (the page is then judged by its state alone, as before).
WATCH_JS = """(() => {
  if (window.__pdWatch) return;
  window.__pdWatch = true;
  window.__pdAsked = 0;
  window.__pdLog = [];
  const note = (what) => { window.__pdLog.push(Math.round(performance.now()) + ' ' + what);
                           window.__pdLog = window.__pdLog.slice(-24); };
  const answered = (how) => { if (window.__pdAsked) note('answered: ' + how); window.__pdAsked = 0; };
  const topFields = (b) => {  // a protobuf message's top-level field numbers
    const out = []; let i = 0;
    const varint = () => { let v = 0, s = 0, x; do { x = b[i++]; v += (x & 0x7f) * 2 ** s; s += 7; }
                           while (x & 0x80 && i < b.length); return v; };
    while (i < b.length) {
      const tag = varint(), wire = tag & 7;
      out.push(Math.floor(tag / 8));
      if (wire === 0) varint(); else if (wire === 2) i += varint(); else if (wire === 1) i += 8;
      else if (wire === 5) i += 4; else break;
    }
    return out;
  };
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data)
      : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : null;
    if (bytes && bytes.length && bytes[0] === 0x5A) { window.__pdAsked = performance.now(); note('asked'); }
    if (!this.__pdHeard) {
      this.__pdHeard = true;
      this.addEventListener('message', (event) => {
        if (event.data instanceof ArrayBuffer && topFields(new Uint8Array(event.data)).includes(6)) {
          answered('a run finished');
        }
      });
    }
    return send.call(this, data);
  };
  let last = null;
  new MutationObserver(changes => {
    const app = document.querySelector('[data-test-script-state]');
    const now = app ? app.getAttribute('data-test-script-state') : null;
    const flipped = changes.some(c => c.type === 'attributes' && c.oldValue !== c.target.getAttribute(c.attributeName));
    if (now !== last || flipped) {
      answered('state ' + now);
      note('state ' + now);
      last = now;
    }
  }).observe(document, {subtree: true, childList: true, attributes: true, attributeOldValue: true,
                        attributeFilter: ['data-test-script-state']});
})();"""
SETTLED = f"() => ({IDLE})() && !(window.__pdAsked && performance.now() - window.__pdAsked < 60000)"
ASKED_OR_BUSY = f"() => !!window.__pdAsked || ({BUSY})()"


def watch(browser) -> None:
    """Every context `browser` opens from now on runs WATCH_JS in its pages, so `wait_idle` sees a run that
    was asked for and has not started yet. (Its `new_page`, whose page owns a context of its own, is left
    to the pages that load no Streamlit app: figures and slides.)"""
    new_context = browser.new_context

    def watched_context(**options):
        context = new_context(**options)
        context.add_init_script(script=WATCH_JS)
        return context

    browser.new_context = watched_context


def wait_idle(page, first: bool = False) -> None:
    """Until the run an action started (if any: asked for, or seen within START_S) has finished, no element is
    stale, and the page then stayed so for 400 ms (a second run a first one asks for, or the page's own
    read-on press, starts within it: then the wait goes on)."""
    try:
        page.wait_for_function(ASKED_OR_BUSY, timeout=START_S * 1000, polling=50)
    except PlaywrightTimeout:
        pass  # no run asked for or started (or one came and went between two looks): the same as waiting START_S
    deadline = time.monotonic() + (240 if first else 120)
    while True:
        try:
            page.wait_for_function(SETTLED, timeout=max(1.0, deadline - time.monotonic()) * 1000)
            page.wait_for_timeout(400)
            if page.evaluate(SETTLED):
                return
            if time.monotonic() > deadline:
                raise PlaywrightTimeout("still running")
        except PlaywrightTimeout:
            events = page.evaluate("window.__pdLog")
            raise AssertionError(f"the page never settled; its last events: {events}") from None


def read_on(page) -> None:
    """Draw the lesson below its first screen, as a reader scrolling to it does (the page presses its
    "read on" button: app_support/read_on.js, which may have pressed it already); then wait until the
    button has made way for the sections. A busy browser may still be drawing the first screen (its
    figure comes before the run panel, and the script can look idle between them): wait for either."""
    page.wait_for_function("() => !!(document.querySelector('.st-key-read_on button')"
                           " || document.getElementById('prefill'))", timeout=120_000)
    page.evaluate("() => { const b = document.querySelector('.st-key-read_on button'); if (b) b.click(); }")
    wait_idle(page)
    page.wait_for_function("() => !document.querySelector('.st-key-read_on') && !!document.getElementById('prefill')",
                           timeout=120_000)


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


# The classroom's position line ("第 1 / 4 次前向"), read in the page; a step pressed and its line awaited.
CLASS_POSITION = "() => (document.querySelector('.st-key-class_position') || {}).innerText || ''"


def open_stepping_page(browser, url: str, width: int, height: int):
    page = open_page(browser, url, width, height)
    page.wait_for_function(f"() => ({CLASS_POSITION})().includes('第 1 /') && ({IDLE})()", timeout=120_000)
    return page


def press(page, key: str, position_js: str, expected: str) -> None:
    page.keyboard.press(key)
    page.wait_for_function(f"() => ({position_js})().includes('{expected}') && ({IDLE})()", timeout=60_000,
                           polling=50)
    page.wait_for_timeout(300)
