"""The engine worker's queue: which measured call runs next, which calls share one measurement, and
what the class's queue did in the last minutes (the serving lab draws it).

    the server     submit(waiter)           one client's call: joins an identical measurement, or a new one
                   remove(waiter)           a client that cancelled or left
    the runner     take()                   the next measurement by ORDER (blocks); `running` until finish()
                   take_short()             at a long job's unit boundary: a waiting short one, or None

ORDER, the one policy (`ordered()`), composes two rules:
  1. lanes: every waiting SHORT measurement (a lesson run: a few forward passes) before any LONG one
     (a serving run, a sweep, engine modes, a model load, a benchmark). A running long job calls
     `between_units()` between its measured units (a serving iteration, a sweep point, a mode) and the
     runner then runs every waiting short job before the long one goes on, as chunked prefill lets
     Decode steps through. The long job's timeline excludes that pause, so none of its numbers move.
  2. within a lane: turns by peer, then by name within it (`Waiter.client`, the server's path
     (host, replica, name): Turns). At each level the rotation holds only those with work waiting: one
     joins at the BACK when its first call arrives (never at the front, so a fresh name per call gains
     nothing), goes to the back when served, and leaves once nothing of its waits. Each name's calls in
     arrival order. So a flood under one name, the honest client's own name on another peer, or a fresh
     name per call, costs an honest peer one turn per round, as one well-behaved busy client does.

Identical work is measured once: a call whose `share_key` (a digest of its method and the canonical
JSON of its arguments, which determine the result: prompt, lengths, sampling and seed, workload and
policy, sweep points, ...) equals that of a waiting or running measurement joins it. Every waiter
gets every event (a late joiner first hears the events it missed, so a streamed run reaches it whole),
and the result's `done` message says `shared: {visitors, measured_at}` when it served more than one.
A measurement is cancelled only when every waiter has left; one that is stopping is never joined.

Every `queued` event is sent under the queue's lock, so a client's places arrive in order.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from engine.contract.worker import calls

# Methods whose result is determined by their arguments (a greedy run, or a sampled one with its seed; a
# serving run of one workload and policy; a sweep of the same points): identical waiting calls share one.
# Which they are, and each method's lane and kind in the history, is the table of engine/contract/worker/calls.py.
SHARED_METHODS = calls.names(measured=True, shared=True)
HISTORY_S = 600.0  # finished measurements kept this long for the queue's figure
MAX_HISTORY = 512  # and at most this many


def share_key(method: str, args: dict[str, Any]) -> str | None:
    """One digest per job kind and arguments (canonical JSON: sorted keys, no spaces); None: never shared."""
    if method not in SHARED_METHODS:
        return None
    canonical = json.dumps({"method": method, "args": args}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class _Flag:
    """A measurement's cancel flag: set when every waiter has cancelled (`set()` cancels them all)."""

    def __init__(self, waiters: Callable[[], list]) -> None:
        self._waiters = waiters

    def is_set(self) -> bool:
        return all(w.cancelled.is_set() for w in self._waiters())

    def set(self) -> None:
        for w in self._waiters():
            w.cancelled.set()


