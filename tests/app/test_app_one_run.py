"""One run, one set of numbers through AppTest: a run of five repeats with
deliberately different timings, and every number the page shows of it (the figures' SVG text, the
cards, the sentences, the step log) is the run lesson.spread's rule chooses, labelled as such."""

from __future__ import annotations

import dataclasses
import json
import time
import xml.etree.ElementTree as ET

from engine.contract.trace import RequestTrace
from engine.contract.worker.client import Done, Pass, Started
from lesson.formats import fmt_ms, format_ms
from lesson.metric_cards import timeline_lesson
from lesson.spread import nearest_median, run_label, shown_run
from lesson.text import t
from tests.app.apptest import assert_healthy, needs_model, put_run, read_on, stored_run, texts
from tests.factories import make_trace

# Prefill / each Decode step, per repeat: far apart, so a number from another run cannot pass for the shown one
TIMINGS = ((3.1, 1.7), (9.3, 4.9), (4.3, 2.3), (21.7, 11.1), (5.9, 3.3))


def repeats(model) -> tuple[RequestTrace, ...]:
    runs = []
    for prefill_ms, decode_ms in TIMINGS:
        trace = make_trace(("法国", "的", "首都", "是"), ("巴黎", "。", "</s>"), model=model,
                           prefill_ms_per_position=(prefill_ms - 1.0) / 4, decode_ms=decode_ms)
        runs.append(trace)
    return tuple(runs)


def _svgs(at) -> dict[str, ET.Element]:
    roots = [ET.fromstring(c.value) for c in at.code if c.language == "xml"]
    return {root.get("class").split()[1]: root for root in roots}


def _texts(root: ET.Element) -> str:
    return "\n".join(el.text or "" for el in root.iter())


@needs_model
def test_every_number_the_page_shows_of_a_repeated_run_is_the_chosen_runs(monkeypatch, app):
    from app_support import resources

    read_on(app)  # the reader came to the sections below the first screen
    assert_healthy(app)
    runs = list(repeats(stored_run(app).trace.model))
    k = nearest_median(runs)
    assert k == 4  # 5.9 ms / 3.3 ms sit nearest the per-pass medians (5.9 / 3.3)
    chosen, numbers = shown_run(runs)
    sent = time.time()

    def fake_stream(ref, prompt, cfg, *, repeats, max_prompt_tokens):
        yield Started(at=time.time())
        first = runs[0] = dataclasses.replace(runs[0], started_at_s=time.time())  # the engine's clock starts
        for n in range(1, len(first.steps) + 1):  # run 1 streams, as the worker sends it
            yield Pass(dataclasses.replace(first, steps=first.steps[:n], stop_reason=None if n < 3 else "length"))
        yield Done(tuple(runs))

    monkeypatch.setattr(resources, "stream_runs", fake_stream)
    app.button(key="run").click().run()
    for name in NOTED:
        app.toggle(key=f"raw_svg_{name}").set_value(True)
    app.run()
    assert_healthy(app)
    assert stored_run(app).trace == chosen and stored_run(app).first_run == runs[0]  # the chosen run, and run 1
    svgs = _svgs(app)
    label = run_label(numbers, "zh")
    for name in ("timeline", "latency", "blocks", "kv-growth", "animation"):  # the chosen run, and which it is
        drawn = [float(el.get("data-ms")) for el in svgs[name].iter() if "pass-time" in (el.get("class") or "")
                 or (el.get("class") or "").startswith("bar-pass")]
        # the notes wrap (at a space or between two characters): their lines joined, spaces left out on both sides
        words = _texts(svgs[name]).replace("\n", "").replace(" ", "")
        assert label.replace(" ", "") in words, name
        rest = words.replace(label.replace(" ", ""), "")  # the label's ranges name the fastest and slowest runs
        for other in (r for i, r in enumerate(runs) if i != k):  # all else is run k's
            assert fmt_ms(other.prefill.duration_ms).replace(" ", "") not in rest, name
        if name == "timeline":
            assert drawn == [round(s.duration_ms, 3) for s in chosen.steps]
    _check_alt_and_chart(app, label)
    assert fmt_ms(chosen.metrics.ttft_ms) in _texts(svgs["latency"])
    # the cards: the chosen run's own values, each saying which run it is
    values = {m.label: m.value for m in app.metric}
    assert values[t("zh", "metric_ttft")] == format_ms(chosen.metrics.ttft_ms)
    assert values[t("zh", "metric_tpot")] == format_ms(chosen.metrics.tpot_ms)
    assert t("zh", "metric_shown_run", k=k + 1, n=5) in texts(app, "caption")
    # the sentences: the first figure's caption and the bottleneck section quote the chosen run
    measured = timeline_lesson(chosen, "zh", numbers).split("。")[0]  # then each pass against its floor
    assert measured in texts(app, "caption") and t("zh", "pf_same_floor", bytes="")[:8] in texts(app, "caption")
    info = texts(app, "info")
    assert f"Prefill 用 {format_ms(chosen.prefill.duration_ms)}" in info
    for other in (r for i, r in enumerate(runs) if i != k):
        assert f"用 {format_ms(other.prefill.duration_ms)}" not in info
    # the step log beside the answer: the chosen run's passes
    log = texts(app, "markdown")
    assert all(format_ms(s.duration_ms) in log for s in chosen.steps)
    _check_ttft_bar(svgs["ttft-parts"], runs[0], t("zh", "ttft_parts_run1_note", n=5), sent)


