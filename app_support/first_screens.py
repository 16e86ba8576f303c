"""First screens first: while a class opens the lesson at once, every session's first figure comes before
the rest of anyone's page.

All sessions of one app process share one core for their page work (Python's GIL), and the event loop
that sends a session its first figure shares it too: 30 sessions opening the lesson at once each drew
their whole page side by side, so every first figure came late. A session opening the lesson counts
itself here until its first figure is drawn; the page's work below that figure then waits while any
other opening session has not drawn its own, at most `ServerSettings.first_screen_wait_ms`. The waiting
holds no lock a script needs and releases the GIL, so the figures already drawn are sent meanwhile.
The rest of the page is then drawn by at most REST_AT_ONCE sessions at a time: with thirty script threads
runnable at once, the event loop got a thirty-first of the core and a drawn figure waited seconds to be
sent; with two it gets a third. It is the lesson's own rule on the page's server: the short work that
decides the first impression (TTFT) before the long work behind it, and the long work admitted a few at
a time, never starved (every wait is bounded).

    with opening(first_run):        # the session's first run of the lesson
        ... draw up to the first figure ...
    after_first_figure(wait_s)      # no other session still opening (or wait_s passed)
    with rest_of_page(wait_s):      # one of REST_AT_ONCE (or wait_s passed)
        ... the rest of the page ...
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_changed = threading.Condition()
_opening = 0  # sessions of this process whose first figure is not drawn yet
REST_AT_ONCE = 2  # sessions drawing the rest of their page at the same time (the others wait their turn)
_rest = threading.BoundedSemaphore(REST_AT_ONCE)


def opening_now() -> int:
    """How many sessions are still before their first figure."""
    with _changed:
        return _opening


@contextmanager
def opening(counts: bool) -> Iterator[None]:
    """Count this session as opening (when `counts`: its first run of the lesson) until the block ends,
    however it ends."""
    global _opening
    if not counts:
        yield
        return
    with _changed:
        _opening += 1
    try:
        yield
    finally:
        with _changed:
            _opening -= 1
            _changed.notify_all()


@contextmanager
def _turn(semaphore: threading.BoundedSemaphore, wait_s: float) -> Iterator[None]:
    """One of the semaphore's places, waiting at most `wait_s` for it (then without one); 0: never waits."""
    took = semaphore.acquire(timeout=wait_s) if wait_s > 0 else semaphore.acquire(blocking=False)
    try:
        yield
    finally:
        if took:
            semaphore.release()


@contextmanager
def rest_of_page(wait_s: float) -> Iterator[None]:
    """Draw the rest of a page as one of at most REST_AT_ONCE sessions (at most `wait_s` for a turn, then
    anyway): fewer script threads at once leave the event loop that sends every session's figures a
    real share of the one core, so what is drawn reaches its browser instead of queueing behind them."""
    with _turn(_rest, wait_s):
        yield


def after_first_figure(wait_s: float) -> bool:
    """Wait (at most `wait_s`) until no session is still opening; True when none was left, False on timeout."""
    if wait_s <= 0:
        return opening_now() == 0
    with _changed:
        return _changed.wait_for(lambda: _opening == 0, timeout=wait_s)
