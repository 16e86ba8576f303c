"""The lesson's one-request prefix cache on the page (AppTest, the real engine worker): with the switch on,
running the same prompt again computes only its last position, the note under the answer says how many
positions were read and from when, the blocks figure draws them, and two sessions never share kept runs."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from streamlit.testing.v1 import AppTest

from lesson.run_words import clock
from lesson.text import t
from tests.app.apptest import APP, assert_healthy, needs_model, read_on, shown_trace, texts


def _blocks(at) -> ET.Element:
    roots = [ET.fromstring(c.value) for c in at.code if c.language == "xml"]
    return next(r for r in roots if "blocks" in (r.get("class") or "").split())


@needs_model
def test_the_same_prompt_again_reads_all_but_its_last_position(app, served_settings):
    read_on(app)  # the reader came to the sections below the first screen
    app.checkbox(key="prefix_reuse").check().run()
    app.button(key="run").click().run()
    assert_healthy(app)
    first = shown_trace(app)
    assert first["prefix"]["miss"] == "first_seen" and first["steps"][0]["context_before"] == 0
    app.button(key="run").click().run()
    assert_healthy(app)
    again = shown_trace(app)
    n = len(again["prompt_ids"])
    assert again["prefix"]["num_cached_tokens"] == n - 1 and again["steps"][0]["context_before"] == n - 1
    assert again["output_text"] == first["output_text"]
    words = t("zh", "pr_hit", computed=1, prompt=n, cached=n - 1, rate=f"{(n - 1) / n:.0%}",
              when=clock(again["prefix"]["source_started_at_s"]))
    assert words in texts(app, "caption")
    app.toggle(key="raw_svg_blocks").set_value(True).run()
    blocks = _blocks(app)
    reused = [r for r in blocks.iter("{http://www.w3.org/2000/svg}rect")
              if (r.get("class") or "").startswith("pos reused")]
    assert sum(int(r.get("data-count")) for r in reused) == n - 1

    other = AppTest.from_file(APP, default_timeout=180).run()  # another visitor: none of the first one's runs
    other.checkbox(key="prefix_reuse").check().run()
    other.button(key="run").click().run()
    assert_healthy(other)
    assert shown_trace(other)["prefix"]["miss"] == "first_seen"
    assert other.session_state["prefix_scope"] != app.session_state["prefix_scope"]


@needs_model
def test_off_by_default_every_prefill_computes_the_whole_prompt(app):
    assert app.session_state["prefix_reuse"] is False
    app.button(key="run").click().run()
    app.button(key="run").click().run()
    assert_healthy(app)
    trace = shown_trace(app)
    assert trace["prefix"] is None and trace["steps"][0]["context_before"] == 0
    assert t("zh", "prefix_reuse") in [c.label for c in app.checkbox]