class _Finished:
    """A measurement's end: `set()` ends every waiter's wait."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.waiters: list[Waiter] = []

    def set(self) -> None:
        self._event.set()
        for w in self.waiters:
            w.finished.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


class Waiter:
    """One client's call: its method and arguments, where its events go, its cancel and end flags.

    `sink(kind, fields)` receives every event; for a client's call it sends them on the client's
    connection, for an internal load it keeps the result for the light call that waits on it."""

    def __init__(self, method: str, args: dict[str, Any], sink: Callable[[str, dict], None], *,
                 client: str | tuple[str, ...] = "") -> None:
        self.method, self.args, self.sink, self.client = method, args, sink, client  # whose turn: turn_path
        self.cancelled = threading.Event()
        self.finished = threading.Event()

    def send(self, kind: str, **fields: Any) -> None:
        try:
            self.sink(kind, fields)
        except (OSError, EOFError):  # the client has gone
            self.cancelled.set()


Job = Waiter  # the server's name for one client's call


class Measurement:
    """One measured run and every waiter it serves: the runner's unit of work.

    It looks like one call to the runner (`method`, `args`, `send`, `cancelled`, `finished`); `send`
    goes to every waiter and is logged from `started` on, so a waiter that joins late hears it all."""

    def __init__(self, first: Waiter) -> None:
        self.method, self.args, self.client = first.method, first.args, first.client
        self.turn = turn_path(first.client)
        self.key, self.lane = share_key(first.method, first.args), calls.lane_of(first.method)
        self.waiters = [first]
        self.finished = _Finished()
        self.finished.waiters = self.waiters
        self.cancelled = _Flag(lambda: list(self.waiters))
        self.log: list[tuple[str, dict]] = []  # events since `started`
        self.lock = threading.Lock()
        self.submitted = time.monotonic()
        self.started: float | None = None
        self.measured_at: float | None = None  # wall clock (time.time) at the start: the page's HH:MM:SS
        self.ended: float | None = None
        self.outcome = "waiting"
        self.ahead: int | None = None  # the place last said to its waiters
        self.pauses: list[list[float]] = []  # [start, end] of each between-units pause (monotonic)

    def send(self, kind: str, **fields: Any) -> None:
        with self.lock:
            if kind == "started":
                self.started, self.measured_at, self.outcome = time.monotonic(), time.time(), "running"
            if kind == "done" and len(self.waiters) > 1:
                fields = {**fields, "shared": {"visitors": len(self.waiters), "measured_at": self.measured_at}}
            if kind in ("done", "error", "cancelled"):
                self.outcome = kind
            elif self.started is not None:
                self.log.append((kind, fields))
            for w in list(self.waiters):
                w.send(kind, **fields)

    def join(self, waiter: Waiter, ahead: int) -> bool:
        """Add `waiter`: its place, then (if the run began) every event it missed. False once the run has
        sent its last message (checked under the lock `send` holds: a waiter hears the end, or is refused)."""
        with self.lock:
            if self.outcome in ("done", "error", "cancelled"):
                return False
            self.waiters.append(waiter)
            waiter.send("queued", ahead=ahead)
            for kind, fields in self.log:
                waiter.send(kind, **fields)
            return True

    def leave(self, waiter: Waiter) -> bool:
        """Take `waiter` out while others stay; False when it is the last one, not here, or the run has
        already sent its end (a client that hangs up after its result still counts as served)."""
        with self.lock:
            if waiter not in self.waiters or len(self.waiters) == 1 or self.outcome in ("done", "error", "cancelled"):
                return False
            self.waiters.remove(waiter)
            return True

    def record(self, now: float) -> dict[str, Any]:
        """This measurement as engine.contract.engine_queue.QueueJob's fields (times in s before `now`)."""
        def ago(t: float | None) -> float | None:
            return None if t is None else round(t - now, 3)

        return {"kind": calls.history_kind(self.method), "lane": self.lane, "queued_at_s": ago(self.submitted),
                "started_at_s": ago(self.started), "ended_at_s": ago(self.ended), "visitors": len(self.waiters),
                "outcome": self.outcome,
                "pauses": [[ago(a), ago(b if b is not None else now)] for a, b in self.pauses]}


TURN_DEPTH = 3  # a call's turn path: the peer's address, the replica its call names, its client name


def turn_path(client: str | tuple[str, ...]) -> tuple[str, ...]:
    """A waiter's `client` as a path of TURN_DEPTH keys (a bare name, as tests and internal loads give it,
    is a peer of its own)."""
    path = (client,) if isinstance(client, str) else tuple(client)
    return (path + ("",) * TURN_DEPTH)[:TURN_DEPTH]


class Turns:
    """The rotation at every level of the turn paths: for each prefix, its children in turn order. Only
    prefixes with work waiting are held (`keep`), so it never grows past the waiting calls."""

    def __init__(self) -> None:
        self._order: dict[tuple[str, ...], dict[str, None]] = {}  # prefix -> children, next turn first

    def arrived(self, path: tuple[str, ...]) -> None:
        """A call of `path` waits: each level not in its rotation joins at the back (its arrival)."""
        for depth in range(TURN_DEPTH):
            self._order.setdefault(path[:depth], {}).setdefault(path[depth], None)

    def served(self, path: tuple[str, ...]) -> None:
        """A call of `path` started: at each level it goes to the back of its round."""
        for depth in range(TURN_DEPTH):
            children = self._order.setdefault(path[:depth], {})
            children.pop(path[depth], None)
            children[path[depth]] = None

    def keep(self, waiting: list[Measurement]) -> None:
        """Forget every level with nothing waiting (a client leaves the rotation with its last call)."""
        live = {m.turn[:depth + 1] for m in waiting for depth in range(TURN_DEPTH)}
        for prefix in list(self._order):
            if prefix and prefix not in live:
                del self._order[prefix]
                continue
            children = self._order[prefix]
            for child in [c for c in children if prefix + (c,) not in live]:
                del children[child]

    def ranks(self, prefix: tuple[str, ...]) -> dict[str, int]:
        """Each child of `prefix` and its place in the rotation (0: the next turn)."""
        return {child: i for i, child in enumerate(self._order.get(prefix, {}))}

    def __len__(self) -> int:
        return sum(len(children) for children in self._order.values())


def ordered(waiting: list[Measurement], turns: Turns) -> list[Measurement]:
    """ORDER: short lane before long; in each lane, turns by peer, then replica, then name (`turns`' order
    at each level), each name's calls in arrival order."""
    out: list[Measurement] = []
    for lane in ("short", "long"):
        out += _in_turns([m for m in waiting if m.lane == lane], turns, ())
    return out


