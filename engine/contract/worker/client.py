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
call's events are an iterator; leaving it early (a page that is rerun or closed: Streamlit
stops the script inside the loop) closes the connection, which cancels the call in the worker.

Results are rebuilt as the engine's own frozen types (RequestTrace, Sweep, ServingRun through
their JSON; the rest through engine/contract/worker/codec.py), equal to what the worker computed. An
engine error raised in the worker is raised here as the same class, with its key and params.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from contextlib import closing
from multiprocessing.connection import AuthenticationError
from typing import Any

from engine.contract import config
from engine.contract.cost import DeviceSpec, ModelShape
from engine.contract.results import CacheComparison, DecodeAttention, DecodeOps, GenerationConfig
from engine.contract.serving.config import ServeConfig
from engine.contract.serving.trace import ServingRun
from engine.contract.serving.workloads import WorkloadRequest
from engine.contract.sweep import Sweep
from engine.contract.trace import ModelInfo, RequestTrace, Step, StepsSoFar
from engine.contract.worker.codec import from_plain, to_plain
from engine.contract.worker.errors import (
    EngineWorkerError, ProtocolError, RunCancelled, WorkerAuthError, WorkerSetupError, WorkerUnreachable,
    error_from_wire,
)
from engine.contract.worker.local import DYING_GRACE_S, LocalWorker
from engine.contract.worker.protocol import (
    FINAL_TYPES, HANDSHAKE_TIMEOUT_S, WORKER_TYPES, Channel, ModelRef, connect, format_address,
    read_token,
)
from engine.contract.worker.pool import Address, WorkerPool, parse_addresses



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
class Waiting:
    """Nothing came from the worker for the client's `heartbeat_s` (the call is queued, or in a long
    pass). Only a client made with `heartbeat_s` sends it: a page redraws on it, and Streamlit stops
    a script whose page was rerun or closed only at a redraw, so a queued call is cancelled at once."""


Event = Queued | Started | Pass | Progress | Done | Waiting
OnEvent = Callable[[Event], None] | None


@dataclass(frozen=True)
class ModelDescription:
    """A loaded model, as the page needs it: its ModelInfo, the device it runs on, its load time."""

    info: ModelInfo
    device: str  # torch's name, e.g. "cpu", "cuda:0"
    load_ms: float

    @property
    def device_type(self) -> str:
        return self.device.split(":")[0]


@dataclass(frozen=True)
class TokenPreview:
    """The prompt the model will get (stretched to a target), its token pieces, the typed prompt's count."""

    prompt: str
    pieces: tuple[str, ...]
    natural: int


# --- the client ---------------------------------------------------------------------

