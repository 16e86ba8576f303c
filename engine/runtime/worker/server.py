"""The engine worker: a process that holds the models and runs every measured forward pass.

    main thread      accepts connections (multiprocessing.connection.Listener)
    one per client   proves the key (both ways), reads the one call, then waits for a cancel or EOF
    the runner       takes measured calls from a FIFO queue, ONE at a time, and streams their events

Why a process of its own: in the page's process, another visitor's page work (building an SVG,
Streamlit's own server) takes the GIL between a Decode step's ~245 operator calls; measured, a
Decode step's p99 went from 6.5 ms to 1055 ms with one busy thread. Here nothing else runs
while a pass is timed: connection threads sleep in a blocking read, and the runner sends its
events between passes (their cost is the step's `consumer_ms`, never inside `duration_ms`).

The queue: a measured call is answered `queued {ahead: N}` at once (N runs before it, the one
measuring counted), and again whenever the queue moves. A call whose connection closes, or that
sends `cancel`, leaves the queue; a running one stops at its next pass boundary (`cancelled`).
Light calls (ping, describe, token_preview, ...) answer from their own thread; a model they need
that is not loaded yet is loaded by the runner, through the queue, like any measured work.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, Listener
from typing import Any

from engine.contract.worker.errors import EngineWorkerError, ProtocolError, RunCancelled, error_from_wire, error_to_wire
from engine.runtime.model import LoadedModel, set_num_threads
from engine.runtime.worker.jobs import LIGHT, MEASURED, JobContext
from engine.runtime.worker.models import ModelCache, WorkerSettings
from engine.contract.worker.protocol import (
    CLIENT_TYPES, HANDSHAKE_ERRORS, PROTOCOL_VERSION, Channel, ModelRef, accept_handshake, format_address,
)

log = logging.getLogger("prefill_decode.worker")
MAX_SESSIONS = 256  # connections held at once; more are closed at once (a class of 30 needs a few each)


class Job:
    """One measured call: its method and arguments, where its events go, its cancel flag.

    `sink(kind, fields)` receives every event; for a client's call it sends them on the client's
    connection, for an internal load it keeps the result for the light call that waits on it."""

    def __init__(self, method: str, args: dict[str, Any], sink: Callable[[str, dict], None]) -> None:
        self.method, self.args, self.sink = method, args, sink
        self.cancelled = threading.Event()
        self.finished = threading.Event()

    def send(self, kind: str, **fields: Any) -> None:
        try:
            self.sink(kind, fields)
        except (OSError, EOFError):  # the client has gone
            self.cancelled.set()


class JobQueue:
    """First in, first out; the runner takes one job at a time. Every `queued` event is sent under
    the queue's lock, so a client's positions arrive in order and only ever count down."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._waiting: deque[Job] = deque()
        self.running: Job | None = None

    def submit(self, job: Job) -> None:
        with self._cond:
            self._waiting.append(job)
            job.send("queued", ahead=len(self._waiting) - 1 + (self.running is not None))
            self._cond.notify()

    def remove(self, job: Job) -> bool:
        """Take a job that has not started out of the queue; False when it is running or gone."""
        with self._cond:
            if job not in self._waiting:
                return False
            self._waiting.remove(job)
            self._announce()
            return True

    def take(self) -> Job:
        """The next job (blocks until there is one); it is `running` until `finish`."""
        with self._cond:
            while not self._waiting:
                self._cond.wait()
            self.running = self._waiting.popleft()
            self._announce()
            return self.running

    def finish(self) -> None:
        with self._cond:
            self.running = None

    def _announce(self) -> None:
        """Tell every waiting job its new place (under the lock)."""
        for ahead, job in enumerate(self._waiting, start=1):
            job.send("queued", ahead=ahead)

    def __len__(self) -> int:
        with self._cond:
            return len(self._waiting) + (self.running is not None)