def _in_turns(items: list[Measurement], turns: Turns, prefix: tuple[str, ...]) -> list[Measurement]:
    """`items` (all under `prefix`) in turn order: one from each child in its rotation's order, round after round."""
    if len(prefix) == TURN_DEPTH:
        return items  # one name's calls: arrival order
    groups: dict[str, list[Measurement]] = {}
    for m in items:
        groups.setdefault(m.turn[len(prefix)], []).append(m)
    ranks = turns.ranks(prefix)
    in_turn = sorted(groups, key=lambda c: ranks.get(c, len(ranks)))
    rounds = [_in_turns(groups[c], turns, prefix + (c,)) for c in in_turn]
    return [m for round_ in itertools.zip_longest(*rounds) for m in round_ if m is not None]


class JobQueue:
    """The waiting measurements, the running ones (a long one paused under the short ones it let
    through), and the recent history. Thread-safe; `running` is the innermost one measuring now."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._waiting: list[Measurement] = []
        self._running: list[Measurement] = []  # a stack: [a long job, a short one run in its pause]
        self._turns = Turns()
        self._done: deque[Measurement] = deque(maxlen=MAX_HISTORY)

    @property
    def running(self) -> Measurement | None:
        with self._cond:
            return self._running[-1] if self._running else None

    def submit(self, waiter: Waiter) -> None:
        with self._cond:
            key = share_key(waiter.method, waiter.args)
            same = None if key is None else next(
                (m for m in [*self._running, *self._waiting] if m.key == key and not m.cancelled.is_set()), None)
            if same is not None and same.join(waiter, ahead=self._ahead(same)):
                return
            measurement = Measurement(waiter)
            self._waiting.append(measurement)
            self._turns.arrived(measurement.turn)
            self._announce()  # its place, and a new place for each long one it goes before
            self._cond.notify()

    def remove(self, waiter: Waiter) -> bool:
        """Take a waiter out: True when it left (its measurement goes on for others, or had not started);
        False when it alone holds a running measurement (that stops at its next pass) or is gone."""
        with self._cond:
            for m in self._running:
                if waiter in m.waiters:
                    return m.leave(waiter)
            for m in self._waiting:
                if waiter in m.waiters:
                    if not m.leave(waiter):
                        self._waiting.remove(m)
                        self._turns.keep(self._waiting)
                        m.outcome, m.ended = "cancelled", time.monotonic()
                        self._done.append(m)
                        self._announce()
                    return True
            return False

    def take(self) -> Measurement:
        """The next measurement by ORDER (blocks until there is one); it is `running` until `finish`."""
        with self._cond:
            while not self._waiting:
                self._cond.wait()
            return self._start(ordered(self._waiting, self._turns)[0])

    def take_short(self) -> Measurement | None:
        """A waiting short measurement to run in a long one's pause (None: none waits)."""
        with self._cond:
            first = next(iter(ordered(self._waiting, self._turns)), None)
            return self._start(first) if first is not None and first.lane == "short" else None

    def finish(self) -> None:
        """The innermost running measurement has ended."""
        with self._cond:
            m = self._running.pop()
            m.ended = time.monotonic()
            self._done.append(m)

    def paused(self, measurement: Measurement) -> Callable[[], None]:
        """Mark the start of a pause of `measurement`; the returned callable marks its end."""
        with self._cond:
            span = [time.monotonic(), None]
            measurement.pauses.append(span)
            measurement.outcome = "paused"

        def resume() -> None:
            with self._cond:
                span[1] = time.monotonic()
                measurement.outcome = "running"
        return resume

    def history(self, window_s: float = HISTORY_S) -> dict[str, Any]:
        """The recent measurements, oldest first, as engine.contract.engine_queue.QueueHistory's fields:
        kinds, lanes, waits, runs and pauses, how many visitors each served; no client, prompt or setting."""
        with self._cond:
            now = time.monotonic()
            recent = [m for m in self._done if m.ended is not None and now - m.ended <= window_s]
            jobs = [m.record(now) for m in sorted([*recent, *self._running, *self._waiting],
                                                  key=lambda m: m.submitted)]
        return {"window_s": window_s, "jobs": jobs}

    def _start(self, m: Measurement) -> Measurement:
        self._waiting.remove(m)
        self._running.append(m)
        self._turns.served(m.turn)  # served last: to the back of its round, at every level
        self._turns.keep(self._waiting)  # and out of the rotation if nothing of it waits
        self._announce()
        return m

    def _ahead(self, m: Measurement) -> int:
        """Runs before `m`: those ORDER puts first, and the one measuring now (0 for a running one)."""
        if m in self._running:
            return 0
        return ordered(self._waiting, self._turns).index(m) + bool(self._running)

    def _announce(self) -> None:
        """Tell every waiting measurement whose place changed its new place (under the lock)."""
        for ahead, m in enumerate(ordered(self._waiting, self._turns), start=1 if self._running else 0):
            if m.ahead != ahead:
                m.ahead = ahead
                for w in list(m.waiters):
                    w.send("queued", ahead=ahead)

    def __len__(self) -> int:
        with self._cond:
            return len(self._waiting) + len(self._running)
