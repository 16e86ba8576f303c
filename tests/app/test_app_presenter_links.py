"""The classroom's items through AppTest: the presenter view's animation stands on the step its
controls name, a link carries the presenter view and its figure, the page's language stays in the
address bar (a reload reads it there), a link with too many values says one thing, every choice box
says its value in the new language at once, and in classroom mode the step after the default example's
last pass stands at the run's end, which offers the stretched prompt."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from app_support.presenter import FIGURES, presenter_svg
from app_support.run_store import RunView, StoredRun
from lesson.text import t
from tests.app.apptest import APP, assert_healthy, needs_model, shown_trace, texts
from tests.factories import make_trace

ANIMATION = next(i for i, (name, _, _) in enumerate(FIGURES) if name == "animation")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_presenter_views_animation_is_the_still_frame_of_its_step(lang):
    run = StoredRun(make_trace(output_pieces=("巴黎", "。", "</s>")), None, "measured", "")
    for step, caption in ((1, 'class="caption step-0"'), (2, 'class="caption step-1"'), (3, 'class="caption done"')):
        svg, _ = presenter_svg("animation", RunView(run, step, stepping=True), lang)
        assert "<animate" not in svg and caption in svg, step  # it looped from Prefill whatever the step


@pytest.fixture
def fresh(served_settings):
    return lambda: AppTest.from_file(APP, default_timeout=300)


def _link(at) -> dict:
    (box,) = [c for c in at.sidebar.code if "?" in str(c.value)]
    return dict(parse_qsl(urlsplit(box.value).query))


def _open(make, query: dict):
    at = make()
    for name, value in query.items():
        at.query_params[name] = value
    return at.run()


@needs_model
def test_a_link_carries_the_presenter_view_and_its_figure(fresh):
    at = _open(fresh, {"lang": "zh", "class": "1", "pres": "1", "fig": str(ANIMATION), "step": "2"})
    assert_healthy(at)
    assert at.session_state["presenter"] is True and at.session_state["presenter_figure"] == ANIMATION
    link = _link(at)
    assert link["pres"] == "1" and link["fig"] == str(ANIMATION) and link["step"] == "2"
    images = [img.proto.imgs[0].alt for img in at.get("image")]
    assert len(images) == 1 and images[0].startswith(t("zh", "alt_animation")[:6])
    # the banner says what was done: the link's step and figure on the run at hand, nothing measured again
    assert t("zh", "link_opened_presenter") in texts(at, "info") and t("zh", "link_opened_run") not in texts(at, "info")
    shown = at.session_state["run_id"]
    at.toggle(key="presenter").set_value(False).run()
    assert_healthy(at)
    assert "pres" not in _link(at) and "fig" not in _link(at)  # only while the presenter view is on
    assert at.session_state["run_id"] == shown  # leaving the presenter view keeps the run on screen


@needs_model
def test_the_presenters_link_carries_the_step_it_shows(fresh):
    """The sidebar's link was drawn after the page, once per whole run: a step (the presenter's fragment
    redraws itself alone) left it on the step of the page's last whole run. The fragment draws it now."""
    at = _open(fresh, {"lang": "en", "class": "1", "pres": "1", "out": "4", "eos": "1"})
    assert_healthy(at)
    assert _link(at)["step"] == "1"  # one link box in the sidebar (_link), at the step shown
    for step in (2, 3):
        at.button(key="pres_next").click().run()
        assert_healthy(at)
        assert at.session_state["class_step"] == step and _link(at)["step"] == str(step)
    at.toggle(key="presenter").set_value(False).run()  # the page's own link box again, after the page
    assert _link(at)["step"] == str(at.session_state["class_step"]) and "pres" not in _link(at)


@needs_model
def test_the_language_stays_in_the_address_bar_and_a_reload_reads_it(fresh):
    at = fresh().run()
    assert at.query_params == {}  # no `?lang=`: the default language (and the address's #section kept)
    at.radio(key="lang").set_value("en").run()
    assert at.query_params == {"lang": "en"}
    at.radio(key="lang").set_value("zh").run()
    assert at.query_params == {"lang": "zh"}  # the address said English: it says Chinese now
    at.radio(key="lang").set_value("en").run()
    reloaded = _open(fresh, {"lang": "en"})  # a reload: a new session, the address bar's query
    assert_healthy(reloaded)
    assert reloaded.session_state["lang"] == "en" and reloaded.session_state["prompt"] == "The capital of France is"
    assert t("en", "link_opened_run") not in texts(reloaded, "info")  # not a link: nothing measured again
    assert not reloaded.session_state["run_requested"]


@needs_model
def test_a_link_with_too_many_values_says_one_thing(fresh):
    at = _open(fresh, {f"x{i}": "1" for i in range(70)})
    assert_healthy(at)
    assert t("zh", "link_too_many", n="70", limit="64") in texts(at, "warning")
    assert t("zh", "link_opened_run") not in texts(at, "info")  # it said both: measured again, and not used


@needs_model
def test_a_choice_box_is_sent_its_new_label_when_the_language_changes(fresh, monkeypatch):
    from app_support import state

    at = fresh().run()
    seen = []
    original = state.redraw_labels
    monkeypatch.setattr(state, "redraw_labels", lambda *a, **k: (seen.append(a), original(*a, **k)))
    at.radio(key="lang").set_value("en").run()
    assert_healthy(at)
    assert seen  # the language switch sets every worded choice box's value again (Streamlit resends it)


