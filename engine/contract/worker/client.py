"""EngineClient: the page's side of the engine worker. The same calls for a local or a remote worker.

    client = EngineClient.from_env()          # PREFILL_DECODE_ENGINE=HOST:PORT, else a local worker
    model = ModelRef("default", "auto", "auto")
    for event in client.stream_trace(model, "法国的首都是", GenerationConfig(max_new_tokens=8)):
        if isinstance(event, Queued): ...     # event.ahead runs before this one
        elif isinstance(event, Pass): ...     # event.trace: the RequestTrace so far (token by token)
    trace = client.generate(model, prompt, cfg)              # the finished RequestTrace
    client.stream_repeats(model, prompt, cfg, repeats=5)     # run 1 streamed, then Done(all 5 traces)
    client.sweep(model, "prefill", (16, 64), repeats=5)      # a Sweep; cache, attention, serving alike

Each call opens its own connection (a key challenge, ~1 ms on this machine) and closes it when
its result has come, so calls from many threads (a page's sessions) never share a connection. A
connection the worker closes before the call is in (a burst past its door's bounds) is opened
again, a few times; it never leads to a worker being replaced: only one that answers no liveness
check (`ping`, which a busy worker answers between its passes) is. A
call's events are an iterator; leaving it early (a page that is rerun or closed: Streamlit
stops the script inside the loop) closes the connection, which cancels the call in the worker.

Results are rebuilt as the engine's own frozen types by the contract's one codec (engine/contract/codec.py:
strict types, no unknown field, then the meaning checks), equal to what the worker computed. An
engine error raised in the worker is raised here as the same class, with its key and params.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import os
import secrets
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from contextlib import closing
from multiprocessing.connection import AuthenticationError
from typing import Any, TypeVar

from engine.contract import config
from engine.contract.cost import DeviceSpec, ModelShape
from engine.contract.engine_queue import QueueHistory
from engine.contract.results import CacheComparison, DecodeAttention, DecodeOps, GenerationConfig
from engine.contract.serving.config import ServeConfig
from engine.contract.serving.trace import ServingRun
from engine.contract.serving.workloads import WorkloadRequest
from engine.contract.sweep import Sweep
from engine.contract.limits import WORKER_MAX_CALL_S, WORKER_MAX_RESULT_BYTES, WORKER_SILENCE_S, WORKER_STALL_S
from engine.contract.meaning import (
    MAX_TRACE_STEPS, MeaningError, check_comparison, check_serving, check_step, check_sweep,
    check_time, check_trace,
)
from engine.contract.trace import RequestTrace, Step, StepsSoFar
from engine.contract.worker import calls
from engine.contract.worker.calls import CALLS, ModelDescription, TokenPreview
from engine.contract.codec import convert, decode, to_plain
from engine.contract.worker.errors import (
    EngineWorkerError, ProtocolError, RunCancelled, RunStalled, WorkerAuthError, WorkerSetupError, WorkerSilent,
    WorkerUnreachable, error_from_wire,
)
from engine.contract.worker.local import DYING_GRACE_S, LocalWorker
from engine.contract.worker.protocol import (
    FINAL_TYPES, HANDSHAKE_TIMEOUT_S, HEARTBEAT_S, WORKER_TYPES, Channel, ModelRef, connect,
    format_address, read_token,
)
from engine.contract.worker.pool import Address, WorkerPool, parse_addresses

T = TypeVar("T")
MAX_REPEATS = 20  # traces in one trace_repeats result (engine.runtime.repeats' cap)
STALL_CHECKED = calls.names(measured=True, measurement=True)  # calls whose result is a measurement
CLIENT_STALL_S = WORKER_STALL_S + 2 * HEARTBEAT_S  # no heartbeat this long in a run: the worker stood still
OPEN_TRIES = 5  # a connection closed before its call was in is opened again this many times in all
OPEN_BACKOFF_S = 0.05  # the first wait before opening again (doubled each time, with jitter)
LIVENESS_TIMEOUT_S = 10.0  # a local worker that does not answer `ping` this long (a light call) is stuck
REPLICA = secrets.token_hex(4)  # this process, one replica of the app: the worker's turns and slots go per replica



# --- events -------------------------------------------------------------------------

@dataclass(frozen=True)
class Queued:
    """`ahead` runs are before this one in the worker's queue (the one measuring now counted)."""

    ahead: int


