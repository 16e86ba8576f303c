"""One figure drawn once for every visitor: a bounded, thread-safe LRU shared by the server's sessions.

A lesson figure is a pure function of the run (its trace JSON), the language and the style, so
the server draws it once and every session that shows the same run gets the same string (or the
same frozen object). Streamlit's own st.cache_data does the same, but per call it hashes every
argument through its own hasher (about 2 ms for a trace's JSON here) and unpickles a copy of the
value: with ~45 such calls a page, that was 0.1 s of every page run, 3 s for 30 visitors at once.
Here the key is the arguments themselves: a str caches its own hash, so a session's trace JSON
is hashed once, and a hit is one dict look-up under a lock.

    @shared(max_entries=256)
    def diagram_svg(name: str, trace_json: str, lang: str) -> str: ...
    diagram_svg.clear()          # forget everything (tests; a new server setting)

Values are shared, never copied: cache only immutable values (str, tuples, frozen dataclasses) or
objects every caller only reads (a plotly Figure that st.plotly_chart serializes, never mutates).
Two sessions that miss the same key at once both compute it (the same value); nothing draws here.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


class SharedCache:
    """At most `max_entries` values by key, the least recently used dropped first; thread-safe."""

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, not {max_entries}")
        self.max_entries = max_entries
        self.values: OrderedDict[Hashable, Any] = OrderedDict()
        self.lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The value kept for `key`, or `compute()`'s, kept from now on."""
        with self.lock:
            if key in self.values:
                self.values.move_to_end(key)
                self.hits += 1
                return self.values[key]
            self.misses += 1
        value = compute()  # outside the lock: another session's hit never waits for a drawing
        with self.lock:
            self.values[key] = value
            self.values.move_to_end(key)
            while len(self.values) > self.max_entries:
                self.values.popitem(last=False)
        return value

    def clear(self) -> None:
        with self.lock:
            self.values.clear()

    def __len__(self) -> int:
        return len(self.values)


def shared(max_entries: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a pure function of hashable arguments: one SharedCache for it (`.cache`), and `.clear()`."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        cache = SharedCache(max_entries)

        @functools.wraps(func)
        def cached(*args: Any, **kwargs: Any) -> Any:
            key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
            return cache.get(key, lambda: func(*args, **kwargs))

        cached.cache = cache  # type: ignore[attr-defined]
        cached.clear = cache.clear  # type: ignore[attr-defined]
        return cached

    return decorate
