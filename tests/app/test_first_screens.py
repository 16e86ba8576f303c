"""First screens first (app_support/first_screens.py): the rest of a page waits while another session is
still before its first figure, never longer than its bound, and a session that fails still stops counting;
on a warm server a session's first figure comes before its run panel, of the same run."""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET
import threading
import time

import pytest
from streamlit.testing.v1 import AppTest

from app_support import first_screens, run_panel
from lesson.runs import HistoryEntry
from lesson.text import t
from tests.app.apptest import APP, assert_healthy, needs_model, read_on, stored_run, texts
from tests.factories import make_trace
from tests.svg import with_class


def test_the_rest_waits_for_an_opening_session_and_goes_on_when_it_has_its_figure():
    drawn, released = threading.Event(), []

    def opening_session():
        with first_screens.opening(True):
            drawn.wait(5)

    other = threading.Thread(target=opening_session)
    other.start()
    while first_screens.opening_now() == 0:
        time.sleep(0.001)
    waiter = threading.Thread(target=lambda: released.append(first_screens.after_first_figure(5.0)))
    waiter.start()
    time.sleep(0.05)
    assert waiter.is_alive() and not released  # still waiting: the other session has no figure yet
    drawn.set()
    other.join(5)
    waiter.join(5)
    assert released == [True] and first_screens.opening_now() == 0


def test_the_wait_is_bounded_and_zero_never_waits():
    with first_screens.opening(True):
        assert first_screens.after_first_figure(0.01) is False  # gave up: the page goes on
        assert first_screens.after_first_figure(0) is False
    assert first_screens.after_first_figure(0) is True


def test_a_session_that_fails_stops_counting_and_a_later_run_is_not_counted():
    with pytest.raises(RuntimeError), first_screens.opening(True):
        raise RuntimeError("the page broke before its figure")
    assert first_screens.opening_now() == 0
    with first_screens.opening(False):
        assert first_screens.opening_now() == 0


def test_the_rest_of_a_page_is_drawn_a_few_sessions_at_a_time_and_never_waits_forever():
    inside, most, lock, go = [0], [0], threading.Lock(), threading.Event()

    def session():
        with first_screens.rest_of_page(5.0):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            go.wait(5)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=session) for _ in range(first_screens.REST_AT_ONCE + 3)]
    for thread in threads:
        thread.start()
    time.sleep(0.1)
    assert inside[0] == first_screens.REST_AT_ONCE  # the others wait their turn
    go.set()
    for thread in threads:
        thread.join(5)
    assert most[0] == first_screens.REST_AT_ONCE and inside[0] == 0
    held = [first_screens.rest_of_page(5.0) for _ in range(first_screens.REST_AT_ONCE)]
    for turn in held:
        turn.__enter__()
    began = time.monotonic()
    with first_screens.rest_of_page(0.05):  # every place taken: after its bound it goes on without one
        assert time.monotonic() - began >= 0.05
    for turn in held:
        turn.__exit__(None, None, None)


@needs_model
def test_a_sessions_first_page_draws_its_first_figure_before_the_panel_and_of_the_same_run(monkeypatch,
                                                                                           served_settings):
    """On a warm server a session's first page run knows its run before the run panel (run_panel.known_before_run)
    and draws the timeline first; that figure and the panel, and the rest once the reader reads on, are of that
    one run, as a later page run (the panel first) draws them."""
    seen = []
    real = run_panel.known_before_run
    monkeypatch.setattr(run_panel, "known_before_run", lambda *args: seen.append(real(*args)) or seen[-1])
    AppTest.from_file(APP, default_timeout=180).run()  # the first view measured (on a cold process)
    at = AppTest.from_file(APP, default_timeout=180).run()
    assert_healthy(at)
    known = seen[-1]
    assert known is not None and known.run.id == at.session_state["run_id"] and known.is_whole
    early = figures(at)
    # the first screen's: the timeline (wide, and drawn for a phone's column: CSS shows one), where each pass's
    # time goes, TTFT's parts
    assert len(early) == 4
    read_on(at)  # its second page run: nothing known before the panel; the whole lesson drawn
    assert seen[-1] is None
    later = figures(at)
    assert len(later) > 6 and later[:4] == early  # the same figures and alt texts, byte for byte
    assert stored_run(at) is known.run  # and the rest is drawn from that same stored run
    clicked = at.button(key="run")
    assert not clicked.disabled  # the panel below the early figure works as ever


def figures(at) -> list[tuple[str, str]]:
    """Every image on the page (its SVG as Streamlit sends it, its alt text), in the page's order."""
    return [(img.proto.imgs[0].url, img.proto.imgs[0].alt) for img in at.get("image")]


@needs_model
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_first_screen_shows_the_short_and_the_long_prompt_against_their_floors(lang):
    """The first view's 4-position (5 in English) Prefill and its Decode step read the same weights,
    so the caption reads them against one floor (never "the machine's noise"); beside them, under the
    timeline, the recorded 1024-token prompt, whose Prefill's floor and time are many times a Decode step's."""
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["lang"] = lang
    at.run()
    assert_healthy(at)
    alts = [img.proto.imgs[0].alt for img in at.get("image")]
    floors_alt = next(alt for alt in alts if alt.startswith(t(lang, "pf_title")))
    short = t(lang, "pf_group_run", n=shown_prompt_len(at))
    long = t(lang, "pf_group_long", n=1024, machine="", when="").split("(")[0].split("（")[0]
    assert short in floors_alt and long.strip() in floors_alt
    timeline = svg_of(at, t(lang, "alt_timeline")[:6])
    assert len(with_class(timeline, "pass-floor")) == len(with_class(timeline, "pass-time")) > 1  # floor + rest
    captions = texts(at, "caption")
    assert t(lang, "pf_caption_recorded", button="")[:6] in captions  # how to measure the long prompt here
    same_floor_start = t(lang, "pf_same_floor", bytes="")[:8]
    assert same_floor_start in captions
    assert t(lang, "tl_lesson_noise", x="", y="")[:20] not in captions


def svg_of(at, alt_start: str) -> ET.Element:
    """The figure whose alt text starts so, parsed (Streamlit sends it base64 in a data: URL)."""
    url = next(img.proto.imgs[0].url for img in at.get("image") if img.proto.imgs[0].alt.startswith(alt_start))
    return ET.fromstring(base64.b64decode(url.split(",", 1)[1]))


def shown_prompt_len(at) -> int:
    return stored_run(at).trace.prompt_len


@needs_model
def test_beside_a_short_run_the_long_prompt_is_the_visitors_own_long_run_measured_here():
    """A long run of this session (e.g. "show the difference"), measured here, takes the recording's place."""
    at = AppTest.from_file(APP, default_timeout=180).run()
    from app_support import run_store

    shown = stored_run(at).trace
    long = make_trace(tuple(f"p{i}" for i in range(1024)), ("a", "b", "c"), model=shown.model, decode_ms=3.0)
    kept = run_store.store().put(run_store.StoredRun(long, None, "measured", "20261204-010000"))
    at.session_state["history"] = [HistoryEntry("20261204-010000-7", "20261204-010000", kept)]
    at.run()
    assert_healthy(at)
    floors_alt = next(img.proto.imgs[0].alt for img in at.get("image")
                      if img.proto.imgs[0].alt.startswith(t("zh", "pf_title")))
    assert t("zh", "pf_group_long_measured", n=1024, k=7) in floors_alt
    assert t("zh", "pf_caption_recorded", button="")[:6] not in texts(at, "caption")  # nothing to measure