@dataclass(frozen=True)
class Started:
    """This call's measured run has begun; `at`: when, on the worker's wall clock (time.time() seconds;
    None from a worker that does not say), so a client on the same machine can time its queue wait."""

    at: float | None = None


@dataclass(frozen=True)
class Pass:
    """stream_trace: the trace after one more forward pass (the last one is finished)."""

    trace: RequestTrace


@dataclass(frozen=True)
class Progress:
    """`done` of `total` parts finished (sweep points, engine modes, serving requests)."""

    done: int
    total: int


@dataclass(frozen=True)
class Done:
    """The call's result, rebuilt (the last event)."""

    result: Any


@dataclass(frozen=True)
class Shared:
    """The worker measured this call once for `visitors` identical calls (engine/runtime/worker/queue.py);
    the measurement began at `measured_at` (seconds since the epoch). Sent just before Done."""

    visitors: int
    measured_at: float


@dataclass(frozen=True)
class Waiting:
    """Nothing came from the worker for the client's `heartbeat_s` (the call is queued, or in a long
    pass). Only a client made with `heartbeat_s` sends it: a page redraws on it, and Streamlit stops
    a script whose page was rerun or closed only at a redraw, so a queued call is cancelled at once."""


Event = Queued | Started | Pass | Progress | Shared | Done | Waiting
OnEvent = Callable[[Event], None] | None


# --- the client ---------------------------------------------------------------------

class CallClock:
    """One call's clocks, as the client keeps them. `waited`: the seconds this client sat waiting for
    the worker since its last message (a page drawing between two reads is not counted: messages wait
    in the socket meanwhile). Silent: `waited` reached `silence_s`, or the call ran past `max_s`.
    Stalled: after `started`, a measured call waited longer than `stall_s` (heartbeats come every
    HEARTBEAT_S, so the worker stood still, and a pass timed across that gap is not a measurement)."""

    def __init__(self, silence_s: float, measured: bool, stall_s: float = CLIENT_STALL_S,
                 max_s: float = WORKER_MAX_CALL_S) -> None:
        self.silence_s, self.measured, self.stall_s, self.max_s = silence_s, measured, stall_s, max_s
        self.began = time.monotonic()
        self.waited = 0.0
        self.running = False
        self.stalled = 0.0  # the longest such wait, seconds (0.0: none)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.began

    def wait(self, channel: Channel, heartbeat_s: float | None) -> bool:
        """Whether a message (or the connection's end) is there, waiting at most a heartbeat or what is left."""
        step = max(0.0, min(self.silence_s if heartbeat_s is None else heartbeat_s, self.silence_s - self.waited))
        before = time.monotonic()
        try:
            arrived = channel.conn.poll(step)
        except (OSError, EOFError):
            return True  # the read that follows says what happened
        self.waited += time.monotonic() - before
        return arrived

    def silent(self) -> bool:
        return self.waited >= self.silence_s or self.elapsed > self.max_s

    def heard(self, kind: str) -> None:
        if self.running and self.measured and self.waited > self.stall_s:
            self.stalled = max(self.stalled, self.waited)
        self.waited = 0.0
        self.running = self.running or kind == "started"


