"""Stretches of a run that no measured time covers (building a static runner: allocating, torch.compile,
capturing a graph), so the worker's watchdog can tell a stall there from one inside a timed pass.

The watchdog (engine/runtime/worker/peers.py) discards a run during which its clock stood still: a pass
timed across the stall would be no measurement. A runner's build is outside every time (the request's
clock skips it: RequestTrace.engine_setup_ms), and on a busy machine torch.compile can hold the process
for seconds, so a stall inside a build, ending within SLACK_S of it, leaves the run's times as they are.
No torch here: monotonic clock readings only.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

SLACK_S = 0.5  # a starved watchdog may tick this late after the build that starved it ended
_windows: deque[tuple[float, float]] = deque(maxlen=64)
_lock = threading.Lock()


@contextmanager
def untimed() -> Iterator[None]:
    """Mark the block as outside every measured time (its monotonic start and end are kept)."""
    start = time.monotonic()
    try:
        yield
    finally:
        with _lock:
            _windows.append((start, time.monotonic()))


def covered(start: float, end: float) -> bool:
    """Whether [start, end] (monotonic seconds) lies inside one untimed stretch, give or take SLACK_S at its end."""
    with _lock:
        return any(a <= start and end <= b + SLACK_S for a, b in _windows)
