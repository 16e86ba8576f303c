"""A session's state holds ids, the classroom's step and widget values, never a run as a JSON string
(STYLE.md rule 15): a run is one value in the process's run store (app_support/run_store.py), looked up by
id. And a session whose run the store no longer keeps is told so in words, never shown a traceback."""

from __future__ import annotations

import dataclasses
import json

import pytest

from lesson.text import t
from tests.app.apptest import (
    EXERCISES, LAB, LESSON, SERVING_LAB, assert_healthy, kept, needs_model, read_on, stored_run,
)


def json_strings(value: object, where: str = "") -> list[str]:
    """Where in `value` (containers and dataclasses walked) a string holds a JSON object or array."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[") and _parses(text):
            return [where or "value"]
        return []
    if isinstance(value, dict):
        return [hit for k, v in value.items() for hit in (*json_strings(k, f"{where}[key]"),
                                                            *json_strings(v, f"{where}[{k!r}]"))]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [hit for i, v in enumerate(value) for hit in json_strings(v, f"{where}[{i}]")]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [hit for f in dataclasses.fields(value)
                for hit in json_strings(getattr(value, f.name), f"{where}.{f.name}")]
    return []


def _parses(text: str) -> bool:
    try:
        return isinstance(json.loads(text), (dict, list))
    except ValueError:
        return False


def test_the_walk_finds_json_anywhere_and_nothing_else():
    @dataclasses.dataclass
    class Entry:
        run: str

    assert json_strings({"a": [1, ("x", Entry('{"steps": []}'))]}) == ["['a'][1][1].run"]
    assert json_strings({"prompt": "{not json", "ids": ["run-1"], "pins": [], "n": 3}) == []
    assert json_strings('[1, 2]') == ["value"]


def session_json(at) -> list[str]:
    state = at.session_state
    return [hit for key, value in state.items() for hit in json_strings(value, key)]


@needs_model
def test_no_session_value_is_a_json_string_after_a_tour_of_the_pages(app):
    read_on(app)
    app.checkbox(key="ignore_eos").check()
    app.slider(key="output_len").set_value(3)
    app.button(key="run").click().run()  # a run of the visitor's own: measured, repeats, felt times
    app.toggle(key="classroom").set_value(True).run()
    app.button(key="class_next").click().run()
    app.toggle(key="presenter").set_value(True).run()
    app.button(key="pres_next").click().run()
    app.toggle(key="presenter").set_value(False).run()
    for page in (LAB, EXERCISES, SERVING_LAB):
        app.switch_page(page).run()
        assert_healthy(app)
    app.radio(key="sl_source").set_value("custom").run()  # a small workload: every policy runs on it
    for key, value in (("sl_num_chats", 1), ("sl_answer_tokens", 4), ("sl_long_tokens", 64)):
        app.slider(key=key).set_value(value)
    app.toggle(key="sl_prefix_caching").set_value(True)  # and its run with the cache off
    app.button(key="sl_run").click().run()
    assert_healthy(app)
    app.switch_page(LESSON).run()
    assert_healthy(app)
    assert stored_run(app) is not None and isinstance(app.session_state["run_id"], str)
    assert kept(app, "sl_runs").prefix_off is not None and isinstance(app.session_state["sl_runs"], str)
    assert session_json(app) == []


@needs_model
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_run_the_store_no_longer_keeps_is_said_in_words_and_the_first_view_shown(app, lang):
    if lang != "zh":
        app.radio(key="lang").set_value(lang).run()
    first = stored_run(app)
    app.session_state["run_id"] = "dropped-long-ago"  # evicted (or from before a restart): not in the store
    app.run()
    assert_healthy(app)
    assert [w.value for w in app.warning if w.value == t(lang, "run_gone")]
    assert stored_run(app) is first and first.origin == "first_view"  # the lesson's first view instead
    app.run()
    assert not [w for w in app.warning if w.value == t(lang, "run_gone")]  # said once
    app.session_state["run_id"] = "dropped-long-ago"
    app.switch_page(LAB).run()  # the lab reads the same run, the same way
    assert_healthy(app)
    assert [w.value for w in app.warning if w.value == t(lang, "run_gone")] and stored_run(app) is first
