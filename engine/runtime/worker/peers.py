"""The worker's side of its peers: what keeps one client from stalling, locking out or crashing the others.

    PendingHandshakes   connections in the key challenge: WORKER_MAX_PENDING at once, and
                        WORKER_MAX_PENDING_PER_HOST from one address; past either, the oldest is closed
    SessionSlots        keyed connections with a call: WORKER_MAX_SESSIONS at once, and
                        WORKER_MAX_SESSIONS_PER_HOST from one peer (its address and the replica its call
                        names); more wait at the door (door.py) until a slot is given back
    Outbox              one client's send buffer: the runner puts an event in it and goes on (never
                        waits on a socket); the session's sender thread writes it out. A client that
                        leaves WORKER_SEND_BUFFER_BYTES unread, or an event untaken for
                        WORKER_SEND_DEADLINE_S, is dropped, and only its call is lost
    Watchdog            one thread for every clock of a session: a write's deadline (a refusal sent
                        before there is a sender), the outboxes' send deadlines, the `alive` heartbeat
                        to every open call, and the worker's own stalls (its clock jumped: the process
                        stood still). The door (door.py) keeps the key challenge's and the call's own.

No torch here: plain threads and sockets (engine/contract/worker/protocol.py frames them).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Any, Protocol

from engine.contract.limits import (
    WORKER_MAX_PENDING, WORKER_MAX_PENDING_PER_HOST, WORKER_MAX_SESSIONS, WORKER_MAX_SESSIONS_PER_HOST,
    WORKER_SEND_BUFFER_BYTES, WORKER_SEND_DEADLINE_S, WORKER_STALL_S,
)
from engine.contract.worker.protocol import HEARTBEAT_S, encode, shutdown
from engine.runtime.untimed import covered

log = logging.getLogger("prefill_decode.worker")
TICK_S = 0.25  # the watchdog's clock: deadlines are kept to within this
WARN_EVERY_S = 5.0  # one log line per kind of refusal this often (a flood is not a flood of log lines)
MAX_STALLS_KEPT = 32


class PendingHandshakes:
    """The connections in the key challenge (or keyed, their call not yet in): the slots before any
    session. At most `total` at once and `per_host` from one address; past either, the OLDEST one (of
    that address, or of all) is shut down to make room. A real client needs a few milliseconds here,
    so a flood of silent connections only ever pushes out its own: a keyed client still gets through."""

    def __init__(self, total: int = WORKER_MAX_PENDING, per_host: int = WORKER_MAX_PENDING_PER_HOST) -> None:
        self.total, self.per_host = total, per_host
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[str, Connection]] = {}  # in arrival order (dicts keep it)
        self._by_host: Counter[str] = Counter()
        self.evicted = 0

    def admit(self, host: str, conn: Connection) -> Connection | None:
        """Take a slot for `conn`, shutting the oldest pending connection down when there is none (it is
        returned, so the door closes it as pushed out, not as a peer that failed its challenge)."""
        with self._lock:
            evicted = None
            if self._by_host[host] >= self.per_host:
                evicted = self._evict(next(t for t, (h, _) in self._pending.items() if h == host))
            elif len(self._pending) >= self.total:
                evicted = self._evict(next(iter(self._pending)))
            self._pending[id(conn)] = (host, conn)
            self._by_host[host] += 1
            return evicted

    def release(self, conn: Connection) -> None:
        with self._lock:
            self._forget(id(conn))

    def _evict(self, token: int) -> Connection:
        _, conn = self._pending[token]
        self._forget(token)
        self.evicted += 1
        shutdown(conn)  # its read ends at once
        return conn

    def _forget(self, token: int) -> None:
        entry = self._pending.pop(token, None)
        if entry is not None:
            self._by_host[entry[0]] -= 1
            if self._by_host[entry[0]] <= 0:
                del self._by_host[entry[0]]

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)


class SessionSlots:
    """Keyed connections with a call, served at once: at most `total`, and `per_peer` from one peer (its
    address and the replica its call names: every replica behind a proxy comes from 127.0.0.1), so a
    client that opens connection after connection, each with a call, fills its own share only.
    `take(peer)` returns None when a slot was taken, else why not, in one line; `give(peer)` after.
    A call that finds no slot waits at the door for one (door.py), it is not refused."""

    def __init__(self, total: int = WORKER_MAX_SESSIONS, per_peer: int = WORKER_MAX_SESSIONS_PER_HOST) -> None:
        self.total, self.per_peer = total, per_peer
        self._lock = threading.Lock()
        self._by_peer: Counter[str] = Counter()

    def take(self, peer: str) -> str | None:
        with self._lock:
            if self._by_peer.total() >= self.total:
                return f"the worker serves {self.total} calls already"
            if self._by_peer[peer] >= self.per_peer:
                return f"the worker serves {self.per_peer} calls from {peer} already"
            self._by_peer[peer] += 1
            return None

    def give(self, peer: str) -> None:
        with self._lock:
            self._by_peer[peer] -= 1
            if self._by_peer[peer] <= 0:
                del self._by_peer[peer]

    def held(self, peer: str) -> int:
        with self._lock:
            return self._by_peer[peer]


class Outbox:
    """One client's events on their way out. `put` never waits: the frame joins the buffer and the
    sender thread (`run`) writes it. The bound counts what already waits, so one frame larger than it
    (a long run's result) is sent when it comes alone; the deadline still applies to it. `drop(why)`
    ends it at once (the socket is shut down, so a send blocked in the kernel wakes); a `put` after
    that raises EOFError, which cancels the client's call."""

    def __init__(self, conn: Connection, peer: str = "?", max_bytes: int = WORKER_SEND_BUFFER_BYTES,
                 deadline_s: float = WORKER_SEND_DEADLINE_S) -> None:
        self.conn, self.peer, self.max_bytes, self.deadline_s = conn, peer, max_bytes, deadline_s
        self._cond = threading.Condition()
        self._frames: deque[bytes] = deque()
        self._bytes = 0
        self._head_since: float | None = None  # when the frame now first in line began waiting
        self._ending = False  # no more frames: shut the socket once the last is out
        self.dropped: str | None = None  # why it was dropped, once it was

    def put(self, kind: str, **fields: Any) -> None:
        frame = encode(kind, **fields)  # a result JSON cannot carry raises here, in the caller's thread
        with self._cond:
            if self.dropped is not None:
                raise EOFError(f"the client was dropped: {self.dropped}")
            if self._bytes and self._bytes + len(frame) > self.max_bytes:  # one large result alone may wait
                self._drop(f"it left over {self.max_bytes:,} bytes of events unread")
                log.warning("dropped %s: it left over %d bytes of events unread; only its call is lost",
                            self.peer, self.max_bytes)
                raise EOFError(f"the client was dropped: {self.dropped}")
            self._frames.append(frame)
            self._bytes += len(frame)
            if self._head_since is None:
                self._head_since = time.monotonic()
            self._cond.notify_all()

    def run(self) -> None:
        """The sender thread: write frames until the outbox ends (every frame out) or is dropped."""
        while True:
            with self._cond:
                while not self._frames and self.dropped is None and not self._ending:
                    self._cond.wait()
                if self.dropped is not None or not self._frames:
                    if self.dropped is None:
                        shutdown(self.conn)  # all sent: the session's reader wakes with EOF
                    return
                frame = self._frames[0]
            try:
                self.conn.send_bytes(frame)
            except (OSError, EOFError, ValueError):
                self.drop("the connection closed")
                return
            with self._cond:
                self._frames.popleft()
                self._bytes -= len(frame)
                self._head_since = time.monotonic() if self._frames else None
                self._cond.notify_all()

    def end(self) -> None:
        """No more frames: the sender writes what is left, then shuts the connection down."""
        with self._cond:
            self._ending = True
            self._cond.notify_all()

    def flush(self) -> bool:
        """Wait until every frame is out (True) or the outbox was dropped (False: the watchdog keeps the deadline)."""
        with self._cond:
            while self._frames and self.dropped is None:
                self._cond.wait()
            return self.dropped is None

    def overdue(self, now: float) -> bool:
        """A frame has waited longer than the deadline (the client does not read)."""
        with self._cond:
            return self.dropped is None and self._head_since is not None and now - self._head_since > self.deadline_s

    @property
    def unsent_bytes(self) -> int:
        with self._cond:
            return self._bytes

    def drop(self, why: str) -> None:
        with self._cond:
            self._drop(why)

    def _drop(self, why: str) -> None:
        if self.dropped is None:
            self.dropped = why
            shutdown(self.conn)
            self._cond.notify_all()


class Watched(Protocol):
    """What the watchdog needs of a session: its outbox, whether a call is open, how to drop it."""

    peer: str
    outbox: Outbox

    def beat(self) -> None: ...

    def drop(self, why: str) -> None: ...


class Watchdog:
    """One daemon thread, every TICK_S: connections past their deadline are shut down, sessions whose
    outbox is overdue are dropped (their call cancelled), every open call hears `alive` each
    HEARTBEAT_S, and a jump of the clock beyond WORKER_STALL_S (the process was stopped, or starved)
    is kept, so a run it fell into is discarded (`stalled_since`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._deadlines: dict[int, tuple[float, Connection]] = {}
        self._sessions: set[Watched] = set()
        self._stalls: deque[tuple[float, float]] = deque(maxlen=MAX_STALLS_KEPT)
        self._last_tick = time.monotonic()
        self._warned: dict[str, float] = {}
        self.running = False

    def start(self) -> threading.Thread:
        self.running, self._last_tick = True, time.monotonic()
        thread = threading.Thread(target=self._run, name="engine-watchdog", daemon=True)
        thread.start()
        return thread

    @contextmanager
    def deadline(self, conn: Connection, seconds: float) -> Iterator[None]:
        """Shut `conn` down if the block inside takes longer than `seconds` (a blocked read then raises)."""
        token = id(conn)
        with self._lock:
            self._deadlines[token] = (time.monotonic() + seconds, conn)
        try:
            yield
        finally:
            with self._lock:
                self._deadlines.pop(token, None)

    def watch(self, session: Watched) -> None:
        with self._lock:
            self._sessions.add(session)

    def forget(self, session: Watched) -> None:
        with self._lock:
            self._sessions.discard(session)

    def note_clock(self) -> float:
        """Now; a gap since the last reading beyond WORKER_STALL_S is kept as a stall."""
        with self._lock:
            now = time.monotonic()
            if self.running and now - self._last_tick > WORKER_STALL_S:
                self._stalls.append((self._last_tick, now))
                log.warning("the worker stood still for %.1f s (stopped or starved): a run in it is discarded",
                            now - self._last_tick)
            self._last_tick = now
            return now

    def stalled_since(self, since: float) -> float:
        """The longest stall that ended after `since` (seconds; 0.0: none), leaving out a stall inside a
        stretch no measured time covers (a runner's build: engine/runtime/untimed.py)."""
        self.note_clock()
        with self._lock:
            return max((end - start for start, end in self._stalls if end > since and not covered(start, end)),
                       default=0.0)

    def warn(self, kind: str, message: str, *args: Any) -> None:
        """A log line, at most one per `kind` every WARN_EVERY_S."""
        now = time.monotonic()
        with self._lock:
            if now - self._warned.get(kind, -WARN_EVERY_S) < WARN_EVERY_S:
                return
            self._warned[kind] = now
        log.warning(message, *args)

    def _run(self) -> None:
        last_beat = time.monotonic()
        while True:
            time.sleep(TICK_S)
            now = self.note_clock()
            with self._lock:
                expired = [conn for when, conn in self._deadlines.values() if when < now]
                sessions = list(self._sessions)
            for conn in expired:
                shutdown(conn)
            for session in sessions:
                if session.outbox.overdue(now):
                    log.warning("dropped %s: it did not read its events for %.0f s (%d bytes unsent); only its "
                                "call is lost", session.peer, session.outbox.deadline_s, session.outbox.unsent_bytes)
                    session.drop("it did not read its events in time")
            if now - last_beat >= HEARTBEAT_S:
                last_beat = now
                for session in sessions:
                    session.beat()