class EngineClient:
    """Calls to one engine worker (or to a pool of them: `pool`, each call to the shortest queue).
    Thread-safe: every call has a connection of its own."""

    pool: WorkerPool | None = None  # several workers (PREFILL_DECODE_ENGINE=A,B): the address is chosen per call

    def __init__(self, address: tuple[str, int] | None, authkey: bytes | None, *, local: LocalWorker | None = None,
                 connect_timeout_s: float = HANDSHAKE_TIMEOUT_S, heartbeat_s: float | None = None,
                 silence_s: float = WORKER_SILENCE_S, max_call_s: float = WORKER_MAX_CALL_S,
                 client_name: str = "") -> None:
        if local is None and (address is None or not authkey):
            raise WorkerSetupError("engine_no_token", "a remote engine worker needs its address and token",
                                   host=address[0] if address else "")
        self._address, self._authkey, self.local = address, authkey, local
        self.connect_timeout_s = connect_timeout_s
        self.heartbeat_s = heartbeat_s  # a Waiting event after this long without a message; None: never
        self.silence_s = silence_s  # nothing at all from the worker this long: WorkerSilent
        self.max_call_s = max_call_s  # no call takes longer, heartbeats or not: WorkerSilent
        self.client_name = client_name or secrets.token_hex(4)  # whose turn in the worker's queue
        self.replica = REPLICA  # whose peer: the worker counts session slots and turns per address and replica

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ, *, heartbeat_s: float | None = None) -> EngineClient:
        """PREFILL_DECODE_ENGINE=HOST:PORT: that worker, with the token of PREFILL_DECODE_ENGINE_TOKEN_FILE
        (or PREFILL_DECODE_ENGINE_TOKEN); unset: a local worker, started on the first call."""
        address = config.read_text(environ, config.ENGINE)
        if not address:
            settings = config.settings_from_env(environ)
            return cls(None, None, local=LocalWorker(device=settings.device, dtype=settings.dtype, environ=environ),
                       heartbeat_s=heartbeat_s)
        token = read_token(config.read_text(environ, config.ENGINE_TOKEN_FILE) or None, environ)
        addresses = parse_addresses(address)  # HOST:PORT, or several: a pool (engine/contract/worker/pool.py)
        client = cls(addresses[0], token, heartbeat_s=heartbeat_s)
        if len(addresses) > 1:
            client.pool = WorkerPool(addresses, lambda where: queue_length(where, token))
        return client

    def named(self, client_name: str) -> EngineClient:
        """This client under another name for the worker's turns (one per page session, say): the same
        worker, local process and settings; only whose turn its calls take differs."""
        other = copy.copy(self)
        other.client_name = client_name or self.client_name
        return other

    @property
    def address(self) -> tuple[str, int]:
        """Where the worker listens (a local one is started first, when needed; a pool's shortest queue)."""
        if self.pool is not None:
            return self.pool.choose()
        return self.local.address() if self.local is not None else self._address

    def close(self) -> None:
        """Stop the local worker, if this client started one (a remote one keeps running)."""
        if self.local is not None:
            self.local.stop()

    # --- the calls ------------------------------------------------------------------

    def stream_trace(self, model: ModelRef, prompt: str, config: GenerationConfig = GenerationConfig(), *,
                     max_prompt_tokens: int | None = None, request_id: str = "r0") -> Iterator[Event]:
        """Queued / Started, then a Pass per forward pass (the last one finished), then Done(trace).
        The worker sends the Prefill's pass at once and later passes a few at a time (every 50 ms)."""
        args = _trace_args(model, prompt, config, max_prompt_tokens, request_id, stream=True)
        return self._stream("trace", args, _trace_done)

    def stream_repeats(self, model: ModelRef, prompt: str, config: GenerationConfig = GenerationConfig(), *,
                       repeats: int, max_prompt_tokens: int | None = None, request_id: str = "r0"
                       ) -> Iterator[Event]:
        """The request `repeats` times in one queued call (engine.runtime.repeats): Queued / Started, run 1 as
        stream_trace streams it (a Pass per forward pass, the last one finished), a Progress(done,
        repeats) as each run finishes, then Done(every run's RequestTrace, run 1 first)."""
        args = _trace_args(model, prompt, config, max_prompt_tokens, request_id, repeats=repeats)
        return self._stream("trace_repeats", args, _repeats_done)

    def generate(self, model: ModelRef, prompt: str, config: GenerationConfig = GenerationConfig(), *,
                 max_prompt_tokens: int | None = None, request_id: str = "r0", on_event: OnEvent = None
                 ) -> RequestTrace:
        """The finished trace of one request (no per-pass events: the worker's loop never waits on a send)."""
        args = _trace_args(model, prompt, config, max_prompt_tokens, request_id, stream=False)
        return checked_trace(self._result("trace", args, on_event))

    def modes(self, model: ModelRef, prompt: str, *, num_tokens: int, modes: Sequence[str],
              max_prompt_tokens: int | None = None, on_event: OnEvent = None) -> dict[str, RequestTrace]:
        """The prompt once per engine mode, back to back in one queued call: {mode: its trace}."""
        args = {"model": model.to_wire(), "prompt": prompt, "num_tokens": num_tokens, "modes": list(modes),
                "max_prompt_tokens": max_prompt_tokens}
        return self._rebuilt("modes", args, lambda runs: {
            str(mode): checked("trace", functools.partial(decode, run_json, RequestTrace), check_trace)
            for mode, run_json in list(runs.items())[:len(modes)]}, on_event=on_event)

    def compare_cache(self, model: ModelRef, prompt_ids: Sequence[int], max_new_tokens: int, *,
                      on_event: OnEvent = None) -> CacheComparison:
        args = {"model": model.to_wire(), "prompt_ids": list(prompt_ids), "max_new_tokens": max_new_tokens}
        return self._rebuilt("compare_cache", args, check=check_comparison, on_event=on_event)

    def decode_attention(self, model: ModelRef, prompt_ids: Sequence[int], output_ids: Sequence[int],
                         decode_index: int, *, on_event: OnEvent = None) -> DecodeAttention:
        args = {"model": model.to_wire(), "prompt_ids": list(prompt_ids), "output_ids": list(output_ids),
                "decode_index": decode_index}
        return self._rebuilt("decode_attention", args, on_event=on_event)

    def sweep(self, model: ModelRef, kind: str, points: Sequence[int] | None = None, *, repeats: int = 3,
              batch_context: int = 128, cap: int | None = None, seed: int = 0, on_event: OnEvent = None) -> Sweep:
        """engine.runtime.sweep.run_sweep in the worker; a Progress event after each point."""
        args = {"model": model.to_wire(), "kind": kind, "points": None if points is None else list(points),
                "repeats": repeats, "batch_context": batch_context, "cap": cap, "seed": seed}
        return self._rebuilt("sweep", args, _sweep, check_sweep, on_event=on_event)

    def serve_workload(self, model: ModelRef, requests: Sequence[WorkloadRequest],
                       config: ServeConfig | Mapping[str, Any] | None = None, *, scenario: str = "custom",
                       on_event: OnEvent = None) -> ServingRun:
        """engine.runtime.serving.engine.run_workload in the worker; Progress events as requests finish. `config`: a
        ServeConfig, or its fields as plain values (`slo` as {"ttft_ms", "tpot_ms"}), checked in the
        worker (a bad setting raises its InputError here); None: the defaults."""
        plain = to_plain(config) if dataclasses.is_dataclass(config) else dict(config or {})
        args = {"model": model.to_wire(), "requests": [to_plain(r) for r in requests], "config": plain,
                "scenario": scenario}
        return self._rebuilt("serve_workload", args, functools.partial(decode, cls=ServingRun), check_serving,
                             on_event=on_event)

    def decode_ops(self, model: ModelRef) -> DecodeOps:
        return self._rebuilt("decode_ops", {"model": model.to_wire()})

    def host_us_per_call(self, device: str) -> float:
        return self._rebuilt("host_us_per_call", {"device": device}, float,
                             lambda us: check_time("host_us_per_call", us))

    def machine_spec(self, device: str | None = None, *, fresh: bool = False) -> DeviceSpec:
        """The worker's machine measured (kept per worker process; `fresh`: measured anew)."""
        return self._rebuilt("machine_spec", {"device": device, "fresh": fresh})

    def load(self, model: ModelRef, *, on_event: OnEvent = None) -> ModelDescription:
        """Load (and warm) a model now, through the queue; its description."""
        return self._rebuilt("load", {"model": model.to_wire()}, _description, _load_time, on_event=on_event)

    def describe(self, model: ModelRef) -> ModelDescription:
        return self._rebuilt("describe", {"model": model.to_wire()}, _description, _load_time)

    def model_shape(self, model: ModelRef) -> ModelShape:
        return self._rebuilt("model_shape", {"model": model.to_wire()})

    def model_choices(self, device: str = "auto", dtype: str = "auto") -> tuple[str, ...]:
        """The models this worker offers: "default", its folders, the presets its device holds."""
        return self._rebuilt("model_choices", {"device": device, "dtype": dtype}, _names)

    def token_preview(self, model: ModelRef, prompt: str, target_tokens: int = 0) -> TokenPreview:
        args = {"model": model.to_wire(), "prompt": prompt, "target_tokens": target_tokens}
        return self._rebuilt("token_preview", args,
                             lambda data: TokenPreview(data["prompt"], tuple(data["pieces"]), data["natural"]))

    def queue_history(self) -> QueueHistory:
        """The worker's queue of the last minutes: kinds of job, waits, runs, pauses (no visitor named)."""
        return self._rebuilt("queue_history", {}, QueueHistory.from_plain)

    def ping(self) -> dict[str, Any]:
        """Who answers: pid, protocol, python, torch and transformers versions, torch threads."""
        return self._result("ping", {})

    # --- the plumbing ---------------------------------------------------------------

    def call(self, method: str, args: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        """One call's raw events, (type, fields), up to its last; an `error` is raised as its exception.
        Closing the iterator early closes the connection, which cancels the call in the worker.

        Its deadlines (CallClock): nothing from the worker, not even its `alive` heartbeat, for
        `silence_s` of waiting raises WorkerSilent (a local worker is started again first); so does a
        call past WORKER_MAX_CALL_S. A measured run during which the worker went quiet for longer than
        a heartbeat allows (it stood still) raises RunStalled instead of giving its result."""
        since = self._check_local()
        channel, where = self._open_call(since, method, args)
        clock = CallClock(self.silence_s, measured=method in STALL_CHECKED, max_s=self.max_call_s)
        try:
            while True:
                if not clock.wait(channel, self.heartbeat_s):
                    if clock.silent():
                        raise self._silent(where, since, clock)
                    if self.heartbeat_s is not None:
                        yield "waiting", {}
                    continue
                message = self._receive(channel, where, since)
                kind = message.pop("type")
                message.pop("v", None)
                clock.heard(kind)
                if clock.silent():  # past the longest call (a worker that says `queued` for ever)
                    raise self._silent(where, since, clock)
                if kind == "alive":
                    continue
                if kind == "error":
                    raise error_from_wire(message.get("error"))
                if kind == "cancelled":
                    raise RunCancelled()
                if kind == "done" and clock.stalled:
                    raise RunStalled(clock.stalled)
                if kind == "done" and isinstance(message.get("shared"), dict):
                    yield "shared", message.pop("shared")  # one measurement served several visitors
                yield kind, message
                if kind in FINAL_TYPES:
                    return
        finally:
            channel.close()

    def _result(self, method: str, args: dict[str, Any], on_event: OnEvent = None) -> Any:
        with closing(self.call(method, args)) as events:  # on_event may raise (a page stopped): cancel at once
            for kind, fields in events:
                if kind == "done":
                    return fields.get("result")
                if on_event is not None:
                    on_event(_event(kind, fields))
        raise ProtocolError("protocol_malformed", "the call ended without a result", why="result")

    def _rebuilt(self, method: str, args: dict[str, Any], build: Callable[[Any], T] | None = None,
                 check: Callable[[T], None] | None = None, *, on_event: OnEvent = None) -> T:
        """The call's result rebuilt by `build` (None: as the table's result type, engine.contract.codec)
        and checked, any refusal named as the table names the result (`checked`)."""
        kind = CALLS[method]
        data = self._result(method, args, on_event)
        rebuild = build if build is not None else functools.partial(convert, cls=kind.result)
        return checked(kind.what, lambda: rebuild(data), check)

    def _stream(self, method: str, args: dict[str, Any], finish: Callable[..., Iterator[Event]]) -> Iterator[Event]:
        """A streamed call's events (the one pass-assembly loop of stream_trace and stream_repeats): each
        `pass` event's steps, checked and in order, a Pass each (the header so far with the steps up to
        it; a real tuple once the header is finished); `done` as `finish(result, header, steps)` says."""
        header: RequestTrace | None = None
        steps: list[Step] = []
        for kind, fields in self.call(method, args):
            if kind == "pass":
                header = _header(fields, header)
                for step in _steps(fields, steps):  # the passes since the last event: one Pass each
                    steps.append(step)
                    yield Pass(dataclasses.replace(header, steps=tuple(steps) if header.finished else
                                                   StepsSoFar(steps)))
            elif kind == "done":
                yield from finish(fields.get("result"), header, steps)
            else:
                yield _event(kind, fields)

    def _silent(self, where: str, since: int | None, clock: CallClock) -> WorkerSilent:
        """The worker stopped answering: a local one that fails its liveness check too is stopped and started
        again (the app's own advice); one that answers is busy, never killed."""
        if self.local is not None and not self._alive():
            self.local.replace_stuck(since)
        return WorkerSilent(where, clock.waited if clock.waited >= clock.silence_s else clock.elapsed,
                            local=self.local is not None)

    def _alive(self) -> bool:
        """The liveness check: the worker answers a light call (from its connection's own thread, so a worker
        busy measuring answers it too) within LIVENESS_TIMEOUT_S."""
        probe = EngineClient(self.address, self._key(), connect_timeout_s=LIVENESS_TIMEOUT_S,
                             silence_s=LIVENESS_TIMEOUT_S, max_call_s=LIVENESS_TIMEOUT_S)
        try:
            return isinstance(probe.ping(), dict)
        except (EngineWorkerError, OSError, EOFError):
            return False

    def _check_local(self) -> int | None:
        """The local worker's generation this call runs on (restarting a dead one raises first)."""
        if self.local is None:
            return None
        self.local.ensure_alive()
        return self.local.generation

    def _key(self) -> bytes:
        return self.local.authkey if self.local is not None else self._authkey

    def _open_call(self, since: int | None, method: str, args: dict[str, Any]) -> tuple[Channel, str]:
        """A connection with this call sent on it. One that closes before the call is in (the worker's door
        pushed it out in a burst, or it hung up) is opened again, up to OPEN_TRIES times, after a short
        wait; then the usual WorkerUnreachable (WorkerRestarted when a local worker had died)."""
        for attempt in range(OPEN_TRIES):
            channel, where = self._open(since, last=attempt == OPEN_TRIES - 1)
            if channel is None:
                time.sleep(OPEN_BACKOFF_S * 2 ** attempt * (0.5 + secrets.randbelow(1000) / 1000))
                continue
            try:
                channel.send("call", method=method, args=args, client=self.client_name, replica=self.replica)
                return channel, where
            except (OSError, EOFError) as err:
                channel.close()
                if attempt == OPEN_TRIES - 1:
                    self._lost(since, during_run=False)
                    raise WorkerUnreachable(where, _reason(err), local=self.local is not None) from None
        raise AssertionError("unreachable: the last try returns or raises")

    def _open(self, since: int | None, last: bool = True) -> tuple[Channel | None, str]:
        """A keyed connection, or (None, where) when it closed during the key challenge and `last` is False
        (the caller tries again). A local worker is replaced only when it also fails the liveness check."""
        address = self.address
        where = format_address(address)
        try:
            conn = connect(address, self._key(), self.connect_timeout_s)
        except AuthenticationError:
            self._lost(since, during_run=False)
            raise WorkerAuthError(where) from None
        except AssertionError:  # the first frame was not a key challenge: not an engine worker
            raise WorkerUnreachable(where, "what answers there is not an engine worker") from None
        except (OSError, EOFError) as err:
            if not last and isinstance(err, (EOFError, ConnectionResetError, BrokenPipeError)):
                return None, where  # closed during the challenge: open it again
            self._lost(since, during_run=False)
            if self.local is not None and isinstance(err, (EOFError, TimeoutError)) and not self._alive():
                self.local.replace_stuck(since)  # alive, but it answers no light call either: stuck
            raise WorkerUnreachable(where, _reason(err), local=self.local is not None) from None
        return Channel(conn, WORKER_TYPES, WORKER_MAX_RESULT_BYTES), where

    def _receive(self, channel: Channel, where: str, since: int | None) -> dict[str, Any]:
        try:
            return channel.recv()
        except (EOFError, OSError) as err:
            self._lost(since, during_run=True)
            raise WorkerUnreachable(where, f"the connection closed during the call ({_reason(err)})",
                                    local=self.local is not None) from None

    def _lost(self, since: int | None, during_run: bool) -> None:
        """A connection that failed: if the local worker died, restart it and raise WorkerRestarted."""
        if self.local is not None:
            self.local.ensure_alive(during_run=during_run, since=since, grace_s=DYING_GRACE_S)


def _event(kind: str, fields: dict[str, Any]) -> Event:
    if kind == "queued":
        return Queued(int(fields["ahead"]))
    if kind == "started":
        at = fields.get("at")
        return Started(float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) and math.isfinite(at)
                       else None)
    if kind == "progress":
        return Progress(int(fields["done"]), int(fields["total"]))
    if kind == "shared":
        return Shared(int(fields["visitors"]), float(fields["measured_at"]))
    if kind == "waiting":
        return Waiting()
    raise ProtocolError("protocol_malformed", f"unexpected event {kind!r}", why="type", type=kind)


