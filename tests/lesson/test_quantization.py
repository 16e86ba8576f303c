"""The lesson's last section (lesson/quantization.py) from a weight-formats file (engine/contract/format_runs.py):
the numbers it quotes are the file's, the words are in both languages, and the two exercises grade from it."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from engine.contract.format_runs import FormatRow, FormatRuns, ModelFormats
from engine.contract.meaning import MeaningError
from lesson import quantization as q
from lesson.formats import escape_markdown

MB = 1_000_000


def make_runs(int4_answer: str = "巴黎。</s>", int4_answer_en: str = " Paris.</s>") -> FormatRuns:
    embedded = ModelFormats("default", False, (
        FormatRow("fp32", 0, 14 * MB, 14 * MB, 3.0, 4.0, 0.0, 1.0, 24, "巴黎。</s>", " Paris.</s>"),
        FormatRow("int8", 0, 7 * MB, 4 * MB, 2.5, 3.0, 0.0002, 0.998, 24, "巴黎。</s>", " Paris.</s>",
                  (0.0, 0.0004, 0.0002, 0.0), matmul_ms=0.8, floor_ms=0.3),
        FormatRow("int4", 64, 5 * MB, 2 * MB, 2.0, 2.5, 0.012, 0.972, 23, int4_answer, int4_answer_en,
                  (0.001, 0.03, 0.005, 0.012), matmul_ms=0.6, floor_ms=0.9),
    ))
    preset = ModelFormats("preset:qwen2.5-0.5b", True, (
        FormatRow("fp32", 0, 1976 * MB, 1976 * MB, 400.0, 500.0),
        FormatRow("int4", 64, 823 * MB, 278 * MB, 160.0, 200.0),
    ))
    return FormatRuns(embedded, preset, 24, 16, 5, 1, "AMD EPYC", "2.13.0+cpu", "2026-12-04T01:54:02Z", 8.23)


UNFILLED = re.compile(r"\{[a-z_]+\}")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_section_quotes_the_files_numbers_in_both_languages(lang):
    runs = make_runs()
    words = " ".join([q.section_intro(runs, lang), q.preset_story(runs, lang), q.answer_story(runs, lang),
                      q.speedup_question(runs, lang), q.table_title(runs.preset, lang)])
    assert not UNFILLED.search(words)
    for number in ("2.5", "7.1", "400 ms", "160 ms", "0.0120", "97.2%", "AMD EPYC", "8.23"):
        assert number in words, number
    assert ("Paris" in q.answer_story(runs, "en")) and ("随机权重" in q.table_title(runs.preset, "zh"))
    rows = q.formats_rows(runs.embedded, lang)
    assert [r[next(iter(r))] for r in rows] == ["fp32", "int8", "int4 g64"]
    answer = {"zh": "巴黎。", "en": " Paris\\."}[lang]  # the page's language's example, as markdown
    assert list(rows[2].values())[3:] == ["1.50", "7.00", "0.0120", "97.2%", answer]  # x fp32: 3.0 / 2.0, 14 / 2
    assert len(q.formats_rows(runs.preset, lang)[1]) == 5  # random weights: no quality columns


def test_the_story_follows_the_measured_ratio_not_a_fixed_verdict():
    runs = make_runs()
    near = dataclasses.replace(runs.preset, rows=(runs.preset.rows[0],
                                                  dataclasses.replace(runs.preset.rows[1], decode_median_ms=60.0)))
    for lang in ("zh", "en"):  # 400 / 60 = 6.7x of the bytes' 7.1x: the memory bounds that step
        assert q.preset_story(dataclasses.replace(runs, preset=near), lang) != q.preset_story(runs, lang)
        assert "6.7" in q.preset_story(dataclasses.replace(runs, preset=near), lang)


def test_the_section_says_when_int4_changes_the_answer_and_shows_it_as_text():
    changed = make_runs(int4_answer="<b>柏林</b>。</s>", int4_answer_en=" <b>Berlin</b>.</s>")
    for lang, city in (("zh", "柏林"), ("en", "Berlin")):
        story = q.answer_story(changed, lang)
        assert f"\\<b\\>{city}\\</b\\>" in story and "<b>" not in story
        assert story != q.answer_story(make_runs(), lang)
    assert q.answer_kept(changed) is False and q.answer_kept(make_runs()) is True


def test_the_speedup_exercise_grades_a_guess_against_the_measured_ratio():
    runs = make_runs()  # the preset: fp32 400 ms, int4 160 ms: 2.5x; the bytes promise 7.1x
    right, wrong = q.grade_speedup(runs, 2.2), q.grade_speedup(runs, 8)
    assert right.correct and not wrong.correct and right.measured == pytest.approx(2.5)
    assert (right.low, right.high) == pytest.approx((1.875, 3.125))
    for lang in ("zh", "en"):
        assert "2.50" in q.grade_words(right, lang) and "7.1" in q.grade_words(wrong, lang)
        assert q.grade_words(right, lang) != q.grade_words(wrong, lang)


def test_the_paris_exercise_grades_yes_or_no_against_the_recorded_answer():
    assert q.grade_paris(make_runs(), "yes").correct and not q.grade_paris(make_runs(), "no").correct
    assert q.grade_paris(make_runs("罗马。</s>"), "no").correct
    assert "罗马" in q.grade_words(q.grade_paris(make_runs("罗马。</s>"), "yes"), "en")
    with pytest.raises(ValueError):
        q.grade_paris(make_runs(), "maybe")


def test_the_english_page_asks_about_the_english_example_and_its_answer():
    """The English page's question is "The capital of France is" -> Paris: graded from the English answer."""
    rome_en = make_runs(int4_answer_en=" Rome.</s>")
    assert q.answer_kept(rome_en, "en") is False and q.answer_kept(rome_en, "zh") is True
    assert q.grade_paris(rome_en, "no", "en").correct and "Rome" in q.answer_story(rome_en, "en")
    assert "Paris" in q.answer_story(make_runs(), "en") and "巴黎" not in q.answer_story(make_runs(), "en")


