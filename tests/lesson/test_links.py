"""A link's values read back (lesson/links.py): every kind of field, clamped or refused, never evaluated."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from lesson.links import MAX_PARAMS, Field, link_url, query_for, read_query
from lesson.text import TEXTS

FIELDS = (
    Field("out", "output_len", "int", 1, 128),
    Field("ltok", "sl_long_tokens", "int", 0, 1024, 8),
    Field("temp", "temperature", "float", 0.0, 2.0, 0.05),
    Field("eos", "ignore_eos", "flag"),
    Field("bs", "sl_block_size", "choice", choices=(4, 8, 16, 32)),
    Field("lang", "lang", "choice", choices=("zh", "en")),
    Field("prompt", "prompt", "text", max_chars=20),
)


def _read(**query):
    read = read_query(FIELDS, query)
    return dict(read.values), [(p.key, dict(p.params)) for p in read.problems]


def test_good_values_are_read_as_their_kinds():
    values, problems = _read(out="32", ltok="512", temp="0.7", eos="1", bs="16", lang="en", prompt="德国的首都是")
    assert values == {"output_len": 32, "sl_long_tokens": 512, "temperature": 0.7, "ignore_eos": True,
                      "sl_block_size": 16, "lang": "en", "prompt": "德国的首都是"}
    assert problems == [] and isinstance(values["sl_block_size"], int)


def test_a_number_out_of_range_or_off_its_grid_is_clamped_and_said():
    values, problems = _read(out="99999", ltok="13", temp="-4")
    assert values == {"output_len": 128, "sl_long_tokens": 16, "temperature": 0.0}
    assert [(k, p["name"], p["clamped"]) for k, p in problems] == [
        ("link_clamped", "out", "128"), ("link_clamped", "ltok", "16"), ("link_clamped", "temp", "0")]


@pytest.mark.parametrize("raw", ["abc", "1e9", "nan", "inf", "0x10", "1_000", "", " ", "2**31", "__import__('os')",
                                 "1;2", "９"])
def test_what_is_not_a_plain_number_is_left_out_never_evaluated(raw):
    values, problems = _read(out=raw, temp=raw)
    assert values == {} and [k for k, _ in problems] == ["link_not_a_number"] * 2


def test_flags_choices_and_text_are_checked_and_wrong_ones_left_out():
    values, problems = _read(eos="yes", bs="7", lang="fr", prompt="x" * 21)
    assert values == {}
    assert [k for k, _ in problems] == ["link_not_a_flag", "link_not_a_choice", "link_not_a_choice", "link_too_long"]
    assert problems[1][1]["choices"] == "4, 8, 16, 32"


def test_hostile_names_and_values_are_quoted_back_cut_and_visible():
    values, problems = _read(**{"<script>": "1", "lang": "\u202e" + "x" * 50, "prompt": "<b>ok</b>"})
    assert values == {"prompt": "<b>ok</b>"}  # text stays text: the page shows it in a text box, escaped
    (unknown, names), (choice, params) = problems
    assert unknown == "link_unknown" and names["names"] == "<script>"  # the page escapes it for Markdown
    assert choice == "link_not_a_choice" and params["value"].startswith("\u27eaRLO\u27eb")  # no reversed text
    assert len(params["value"]) <= 40 + len("\u27eaRLO\u27eb")
    too_many = read_query(FIELDS, {f"p{i}": "1" for i in range(MAX_PARAMS + 1)})
    assert too_many.values == {} and [p.key for p in too_many.problems] == ["link_too_many"]


def test_every_problem_has_words_with_the_same_fields_in_both_languages():
    for key in ("link_clamped", "link_not_a_number", "link_not_a_flag", "link_not_a_choice", "link_too_long",
                "link_unknown", "link_too_many", "link_unknown_run"):
        assert key in TEXTS["zh"] and key in TEXTS["en"]


def test_a_query_built_from_values_reads_back_to_them():
    values = {"output_len": 7, "sl_long_tokens": 64, "temperature": 0.35, "ignore_eos": False, "sl_block_size": 8,
              "lang": "zh", "prompt": "a&b=c#d ?法国 <x>"}
    url = link_url("http://host:8501/", "serving_lab", query_for(FIELDS, values))
    parts = urlsplit(url)
    assert parts.path == "/serving_lab" and "#" not in url and " " not in url
    assert dict(read_query(FIELDS, dict(parse_qsl(parts.query))).values) == values
    assert link_url("http://host/", "", {}) == "http://host/"
