"""The lesson text as data: both languages say the same things, in the same shape."""

from __future__ import annotations

import re

import pytest

from lesson.messages import ENGINE_ERROR_KEYS
from lesson.text import (
    AREA_TEXTS, AREAS, LANGUAGES, TEXTS, check_language, label, merged_table, normalize_language, placeholders, t,
    table_for,
)
from tests.factories import ROOT

TEXT_DIR = ROOT / "lesson" / "text"


def test_zh_and_en_have_the_same_keys():
    assert set(TEXTS["zh"]) == set(TEXTS["en"])


def test_both_languages_have_one_file_per_area_and_the_same_areas():
    for lang in LANGUAGES:
        files = {p.stem for p in (TEXT_DIR / lang).glob("*.py")} - {"__init__"}
        assert tuple(AREA_TEXTS[lang]) == AREAS and files == set(AREAS), lang


@pytest.mark.parametrize("area", AREAS)
def test_each_area_file_has_the_same_keys_and_fields_in_zh_and_en(area):
    zh, en = AREA_TEXTS["zh"][area], AREA_TEXTS["en"][area]
    assert set(zh) == set(en), f"{area}.py: only in zh {set(zh) - set(en)}, only in en {set(en) - set(zh)}"
    for key, text in zh.items():
        if isinstance(text, str):
            assert placeholders(text) == placeholders(en[key]), f"{area}.py: {key}"


def test_no_key_is_in_two_area_files_and_the_lookup_holds_every_area():
    for lang in LANGUAGES:
        keys = [key for table in AREA_TEXTS[lang].values() for key in table]
        assert len(keys) == len(set(keys)) == len(TEXTS[lang]) and set(keys) == set(TEXTS[lang])
    with pytest.raises(ValueError, match="defined twice .*figures.py.*: na"):
        merged_table({"page": {"na": "-"}, "figures": {"na": "—"}})


def test_a_figure_and_the_page_read_the_same_words_and_only_a_figure_refuses_a_language():
    assert label(table_for("en"), "pass_n", n=3) == t("en", "pass_n", n=3) == "Pass 3"
    assert table_for("zh") is TEXTS["zh"]
    for bad in ("fr", None):
        with pytest.raises(ValueError, match=f"unknown language {bad!r}; expected one of zh, en"):
            table_for(bad)
        with pytest.raises(ValueError, match="unknown language"):
            check_language(bad)
    assert label(table_for("en"), "kv_decode_run", added="+1 B") == "+1 B ({first}–{last})"  # a missing field shows


@pytest.mark.parametrize("key", sorted(TEXTS["zh"]))
def test_each_key_has_the_same_shape_and_fields_in_both_languages(key):
    zh, en = TEXTS["zh"][key], TEXTS["en"][key]
    assert type(zh) is type(en)
    if isinstance(zh, str):
        assert zh.strip() and en.strip()
        assert placeholders(zh) == placeholders(en)
        assert re.findall(r"\[\[\d\]\]", zh) == re.findall(r"\[\[\d\]\]", en), "citations differ"
    else:
        assert len(zh) == len(en)
        for zh_row, en_row in zip(zh, en):
            assert type(zh_row) is type(en_row)
            if isinstance(zh_row, list):
                assert len(zh_row) == len(en_row)


def test_every_engine_error_key_has_a_message():
    for lang in LANGUAGES:
        for key in ENGINE_ERROR_KEYS:
            assert f"err_{key}" in TEXTS[lang]


def test_the_lesson_keeps_its_sections_in_order():
    """The lesson's own headings, in its order (zh is the source text)."""
    wanted = ["一次回答的时间线", "Prefill：先把提示词读完", "Decode：一次走一个新位置", "自己改变提示词和回答长度",
              "为什么两个阶段的瓶颈不同", "用户实际感受到的两个等待", "当很多请求同时来到", "参考文献（References）",
              "第十九课复习总图"]
    keys = ["sec_timeline", "sec_prefill", "sec_decode", "sec_blocks", "sec_bottleneck", "sec_waits", "sec_many",
            "sec_references", "sec_review"]
    assert [t("zh", k) for k in keys] == wanted


def test_the_running_example_and_the_three_papers_are_there():
    assert "法国的首都是" in t("zh", "intro_1") and "巴黎。" in t("zh", "intro_1")
    for lang in LANGUAGES:
        refs = t(lang, "references")
        assert len(refs) == 3
        for arxiv in ("2308.16369", "2401.09670", "2309.06180"):
            assert any(arxiv in r for r in refs)
    assert t("zh", "timeline_table")[1] == ["首次前向", "四个提示词位置", "巴黎", "Prefill"]
    assert len(t("zh", "bottleneck_table")) == len(t("en", "bottleneck_table")) == 5


def test_t_fills_fields_and_keeps_missing_ones_visible():
    assert t("en", "progress", step=2, num_tokens=2, max_tokens=8) == "Forward pass 2 · 2 / 8 tokens generated"
    assert "{limit}" in t("en", "err_prompt_too_long", num_tokens=9)
    assert normalize_language("fr") == "zh"
    assert t("fr", "run") == t("zh", "run")


def test_text_modules_do_not_import_streamlit():
    import subprocess
    import sys

    code = ("import sys, lesson.text, lesson.formats, lesson.metric_cards\n"
            "assert 'streamlit' not in sys.modules and 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(ROOT))


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def test_chinese_text_writes_token_as_the_lesson_does():
    """The lesson writes "Token" (26 times, in its Chinese); the page wrote "token" and "Token" both.
    Fields, `code` and English compounds (inter-token latency) are left alone."""
    lower = []
    for key, value in TEXTS["zh"].items():
        for words in _strings(value):
            prose = re.sub(r"\{[^}]*\}|`[^`]*`", "", words)
            lower += [f"{key}: …{prose[max(m.start() - 8, 0):m.end() + 4]}…"
                      for m in re.finditer(r"(?<![A-Za-z_-])token", prose)]
    assert not lower, lower
