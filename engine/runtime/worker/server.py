"""The engine worker: a process that holds the models and runs every measured forward pass.

    main thread      accepts connections (multiprocessing.connection.Listener) and hands each to
                     the door, never waiting on one; when descriptors or memory run short, it
                     refuses for a moment, never a crash
    the door         ONE thread for every new connection (door.py): the key challenge both ways
                     (within WORKER_HANDSHAKE_DEADLINE_S), then the one call (bounded, within
                     WORKER_CALL_DEADLINE_S), in a bounded pool (peers.PendingHandshakes); no thread
                     is started for a connection before its call is in
    one per call     a session slot (peers.SessionSlots: in all, and per address) and a thread that
                     answers the call, then waits for a cancel or EOF; refused in one keyed error
                     (engine_busy) when slots or threads run short
    one sender each  writes that client's events from its Outbox (peers.py): the runner never waits
                     on a client; one that does not read in time is dropped, and only its call is lost
    the watchdog     deadlines, the `alive` heartbeat, the worker's own stalls (peers.Watchdog)
    the runner       takes measured calls from the queue (queue.py), ONE at a time, and streams
                     their events

Why a process of its own: in the page's process, another visitor's page work (building an SVG,
Streamlit's own server) takes the GIL between a Decode step's ~245 operator calls; measured, a
Decode step's p99 went from 6.5 ms to 1055 ms with one busy thread. Here nothing else runs
while a pass is timed: connection threads sleep in a blocking read, and the runner sends its
events between passes (their cost is the step's `consumer_ms`, never inside `duration_ms`).

The queue: a measured call is answered `queued {ahead: N}` at once (N runs before it, the one
measuring counted), and again whenever the queue moves. Calls are taken in turns by client
(queue.py's ORDER; the client is the peer's address and the call's `client` name), so one client's
20 calls do not all go before another client's one. A call whose connection closes, or that
sends `cancel`, leaves the queue; a running one stops at its next pass boundary (`cancelled`).
Light calls (ping, describe, token_preview, ...) answer from their own thread; a model they need
that is not loaded yet is loaded by the runner, through the queue, like any measured work.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, Listener
from typing import Any

from engine.contract.errors import InputError
from engine.contract.limits import (
    MAX_SEED, MAX_STRETCH_TOKENS, MAX_WORKLOAD_PROMPT_CHARS, WORKER_MAX_CALL_BYTES, WORKER_PROMPT_CHARS_PER_TOKEN,
    check_count,
)
from engine.contract.worker.errors import (
    EngineWorkerError, ProtocolError, RunCancelled, RunStalled, error_from_wire, error_to_wire,
)
from engine.contract.worker.protocol import (
    CLIENT_TYPES, FINAL_TYPES, PROTOCOL_VERSION, ModelRef, client_name, decode,
    encode, format_address, recv_frame,
)
from engine.runtime.model import LoadedModel, set_num_threads
from engine.runtime.worker.door import Door, peer_key
from engine.runtime.worker.jobs import LIGHT, MEASURED, JobContext
from engine.runtime.worker.models import ModelCache, WorkerSettings
from engine.runtime.worker.queue import Job, JobQueue, Measurement
from engine.runtime.worker.peers import Outbox, SessionSlots, Watchdog

log = logging.getLogger("prefill_decode.worker")
# accept() failing for want of descriptors or memory: refuse (wait a moment), never stop serving
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
THREAD_ERRORS = (RuntimeError, MemoryError)  # "can't start new thread", and a stack that cannot be mapped
# A connection's threads (its key challenge and call, its sender) need little stack; 8 MB each (the
# default) would make a few hundred of them reserve gigabytes of address space.
CONNECTION_STACK_BYTES = 2 << 20


class EngineWorker:
    """The worker's state: the models, the queue, the key. `serve(listener)` runs it.

    `measured`: the measured methods' handlers (jobs.MEASURED; a test adds one that holds the queue)."""

    def __init__(self, models: ModelCache, authkey: bytes, measured: dict[str, Callable] | None = None) -> None:
        self.models = models
        self.measured = MEASURED if measured is None else measured
        self.queue = JobQueue()
        self.sessions = SessionSlots()
        self.watchdog = Watchdog()
        self.door = Door(authkey, self._on_call, self._checked_call, self.watchdog)
        settings = models.settings  # a prompt's characters are checked before anything is tokenized:
        self.max_prompt_chars = max(settings.max_prompt_chars,  # the app's cap, or what a stretched prompt needs
                                    WORKER_PROMPT_CHARS_PER_TOKEN * settings.max_prompt_tokens)

    # --- the runner: one measured call at a time ---------------------------------------

    def start_runner(self) -> threading.Thread:
        """The runner thread, and the watchdog's (its clocks and heartbeats: peers.Watchdog)."""
        if not self.watchdog.running:
            self.watchdog.start()
        runner = threading.Thread(target=self._run_forever, name="engine-runner", daemon=True)
        runner.start()
        return runner

    def _run_forever(self) -> None:
        # Pin torch's threads in this thread too: a new thread starts with OpenMP's default (every core)
        # until torch resets it, and a matmul alone does not (measured: 2 on this 2-core machine).
        set_num_threads()
        while True:
            self._run_taken(self.queue.take())

    def _run_taken(self, job: Measurement) -> None:
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

    def _between_units(self, job: Measurement) -> None:
        """A long job's unit boundary (engine/runtime/worker/queue.py): every waiting short job runs now,
        on this thread, while the long one is paused (its own clock leaves the pause out)."""
        resume = None
        while (short := self.queue.take_short()) is not None:
            resume = resume or self.queue.paused(job)
            self._run_taken(short)
        if resume is not None:
            resume()

    def _run(self, job: Measurement) -> None:
        between = (lambda: self._between_units(job)) if job.lane == "long" else (lambda: None)
        ctx = JobContext(self.models, model=self.models.load, emit=job.send, cancelled=job.cancelled.is_set,
                         between_units=between)
        started_at = self.watchdog.note_clock()
        job.send("started", at=time.time())  # the wall clock: a client on this machine places its queue wait
        try:
            result = self.measured[job.method](ctx, job.args)
            stalled = self.watchdog.stalled_since(started_at)
            if stalled and job.method != "load":  # a pass timed across the stall is not a measurement
                raise RunStalled(stalled)
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

    def loaded_via_queue(self, ref: ModelRef, forward: Session | None = None) -> LoadedModel:
        """A loaded model for a light call: loaded by the runner first when needed (the light call's
        client sees the load's queue place and start; an error is raised as the load's own)."""
        lm = self.models.loaded(ref)
        if lm is not None:
            return lm
        outcome: dict[str, Any] = {}

        def sink(kind: str, fields: dict) -> None:
            if kind in ("queued", "started") and forward is not None:
                forward.send_quietly(kind, **fields)  # a light client that left does not cancel the load
            elif kind in ("done", "error"):
                outcome[kind] = fields

        job = Job("load", {"model": ref.to_wire()}, sink, client=forward.client if forward is not None else ())
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
        """Accept connections until the listener is closed (the runner must be started), each handed to
        the door (door.py: its key challenge and call, in one thread for all). When descriptors or memory
        run short, accept() is retried a moment later, and the worker goes on."""
        if self.door.thread is None:
            self.door.start()
        while True:
            try:
                conn = listener.accept()
            except OSError as err:
                if err.errno not in RESOURCE_ERRNOS:
                    return  # closed: the worker is stopping
                self.watchdog.warn("accept", "refusing connections for a moment: %s", err.strerror or err)
                time.sleep(0.05)
                continue
            except MemoryError:
                time.sleep(0.05)
                continue
            address = listener.last_accepted or ("?", 0)
            self.door.admit(conn, str(address[0]), format_address(address))

    def _on_call(self, conn: Connection, host: str, peer: str, message: dict[str, Any]) -> bool:
        """A keyed connection whose call is in (called from the door's thread, so it never waits): a session
        slot (WORKER_MAX_SESSIONS, and WORKER_MAX_SESSIONS_PER_HOST from one peer: its address and replica)
        and a thread of its own (True). False while no slot is free: the call waits at the door for one."""
        key = peer_key(host, message)
        why = self.sessions.take(key)
        if why is not None:
            self.watchdog.warn(f"sessions {key}", "%s's call waits for a session slot: %s", peer, why)
            return False
        try:
            threading.Thread(target=self._session, args=(conn, host, key, peer, message),
                             name=f"engine-session {peer}", daemon=True).start()
            return True
        except THREAD_ERRORS as err:  # "can't start new thread": refuse this one, keep serving the rest
            self._give_slot(key)
            self.watchdog.warn("threads", "refused %s: %s", peer, err)
        self.door.refuse(conn, EngineWorkerError("engine_busy", "the worker is out of threads; try again"))
        conn.close()
        return True

    def _give_slot(self, key: str) -> None:
        self.sessions.give(key)
        self.door.wake()  # a call waiting at the door for a slot may take this one

    def _session(self, conn: Connection, host: str, key: str, peer: str, message: dict[str, Any]) -> None:
        """A keyed connection's call answered, its slot given back, the connection closed."""
        session = Session(conn, host, peer, self.watchdog)
        try:
            self._keyed(session, message)
        except Exception as err:  # noqa: BLE001 - one line, and this session only
            log.error("session %s ended: %s: %s", peer, type(err).__name__, str(err).splitlines()[:1])
        finally:
            self._give_slot(key)
            session.close()

    def _keyed(self, session: Session, message: dict[str, Any]) -> None:
        """Answer the call through the session's outbox (its sender thread writes it)."""
        method, args = self._checked_call(message)
        session.client = turn_of(session.host, message)
        if not session.start_sender():
            self.watchdog.warn("threads", "refused %s's call: no thread to send its events", session.peer)
            session.say_now("error", error=error_to_wire(EngineWorkerError("engine_busy", "the worker is out of "
                                                                              "threads; try again")))
            return
        self.watchdog.watch(session)
        try:
            try:
                self.check_inputs(method, args)
            except InputError as err:
                session.send_quietly("error", error=error_to_wire(err))
            else:
                self._light(session, method, args) if method in LIGHT else self._measured(session, method, args)
            session.outbox.end()
            session.outbox.flush()
        finally:
            session.outbox.drop("the call is over")  # an event for it after now cancels what is left
            self.watchdog.forget(session)

    def _checked_call(self, message: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        method, args = message.get("method"), message.get("args", {})
        known = self.measured.keys() | LIGHT.keys()
        if message["type"] != "call" or not isinstance(args, dict) or method not in known:
            raise ProtocolError("protocol_malformed", f"not a call this worker knows: {str(method)[:40]!r}",
                                why="method", method=str(method)[:40])
        return method, args

    def check_inputs(self, method: str, args: dict[str, Any]) -> None:
        """What must be refused before anything is queued or tokenized: a prompt over the worker's cap
        (prompt_too_many_chars), a stretch target or a seed out of range (InputError)."""
        prompts = [args.get("prompt")]
        if method == "serve_workload" and isinstance(args.get("requests"), list):
            prompts = [r.get("prompt") for r in args["requests"] if isinstance(r, dict)]
            limit = min(self.max_prompt_chars, MAX_WORKLOAD_PROMPT_CHARS)
        else:
            limit = self.max_prompt_chars
        for prompt in prompts:
            if isinstance(prompt, str) and len(prompt) > limit:
                raise InputError("prompt_too_many_chars", f"the prompt has {len(prompt):,} characters; this worker "
                                 f"takes at most {limit:,}", num_chars=len(prompt), limit=limit)
        if "target_tokens" in args:
            check_count("target_tokens", args["target_tokens"], MAX_STRETCH_TOKENS)
        config = args.get("config")
        seed = config.get("seed", 0) if isinstance(config, dict) and method != "serve_workload" else args.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
            raise InputError("sampling_range", f"seed={str(seed)[:40]} is out of range (0 to {MAX_SEED})",
                             name="seed", value=str(seed)[:40])

    def _light(self, session: Session, method: str, args: dict[str, Any]) -> None:
        ctx = JobContext(self.models, model=lambda ref: self.loaded_via_queue(ref, session), emit=session.send,
                         cancelled=lambda: session.outbox.dropped is not None, queue=self.queue)
        try:
            result = LIGHT[method](ctx, args)
        except Exception as err:  # noqa: BLE001 - keyed, back to the client
            session.send_quietly("error", error=error_to_wire(err))
            return
        try:
            session.send_quietly("done", result=result)
        except (TypeError, ValueError) as err:  # a result JSON cannot carry: a bug, said to the client
            session.send_quietly("error", error=error_to_wire(err))

    def _measured(self, session: Session, method: str, args: dict[str, Any]) -> None:
        """Queue the call, then wait on the connection: `cancel`, or EOF before the end, cancels it.
        Once the call's last event is in its outbox, the sender writes it and shuts the connection, so
        this read ends too (a client that keeps a finished connection open holds nothing)."""
        job = Job(method, args, sink=session.sink, client=session.client)
        session.job = job
        self.queue.submit(job)
        while not job.finished.is_set():
            try:
                message = decode(recv_frame(session.conn, WORKER_MAX_CALL_BYTES), CLIENT_TYPES)
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


def turn_of(host: str, message: dict[str, Any]) -> tuple[str, str, str]:
    """Whose turn a call takes in the queue: its peer's address, the replica it names (one app process), and
    its client name (a page session): turns go by address first, then replica, then name (queue.py)."""
    return host, client_name(message.get("replica")), client_name(message.get("client"))


class Session:
    """One keyed connection: its peer, its outbox (and sender thread), its call's job while it has one."""

    def __init__(self, conn: Connection, host: str, peer: str, watchdog: Watchdog) -> None:
        self.conn, self.host, self.peer, self.watchdog = conn, host, peer, watchdog
        self.outbox = Outbox(conn, peer)
        self.client: tuple[str, ...] = ()  # whose turn its call takes (queue.py): host, replica, name
        self.job: Job | None = None
        self.sender: threading.Thread | None = None

    def start_sender(self) -> bool:
        sender = threading.Thread(target=self.outbox.run, name=f"engine-send {self.peer}", daemon=True)
        try:
            sender.start()
        except THREAD_ERRORS:
            return False
        self.sender = sender
        return True

    def close(self) -> None:
        """Close the connection once its sender has stopped writing to it (the outbox is dropped or ended
        by now; a closed descriptor's number may be reused at once by a new connection)."""
        self.outbox.drop("the call is over")
        if self.sender is not None:
            self.sender.join(self.outbox.deadline_s)
        self.conn.close()

    def send(self, kind: str, **fields: Any) -> None:
        """Into the outbox, never waiting (EOFError once the client was dropped)."""
        self.outbox.put(kind, **fields)

    def sink(self, kind: str, fields: dict[str, Any]) -> None:
        """A measured call's events; after its last one the sender writes what is left and shuts the
        connection (so a client that keeps a finished connection open holds nothing)."""
        self.outbox.put(kind, **fields)
        if kind in FINAL_TYPES:
            self.outbox.end()

    def send_quietly(self, kind: str, **fields: Any) -> None:
        try:
            self.outbox.put(kind, **fields)
        except (OSError, EOFError):
            pass  # the client has gone

    def say_now(self, kind: str, **fields: Any) -> None:
        """One message before there is a sender (a refused call), written at once within the send deadline."""
        try:
            with self.watchdog.deadline(self.conn, self.outbox.deadline_s):
                self.conn.send_bytes(encode(kind, **fields))
        except (OSError, EOFError):
            pass

    def beat(self) -> None:
        """The heartbeat: `alive` to a call still open."""
        if self.job is None or not self.job.finished.is_set():
            self.send_quietly("alive")

    def drop(self, why: str) -> None:
        """Cancel this client's call and close it (it did not read in time); the others go on."""
        self.outbox.drop(why)
        if self.job is not None:
            self.job.cancelled.set()


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
    threading.stack_size(CONNECTION_STACK_BYTES)  # threads started from now on: connections, not the runner
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