def test_the_file_round_trips_and_numbers_that_cannot_be_true_are_refused():
    runs = make_runs()
    assert FormatRuns.from_json(runs.to_json()) == runs
    data = json.loads(runs.to_json())
    for spoil in ({"decode_median_ms": -1.0}, {"decode_median_ms": 0.0}, {"top1": 1.5}, {"weights": "int3"},
                  {"group_size": 48}, {"read_bytes": "many"}):
        bad = json.loads(json.dumps(data))
        bad["embedded"]["rows"][2].update(spoil)
        with pytest.raises(MeaningError):
            FormatRuns.from_json(json.dumps(bad))
    with pytest.raises(MeaningError):
        FormatRuns.from_json(json.dumps({**data, "kind": "trace"}))
    with pytest.raises(MeaningError):  # every ratio is against fp32: it must be there, first
        dataclasses.replace(runs.embedded, rows=runs.embedded.rows[1:])


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_section_says_whether_its_numbers_are_a_recording_or_a_live_run(lang):
    recorded = make_runs()
    live = dataclasses.replace(make_runs(), preset=None, cpu="Live CPU <b>", recorded_at="2026-12-04T02:40:00Z")
    first, then = escape_markdown("2026-12-04 01:54 UTC"), escape_markdown("2026-12-04 02:40 UTC")
    said = q.provenance_caption(recorded, lang)
    assert "AMD EPYC" in said and first in said and "bench.quantization" in said
    both = q.provenance_caption(live, lang, True, recorded)
    assert then in both and first in both and "<b>" not in both
    alone = q.provenance_caption(live, lang, True, None)
    assert then in alone and first not in alone and not UNFILLED.search(said + both + alone)
    waits = [q.live_progress(phase, 3, 11, 4.4, lang) for phase in ("wait", "load", "round", "quality")]
    assert len(set(waits)) == 4 and all("3" in w and "11" in w and "4" in w for w in waits)
    assert not UNFILLED.search(" ".join(waits))


