"""A cold start in chromium: a fresh Streamlit server with a fresh engine worker (the first visitor's call
starts it and loads the model), watched from the first paint.

It was about 10 s of blank page before "正在引擎进程里加载模型……": the note came only after app.py had
imported the page's modules, and went before the header came, a blank page between the two. Now the
note is the first thing the page says and stays until the header is there. Only the order is checked
(every change of the main column, recorded in the page by a MutationObserver), never a time.
"""

from __future__ import annotations

import pytest

from bench.app_server import streamlit_server
from lesson.text import t
from tests.browser.pages import ARTIFACTS, IDLE
from tests.factories import HAS_DEFAULT_MODEL

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Every change of what the main column says (its text, the script's state, whether the header is there).
RECORD = """
window.__seen = [];
const snap = () => {
  const main = document.querySelector('[data-testid=stMain]');
  const node = document.querySelector('[data-test-script-state]');
  const entry = {text: main ? main.innerText.trim().replace(/\\s+/g, ' ') : '',
                 state: node ? node.getAttribute('data-test-script-state') : null,
                 header: !!document.querySelector('h1')};
  const last = window.__seen[window.__seen.length - 1];
  if (!last || last.text !== entry.text || last.state !== entry.state || last.header !== entry.header)
    window.__seen.push(entry);
};
new MutationObserver(snap).observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
"""


def test_a_cold_start_says_it_is_loading_from_its_first_words_until_the_header(browser):
    if not HAS_DEFAULT_MODEL:
        pytest.skip("the embedded default model is not built yet")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    note = t("zh", "loading_model")
    context = browser.new_context(viewport={"width": 1280, "height": 720}, device_scale_factor=1)
    context.add_init_script(RECORD)
    try:
        with streamlit_server(ARTIFACTS / "cold_start_server.log") as server:  # its own engine worker, cold
            page = context.new_page()
            page.goto(server.url, wait_until="commit")
            page.wait_for_function(f"() => !!document.querySelector('h1') && ({IDLE})()", timeout=240_000)
            seen = page.evaluate("window.__seen")
    finally:
        context.close()
    (ARTIFACTS / "cold_start_order.txt").write_text("\n".join(str(s) for s in seen) + "\n", encoding="utf-8")
    said = [s for s in seen if s["text"]]
    assert said and note in said[0]["text"], said[:3]  # the page's first words: it is loading
    first_header = next(i for i, s in enumerate(seen) if s["header"])
    first_note = next(i for i, s in enumerate(seen) if note in s["text"])
    assert first_note < first_header
    blank = [s for s in seen[first_note:first_header] if not s["text"]]
    assert not blank, blank  # the note went before the header came: a blank page between the two
