"""A link that reopens a state, through AppTest: the sidebar's link carries every field, opening it
restores each one (and measures again, or opens the gallery run it names), and hostile values are
clamped or left out with words in the page's language, never executed."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from lesson.text import t
from tests.app.apptest import APP, LAB, SERVING_LAB, assert_healthy, needs_model, shown_trace, stored_run, texts

LESSON_LINK = {"lang": "en", "model": "default", "prompt": "The capital of Germany is", "out": "5", "plen": "32",
               "eos": "1", "pfx": "1", "temp": "0.7", "topk": "5", "topp": "0.9", "seed": "7", "class": "1",
               "step": "3"}
LESSON_KEYS = {"lang": "en", "model_choice": "default", "prompt": "The capital of Germany is", "output_len": 5,
               "prompt_len": 32, "ignore_eos": True, "prefix_reuse": True, "temperature": 0.7, "top_k": 5,
               "top_p": 0.9, "seed": 7, "classroom": True, "class_step": 3}
LAB_LINK = {"dev": "h100", "wdt": "bf16", "kvdt": "int8", "sweep": "decode-context", "upto": "64",
            "m_eager": "1", "m_static": "0", "m_graph": "0", "m_compiled": "1"}
LAB_KEYS = {"lab_device_spec": "h100", "lab_weight_dtype": "bf16", "lab_kv_dtype": "int8",
            "lab_sweep_kind": "decode-context", "lab_sweep_up_to": 64, "modes_pick_eager": True,
            "modes_pick_static": False, "modes_pick_compiled": True}
SERVING_LINK = {"src": "custom", "scn": "burst-16", "scnseed": "3", "chats": "2", "ctok": "16", "atok": "4",
                "ltok": "64", "arr": "spacing", "gap": "20", "rate": "30", "sseed": "2", "lat": "10", "budget": "32",
                "bs": "8", "kvb": "0", "full": "wait", "slottft": "500", "slotpot": "50", "pc": "1"}
SERVING_KEYS = {"sl_source": "custom", "sl_scenario": "burst-16", "sl_scn_seed": 3, "sl_num_chats": 2,
                "sl_chat_tokens": 16, "sl_answer_tokens": 4, "sl_long_tokens": 64, "sl_arrival": "spacing",
                "sl_gap_ms": 20, "sl_rate": 30, "sl_seed": 2, "sl_long_at": 10, "sl_token_budget": 32,
                "sl_block_size": 8, "sl_kv_blocks": 0, "sl_on_kv_full": "wait", "sl_slo_ttft": 500.0,
                "sl_slo_tpot": 50.0, "sl_prefix_caching": True}


@pytest.fixture
def fresh(served_settings):
    """A new session on the shared models folder, not run yet (a test sets its link first)."""
    return lambda: AppTest.from_file(APP, default_timeout=300)


def _open(make, query: dict, page: str | None = None):
    at = make()
    if page is not None:  # the page is the link's path: open it as the browser would
        at.run()
        at.switch_page(page)
    for name, value in query.items():
        at.query_params[name] = value
    return at.run()


def _link(at) -> dict:
    """The query of the sidebar's link to this view."""
    (box,) = [c for c in at.sidebar.code if c.language in (None, "", "plaintext") or "?" in str(c.value)]
    return dict(parse_qsl(urlsplit(box.value).query))


def _session(at, keys) -> dict:
    return {k: at.session_state[k] for k in keys}


@needs_model
def test_a_lesson_link_restores_every_field_measures_again_and_its_link_reads_the_same(fresh):
    at = _open(fresh, LESSON_LINK)
    assert_healthy(at)
    assert _session(at, LESSON_KEYS) == LESSON_KEYS
    trace = shown_trace(at)  # measured again, with the link's settings
    assert trace["prompt"].endswith("The capital of Germany is") and len(trace["prompt_ids"]) == 32
    assert len(trace["steps"]) == 5 and stored_run(at).origin == "measured"
    assert t("en", "link_opened_run") in texts(at, "info") and not at.warning
    assert _link(at) == LESSON_LINK  # the link to this view: the same fields and values
    assert_link_leaves_the_address(at, "?lang=en")  # the address bar keeps the language only: no link reopened
    assert not at.info  # the session's next run: said once, measured once
    assert not at.session_state["run_requested"] and _session(at, LESSON_KEYS) == LESSON_KEYS


def assert_link_leaves_the_address(at, kept: str) -> None:
    """The page that drew an opened link takes its query out of the address bar itself, keeping the
    address's #section (Streamlit would write path + query); the session's next run tells Streamlit the
    same, once, and no later run writes it again."""
    scripts = [h.proto.body for h in at.get("html") if "replaceState" in h.proto.body]
    assert len(scripts) == 1 and f"new URLSearchParams({json.dumps(kept[1:])})" in scripts[0]
    assert "window.location.hash" in scripts[0]
    at.run()
    assert at.query_params == dict(parse_qsl(kept[1:]))
    assert not [h for h in at.get("html") if "replaceState" in h.proto.body]  # drawn once
    at.run()
    assert at.query_params == dict(parse_qsl(kept[1:]))


