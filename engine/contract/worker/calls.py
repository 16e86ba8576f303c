"""The engine worker's kinds of call, in one table that both ends read: the worker (which handler runs,
on which thread, in which lane of its queue, shared or not) and the client (which methods make the
call, what its result is rebuilt as, whether a quiet gap voids it). A new kind is one entry here, its
handler in engine/runtime/worker/jobs.py and its EngineClient method; tests/engine/worker/test_calls.py
holds the three together.

    lane     "short": a lesson run (a few forward passes), taken before any long job
             "long": a serving run, a sweep, engine modes, a load, a benchmark (between its units the
                     worker runs the waiting short ones)
             "light": answered at once on the connection's thread (no forward pass, no timing)
    shared   identical waiting calls (the same method and arguments) share one measurement
    history  the job's kind as the queue's figure names it (engine.contract.engine_queue)
    streams  its events carry the run's passes (`pass`), not only queued / started / progress
    result   the type the client rebuilds the `done` result as (a streamed call: its Done's result)
    what     the result's name in a refusal ("the engine worker's <what> was refused")
    measurement  its result is a measurement: a run during which the worker stood still is voided
    client   the EngineClient methods that make this call

Nothing here is on the wire: the method names are the protocol's (`call.method`), unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.contract.cost import DeviceSpec, ModelShape
from engine.contract.engine_queue import QueueHistory
from engine.contract.format_runs import FormatRuns
from engine.contract.results import CacheComparison, DecodeAttention, DecodeOps
from engine.contract.serving.trace import ServingRun
from engine.contract.sweep import Sweep
from engine.contract.trace import ModelInfo, RequestTrace

CALL_LANES = ("short", "long", "light")


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


@dataclass(frozen=True)
class CallKind:
    """One kind of call to the worker (the module's docstring says what each field means)."""

    name: str
    lane: str
    result: object
    what: str
    client: tuple[str, ...]
    streams: bool = False
    shared: bool = True
    history: str = "other"
    measurement: bool = True

    def __post_init__(self) -> None:
        if self.lane not in CALL_LANES:
            raise ValueError(f"{self.name}: lane {self.lane!r} is not one of {CALL_LANES}")

    @property
    def measured(self) -> bool:
        """Run by the worker's runner, one at a time (short or long lane), not on a connection's thread."""
        return self.lane != "light"


def _light(name: str, result: object, what: str, client: tuple[str, ...]) -> CallKind:
    return CallKind(name, "light", result, what, client, shared=False, measurement=False)


CALLS: dict[str, CallKind] = {kind.name: kind for kind in (
    CallKind("trace", "short", RequestTrace, "trace", ("stream_trace", "generate"), streams=True,
             history="lesson"),
    CallKind("trace_repeats", "short", tuple[RequestTrace, ...], "repeats", ("stream_repeats",), streams=True,
             history="lesson"),
    CallKind("compare_cache", "short", CacheComparison, "cache comparison", ("compare_cache",), history="lesson"),
    CallKind("decode_attention", "short", DecodeAttention, "attention", ("decode_attention",), history="lesson"),
    CallKind("decode_ops", "short", DecodeOps, "operator count", ("decode_ops",)),
    CallKind("modes", "long", dict[str, RequestTrace], "modes", ("modes",), history="modes"),
    CallKind("sweep", "long", Sweep, "sweep", ("sweep",), history="sweep"),
    CallKind("serve_workload", "long", ServingRun, "serving run", ("serve_workload",), history="serving"),
    CallKind("host_us_per_call", "long", float, "host time", ("host_us_per_call",)),
    CallKind("machine_spec", "long", DeviceSpec, "machine", ("machine_spec",)),
    CallKind("weight_formats", "long", FormatRuns, "weight formats", ("weight_formats",)),
    CallKind("load", "long", ModelDescription, "model", ("load",), history="load", measurement=False),
    _light("ping", dict[str, Any], "ping", ("ping",)),
    _light("describe", ModelDescription, "model", ("describe",)),
    _light("model_shape", ModelShape, "model shape", ("model_shape",)),
    _light("model_choices", tuple[str, ...], "model choices", ("model_choices",)),
    _light("token_preview", TokenPreview, "token preview", ("token_preview",)),
    _light("queue_history", QueueHistory, "queue history", ("queue_history",)),
)}


def names(*, lane: str | None = None, measured: bool | None = None, shared: bool | None = None,
          measurement: bool | None = None) -> frozenset[str]:
    """The kinds' names that match every field given (None: any)."""
    wanted = {"lane": lane, "measured": measured, "shared": shared, "measurement": measurement}
    return frozenset(name for name, kind in CALLS.items()
                     if all(value is None or getattr(kind, field) == value for field, value in wanted.items()))


def history_kind(method: str) -> str:
    """A job's kind in the queue's history ("other" for a method the table does not name, a test's own)."""
    kind = CALLS.get(method)
    return kind.history if kind is not None else "other"


def lane_of(method: str) -> str:
    """A measured method's lane in the queue: "short" or "long" (a method the table does not name: long)."""
    kind = CALLS.get(method)
    return "short" if kind is not None and kind.lane == "short" else "long"