def _trace_args(model: ModelRef, prompt: str, config: GenerationConfig, max_prompt_tokens: int | None,
                request_id: str, **more: Any) -> dict[str, Any]:
    """A trace call's arguments, in the wire's order (`more`: stream or repeats, after the config)."""
    return {"model": model.to_wire(), "prompt": prompt, "config": to_plain(config), **more,
            "max_prompt_tokens": max_prompt_tokens, "request_id": request_id}


def _trace_done(result: Any, header: RequestTrace | None, steps: list[Step]) -> Iterator[Event]:
    """stream_trace's end: the passes the worker had gathered and not yet sent, the finished one, Done."""
    trace = checked_trace(result)
    every = list(trace.steps)
    for n in range(len(steps) + 1, len(every)):
        yield Pass(dataclasses.replace(header or trace, steps=StepsSoFar(every, n)))
    yield Pass(trace)
    yield Done(trace)


def _repeats_done(result: Any, header: RequestTrace | None, steps: list[Step]) -> Iterator[Event]:
    """stream_repeats' end: Done with every run's trace (run 1's passes came already)."""
    yield Done(_traces(result))


def _description(data: dict[str, Any]) -> ModelDescription:
    return convert(data, ModelDescription)


def _load_time(description: ModelDescription) -> None:
    check_time("load_ms", description.load_ms)


