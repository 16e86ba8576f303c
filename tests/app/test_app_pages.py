"""Every page survives what a visitor does anywhere: switching language on a lab page, coming back.

A lab page draws no prompt box, so Streamlit has dropped the prompt's widget value
there; the language callback must still move the lesson's example to the new language.
"""

from __future__ import annotations

import pytest

from engine.contract.prompts import LESSON_PROMPTS
from tests.app.apptest import APP, LAB, SERVING_LAB

LABS = (LAB, SERVING_LAB)


@pytest.fixture
def app(monkeypatch):
    from streamlit.testing.v1 import AppTest

    from engine.runtime.model import DEFAULT_MODEL_DIR

    if not (DEFAULT_MODEL_DIR / "config.json").is_file():
        pytest.skip("the embedded default model is missing")
    monkeypatch.setenv("PREFILL_DECODE_MAX_PROMPT_TOKENS", "256")
    return AppTest.from_file(APP, default_timeout=300).run()


@pytest.mark.parametrize("page", LABS)
def test_switching_language_on_a_lab_page_moves_the_example_prompt_and_never_fails(app, page):
    assert not app.exception
    app.switch_page(page).run()
    assert not app.exception, [e.value for e in app.exception]
    app.radio(key="lang").set_value("en").run()
    assert not app.exception, [e.value for e in app.exception]
    app.switch_page("app_pages/lesson.py").run()
    assert not app.exception, [e.value for e in app.exception]
    assert app.text_area(key="prompt").value == LESSON_PROMPTS["en"]


def test_a_typed_prompt_and_the_serving_labs_knobs_survive_page_visits(app):
    app.text_area(key="prompt").set_value("日本的首都是").run()
    app.switch_page(LABS[1]).run()
    app.slider(key="sl_token_budget").set_value(128).run()
    app.radio(key="lang").set_value("en").run()
    app.switch_page("app_pages/lesson.py").run()
    assert app.text_area(key="prompt").value == "日本的首都是"  # typed by the visitor: kept in any language
    app.switch_page(LABS[1]).run()
    assert not app.exception and app.slider(key="sl_token_budget").value == 128
