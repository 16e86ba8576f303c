"""The words Streamlit lets the app set are in the page's language: every chart's mode bar, every
select box's placeholder, and a file uploader without Streamlit's own English line."""

from __future__ import annotations

import ast
import json
import re

import pytest

from app_support.ui import BASE_CSS, PLOTLY_WORDS, plotly_config
from engine.contract.prompts import LESSON_PROMPTS
from lesson.text import TEXTS, t
from tests.factories import ROOT

SOURCES = sorted((ROOT / "app_support").glob("*.py")) + sorted((ROOT / "app_pages").glob("*.py"))


def _calls(name: str):
    """(file, line, keyword names) of every call of a function or method called `name` in the app."""
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == name:
                yield path.name, node.lineno, {k.arg: k.value for k in node.keywords}


def test_the_chart_mode_bar_speaks_chinese_on_a_chinese_page():
    zh = plotly_config("zh")
    words = zh["locales"][zh["locale"]]["dictionary"]
    assert set(words) == set(PLOTLY_WORDS) and zh["displaylogo"] is False
    assert all(not re.search(r"[A-Za-z]{3,}", w.replace("PNG", "")) for w in words.values()), words
    assert words["Zoom in"] == t("zh", "pl_zoom_in")
    assert plotly_config("en") == {"displaylogo": False}  # plotly's own English


def test_every_chart_and_select_box_takes_the_pages_words():
    """A chart drawn with plotly's English config, or a select box with Streamlit's "Choose an option"."""
    charts = list(_calls("plotly_chart"))
    assert len(charts) >= 9
    for file, line, keywords in charts:
        config = keywords.get("config")
        assert isinstance(config, ast.Call) and config.func.id == "plotly_config", (file, line)
    boxes = [c for c in _calls("selectbox") if c[0] != "exercises.py"] + list(_calls("multiselect"))
    assert len(boxes) >= 7
    for file, line, keywords in boxes:
        assert "placeholder" in keywords, (file, line)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_file_uploaders_own_line_is_hidden_and_its_label_says_the_limit(lang):
    assert '[data-testid="stFileUploaderDropzoneInstructions"] { display: none' in BASE_CSS
    assert "5" in t(lang, "rec_upload", limit="5") and "JSON" in t(lang, "rec_upload", limit="5")


NUMBER_WORDS = {4: "four", 5: "five", 6: "six", 7: "seven"}
QUOTES_THE_CHINESE_RUN = {"sl_long_tokens_help"}  # the serving lab's workload itself is Chinese: it says so


def test_the_english_lesson_quotes_the_english_run_with_its_real_position_count():
    """The English page's example is the English run ("The capital of France is" -> " Paris"), with the
    positions the default model's tokenizer really makes of it (the recorded English run), never 法国的首都是."""
    recorded = json.loads((ROOT / "assets" / "gallery" / "cpu" / "lesson-en-4.json").read_text(encoding="utf-8"))
    assert recorded["prompt"] == LESSON_PROMPTS["en"]
    num_positions, answer = len(recorded["prompt_ids"]), recorded["steps"][0]["output_piece"]
    english = TEXTS["en"]
    chinese = {key for key, value in english.items() if re.search(r"[\u4e00-\u9fff]{2,}", str(value))}
    assert chinese - {"language"} == QUOTES_THE_CHINESE_RUN
    table_row = english["timeline_table"][1]
    assert table_row[1] == f"The {NUMBER_WORDS[num_positions]} prompt positions" and answer in table_row[2]
    assert f"{NUMBER_WORDS[num_positions]} positions" in english["timeline_1"]
    assert " / ".join(piece.strip() for piece in recorded["prompt_pieces"]) in english["timeline_1"]
    assert LESSON_PROMPTS["en"] in english["intro_1"] and LESSON_PROMPTS["en"] in english["prefix_4"]