class EngineWorker:
    """The worker's state: the models, the queue, the key. `serve(listener)` runs it.

    `measured`: the measured methods' handlers (jobs.MEASURED; a test adds one that holds the queue)."""

    def __init__(self, models: ModelCache, authkey: bytes, measured: dict[str, Callable] | None = None) -> None:
        self.models = models
        self.measured = MEASURED if measured is None else measured
        self.queue = JobQueue()
        self._authkey = authkey
        self._sessions = threading.BoundedSemaphore(MAX_SESSIONS)

    # --- the runner: one measured call at a time ---------------------------------------

    def start_runner(self) -> threading.Thread:
        runner = threading.Thread(target=self._run_forever, name="engine-runner", daemon=True)
        runner.start()
        return runner

    def _run_forever(self) -> None:
        # Pin torch's threads in this thread too: a new thread starts with OpenMP's default (every core)
        # until torch resets it, and a matmul alone does not (measured: 2 on this 2-core machine).
        set_num_threads()
        while True:
            job = self.queue.take()
            try:
                if job.cancelled.is_set():
                    job.send("cancelled")  # cancelled while the runner was taking it
                else:
                    self._run(job)
            except Exception:  # noqa: BLE001 - a bug in sending must not stop the runner for everyone
                log.exception("%s: its events could not be sent", job.method)
            finally:
                job.finished.set()
                self.queue.finish()

    def _run(self, job: Job) -> None:
        ctx = JobContext(self.models, model=self.models.load, emit=job.send, cancelled=job.cancelled.is_set)
        job.send("started", at=time.time())  # the wall clock: a client on this machine places its queue wait
        try:
            result = self.measured[job.method](ctx, job.args)
        except RunCancelled:
            job.send("cancelled")
            return
        except Exception as err:  # noqa: BLE001 - every failure goes back to its client, keyed
            log.log(logging.INFO if isinstance(err, ValueError) else logging.ERROR,
                    "%s refused: %s", job.method, err, exc_info=not isinstance(err, ValueError))
            job.send("error", error=error_to_wire(err))
            return
        try:
            job.send("done", result=result)
        except (TypeError, ValueError) as err:  # a result JSON cannot carry: a bug, said to the client
            job.send("error", error=error_to_wire(err))
            raise

    def preload(self, ref: ModelRef) -> Job:
        """Load (and warm) a model before any client asks for it: queued like any measured work."""
        job = Job("load", {"model": ref.to_wire()}, sink=self._log_preload)
        self.queue.submit(job)
        return job

    @staticmethod
    def _log_preload(kind: str, fields: dict) -> None:
        if kind == "done":
            log.info("model %s ready (%.0f ms)", fields["result"]["info"]["model_id"], fields["result"]["load_ms"])
        elif kind == "error":
            log.warning("preload failed: %s", fields["error"]["message"])

    def loaded_via_queue(self, ref: ModelRef, forward: Channel | None = None) -> LoadedModel:
        """A loaded model for a light call: loaded by the runner first when needed (the light call's
        client sees the load's queue place and start; an error is raised as the load's own)."""
        lm = self.models.loaded(ref)
        if lm is not None:
            return lm
        outcome: dict[str, Any] = {}

        def sink(kind: str, fields: dict) -> None:
            if kind in ("queued", "started") and forward is not None:
                _send_quietly(forward, kind, **fields)  # a light client that left does not cancel the load
            elif kind in ("done", "error"):
                outcome[kind] = fields

        job = Job("load", {"model": ref.to_wire()}, sink)
        self.queue.submit(job)
        job.finished.wait()
        if "error" in outcome:
            raise error_from_wire(outcome["error"]["error"])
        lm = self.models.loaded(ref)
        if lm is None:  # loaded, then dropped for other models before this call could use it
            raise EngineWorkerError("engine_busy", "the worker is switching between many models; try again")
        return lm

    # --- connections ----------------------------------------------------------------

    def serve(self, listener: Listener) -> None:
        """Accept connections, one thread each, until the listener is closed (the runner must be started)."""
        while True:
            try:
                conn = listener.accept()
            except OSError:  # closed: the worker is stopping
                return
            peer = format_address(listener.last_accepted) if listener.last_accepted else "?"
            if not self._sessions.acquire(blocking=False):
                log.warning("refused %s: %d connections open already", peer, MAX_SESSIONS)
                conn.close()
                continue
            threading.Thread(target=self._session, args=(conn, peer), name=f"engine-session {peer}",
                             daemon=True).start()

    def _session(self, conn: Connection, peer: str) -> None:
        try:
            try:
                accept_handshake(conn, self._authkey)
            except HANDSHAKE_ERRORS:
                log.warning("refused a connection from %s: wrong or missing token", peer)
                return
            self._answer(Channel(conn, CLIENT_TYPES))
        finally:
            conn.close()
            self._sessions.release()

    def _answer(self, channel: Channel) -> None:
        """Read the one call of this connection and answer it."""
        try:
            message = channel.recv()
            method, args = message.get("method"), message.get("args", {})
            known = self.measured.keys() | LIGHT.keys()
            if message["type"] != "call" or not isinstance(args, dict) or method not in known:
                raise ProtocolError("protocol_malformed", f"not a call this worker knows: {method!r}", why="method",
                                    method=str(method))
        except (EOFError, OSError):
            return
        except ProtocolError as err:  # ProtocolVersionError included: say why, then close
            _send_quietly(channel, "error", error=error_to_wire(err))
            return
        if method in LIGHT:
            self._light(channel, method, args)
        else:
            self._measured(channel, method, args)

    def _light(self, channel: Channel, method: str, args: dict[str, Any]) -> None:
        ctx = JobContext(self.models, model=lambda ref: self.loaded_via_queue(ref, channel), emit=channel.send,
                         cancelled=lambda: False)
        try:
            result = LIGHT[method](ctx, args)
        except Exception as err:  # noqa: BLE001 - keyed, back to the client
            _send_quietly(channel, "error", error=error_to_wire(err))
        else:
            _send_quietly(channel, "done", result=result)

    def _measured(self, channel: Channel, method: str, args: dict[str, Any]) -> None:
        """Queue the call, then wait on the connection: `cancel`, or EOF before the end, cancels it."""
        job = Job(method, args, sink=lambda kind, fields: channel.send(kind, **fields))
        self.queue.submit(job)
        while not job.finished.is_set():
            try:
                message = channel.recv()
            except (EOFError, OSError, ProtocolError):
                break  # the client has gone (or sent what it may not): its call is cancelled
            if message["type"] == "cancel":
                self._cancel(job)
        self._cancel(job)

    def _cancel(self, job: Job) -> None:
        if job.finished.is_set():
            return
        job.cancelled.set()  # a running job stops at its next pass boundary and says `cancelled`
        if self.queue.remove(job):
            job.send("cancelled")
            job.finished.set()