def test_per_position_kl_survives_the_file_and_is_checked():
    runs = make_runs()
    again = FormatRuns.from_json(runs.to_json())
    assert again == runs and again.embedded.row("int4", 64).kl_positions == (0.001, 0.03, 0.005, 0.012)
    old = json.loads(runs.to_json())
    for row in old["embedded"]["rows"]:
        row.pop("kl_positions")  # a file recorded before it was kept
    assert FormatRuns.from_json(json.dumps(old)).embedded.row("int8").kl_positions == ()
    for bad in ((-0.1,), (float("nan"),), (0.0,) * 5000):
        with pytest.raises(MeaningError):
            dataclasses.replace(runs.embedded.rows[1], kl_positions=bad)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_kl_figure_draws_one_line_per_format_with_its_numbers(lang):
    import xml.etree.ElementTree as ET

    from lesson.diagrams.format_kl import format_kl_alt, render_format_kl

    runs = make_runs()
    root = ET.fromstring(render_format_kl(runs, lang=lang))
    lines = [e for e in root.iter() if "format-line" in (e.get("class") or "")]
    assert [e.get("data-format") for e in lines] == ["int8", "int4 g64"]  # fp32 is 0 everywhere: left out
    assert float(lines[1].get("data-max-kl")) == 0.03 and float(lines[1].get("data-mean-kl")) == 0.012
    peaks = [e for e in root.iter() if "kl-max" in (e.get("class") or "")]
    assert [int(e.get("data-position")) for e in peaks] == [1, 1]
    polyline = next(e for e in lines[1].iter() if e.tag.endswith("polyline"))
    assert len(polyline.get("points").split()) == 4
    alt = format_kl_alt(runs, lang)
    assert "int4 g64" in alt and "0.030" in alt and not UNFILLED.search(alt)
    recorded = dataclasses.replace(runs, embedded=dataclasses.replace(runs.embedded, rows=tuple(
        dataclasses.replace(r, kl_positions=()) for r in runs.embedded.rows)))
    with pytest.raises(ValueError):
        render_format_kl(recorded, lang=lang)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_where_a_decode_steps_time_goes_is_three_parts_that_sum_to_the_step(lang):
    import xml.etree.ElementTree as ET

    from lesson.diagrams.format_time import format_time_alt, render_format_time

    runs = make_runs()
    model = runs.embedded
    assert model.time_parts(model.row("fp32")) is None  # not timed: no bar
    assert model.time_parts(model.row("int8")) == pytest.approx((0.3, 0.5, 1.7))
    assert model.time_parts(model.row("int4", 64)) == pytest.approx((0.6, 0.0, 1.4))  # floor above the matmuls
    root = ET.fromstring(render_format_time(runs, lang=lang))
    parts = [e for e in root.iter() if "part" in (e.get("class") or "").split()]
    assert [(e.get("data-format"), e.get("data-part")) for e in parts] == [
        (f, p) for f in ("int8", "int4 g64") for p in ("floor", "kernel", "rest")]
    for name, row in (("int8", model.row("int8")), ("int4 g64", model.row("int4", 64))):
        mine = [e for e in parts if e.get("data-format") == name]
        assert sum(float(e.get("data-ms")) for e in mine) == pytest.approx(row.decode_median_ms)
        widths = [float(e.get("width")) for e in mine]
        assert float(mine[0].get("x")) + sum(widths) == pytest.approx(float(mine[-1].get("x")) + widths[-1])
    alt = format_time_alt(runs, lang)
    assert "int8" in alt and "int4 g64" in alt and not UNFILLED.search(alt)
    for bad in (0.0, -1.0, float("inf")):
        with pytest.raises(MeaningError):
            dataclasses.replace(model.row("int8"), matmul_ms=bad)
    with pytest.raises(ValueError):
        render_format_time(dataclasses.replace(runs, embedded=dataclasses.replace(model, rows=model.rows[:1])),
                           lang=lang)
