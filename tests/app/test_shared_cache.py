"""The lesson's figures are drawn once for every visitor (app_support/shared_cache.py, app_support/resources.py):
a bounded LRU keyed by the arguments themselves, whose values every session shares (no copy per call)."""

from __future__ import annotations

import threading

import pytest

from app_support import resources
from app_support.shared_cache import SharedCache, shared
from tests.factories import make_trace


def test_the_oldest_value_goes_first_past_the_bound():
    cache = SharedCache(max_entries=2)
    assert cache.get("a", lambda: 1) == 1 and cache.get("b", lambda: 2) == 2
    assert cache.get("a", lambda: 99) == 1  # a hit: "a" is now the newest
    cache.get("c", lambda: 3)  # past the bound: "b", the least recently used, is dropped
    assert list(cache.values) == ["a", "c"] and cache.get("a", lambda: 10) == 1
    assert (cache.hits, cache.misses) == (2, 3)
    with pytest.raises(ValueError):
        SharedCache(max_entries=0)


def test_a_decorated_function_runs_once_per_arguments_and_forgets_on_clear():
    calls = []

    @shared(max_entries=8)
    def draw(name: str, lang: str = "zh") -> str:
        calls.append((name, lang))
        return f"<svg>{name} {lang}</svg>"

    assert draw("timeline") == draw("timeline") == "<svg>timeline zh</svg>"
    assert draw("timeline", lang="en") == "<svg>timeline en</svg>"
    assert calls == [("timeline", "zh"), ("timeline", "en")]
    draw.clear()
    draw("timeline")
    assert len(calls) == 3


def test_sessions_at_once_get_one_value():
    cache, results = SharedCache(max_entries=4), []
    threads = [threading.Thread(target=lambda: results.append(cache.get("k", lambda: object()))) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 16 and len(cache) == 1


def test_every_session_showing_the_same_run_gets_the_same_drawing():
    """Two sessions hold equal but distinct JSON strings of one run: the figure, its words, the latency chart
    and the parsed trace are the same objects for both (drawn once), never copies."""
    trace_json = make_trace().to_json(indent=None)
    other_sessions_copy = "".join(list(trace_json))  # equal, not the same object
    assert other_sessions_copy is not trace_json
    for name in ("timeline", "blocks", "review_map"):
        assert resources.diagram_svg(name, trace_json, "zh") is resources.diagram_svg(name, other_sessions_copy, "zh")
    assert resources.diagram_words("timeline", trace_json, "en", "s") is \
        resources.diagram_words("timeline", other_sessions_copy, "en", "s")
    assert resources.parsed_trace(trace_json) is resources.parsed_trace(other_sessions_copy)
    assert resources.latency_figure(trace_json, "zh") is resources.latency_figure(other_sessions_copy, "zh")
    assert resources.diagram_svg("timeline", trace_json, "en") != resources.diagram_svg("timeline", trace_json, "zh")
