"""The SVG diagrams: structure checked against the trace, plus exact snapshots.

Regenerate the snapshots after an intended visual change:
    UPDATE_SNAPSHOTS=1 python -m pytest tests/lesson/test_diagrams.py -k snapshot
then look at the diff (and the browser screenshots) before committing.
"""

import os
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from lesson.charts.run import latency_figure
from lesson.diagrams import (
    DIAGRAMS, SCHEMATIC_DIAGRAMS, render_animation, render_blocks, render_blocks_schematic, render_kv_growth,
    render_latency, render_review_map, render_timeline,
)
from lesson.diagrams.kv_growth import NOTE_ROOM, kv_layout
from lesson.style import DEFAULT_STYLE, classroom_style, phone_style
from lesson.formats import fmt_bytes
from lesson.text import TEXTS, label
from tests.factories import SLIDING_MODEL, TINY_MODEL, make_long_trace, make_trace
from tests.svg import SVG, all_text, parse, with_class

SNAPSHOTS = Path(__file__).parent / "snapshots"
@pytest.fixture(scope="module")
def trace():
    return make_trace(("法国", "的", "首都", "是"), ("巴黎", "。", "<eos>"))


@pytest.fixture(scope="module")
def long_trace():
    return make_long_trace(4096, 512)


@pytest.mark.parametrize("name", sorted(DIAGRAMS))
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_diagram_is_a_standalone_svg(name, lang, trace):
    svg = DIAGRAMS[name](trace, lang=lang)
    root = parse(svg)
    assert root.tag == f"{SVG}svg" and root.get("version") == "1.1"
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    assert "href" not in svg  # no external resources
    assert svg == DIAGRAMS[name](trace, lang=lang)  # byte-stable


@pytest.mark.parametrize("name", sorted(DIAGRAMS))
def test_labels_follow_the_language(name, trace):
    zh, en = all_text(parse(DIAGRAMS[name](trace, lang="zh"))), all_text(parse(DIAGRAMS[name](trace, lang="en")))
    zh_title = {"timeline": "timeline_title", "blocks": "blocks_title", "kv_growth": "kv_title",
                "latency": "lat_title", "review_map": "review_title", "animation": "anim_title",
                "ttft_parts": "ttft_parts_title"}[name]
    assert TEXTS["zh"][zh_title] in zh and TEXTS["en"][zh_title] in en
    assert TEXTS["en"][zh_title] not in zh


def test_timeline_has_one_row_per_forward_pass(trace):
    root = parse(render_timeline(trace, lang="en"))
    rows = with_class(root, "row")
    assert len(rows) == len(trace.steps)
    assert [r.get("class").split()[1] for r in rows] == [s.phase for s in trace.steps]
    prefill_chips = with_class(rows[0], "chip", "piece")
    assert [c.find(f"{SVG}text").text for c in prefill_chips] == list(trace.prompt_pieces)
    assert [c.get("data-position") for c in prefill_chips] == ["0", "1", "2", "3"]
    assert len(with_class(root, "feedback")) == len(trace.steps) - 1  # output -> next input arrows
    assert len(with_class(root, "pass-time")) == len(trace.steps)
    assert len(with_class(root, "itl")) == len(trace.steps) - 1
    assert "TTFT" in all_text(root)


def test_timeline_folds_hundreds_of_passes(long_trace):
    root = parse(render_timeline(long_trace))
    rows = with_class(root, "row")
    assert len(rows) <= 9 and len(with_class(root, "gap")) == 1
    assert sum(int(r.get("data-count")) for r in rows) == len(long_trace.steps)
    assert sum(int(r.get("data-positions")) for r in rows) == long_trace.steps[-1].context_after
    assert len(with_class(root, "chip", "piece")) < 40
    prefill = rows[0]
    shown = len(with_class(prefill, "chip", "piece"))
    (more,) = with_class(prefill, "chip", "more")
    hidden = int("".join(ch for ch in more.find(f"{SVG}text").text if ch.isdigit()))
    assert shown + hidden == long_trace.prompt_len  # every prompt piece is shown or counted


def _text_box(el) -> tuple[float, float, float, float]:
    """(x0, x1, top, bottom) of one <text>, from its anchor, estimated width and font size."""
    from lesson.layout import text_width

    x, y, size = float(el.get("x")), float(el.get("y")), float(el.get("font-size"))
    width = text_width("".join(el.itertext()), size)
    x0 = {"end": x - width, "middle": x - width / 2}.get(el.get("text-anchor"), x)
    return x0, x0 + width, y - 0.75 * size, y + 0.2 * size