@needs_model
def test_lab_and_serving_links_restore_their_settings(fresh, monkeypatch):
    from app_support import serving

    at = _open(fresh, {"lang": "zh", **LAB_LINK}, page=LAB)
    assert_healthy(at)
    assert _session(at, LAB_KEYS) == LAB_KEYS
    assert {k: v for k, v in _link(at).items() if k in LAB_LINK} == {**LAB_LINK, "m_graph": "0"}
    assert_link_leaves_the_address(at, "")  # a Chinese page: an address with no query (the default language)
    runs = []  # the serving runs the link asks for, not measured here (test_app_serving measures and draws them)
    monkeypatch.setattr(serving, "_run_all", lambda lang, workload, scenario, *rest: runs.append((scenario, workload)))
    at = _open(fresh, {"lang": "zh", "src": "scenario", "scn": "eight-chats"}, page=SERVING_LAB)
    assert_healthy(at)
    assert at.session_state["sl_source"] == "scenario" and at.session_state["sl_scenario"] == "eight-chats"
    assert [scenario for scenario, _ in runs] == ["eight-chats"]  # the link ran its scenario, once
    assert len(runs[0][1]) == 8  # eight chats


@needs_model
def test_every_serving_field_is_restored_and_linked(fresh, monkeypatch):
    from app_support import serving

    monkeypatch.setattr(serving, "_run_all", lambda *args: None)  # the settings only: no serving run here
    at = _open(fresh, {"lang": "zh", **SERVING_LINK}, page=SERVING_LAB)
    assert_healthy(at)
    assert _session(at, SERVING_KEYS) == SERVING_KEYS
    assert {k: v for k, v in _link(at).items() if k in SERVING_LINK} == SERVING_LINK


@needs_model
def test_a_link_naming_a_gallery_run_opens_it_and_a_link_to_it_names_it_again(fresh):
    from app_support.gallery import page_choices

    name = next(n for n in page_choices("lesson") if n.endswith("lesson-zh-4"))
    at = _open(fresh, {"rec": name})
    assert_healthy(at)
    assert stored_run(at).origin == "recorded" and at.session_state["recorded_names"]["lesson"] == name
    assert t("zh", "link_opened_recorded", name=name).split("，")[0] in texts(at, "info")
    assert _link(at)["rec"] == name


HOSTILE = {"out": "99999", "plen": "abc", "eos": "maybe", "model": "../../etc/passwd", "lang": "fr", "temp": "nan",
           "seed": "1e9", "step": "-3", "<img src=x onerror=alert(1)>": "1",
           "prompt": "<script>alert(1)</script>", "rec": "../../../etc/passwd"}


@needs_model
def test_hostile_values_are_clamped_or_left_out_with_words_and_never_executed(fresh):
    at = _open(fresh, HOSTILE)
    assert not at.exception
    assert at.session_state["output_len"] == 32 and at.session_state["lang"] == "zh"  # clamped; the default kept
    assert at.session_state["prompt_len"] == 0 and at.session_state["model_choice"] == "default"
    assert at.session_state["prompt"] == "<script>alert(1)</script>"  # text, in a text box
    warnings = texts(at, "warning")
    assert t("zh", "link_clamped", name="out", value="99999", clamped="32") in warnings
    for key in ("link_not_a_number", "link_not_a_flag", "link_not_a_choice", "link_unknown"):
        assert t("zh", key).split("{")[0] in warnings, key
    assert "\\<img src=x onerror=alert\\(1\\)\\>" in warnings  # escaped for Markdown: shown as text
    assert all("alert(1)" not in h.proto.body for h in at.get("html"))  # never as live HTML
    assert_link_leaves_the_address(at, "")  # the address said "fr": the page's language is the default
    too_many = _open(fresh, {f"x{i}": "1" for i in range(80)})
    assert t("zh", "link_too_many", n="80", limit="64") in texts(too_many, "warning")
    assert_link_leaves_the_address(too_many, "")  # a link refused whole leaves the address too
    in_english = _open(fresh, {"lang": "en", **{f"x{i}": "1" for i in range(100)}})  # its language among the rest
    assert t("en", "link_too_many", n="101", limit="64") in texts(in_english, "warning")  # said in it
    # past Streamlit's own bounds the query never reaches the page: its script opens it again saying so
    dropped = _open(fresh, {"lang": "en", "link_dropped": "10001"})
    assert t("en", "link_too_many", n="10001", limit="1000") in texts(dropped, "warning")
    assert any("link_dropped" in h.proto.body for h in _open(fresh, {}).get("html"))  # the script, on a first run
