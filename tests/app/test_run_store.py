"""The app's run store (app_support/run_store.py): each run one frozen value held once per process, looked up
by id; bounded (least recently used first) with every run a live session holds kept; thread-safe; and the
figures drawn once per stored run and step for every session that shows it."""

from __future__ import annotations

import gc
import threading

import pytest

from app_support import resources
from app_support.run_store import RunHolder, RunStore, RunView, StoredRun, run_at_step, whole_view
from tests.factories import make_trace


def stored(**kwargs) -> StoredRun:
    return StoredRun(make_trace(**kwargs), None, "measured", "20250601-120000")


def test_the_least_recently_used_run_goes_first_past_the_bound():
    store = RunStore(max_runs=2)
    a, b, c = stored(), stored(), stored()
    store.put(a), store.put(b)
    assert store.get(a.id) is a  # a look-up: `a` is now the newest
    store.put(c)  # past the bound: `b`, the least recently used, is dropped
    assert store.get(b.id) is None and store.get(a.id) is a and store.get(c.id) is c and len(store) == 2
    store.put(a)  # the same run put again is kept once
    assert len(store) == 2
    with pytest.raises(ValueError):
        RunStore(max_runs=0)


def test_a_forged_or_unknown_id_finds_nothing():
    store = RunStore()
    store.put(stored())
    for forged in (None, 3, "", "no-such-run", ["x"]):
        assert store.get(forged) is None


def test_the_runs_a_live_session_holds_are_never_dropped_and_go_with_the_session():
    store, mine = RunStore(max_runs=1), stored()
    holder = RunHolder()
    store.put(mine)
    store.hold(holder, [mine.id])
    others = [stored() for _ in range(5)]
    for run in others:
        store.put(run)
    assert store.get(mine.id) is mine and len(store) == 2  # held, and one other (the bound)
    del holder  # Streamlit dropped the closed session, and its state with it
    gc.collect()
    store.put(stored())
    assert store.get(mine.id) is None and len(store) == 1


def test_sessions_at_once_keep_the_store_whole_and_bounded():
    store, errors = RunStore(max_runs=8), []

    def visitor() -> None:
        try:
            for _ in range(50):
                run = stored()
                store.put(run)
                found = store.get(run.id)
                assert found is None or found is run
        except Exception as err:  # noqa: BLE001 - collected for the assert below
            errors.append(err)

    threads = [threading.Thread(target=visitor) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(store) == 8


def test_a_run_is_an_origin_it_names():
    with pytest.raises(ValueError):
        StoredRun(make_trace(), None, "guessed", "")


def test_a_step_is_a_view_of_the_stored_run_cut_once():
    run = stored(output_pieces=("巴黎", "。", "它"))
    assert run_at_step(run, 2) is run_at_step(run, 2) and len(run_at_step(run, 2).steps) == 2
    assert run_at_step(run, 99) is run.trace and run.trace.steps[:2] == run_at_step(run, 2).steps
    view = RunView(run, 2, stepping=True)
    assert view.full is run.trace and view.whole is run.trace and not view.is_whole and view.headline is None
    assert whole_view(run).full is None and whole_view(run).trace is run.trace


def test_every_session_showing_the_same_run_gets_the_same_drawing():
    """Two sessions that show one stored run (each with a view of its own) get the same figure, its words
    and the latency chart: drawn once, never copies; another step or language is another drawing."""
    run = stored()
    mine, theirs = whole_view(run), whole_view(run)
    assert mine is not theirs
    for name in ("timeline", "blocks", "review_map"):
        assert resources.diagram_svg(name, mine, "zh") is resources.diagram_svg(name, theirs, "zh")
    assert resources.diagram_words("timeline", mine, "en") is resources.diagram_words("timeline", theirs, "en")
    assert resources.latency_figure(mine, "zh") is resources.latency_figure(theirs, "zh")
    assert resources.diagram_svg("timeline", mine, "en") != resources.diagram_svg("timeline", mine, "zh")
    stepped = RunView(run, 1, stepping=True)
    assert resources.diagram_svg("timeline", stepped, "zh") != resources.diagram_svg("timeline", mine, "zh")