def _names(data: Any) -> tuple[str, ...]:
    """The worker's model choices: a list of names."""
    if not isinstance(data, list) or not all(isinstance(name, str) for name in data):
        raise TypeError("the model choices are a list of names")
    return tuple(data)


# --- results checked before anything is drawn ----------------------------------------

def checked(what: str, build: Callable[[], T], check: Callable[[T], None] | None = None) -> T:
    """`build()`'s value (engine.contract.codec: its fields of the types their hints name, strict) passing
    `check` (engine.contract.meaning); anything else a worker sent is one ProtocolError (key
    protocol_malformed, why "meaning"), never an exception from inside a figure."""
    try:
        value = build()
        if check is not None:
            check(value)
        return value
    except ProtocolError:
        raise
    except (MeaningError, TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError) as err:
        reason = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        raise ProtocolError("protocol_malformed", f"the engine worker's {what} was refused: {reason}",
                            why="meaning", what=what) from None


def checked_trace(data: Any) -> RequestTrace:
    """A finished trace from the worker: its step count before one Step is built (RequestTrace.upgrade), then
    types and meaning."""
    return checked("trace", lambda: convert(data, RequestTrace), check_trace)


def _traces(data: Any) -> tuple[RequestTrace, ...]:
    traces = data.get("traces") if isinstance(data, dict) else None
    if not isinstance(traces, list) or not 1 <= len(traces) <= MAX_REPEATS:
        raise ProtocolError("protocol_malformed", f"the engine worker's repeats are 1 to {MAX_REPEATS} traces",
                            why="meaning", what="repeats")
    return tuple(checked_trace(t) for t in traces)