# RUN_NOTED, and where each pass's time goes (app_support/pass_floors.py, under the timeline)
NOTED = ("timeline", "ttft_parts", "blocks", "kv_growth", "latency", "animation", "review_map", "pass_floors")


def _check_alt_and_chart(app, label: str) -> None:
    """Each figure's alt text ends with which run it draws, and the plotly latency chart says it too."""
    alts = [img.proto.imgs[0].alt for img in app.get("image")]
    alts = alts[:1] + [alt for i, alt in enumerate(alts) if i and alt != alts[0]]  # the phone's timeline: once
    # the others: no run; the TTFT bar draws run 1, the one the page timed, and says so
    assert sum(alt.endswith(label) for alt in alts) == len(NOTED) - 1, [a[:30] for a in alts]
    assert sum(alt.endswith(t("zh", "ttft_parts_run1_note", n=5)) for alt in alts) == 1
    chart = next(c for c in app.get("plotly_chart"))
    subtitle = json.loads(chart.proto.spec)["layout"]["title"]["subtitle"]["text"]
    # the title's subtitle, wrapped for a phone (at a space, which the break takes the place of)
    assert subtitle.replace("<br>", "").replace(" ", "") == label.replace(" ", "")


def _check_ttft_bar(bar: ET.Element, run1: RequestTrace, label: str, sent: float) -> None:
    """TTFT's parts under the timeline: one run's, run 1's (the visitor's parts were measured on it), never
    the visitor's parts of run 1 beside the engine's parts of the run the other figures draw."""
    kinds = [el.get("class").split()[1] for el in bar.iter() if (el.get("class") or "").startswith("part ")]
    assert kinds == ["queue", "tokenize", "engine", "prefill", "trip", "page"]  # no choice timed in these traces
    drawn = {el.get("class").split()[1]: float(el.get("data-ms")) for el in bar.iter()
             if (el.get("class") or "").startswith("part ")}
    assert drawn["prefill"] == round(run1.prefill.duration_ms, 3)  # the engine's parts: run 1's too
    assert 0 <= drawn["queue"] <= (time.time() - sent) * 1e3
    words = _texts(bar).replace("\n", "")
    assert label in words and t("zh", "ttft_parts_run1")[:12] not in words  # no mixed runs to explain
    assert t("zh", "ttft_parts_engine", ms=fmt_ms(run1.metrics.ttft_ms)) in words


@needs_model
def test_the_first_figure_says_when_noise_turned_a_long_prefill_round_and_offers_to_measure_again(app):
    """A long prompt's Prefill has a floor many times a Decode step's: measured no slower than a Decode step,
    it was the machine's noise, and the page offers to measure again."""
    from lesson.spread import headline

    model = stored_run(app).trace.model
    pieces = tuple(f"p{i}" for i in range(1024))
    noisy = make_trace(pieces, decode_ms=12.0, prefill_ms_per_position=0.01, model=model)  # Prefill 11.2 ms
    calm = make_trace(pieces, decode_ms=3.0, prefill_ms_per_position=0.2, model=model)
    put_run(app, noisy, headline([noisy, calm, noisy], shown=0))
    app.run()
    assert_healthy(app)
    caption = texts(app, "caption")
    assert t("zh", "pf_flipped", x="11.2 ms", y="12.0 ms") in caption  # said beside the first figure
    assert t("zh", "tl_lesson_noise", y="12.0 ms", x="11.2 ms") not in caption  # the floors' words instead
    assert [b for b in app.button if b.key == "timeline_measure_again"]
    before = app.session_state["run_id"]
    app.button(key="timeline_measure_again").click().run()  # the run panel runs the request again
    assert_healthy(app)
    assert app.session_state["run_id"] != before and stored_run(app).trace != noisy


@needs_model
def test_the_ttft_captions_lower_bracket_is_named_only_where_one_is_drawn(app):
    """The first view has only the engine's parts (one bracket): its caption names no lower bracket. A run of
    the visitor's own has the visitor's parts too, and then both brackets and the caption naming both."""
    def ttft_caption_and_svg(at):
        at.toggle(key="raw_svg_ttft_parts").set_value(True).run()
        svg = next(c.value for c in at.code if "ttft-parts" in c.value)
        captions = texts(at, "caption")
        return captions, svg

    captions, svg = ttft_caption_and_svg(app)
    assert stored_run(app).origin == "first_view"
    assert t("zh", "ttft_parts_caption_engine") in captions and t("zh", "ttft_parts_caption") not in captions
    assert 'class="bracket felt"' not in svg and 'class="bracket engine"' in svg
    app.button(key="run").click().run()
    assert_healthy(app)
    captions, svg = ttft_caption_and_svg(app)
    assert stored_run(app).felt is not None and 'class="bracket felt"' in svg
    assert t("zh", "ttft_parts_caption") in captions and t("zh", "ttft_parts_caption_engine") not in captions


@needs_model
def test_a_short_prompts_decode_step_as_slow_as_its_prefill_is_read_against_one_floor_not_as_noise(app):
    """4 positions: Prefill and a Decode step read the same weights, so their floors are one; a Decode step
    (9 ms) slower than Prefill (3 ms) is per-pass overhead, not "the machine's noise"."""
    model = stored_run(app).trace.model
    put_run(app, make_trace(decode_ms=9.0, model=model), None)
    app.run()
    assert_healthy(app)
    caption = texts(app, "caption")
    assert t("zh", "pf_same_floor", bytes="")[:8] in caption and "噪声" not in caption
    assert not [b for b in app.button if b.key == "timeline_measure_again"]
