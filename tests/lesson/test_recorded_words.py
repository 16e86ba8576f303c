"""The words that say a run was recorded: its time and machine, escaped wherever a file's text is shown,
download names marked, and history entries that remember they were recorded."""

from __future__ import annotations

import pytest

from engine.contract.trace import Provenance
from lesson.recorded import (
    figure_note, first_view_note, history_label, recorded_alt, recorded_note, recorded_stamp, recorded_stem,
    recorded_when,
)
from lesson.runs import history_add
from lesson.text import t

PROV = Provenance("AMD EPYC 7B13", 16, "cuda", "NVIDIA H200", "2.13.0", "5.24.0", "2025-06-01T14:03:12Z")
HOSTILE = Provenance("<script>*x*</script>", 2, "cpu", "", "[link](http://x)", "5", "2025-06-01T14:03:12Z")


def test_when_and_the_download_stamp_come_from_the_utc_time():
    assert recorded_when(PROV) == "2025-06-01 14:03 UTC" and recorded_stamp(PROV) == "20250601-140312"
    assert recorded_stamp(None) == "recorded"
    assert recorded_stem("prefill-decode_prompt4_answer3", PROV) == "recorded-cuda_prefill-decode_prompt4_answer3"
    assert recorded_stem("x", None) == "recorded-unknown_x"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_label_names_the_machine_device_and_date(lang):
    for words in (recorded_note(PROV, lang), first_view_note(PROV, lang), figure_note(PROV, lang)):
        assert "NVIDIA H200" in words and "cuda" in words and "{" not in words
    assert "14\\:03" in first_view_note(PROV, lang)  # "recorded at HH:MM", Markdown-escaped
    assert "torch 2\\.13\\.0" in recorded_note(PROV, lang) and "transformers 5\\.24\\.0" in recorded_note(PROV, lang)
    assert recorded_alt("A timeline.", PROV, lang).startswith("A timeline. ")
    assert recorded_note(None, lang) == t(lang, "rec_note_unknown")
    assert history_label("#1 · x", PROV, lang).endswith("#1 · x")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_files_own_text_never_becomes_markup(lang):
    for words in (recorded_note(HOSTILE, lang), figure_note(HOSTILE, lang), first_view_note(HOSTILE, lang)):
        assert "<script>" not in words and "](" not in words and "*x*" not in words


def test_a_history_entry_remembers_that_it_was_recorded():
    history = history_add([], '{"run": 1}', "20250601-140312", recorded=True)
    history = history_add(history, '{"run": 2}', "20250601-150000")
    assert [e.recorded for e in history] == [False, True]