def _send_quietly(channel: Channel, kind: str, **fields: Any) -> None:
    try:
        channel.send(kind, **fields)
    except (OSError, EOFError):
        pass  # the client has gone


@dataclass
class ThreadedWorker:
    """A worker served from threads of the calling process (tests, and a page's test suite that
    wants one shared worker): `address` to connect to, `close()` to stop accepting connections."""

    worker: EngineWorker
    address: tuple[str, int]
    listener: Listener

    def close(self) -> None:
        self.listener.close()


def start_in_thread(authkey: bytes, settings: WorkerSettings | None = None, *,
                    measured: dict[str, Callable] | None = None) -> ThreadedWorker:
    """A worker on 127.0.0.1 (a free port) whose runner and acceptor are daemon threads of this process.
    Its timings share this process's GIL: for tests of behaviour, never for measurements."""
    worker = EngineWorker(ModelCache(settings or WorkerSettings.from_env()), authkey, measured=measured)
    listener = Listener(("127.0.0.1", 0), family="AF_INET", backlog=64)
    worker.start_runner()
    threading.Thread(target=worker.serve, args=(listener,), name="engine-acceptor", daemon=True).start()
    return ThreadedWorker(worker, listener.address, listener)


def serve_worker(host: str, port: int, authkey: bytes, *, preload: tuple[ModelRef, ...] = (),
                 settings: WorkerSettings | None = None, on_ready: Callable[[int], None] | None = None) -> None:
    """Run a worker on (host, port) until the process ends. `on_ready(port)` once it listens (port 0:
    the system picked one); the preloads are queued first, so the first visitor finds them warm."""
    set_num_threads()  # torch's CPU threads pinned as the in-process engine pins them (PREFILL_DECODE_THREADS)
    worker = EngineWorker(ModelCache(settings or WorkerSettings.from_env()), authkey)
    listener = Listener((host, port), family="AF_INET", backlog=64)
    worker.start_runner()
    for ref in preload:
        worker.preload(ref)
    bound = listener.address[1]
    log.info("listening on %s (pid %d, protocol v%d)", format_address((host, bound)), os.getpid(), PROTOCOL_VERSION)
    if on_ready is not None:
        on_ready(bound)
    try:
        worker.serve(listener)
    finally:
        listener.close()
