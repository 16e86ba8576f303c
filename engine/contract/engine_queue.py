"""The engine worker's queue of the last minutes, as plain values (the serving lab draws it).

    history = client.queue_history()        # a QueueHistory, from engine/runtime/worker/queue.py
    for job in history.jobs: job.kind, job.wait_s, job.run_s, job.pauses

Times are seconds relative to the worker's `now` when it answered (negative: in the past), so a
client on another machine needs no shared clock. Nothing names a visitor: a job is its kind, its
lane, its times, how many visitors its one measurement served and how it ended.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

JOB_KINDS = ("lesson", "serving", "sweep", "modes", "load", "other")
LANES = ("short", "long")
OUTCOMES = ("waiting", "running", "paused", "done", "error", "cancelled")
MAX_JOBS = 1024  # a history longer than this is not the worker's


@dataclass(frozen=True)
class QueueJob:
    """One measurement: queued, started and ended (s before now; None: not yet), its pauses for
    short jobs (a long job only), the visitors it served, how it ended (or "waiting" / "running")."""

    kind: str
    lane: str
    queued_at_s: float
    started_at_s: float | None
    ended_at_s: float | None
    visitors: int
    outcome: str
    pauses: tuple[tuple[float, float], ...] = ()

    @property
    def wait_s(self) -> float:
        """Seconds from its arrival to its start (to now while it waits)."""
        end = self.started_at_s if self.started_at_s is not None else (self.ended_at_s or 0.0)
        return max(0.0, end - self.queued_at_s)

    @property
    def run_s(self) -> float | None:
        """Seconds it measured (to now while it runs), its pauses left out; None if it never started."""
        if self.started_at_s is None:
            return None
        end = self.ended_at_s if self.ended_at_s is not None else 0.0
        return max(0.0, end - self.started_at_s - sum(b - a for a, b in self.pauses))


@dataclass(frozen=True)
class QueueHistory:
    """The last `window_s` seconds of the worker's queue, oldest first."""

    window_s: float
    jobs: tuple[QueueJob, ...]

    @classmethod
    def from_plain(cls, data: Any) -> QueueHistory:
        """Rebuilt from the worker's JSON and checked (known kinds, lanes, outcomes; finite times): ValueError."""
        if not isinstance(data, dict) or not isinstance(data.get("jobs"), list) or len(data["jobs"]) > MAX_JOBS:
            raise ValueError("a queue history is {window_s, jobs: [...]}")
        return cls(_seconds(data.get("window_s")), tuple(_job(j) for j in data["jobs"]))


def _seconds(value: Any, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"not a time in seconds: {value!r}")
    return float(value)


def _job(data: Any) -> QueueJob:
    if not isinstance(data, dict):
        raise ValueError("a queue job is a JSON object")
    kind, lane, outcome = data.get("kind"), data.get("lane"), data.get("outcome")
    if kind not in JOB_KINDS or lane not in LANES or outcome not in OUTCOMES:
        raise ValueError(f"unknown job {kind!r} / {lane!r} / {outcome!r}")
    visitors = data.get("visitors")
    if isinstance(visitors, bool) or not isinstance(visitors, int) or visitors < 0:
        raise ValueError("visitors is a count")
    pauses = data.get("pauses") or []
    if not isinstance(pauses, list) or not all(isinstance(p, list) and len(p) == 2 for p in pauses):
        raise ValueError("pauses are [from_s, to_s] pairs")
    return QueueJob(kind, lane, _seconds(data.get("queued_at_s")), _seconds(data.get("started_at_s"), True),
                    _seconds(data.get("ended_at_s"), True), visitors, outcome,
                    tuple((_seconds(a), _seconds(b)) for a, b in pauses))