@needs_model
def test_in_classroom_mode_stepping_past_the_last_pass_says_what_comes_next_and_starts_it_only_when_asked(fresh):
    """→ at the last pass quietly started the 1024-token run (and ← could not go back): now it stands at the
    run's end, which names the stretched prompt; ← goes back to the last pass, and only → at the end runs it."""
    at = fresh().run()
    at.toggle(key="classroom").set_value(True).run()
    before = at.session_state["run_id"]
    total = len(shown_trace(at)["steps"])
    longest = 256  # the served_settings fixture's PREFILL_DECODE_MAX_PROMPT_TOKENS
    for _ in range(total):
        assert at.button(key="class_next").label == t("zh", "classroom_step")
        at.button(key="class_next").click().run()
    end_words = t("zh", "classroom_end_next", total=total, num_tokens=longest)
    assert at.session_state["run_id"] == before and at.session_state["class_at_end"]  # nothing ran
    assert end_words in [i.value for i in at.sidebar.info]
    assert [p.proto.text for p in at.get("progress")] == [t("zh", "classroom_end_position", total=total)]
    at.button(key="class_prev").click().run()  # ← from the end: the last pass again
    assert at.session_state["class_step"] == total and not at.session_state["class_at_end"]
    assert end_words not in [i.value for i in at.sidebar.info]
    at.button(key="class_next").click().run()
    stretch = at.button(key="class_next")  # → at the end presses it: the next step named on screen
    assert stretch.label == t("zh", "classroom_stretch", num_tokens=longest)
    stretch.click().run()
    assert_healthy(at)
    trace = shown_trace(at)
    assert len(trace["prompt_ids"]) == longest and at.session_state["class_step"] == 1  # stretched, from Prefill
    assert at.button(key="class_next").label == t("zh", "classroom_step")  # offered once: it is stretched now


@needs_model
def test_the_presenter_views_next_at_the_last_pass_stands_at_the_end_and_runs_nothing(fresh):
    at = fresh().run()
    at.toggle(key="classroom").set_value(True).run()
    at.toggle(key="presenter").set_value(True).run()
    before, total = at.session_state["run_id"], len(shown_trace(at)["steps"])
    at.button(key="pres_last").click().run()
    at.button(key="pres_next").click().run()
    assert at.session_state["class_at_end"] and at.session_state["run_id"] == before
    assert at.button(key="pres_next").disabled  # a clicker's next starts nothing from the presenter view
    assert t("zh", "presenter_end_next", total=total, num_tokens=256) in [i.value for i in at.info]
    at.button(key="pres_prev").click().run()
    assert at.session_state["class_step"] == total and not at.session_state["class_at_end"]
    at.button(key="pres_leave").click().run()  # Esc presses it
    assert_healthy(at)
    assert not at.session_state["presenter"] and at.button(key="class_next")


def test_the_engine_modes_bar_names_the_mode_that_runs():
    """Eager + static took 5.9 s with no progress text."""
    from app_support.modes import ModesProgress, modes_progress_words
    from engine.contract.worker.client import Progress, Queued

    class Bar:
        def __init__(self):
            self.drawn = []

        def progress(self, value, text):
            self.drawn.append((value, text))

    bar, placed, modes = Bar(), [], ("eager", "static", "compiled")
    progress = ModesProgress("en", bar, placed.append, modes)
    progress(Queued(1))
    assert placed == [Queued(1)] and not bar.drawn  # the queue's place, said by the QueuePlace
    progress(Progress(1, 3))
    assert bar.drawn[-1] == (1 / 3, t("en", "modes_progress_measured", modes="eager")
                             + t("en", "modes_progress", mode="static", i=2, n=3))
    progress(Progress(2, 3))
    assert bar.drawn[-1][1].endswith(t("en", "modes_progress_compiles"))  # compiled builds first
    assert modes_progress_words("zh", modes, 3) == t("zh", "modes_progress_done", n=3)
    assert modes_progress_words("zh", modes, 0) == t("zh", "modes_progress", mode="eager", i=1, n=3)


def _starting_page():
    import streamlit as st

    from app_support import starting

    st.session_state.setdefault("lang", "zh")
    starting.starting_note()  # app.py clears it once the header is drawn


def test_a_sessions_first_run_says_the_model_is_loading_before_the_worker_is_asked():
    """A cold start was about 10 s of blank page before any word; in the address bar's language."""
    at = AppTest.from_function(_starting_page)
    at.query_params["lang"] = "en"
    at.run()
    assert [i.value for i in at.info] == [t("en", "loading_model")]
    at.run()  # later runs: the worker has answered once in this session, nothing is said
    assert not at.info


@needs_model
def test_outside_classroom_mode_the_first_figure_says_classroom_mode_enlarges_it(fresh):
    """Its labels are drawn at 9-10 px at 1280x720 outside classroom mode: a lecturer is told where the big type is."""
    at = fresh().run()
    hint = t("zh", "timeline_projector_hint")
    assert hint in [c.value for c in at.caption]
    at.toggle(key="classroom").set_value(True).run()
    assert_healthy(at)
    assert hint not in [c.value for c in at.caption]  # classroom mode draws it large: nothing to say
