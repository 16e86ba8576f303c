"""The engine queue figure (lesson/diagrams/engine_queue.py): read against the history it draws."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from engine.contract.engine_queue import QueueHistory, QueueJob
from lesson.diagrams.engine_queue import measured_spans, render_engine_queue, summary_lines
from lesson.style import classroom_style
from lesson.text import table_for

NS = {"svg": "http://www.w3.org/2000/svg"}

HISTORY = QueueHistory.from_plain({"window_s": 600, "jobs": [
    {"kind": "serving", "lane": "long", "queued_at_s": -100, "started_at_s": -99, "ended_at_s": -40, "visitors": 3,
     "outcome": "done", "pauses": [[-80, -78], [-60, -59]]},
    {"kind": "lesson", "lane": "short", "queued_at_s": -80.5, "started_at_s": -80, "ended_at_s": -78, "visitors": 1,
     "outcome": "done", "pauses": []},
    {"kind": "lesson", "lane": "short", "queued_at_s": -60.2, "started_at_s": -60, "ended_at_s": -59, "visitors": 2,
     "outcome": "done", "pauses": []},
    {"kind": "sweep", "lane": "long", "queued_at_s": -30, "started_at_s": -20, "ended_at_s": None, "visitors": 1,
     "outcome": "running", "pauses": []},
    {"kind": "lesson", "lane": "short", "queued_at_s": -3, "started_at_s": None, "ended_at_s": None, "visitors": 1,
     "outcome": "waiting", "pauses": []},
]})


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def by_class(root: ET.Element, name: str) -> list[ET.Element]:
    return [e for e in root.iter() if name in (e.get("class") or "").split()]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_job_is_drawn_with_its_wait_and_its_measured_time(lang):
    root = parse(render_engine_queue(HISTORY, lang=lang))
    runs = by_class(root, "run")
    assert [r.get("data-kind") for r in runs] == ["serving", "lesson", "lesson", "sweep"]  # the waiting one has none
    serving = runs[0]
    assert float(serving.get("data-seconds")) == pytest.approx(59 - 3)  # its two pauses left out
    assert len(by_class(serving, "span")) == 3  # the pauses are gaps: three measured spans
    waits = by_class(root, "wait")
    assert sorted(float(w.get("data-seconds")) for w in waits) == pytest.approx([0.2, 0.5, 1, 3, 10])
    text = " ".join(e.text or "" for e in root.iter())
    assert "×3" in text  # measured once for three visitors (a bar too narrow for it says so in its tooltip)
    assert ("for 2 visitor(s)" if lang == "en" else "服务 2 位访客") in text
    assert "{" not in text  # every word filled in


def test_words_are_the_languages_own():
    zh = " ".join(e.text or "" for e in parse(render_engine_queue(HISTORY, lang="zh")).iter())
    en = " ".join(e.text or "" for e in parse(render_engine_queue(HISTORY, lang="en")).iter())
    assert "课程运行" in zh and "lesson runs" in en and not re.search("[\u4e00-\u9fff]", en)


def test_an_empty_queue_says_so_and_the_figure_keeps_its_size():
    empty = render_engine_queue(QueueHistory(600.0, ()), lang="en")
    full = render_engine_queue(HISTORY, lang="en")
    assert by_class(parse(empty), "empty") and not by_class(parse(empty), "run")
    assert parse(empty).get("width") == parse(full).get("width")


def test_jobs_older_than_the_window_are_left_out_and_the_output_is_byte_stable():
    old = QueueHistory(600.0, (QueueJob("lesson", "short", -500, -499, -498, 1, "done"),))
    assert not by_class(parse(render_engine_queue(old, lang="en")), "run")
    assert render_engine_queue(HISTORY, lang="zh") == render_engine_queue(HISTORY, lang="zh")
    assert render_engine_queue(HISTORY, lang="zh", style=classroom_style()) != render_engine_queue(HISTORY, lang="zh")


def test_spans_and_summary():
    assert measured_spans(-10, 0, [(-8, -7), (-3, -2)]) == [(-10, -8), (-7, -3), (-2, 0)]
    assert measured_spans(-10, -5, []) == [(-10, -5)]
    lines = summary_lines(list(HISTORY.jobs), table_for("en"))
    assert lines[0].startswith("2 lesson runs started") and "0.5 s at most" in lines[0]
    assert any("paused 2 times" in line for line in lines) and any("5 visitors" in line for line in lines)
    assert summary_lines([], table_for("zh")) == [table_for("zh")["eq_summary_none"]]


def test_a_forged_history_is_refused_before_anything_is_drawn():
    for bad in ({"window_s": 1, "jobs": [{"kind": "<script>", "lane": "short", "queued_at_s": 0, "visitors": 1,
                                          "outcome": "done"}]},
                {"window_s": float("nan"), "jobs": []},
                {"window_s": 1, "jobs": [{"kind": "lesson", "lane": "short", "queued_at_s": "x", "visitors": 1,
                                          "outcome": "done"}]},
                {"window_s": 1, "jobs": "no"}):
        with pytest.raises(ValueError):
            QueueHistory.from_plain(bad)
