"""The words Streamlit lets the app set are in the page's language: every chart's mode bar, every
select box's placeholder, and a file uploader without Streamlit's own English line."""

from __future__ import annotations

import ast
import re

import pytest

from app_support.ui import BASE_CSS, PLOTLY_WORDS, plotly_config
from lesson.text import t
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