@pytest.mark.parametrize("style", [DEFAULT_STYLE, classroom_style()], ids=["normal", "classroom"])
def test_a_time_label_left_of_its_bar_is_never_drawn_across_the_wait_bar(style):
    """A short run behind a long wait (the default 巴黎。 run: tokenizing and the queue, then a short
    Prefill near the axis' end): "TTFT …" goes left of its bar, where the wait bar is; it sits above it."""
    trace = make_trace(tokenize_ms=50.0, output_pieces=("巴黎", "。", "x"))
    root = parse(render_timeline(trace, lang="en", style=style))
    for time in with_class(root, "time"):
        label = with_class(time, "time-label")[0]
        x0, x1, top, bottom = _text_box(label)
        for wait in with_class(time, "wait"):
            wx, wy = float(wait.get("x")), float(wait.get("y"))
            across_x = x0 < wx + float(wait.get("width")) and x1 > wx
            assert not (across_x and top < wy + float(wait.get("height")) and bottom > wy), label.text
    ttft = with_class(with_class(root, "time", "prefill")[0], "time-label")[0]
    assert ttft.text.startswith("TTFT") and ttft.get("text-anchor") == "end"  # the case the test is about


def _computed_per_column(root):
    return {col.get("data-pass"): sum(int(c.get("data-count")) for c in col
                                      if c.get("class", "").split()[:2] in (["pos", "prefill"], ["pos", "decode"]))
            for col in with_class(root, "pass-column")}


def test_blocks_count_equals_positions_processed(trace):
    root = parse(render_blocks(trace))
    assert _computed_per_column(root) == {str(s.index): s.num_positions for s in trace.steps}
    # every earlier position is read from the cache in each Decode column
    for step in trace.decode_steps:
        cached = [c for c in with_class(root, "pos", "cached") if c.get("data-pass") == str(step.index)]
        assert sum(int(c.get("data-count")) for c in cached) == step.context_before
    assert TEXTS["zh"]["blocks_note_units"] in all_text(root)


def test_blocks_group_long_requests(long_trace):
    svg = render_blocks(long_trace)
    root = parse(svg)
    per_column = _computed_per_column(root)
    assert per_column["0"] == 4096
    assert sum(per_column.values()) == long_trace.steps[-1].context_after
    for step in long_trace.steps:
        if str(step.index) in per_column:
            assert per_column[str(step.index)] == step.num_positions
    assert len(with_class(root, "pos")) < 300


@pytest.mark.parametrize("prompt_len,output_len", [(1, 1), (4, 3), (24, 6), (4096, 512)])
def test_blocks_schematic_needs_only_lengths(prompt_len, output_len):
    root = parse(render_blocks_schematic(prompt_len, output_len, lang="en"))
    per_column = _computed_per_column(root)
    assert per_column["0"] == prompt_len
    assert sum(per_column.values()) == prompt_len + output_len - 1
    assert "Blocks are positions, not time or FLOPs" in all_text(root)


@pytest.mark.parametrize("bad", [(0, 3), (3, 0), (-1, 2), (2.5, 2), (True, 2), (10**7, 1)])
def test_blocks_schematic_rejects_bad_lengths(bad):
    with pytest.raises(ValueError):
        render_blocks_schematic(*bad)