def _sweep(text: Any) -> Sweep:
    return decode(text, Sweep)  # bounded first (engine.contract.codec)


def _header(fields: dict[str, Any], header: RequestTrace | None) -> RequestTrace:
    """A streamed pass's trace header (the first pass carries it; later ones may repeat it)."""
    if fields.get("header") is not None:
        plain = fields["header"]
        header = checked("trace header", lambda: convert({**plain, "steps": []}, RequestTrace),
                         functools.partial(check_trace, header=True))
    if header is None:
        raise ProtocolError("protocol_malformed", "a pass before the trace's header", why="pass")
    return header


def _steps(fields: dict[str, Any], so_far: list[Step]) -> list[Step]:
    """A pass event's steps, each checked, in order after `so_far`; never more than the engine's cap."""
    plain = fields.get("steps")
    if not isinstance(plain, list) or len(so_far) + len(plain) > MAX_TRACE_STEPS:
        raise ProtocolError("protocol_malformed", f"a streamed trace is at most {MAX_TRACE_STEPS} passes",
                            why="meaning", what="pass")
    steps: list[Step] = []
    for data in plain:
        before = steps[-1] if steps else so_far[-1] if so_far else None
        steps.append(checked("pass", functools.partial(_next_step, data, before, len(so_far) + len(steps))))
    return steps


def _next_step(data: Any, before: Step | None, n: int) -> Step:
    """Pass `n` rebuilt and checked: its own meaning, its index, its start after the pass before it."""
    step = convert(data, Step)
    check_step(step, f"steps[{n}]")
    if step.index != n or (before is not None and step.start_ms < before.end_ms):
        raise MeaningError(f"steps[{n}] is out of order")
    return step


def _reason(err: BaseException) -> str:
    return getattr(err, "strerror", None) or str(err) or type(err).__name__


POOL_PING_TIMEOUT_S = 2.0  # a pool's worker that has not answered its ping by then is passed over for this call


def queue_length(address: Address, authkey: bytes | None) -> int | None:
    """One pool worker's queue (its ping's `queue_length`: measured calls waiting or running; 0 when it
    reports none), or None when it does not answer."""
    try:
        answer = EngineClient(address, authkey, connect_timeout_s=POOL_PING_TIMEOUT_S).ping()
    except (EngineWorkerError, OSError, EOFError):
        return None
    length = answer.get("queue_length") if isinstance(answer, dict) else None
    return length if isinstance(length, int) and not isinstance(length, bool) and length >= 0 else 0
