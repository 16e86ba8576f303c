"""A classroom step's neighbours drawn ahead (app_support.resources.draw_neighbours_ahead): the figure calls a
page run made on a stepping view are made again for the steps either side, so the next key press finds them
cached; a page run on the whole run (no stepping) draws nothing ahead."""

from __future__ import annotations

from app_support import resources
from app_support.run_store import RunView, StoredRun
from tests.factories import make_trace


def _run() -> StoredRun:
    return StoredRun(make_trace(output_pieces=tuple(f"o{i}" for i in range(6))), None, "measured", "20261204-030000")


def test_the_steps_either_side_are_drawn_ahead_and_found_cached():
    run = _run()
    resources.diagram_svg("timeline", RunView(run, 3, stepping=True), "zh", True)
    resources.latency_figure(RunView(run, 3, stepping=True), "zh", True)
    thread = resources.draw_neighbours_ahead()
    assert thread is not None
    thread.join(timeout=60)
    before = resources.figure_cache_info()
    for step in (2, 4):  # the step back and the step on: each a cache hit, not drawn again
        resources.diagram_svg("timeline", RunView(run, step, stepping=True), "zh", True)
        resources.latency_figure(RunView(run, step, stepping=True), "zh", True)
    after = resources.figure_cache_info()
    assert [a.hits - b.hits for a, b in zip(after, before)] == [2, 2]
    assert [a.misses - b.misses for a, b in zip(after, before)] == [0, 0]
    assert resources.draw_neighbours_ahead() is not None  # these four calls were noted too


def test_a_page_run_on_the_whole_run_draws_nothing_ahead():
    resources.draw_neighbours_ahead()  # whatever an earlier call left
    run = _run()
    resources.diagram_svg("timeline", RunView(run, run.num_passes), "zh", False)
    assert resources.draw_neighbours_ahead() is None