class EngineClient:
    """Calls to one engine worker (or to a pool of them: `pool`, each call to the shortest queue).
    Thread-safe: every call has a connection of its own."""

    pool: WorkerPool | None = None  # several workers (PREFILL_DECODE_ENGINE=A,B): the address is chosen per call

    def __init__(self, address: tuple[str, int] | None, authkey: bytes | None, *, local: LocalWorker | None = None,
                 connect_timeout_s: float = HANDSHAKE_TIMEOUT_S, heartbeat_s: float | None = None) -> None:
        if local is None and (address is None or not authkey):
            raise WorkerSetupError("engine_no_token", "a remote engine worker needs its address and token",
                                   host=address[0] if address else "")
        self._address, self._authkey, self.local = address, authkey, local
        self.connect_timeout_s = connect_timeout_s
        self.heartbeat_s = heartbeat_s  # a Waiting event after this long without a message; None: never

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
        args = {"model": model.to_wire(), "prompt": prompt, "config": to_plain(config), "stream": True,
                "max_prompt_tokens": max_prompt_tokens, "request_id": request_id}
        header: RequestTrace | None = None
        steps: list = []
        for kind, fields in self.call("trace", args):
            if kind == "pass":
                if fields.get("header") is not None:
                    header = RequestTrace.from_dict({**fields["header"], "steps": []})
                if header is None:
                    raise ProtocolError("protocol_malformed", "a pass before the trace's header", why="pass")
                for step in fields["steps"]:  # the passes since the last event: one Pass each
                    steps.append(from_plain(Step, step))
                    yield Pass(dataclasses.replace(header, steps=StepsSoFar(steps)))
            elif kind == "done":
                trace = RequestTrace.from_dict(fields["result"])
                every = list(trace.steps)
                for n in range(len(steps) + 1, len(every)):  # passes the worker had gathered, not yet sent
                    yield Pass(dataclasses.replace(header, steps=StepsSoFar(every, n)))
                yield Pass(trace)
                yield Done(trace)
            else:
                yield _event(kind, fields)

    def stream_repeats(self, model: ModelRef, prompt: str, config: GenerationConfig = GenerationConfig(), *,
                       repeats: int, max_prompt_tokens: int | None = None, request_id: str = "r0"
                       ) -> Iterator[Event]:
        """The request `repeats` times in one queued call (engine.runtime.repeats): Queued / Started, run 1 as
        stream_trace streams it (a Pass per forward pass, the last one finished), a Progress(done,
        repeats) as each run finishes, then Done(every run's RequestTrace, run 1 first)."""
        args = {"model": model.to_wire(), "prompt": prompt, "config": to_plain(config), "repeats": repeats,
                "max_prompt_tokens": max_prompt_tokens, "request_id": request_id}
        header: RequestTrace | None = None
        steps: list = []
        for kind, fields in self.call("trace_repeats", args):
            if kind == "pass":
                if fields.get("header") is not None:
                    header = RequestTrace.from_dict({**fields["header"], "steps": []})
                if header is None:
                    raise ProtocolError("protocol_malformed", "a pass before the trace's header", why="pass")
                for step in fields["steps"]:  # one event carries one pass here (run 1, pass by pass)
                    steps.append(from_plain(Step, step))
                    yield Pass(dataclasses.replace(header, steps=tuple(steps) if header.finished else
                                                   StepsSoFar(steps)))
            elif kind == "done":
                yield Done(tuple(RequestTrace.from_dict(t) for t in fields["result"]["traces"]))
            else:
                yield _event(kind, fields)

    def generate(self, model: ModelRef, prompt: str, config: GenerationConfig = GenerationConfig(), *,
                 max_prompt_tokens: int | None = None, request_id: str = "r0", on_event: OnEvent = None
                 ) -> RequestTrace:
        """The finished trace of one request (no per-pass events: the worker's loop never waits on a send)."""
        args = {"model": model.to_wire(), "prompt": prompt, "config": to_plain(config), "stream": False,
                "max_prompt_tokens": max_prompt_tokens, "request_id": request_id}
        return RequestTrace.from_dict(self._result("trace", args, on_event))

    def modes(self, model: ModelRef, prompt: str, *, num_tokens: int, modes: Sequence[str],
              max_prompt_tokens: int | None = None, on_event: OnEvent = None) -> dict[str, RequestTrace]:
        """The prompt once per engine mode, back to back in one queued call: {mode: its trace}."""
        args = {"model": model.to_wire(), "prompt": prompt, "num_tokens": num_tokens, "modes": list(modes),
                "max_prompt_tokens": max_prompt_tokens}
        runs = self._result("modes", args, on_event)
        return {mode: RequestTrace.from_json(run_json) for mode, run_json in runs.items()}

    def compare_cache(self, model: ModelRef, prompt_ids: Sequence[int], max_new_tokens: int, *,
                      on_event: OnEvent = None) -> CacheComparison:
        args = {"model": model.to_wire(), "prompt_ids": list(prompt_ids), "max_new_tokens": max_new_tokens}
        return from_plain(CacheComparison, self._result("compare_cache", args, on_event))

    def decode_attention(self, model: ModelRef, prompt_ids: Sequence[int], output_ids: Sequence[int],
                         decode_index: int, *, on_event: OnEvent = None) -> DecodeAttention:
        args = {"model": model.to_wire(), "prompt_ids": list(prompt_ids), "output_ids": list(output_ids),
                "decode_index": decode_index}
        return from_plain(DecodeAttention, self._result("decode_attention", args, on_event))

    def sweep(self, model: ModelRef, kind: str, points: Sequence[int] | None = None, *, repeats: int = 3,
              batch_context: int = 128, cap: int | None = None, seed: int = 0, on_event: OnEvent = None) -> Sweep:
        """engine.runtime.sweep.run_sweep in the worker; a Progress event after each point."""
        args = {"model": model.to_wire(), "kind": kind, "points": None if points is None else list(points),
                "repeats": repeats, "batch_context": batch_context, "cap": cap, "seed": seed}
        return Sweep.from_json(self._result("sweep", args, on_event))

    def serve_workload(self, model: ModelRef, requests: Sequence[WorkloadRequest],
                       config: ServeConfig | Mapping[str, Any] | None = None, *, scenario: str = "custom",
                       on_event: OnEvent = None) -> ServingRun:
        """engine.serving.run_workload in the worker; Progress events as requests finish. `config`: a
        ServeConfig, or its fields as plain values (`slo` as {"ttft_ms", "tpot_ms"}), checked in the
        worker (a bad setting raises its InputError here); None: the defaults."""
        plain = to_plain(config) if dataclasses.is_dataclass(config) else dict(config or {})
        args = {"model": model.to_wire(), "requests": [to_plain(r) for r in requests], "config": plain,
                "scenario": scenario}
        return ServingRun.from_json(self._result("serve_workload", args, on_event))

    def decode_ops(self, model: ModelRef) -> DecodeOps:
        return from_plain(DecodeOps, self._result("decode_ops", {"model": model.to_wire()}))

    def host_us_per_call(self, device: str) -> float:
        return float(self._result("host_us_per_call", {"device": device}))

    def machine_spec(self, device: str | None = None, *, fresh: bool = False) -> DeviceSpec:
        """The worker's machine measured (kept per worker process; `fresh`: measured anew)."""
        return from_plain(DeviceSpec, self._result("machine_spec", {"device": device, "fresh": fresh}))

    def load(self, model: ModelRef, *, on_event: OnEvent = None) -> ModelDescription:
        """Load (and warm) a model now, through the queue; its description."""
        return _description(self._result("load", {"model": model.to_wire()}, on_event))

    def describe(self, model: ModelRef) -> ModelDescription:
        return _description(self._result("describe", {"model": model.to_wire()}))

    def model_shape(self, model: ModelRef) -> ModelShape:
        return from_plain(ModelShape, self._result("model_shape", {"model": model.to_wire()}))

    def model_choices(self, device: str = "auto", dtype: str = "auto") -> tuple[str, ...]:
        """The models this worker offers: "default", its folders, the presets its device holds."""
        return tuple(self._result("model_choices", {"device": device, "dtype": dtype}))

    def token_preview(self, model: ModelRef, prompt: str, target_tokens: int = 0) -> TokenPreview:
        data = self._result("token_preview", {"model": model.to_wire(), "prompt": prompt,
                                              "target_tokens": target_tokens})
        return TokenPreview(data["prompt"], tuple(data["pieces"]), data["natural"])

    def ping(self) -> dict[str, Any]:
        """Who answers: pid, protocol, python, torch and transformers versions, torch threads."""
        return self._result("ping", {})

    # --- the plumbing ---------------------------------------------------------------

    def call(self, method: str, args: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        """One call's raw events, (type, fields), up to its last; an `error` is raised as its exception.
        Closing the iterator early closes the connection, which cancels the call in the worker."""
        since = self._check_local()
        channel, where = self._open(since)
        try:
            channel.send("call", method=method, args=args)
            while True:
                if not self._arrived(channel):
                    yield "waiting", {}
                    continue
                message = self._receive(channel, where, since)
                kind = message.pop("type")
                message.pop("v", None)
                if kind == "error":
                    raise error_from_wire(message.get("error"))
                if kind == "cancelled":
                    raise RunCancelled()
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

    def _arrived(self, channel: Channel) -> bool:
        """Whether a message (or the end of the connection) is there to read, waiting at most heartbeat_s."""
        if self.heartbeat_s is None:
            return True
        try:
            return channel.conn.poll(self.heartbeat_s)
        except (OSError, EOFError):
            return True  # the read that follows says what happened

    def _check_local(self) -> int | None:
        """The local worker's generation this call runs on (restarting a dead one raises first)."""
        if self.local is None:
            return None
        self.local.ensure_alive()
        return self.local.generation

    def _open(self, since: int | None) -> tuple[Channel, str]:
        address = self.address
        where = format_address(address)
        authkey = self.local.authkey if self.local is not None else self._authkey
        try:
            conn = connect(address, authkey, self.connect_timeout_s)
        except AuthenticationError:
            self._lost(since, during_run=False)
            raise WorkerAuthError(where) from None
        except AssertionError:  # the first frame was not a key challenge: not an engine worker
            raise WorkerUnreachable(where, "what answers there is not an engine worker") from None
        except (OSError, EOFError) as err:
            self._lost(since, during_run=False)
            raise WorkerUnreachable(where, _reason(err)) from None
        return Channel(conn, WORKER_TYPES), where

    def _receive(self, channel: Channel, where: str, since: int | None) -> dict[str, Any]:
        try:
            return channel.recv()
        except (EOFError, OSError) as err:
            self._lost(since, during_run=True)
            raise WorkerUnreachable(where, f"the connection closed during the call ({_reason(err)})") from None

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
    if kind == "waiting":
        return Waiting()
    raise ProtocolError("protocol_malformed", f"unexpected event {kind!r}", why="type", type=kind)


def _description(data: dict[str, Any]) -> ModelDescription:
    return ModelDescription(from_plain(ModelInfo, data["info"]), data["device"], float(data["load_ms"]))


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
