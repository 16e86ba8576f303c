"""Figures drawn in Debian chromium, without the app: the serving figures load at the size they
declare, and the latency chart's tick labels, axis title and legend never overlap at any length.

Without chromium or playwright each test skips at setup (conftest's `chromium` fixture), and
fails instead under PREFILL_DECODE_REQUIRE_BROWSER=1. Never downloads a browser.
"""

from __future__ import annotations

import json

import pytest

from app_support.ui import PHONE_CHART_RULE
from lesson.charts.run import latency_figure
from lesson.diagrams.batch_composition import render_batch_composition
from lesson.diagrams.kv_blocks import render_kv_blocks
from lesson.diagrams.serving_gantt import render_serving_gantt
from lesson.diagrams.serving_metrics import render_serving_metrics
from tests.factories import make_run, make_trace
from tests.svg import parse

pytestmark = pytest.mark.browser

POLICIES = ("one-at-a-time", "prefill-first", "chunked", "disaggregated")


@pytest.fixture(scope="module")
def runs():
    return {p: make_run(policy=p) for p in POLICIES}


def run_of(num_tokens: int):
    return make_trace(("法国", "的", "首都", "是"), tuple(f"o{i}" for i in range(num_tokens)))


def test_serving_figures_render_in_chromium(browser, tmp_path, runs):
    """Each figure loads in a real browser at its declared size (a PNG is kept for a human look)."""
    figures = {"gantt": render_serving_gantt(runs["prefill-first"], lang="zh"),
               "batch": render_batch_composition(runs["chunked"], lang="en"),
               "kv": render_kv_blocks(runs["chunked"], lang="zh"),
               "metrics": render_serving_metrics([runs[p] for p in POLICIES], lang="en")}
    page = browser.new_page()
    try:
        for name, svg in figures.items():
            file = tmp_path / f"{name}.svg"
            file.write_text(svg, encoding="utf-8")
            page.goto(file.as_uri())
            box = page.query_selector("svg").bounding_box()
            root = parse(svg)
            assert (box["width"], box["height"]) == (float(root.get("width")), float(root.get("height")))
            page.query_selector("svg").screenshot(path=str(tmp_path / f"{name}.png"))
            assert (tmp_path / f"{name}.png").stat().st_size > 5000
    finally:
        page.close()


def draw(page, fig) -> None:
    """`fig` drawn in `page` as its to_html draws it (Plotly.newPlot with {responsive: true} into one div):
    the page and plotly.js (3.5 MB of script to parse) come once, each later figure replaces the one before."""
    if page.evaluate("() => typeof Plotly === 'undefined'"):
        page.set_content(fig.to_html(include_plotlyjs=True, full_html=True, div_id="chart"))
    else:
        page.evaluate("async f => { await Plotly.newPlot('chart', f.data, f.layout, {responsive: true}); }",
                      json.loads(fig.to_json()))
    page.wait_for_selector(".xtick text")


def test_latency_chart_labels_never_overlap_in_chromium(browser):
    """Draws the chart (plotly.js inline) and measures every tick label, the axis title and the
    legend items: no two overlap, none is stood on end, all inside the figure."""
    measure = """() => {
      const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
      const all = s => [...document.querySelectorAll(s)].filter(e => e.getClientRects().length).map(box);
      return {ticks: all('.xtick text'), title: all('.xtitle'), legend: all('.legend .traces'),
              figure: all('.main-svg')[0], subtitle: all('.gtitle-subtitle')};
    }"""

    def overlap(a, b):
        return a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1

    page = browser.new_page(viewport={"width": 1000, "height": 900})
    try:
        for num_tokens in (1, 8, 24, 128):
            for lang in ("zh", "en"):
                # about the lesson column beside the sidebar; a phone's (390 px screen), outside classroom mode
                for classroom, width in ((False, 760), (True, 760), (False, 358)):
                    fig = latency_figure(run_of(num_tokens), lang, classroom=classroom,
                                         run_note="中位数那一次：第 4 / 5 次运行（5 次里 Prefill 3.0 ms–15.5 ms，"
                                                  "一次 Decode 6.0 ms–20.6 ms）")
                    fig.update_layout(width=width)
                    draw(page, fig)
                    # a phone's CSS (app_support/ui.py): the first and last pass labelled, the rest not drawn
                    page.evaluate("r => { let s = document.getElementById('phone');"
                                  " if (!s) { s = document.createElement('style'); s.id = 'phone';"
                                  " document.head.appendChild(s); } s.textContent = r; }",
                                  PHONE_CHART_RULE if width < 760 else "")
                    m = page.evaluate(measure)
                    # the subtitle and the axis title whole, not cut at the figure's edges (they were on a phone)
                    assert all(m["figure"][0] - 1 <= b[0] and b[2] <= m["figure"][2] + 1
                               for b in m["title"] + m["subtitle"]), (num_tokens, lang, classroom, width, m)
                    boxes = [("tick", b) for b in m["ticks"]] + [("title", b) for b in m["title"]] + \
                        [("legend", b) for b in m["legend"]]
                    case = (num_tokens, lang, classroom, width)
                    assert m["title"] and len(m["legend"]) >= 3, case
                    # this figure's, drawn (on a phone: the first and the last, the others hidden by its CSS)
                    shown = len(fig.layout.xaxis.tickvals) if width >= 760 else min(2, len(fig.layout.xaxis.tickvals))
                    assert len(m["ticks"]) == shown, case
                    assert all(b[3] - b[1] < 40 for b in m["ticks"]), case  # level, not on end
                    assert all(b[3] <= m["figure"][3] + 1 for _, b in boxes), case
                    clashes = [(k1, k2) for i, (k1, b1) in enumerate(boxes) for k2, b2 in boxes[i + 1:]
                               if overlap(b1, b2) and not k1 == k2 == "legend"]
                    assert not clashes, (case, clashes)
    finally:
        page.close()