@pytest.mark.parametrize("which", ["short", "long"])
def test_kv_bars_match_the_trace_bytes(which, trace, long_trace):
    t = trace if which == "short" else long_trace
    root = parse(render_kv_growth(t))
    bars = with_class(root, "kv-bar")
    values = [int(b.get("data-bytes")) for b in bars]
    assert values == sorted(values) and values[-1] == t.kv_bytes
    for bar in bars:
        step = t.steps[int(bar.get("data-step"))]
        assert int(bar.get("data-bytes")) == step.kv_bytes
        layers = [int(seg.get("data-bytes")) for seg in with_class(bar, "kv")]
        assert layers == list(step.kv_bytes_per_layer) and sum(layers) == step.kv_bytes
    assert len(with_class(root, "kv", "layer-3")) == len(bars)
    text = all_text(root)
    assert "2 × 4 × 2 × 32 × 4 B" in text  # this model's numbers in the formula
    per_token = fmt_bytes(t.kv_bytes // t.steps[-1].context_after)  # measured, and equal to the formula here
    assert TEXTS["zh"]["kv_this_run"].format(tokens=f"{t.steps[-1].context_after:,}", per_token=per_token,
                                               total=fmt_bytes(t.kv_bytes)) in text
    assert note_text(root, "decode-note") == TEXTS["zh"]["kv_decode_note"].format(added="+" + per_token)


# --- a cache that does not follow the formula: every number measured, and why ---

def sliding_trace(model=SLIDING_MODEL):
    """4 prompt tokens + 12 answer tokens through a window of 8: the cache grows for 4 passes, then stays flat."""
    return make_trace(("法国", "的", "首都", "是"), tuple(f"o{i}" for i in range(12)), model=model)


def note_text(root: ET.Element, cls: str) -> str:
    (note,) = with_class(root, cls)
    return "".join(note.itertext())


def formula_text(root: ET.Element) -> str:
    """The formula box's lines, unwrapped (wrapping may split between CJK characters, no space)."""
    (box,) = with_class(root, "formula")
    return "".join("".join(el.itertext()) for el in box.iter(f"{SVG}text"))


def no_spaces(words: str) -> str:
    return re.sub(r"\s+", "", words)


BYTES = re.compile(r"[+−]?[\d,.]+ (?:B|KiB|MiB|GiB)")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_kv_sliding_window_is_measured_not_claimed(lang):
    t, table = sliding_trace(), TEXTS[lang]
    measured = [s.kv_bytes for s in t.steps]
    assert measured[4:] == [measured[4]] * 8  # the factory's cache is flat once the window is full
    root = parse(render_kv_growth(t, lang=lang))
    assert [int(b.get("data-bytes")) for b in with_class(root, "kv-bar")] == measured
    formula_total = t.model.kv_bytes_for(t.steps[-1].context_after)
    assert formula_total == 2 * t.kv_bytes - 2048 > t.kv_bytes  # 30 KiB by the formula, 16 KiB measured
    words = no_spaces(formula_text(root))
    differs = label(table, "kv_this_run_differs", tokens="15", total="16.0 KiB", formula_total="30.0 KiB")
    assert no_spaces(differs) in words
    assert no_spaces(label(table, "kv_why_sliding_all", window="8")) in words  # says why
    assert no_spaces(table["kv_this_run"].split("}")[-1]) not in words  # no "as the formula says"
    # Decode: what each pass really added, D1-D4 growing, then flat; never one growing amount for all.
    runs = [label(table, "kv_decode_run", added="+2.0 KiB", first="D1", last="D4"),
            label(table, "kv_decode_run", added="+0 B", first="D5", last="D11")]
    assert note_text(root, "decode-note") == label(table, "kv_decode_runs", runs=table["kv_decode_then"].join(runs))


def test_kv_every_printed_amount_is_measured():
    """The run line and the Decode note print only measured bytes (and the formula's total, labelled as such)."""
    for t in (make_trace(), sliding_trace(), make_long_trace(300, 40)):
        root = parse(render_kv_growth(t, lang="en"))
        steps = t.steps
        added = {b.kv_bytes - a.kv_bytes for a, b in zip(steps, steps[1:])}
        allowed = {fmt_bytes(t.kv_bytes), fmt_bytes(t.kv_bytes // steps[-1].context_after)} | \
                  {("+" if d >= 0 else "−") + fmt_bytes(abs(d)) for d in added}
        run_line = formula_text(root).split("Measured this run:")[1]
        formula = "the formula's " + fmt_bytes(t.model.kv_bytes_for(steps[-1].context_after))
        shown = BYTES.findall(run_line.replace(formula, ""))
        assert shown and set(shown) <= allowed
        assert set(BYTES.findall(note_text(root, "decode-note"))) <= allowed


def test_kv_mixed_layers_and_unexplained_caches_say_so():
    half = parse(render_kv_growth(sliding_trace(replace(SLIDING_MODEL, num_sliding_layers=2)), lang="en"))
    assert no_spaces(TEXTS["en"]["kv_why_sliding"].format(sliding=2, layers=4, window="8")) in \
        no_spaces(formula_text(half))  # "Why: 2 of 4 layers use a sliding window ..."
    # A cache smaller than the formula on a model that declares no window: say so, without inventing a reason.
    unexplained = replace(sliding_trace(), model=TINY_MODEL)
    words = no_spaces(formula_text(parse(render_kv_growth(unexplained, lang="zh"))))
    assert no_spaces(TEXTS["zh"]["kv_why_other"]) in words and "滑动窗口" not in words


def test_kv_prefill_note_stays_clear_of_a_flat_cache():
    """A cache full from the first pass, exactly at a tick: the scale gets headroom under the Prefill note."""
    model = replace(SLIDING_MODEL, sliding_window=5)
    t = make_trace(tuple("abcdefgh"), ("x", "y", "z"), model=model)
    assert len({s.kv_bytes for s in t.steps}) == 1  # 10 KiB from Prefill on
    layout = kv_layout(t, TEXTS["en"])
    assert all(bar.segments[-1][2] >= layout.top + NOTE_ROOM for bar in layout.bars)
    assert layout.decode_note == TEXTS["en"]["kv_decode_flat"].format(bytes="10.0 KiB")


def test_latency_has_one_bar_per_pass(trace, long_trace):
    for t in (trace, long_trace):
        root = parse(render_latency(t, lang="en"))
        bars = with_class(root, "latency-bar")
        assert len(bars) == len(t.steps)
        assert [float(b.get("data-ms")) for b in bars] == pytest.approx([s.duration_ms for s in t.steps], abs=1e-3)
        assert len(with_class(root, "itl")) == len(t.steps) - 1
        assert with_class(root, "tpot") and "TTFT" in all_text(root)


def test_kv_grey_layer_stack_has_a_legend(trace):
    """The grey shades of the layer stack are named by swatches in both shades."""
    for lang in ("zh", "en"):
        root = parse(render_kv_growth(trace, lang=lang))
        (legend,) = with_class(root, "legend-item", "layers")
        fills = [r.get("fill") for r in legend.iter(f"{SVG}rect")]
        assert fills == [DEFAULT_STYLE.cached, DEFAULT_STYLE.cached_dark]
        assert label(TEXTS[lang], "kv_layers_legend") in all_text(legend)


def test_latency_value_labels_carry_a_halo_over_the_tpot_line(trace):
    """The dashed TPOT line must not strike through the ms labels over the bars: each label
    has a paper-coloured outline under its glyphs (and so do the timeline's time labels)."""
    root = parse(render_latency(trace, lang="en"))
    labels = with_class(root, "value-label")
    assert labels and all(el.get("stroke") == DEFAULT_STYLE.paper and el.get("paint-order") == "stroke"
                          for el in labels)
    times = with_class(parse(render_timeline(trace, lang="en")), "time-label")
    assert times and all(el.get("paint-order") == "stroke" for el in times if el.get("fill") != DEFAULT_STYLE.paper)


def test_latency_single_token_has_no_tpot():
    root = parse(render_latency(make_trace(("a",), ("b",))))
    assert not with_class(root, "tpot") and not with_class(root, "itl")


def test_review_map_carries_live_numbers_only_with_a_trace(trace):
    with_trace, without = parse(render_review_map(trace)), parse(render_review_map(None))
    assert with_class(with_trace, "review-row", "live") and not with_class(without, "review-row", "live")
    assert "TTFT 3.3 ms" in all_text(with_trace)
    assert {el.get("class").split()[1] for el in with_class(without, "technique")} == {
        "cb", "chunked", "disagg", "paged"}


def test_animation_loops_without_script(trace, long_trace):
    for t in (trace, long_trace):
        svg = render_animation(t)
        root = parse(svg)
        animations = list(root.iter(f"{SVG}animate"))
        assert animations and all(a.get("repeatCount") == "indefinite" for a in animations)
        assert len({a.get("dur") for a in animations}) == 1  # one shared loop
        assert "script" not in svg
        assert len(with_class(root, "caption")) == len(with_class(root, "row")) + 1


def test_schematic_registry():
    for render in SCHEMATIC_DIAGRAMS.values():
        parse(render(6, 3, lang="en"))


def test_plotly_charts(trace):
    fig = latency_figure(trace, "en")
    assert list(fig.data[0].y) == [s.duration_ms for s in trace.steps]


def test_plotly_ttft_note_sits_above_the_plot_not_on_the_bars(long_trace):
    """In a long run the TTFT note must not run over the Decode bars: it sits above the
    plot area (paper coordinates), and the legend below it."""
    fig = latency_figure(long_trace, "zh")
    (note,) = [a for a in fig.layout.annotations if a.name == "ttft"]
    assert (note.xref, note.yref, note.yanchor) == ("paper", "paper", "bottom") and note.y >= 1.0
    legend = fig.layout.legend  # under everything: hung from the figure's bottom edge (test_figure_labels.py)
    assert "TTFT" in note.text and (legend.yref, legend.yanchor, legend.y) == ("container", "bottom", 0)
    lines = [a for a in fig.layout.annotations if a.name != "ttft"]  # TPOT, p50, p99: in the right margin
    assert len(lines) == 3 and all(a.xref == "x domain" and a.x == 1 and a.xanchor == "left" for a in lines), lines
    shifts = sorted(a.yshift for a in lines)  # equal values here: fanned out, not on top of each other
    assert shifts[1] - shifts[0] >= 15 and shifts[2] - shifts[1] >= 15 and shifts[0] >= 0


def test_plotly_classroom_type_is_at_least_the_body_text(trace):
    from lesson.charts.common import CLASSROOM_FONT_PX

    fig = latency_figure(trace, "en", classroom=True)
    assert fig.layout.font.size >= CLASSROOM_FONT_PX >= 20.5
    for axis in (fig.layout.xaxis, fig.layout.yaxis):  # set per axis: Streamlit's theme sets them there
        assert axis.tickfont.size == axis.title.font.size == CLASSROOM_FONT_PX
    assert fig.layout.title.font.size > CLASSROOM_FONT_PX
    assert latency_figure(trace, "en").layout.font.size is None  # plotly's default outside classroom mode


SNAPSHOT_CASES = {
    "timeline_zh": lambda t: render_timeline(t, lang="zh"),
    "blocks_en": lambda t: render_blocks(t, lang="en"),
    "blocks_schematic_zh": lambda t: render_blocks_schematic(6, 3, lang="zh"),
    "kv_growth_en": lambda t: render_kv_growth(t, lang="en"),
    "kv_growth_sliding_zh": lambda t: render_kv_growth(sliding_trace(), lang="zh"),
    "latency_zh": lambda t: render_latency(t, lang="zh"),
    "review_map_en": lambda t: render_review_map(t, lang="en"),
    "animation_zh": lambda t: render_animation(t, lang="zh"),
    "timeline_classroom_zh": lambda t: render_timeline(t, lang="zh", style=classroom_style()),
    "timeline_phone_en": lambda t: render_timeline(t, lang="en", style=phone_style()),
    "latency_classroom_en": lambda t: render_latency(t, lang="en", style=classroom_style()),
    "review_map_classroom_zh": lambda t: render_review_map(t, lang="zh", style=classroom_style()),
    "ttft_parts_en": lambda t: DIAGRAMS["ttft_parts"](t, lang="en"),
}


@pytest.mark.parametrize("name", sorted(SNAPSHOT_CASES))
def test_snapshot(name, trace):
    svg = SNAPSHOT_CASES[name](trace) + "\n"  # files end in a newline (editors and hooks add one anyway)
    path = SNAPSHOTS / f"{name}.svg"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(svg, encoding="utf-8")
    assert path.exists(), f"missing snapshot {path.name}: run with UPDATE_SNAPSHOTS=1"
    assert svg == path.read_text(encoding="utf-8"), f"{name} changed; see the module docstring to regenerate"


def test_near_duplicate_numbers_get_their_explanation():
    """Prefill's pass beside TTFT, a Decode pass beside ITL: the notes give the
    difference, from the trace's own times, in both languages."""
    from lesson.formats import format_ms
    from lesson.metric_cards import metric_gap_notes

    trace = make_trace(("法国", "的", "首都", "是"), ("巴黎", "。", "<eos>"), tokenize_ms=1.25)
    m = trace.metrics
    for lang in ("zh", "en"):
        prefill_note, decode_note = metric_gap_notes(trace, lang)
        assert format_ms(m.ttft_ms - trace.steps[0].duration_ms) in prefill_note
        assert format_ms(trace.tokenize_ms) in prefill_note and format_ms(m.ttft_ms) in prefill_note
        assert format_ms(m.tpot_ms) in decode_note
    assert len(metric_gap_notes(make_trace(("a",), ("b",)), "en")) == 1  # one token: no Decode to explain


def test_the_timelines_subtitle_quotes_a_long_prompts_end_where_it_asks():
    """A stretched prompt (the lesson's filler, then the question) was quoted by its filler's start."""
    long = make_trace(prompt="研究 LLM 推理系统时，通常把它们叫作 Prefill 和 Decode。" * 5 + "德国的首都是")
    words = with_class(parse(render_timeline(long, lang="zh")), "subtitle")[0].text
    assert "…" in words and "德国的首都是" in words and "研究" not in words
    assert "法国的首都是" in with_class(parse(render_timeline(make_trace(), lang="zh")), "subtitle")[0].text
