"""What the worker does for each method: the engine's own functions, their results as plain JSON.

Each handler is `handler(ctx, args) -> result`; `args` is the call's JSON object, `result` plain
JSON that engine/contract/worker/client.py rebuilds into the engine's own types. MEASURED handlers run on
the worker's one runner thread, one call at a time (each holds forward passes or a benchmark);
LIGHT handlers run on the calling connection's thread (no forward pass, no timing).

A measured handler checks `ctx.check_cancelled()` between forward passes (between sweep points,
serving iterations, modes), so a cancelled call stops at the next pass boundary, never inside a
timed pass.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from typing import Any

import torch

from engine.contract.cost import ModelShape
from engine.contract.prompts import extend_prompt, prompt_token_ids
from engine.contract.serving.config import ServeConfig
from engine.contract.serving.workloads import WorkloadRequest
from engine.contract.trace import RequestTrace, Step
from engine.contract.codec import CodecError, convert, to_plain
from engine.contract.worker.errors import ProtocolError, RunCancelled
from engine.contract.worker.protocol import LIGHT_METHODS, MEASURED_METHODS, PROTOCOL_VERSION, ModelRef
from engine.runtime import hf, machine
from engine.runtime.compare import compare_cache, decode_attention
from engine.runtime.generation import GenerationConfig, stream_trace, token_pieces
from engine.runtime.model import LoadedModel
from engine.runtime.overhead import count_decode_ops, per_op_host_us
from engine.runtime.repeats import check_repeats, stream_repeats
from engine.runtime.serving.engine import run_workload
from engine.runtime.sweep import run_sweep
from engine.runtime.worker.models import ModelCache, model_choices

SERVE_PROGRESS_EVERY = 8  # serving iterations between two progress events (a run has hundreds)
STREAM_INTERVAL_S = 0.05  # streamed passes are sent at most this often (the page redraws at most every 0.1 s)


@dataclass
class JobContext:
    """What a handler may use: the models, a way to send events, and the cancel flag.

    `model(ref)`: the loaded model (on the runner thread: loaded here if needed; on a connection
    thread: loaded through the queue first). `emit(kind, **fields)`: an event to this call's client.
    `between_units()`: a long job calls it between its measured units (a serving iteration, a sweep
    point, a mode); the worker then runs the waiting short jobs (engine/runtime/worker/queue.py). Nothing
    the long job times may be running across it. `queue`: the worker's JobQueue (light calls: its history).
    """

    models: ModelCache
    model: Callable[[ModelRef], LoadedModel]
    emit: Callable[..., None]
    cancelled: Callable[[], bool]
    between_units: Callable[[], None] = lambda: None
    queue: Any = None

    def check_cancelled(self) -> None:
        if self.cancelled():
            raise RunCancelled()

    def lm(self, args: dict[str, Any]) -> LoadedModel:
        return self.model(ModelRef.from_wire(args.get("model")))

    def prompt_cap(self, args: dict[str, Any]) -> Any:
        """The prompt cap a run is held to: the worker's own (PREFILL_DECODE_MAX_PROMPT_TOKENS), or a caller's
        lower one. A caller's `max_prompt_tokens` of null, or larger, never lifts it (its cap would become
        the model's context); a value that is no count is passed on, to be refused as before."""
        own, asked = self.models.settings.max_prompt_tokens, args.get("max_prompt_tokens")
        if asked is None:
            return own
        return min(own, asked) if isinstance(asked, int) and not isinstance(asked, bool) else asked


def field_values(cls: type, data: Any, what: str) -> dict[str, Any]:
    """`data` as keyword arguments of the dataclass `cls`; an unknown key is a ProtocolError."""
    if not isinstance(data, dict):
        raise ProtocolError("protocol_malformed", f"{what} is a JSON object", why=what)
    unknown = set(data) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise ProtocolError("protocol_malformed", f"{what} has unknown fields {sorted(unknown)}", why=what)
    return data


def field_value(cls: type, data: Any, what: str) -> Any:
    """`data` as the dataclass `cls` (engine.contract.codec, strict types); any other shape is a ProtocolError."""
    try:
        return convert(field_values(cls, data, what), cls)
    except CodecError as err:
        raise ProtocolError("protocol_malformed", f"{what}: {err}", why=what) from None


# --- measured: one at a time ------------------------------------------------------------

def run_trace(ctx: JobContext, args: dict[str, Any]) -> dict[str, Any]:
    """One request through stream_trace. With `stream`, `pass` events carry its steps: the Prefill's at
    once (with the trace's header), later ones gathered and sent at most every STREAM_INTERVAL_S, so
    the page's process is woken a few times a second, not after every ~2 ms pass (each wake-up took a
    core from the next pass). The result is the finished trace (RequestTrace.to_dict)."""
    lm = ctx.lm(args)
    cfg = GenerationConfig(**field_values(GenerationConfig, args.get("config", {}), "config"))
    stream = bool(args.get("stream", True))
    traces = stream_trace(lm, args.get("prompt"), cfg, request_id=str(args.get("request_id", "r0")),
                          max_prompt_tokens=ctx.prompt_cap(args))
    unsent, sent_at = [], 0.0
    with closing(traces):
        for trace in traces:
            if trace.finished:
                return trace.to_dict()  # carries every step: nothing still unsent is lost
            ctx.check_cancelled()
            if not stream:
                continue
            unsent.append(step_plain(trace.steps[-1]))
            first = len(trace.steps) == 1
            if first or time.perf_counter() - sent_at >= STREAM_INTERVAL_S:
                ctx.emit("pass", steps=unsent, header=trace_header(trace) if first else None)
                unsent, sent_at = [], time.perf_counter()
    raise ProtocolError("protocol_malformed", "the trace ended without a finished step", why="trace")


def run_trace_repeats(ctx: JobContext, args: dict[str, Any]) -> dict[str, Any]:
    """One request `repeats` times back to back in one queued call (engine.runtime.repeats): run 1 streamed as
    `trace` streams it, but its last pass too (with the finished trace's header, so the page shows the
    answer before the repeats end), then a `progress` event as each run finishes. The result is
    {"traces": [every run's RequestTrace.to_dict(), run 1 first]}."""
    lm = ctx.lm(args)
    cfg = GenerationConfig(**field_values(GenerationConfig, args.get("config", {}), "config"))
    repeats = check_repeats(args.get("repeats", 1))
    finished: list[dict[str, Any]] = []
    traces = stream_repeats(lm, args.get("prompt"), cfg, repeats=repeats, max_prompt_tokens=ctx.prompt_cap(args),
                            request_id=str(args.get("request_id", "r0")))
    with closing(traces):
        for trace in traces:
            ctx.check_cancelled()
            if not finished:  # run 1, pass by pass; its header again on the last pass (stop reason, text)
                last = trace.finished
                ctx.emit("pass", steps=[step_plain(trace.steps[-1])],
                         header=trace_header(trace) if last or len(trace.steps) == 1 else None)
            if trace.finished:
                finished.append(trace.to_dict())
                ctx.emit("progress", done=len(finished), total=repeats)
    return {"traces": finished}


def trace_header(trace: RequestTrace) -> dict[str, Any]:
    """A trace's fields without its steps (the client adds the steps as they come)."""
    return {f.name: to_plain(getattr(trace, f.name)) if dataclasses.is_dataclass(getattr(trace, f.name))
            else getattr(trace, f.name) for f in dataclasses.fields(RequestTrace) if f.name != "steps"}


def step_plain(step: Step) -> dict[str, Any]:
    """One step's fields (plain values already: ints, floats, strings, tuples of them)."""
    return {f.name: getattr(step, f.name) for f in dataclasses.fields(Step)}


def run_modes(ctx: JobContext, args: dict[str, Any]) -> dict[str, str]:
    """The prompt once per engine mode, back to back in one queued call (no other visitor's run
    between two modes): {mode: its trace as JSON}. Greedy and past EOS, as the lab runs them."""
    lm = ctx.lm(args)
    modes = [str(m) for m in args.get("modes", ())]
    runs: dict[str, str] = {}
    for done, mode in enumerate(modes):
        cfg = GenerationConfig(max_new_tokens=args.get("num_tokens"), ignore_eos=True, mode=mode)
        with closing(stream_trace(lm, args.get("prompt"), cfg, max_prompt_tokens=ctx.prompt_cap(args))) \
                as traces:
            for trace in traces:
                ctx.check_cancelled()
                if trace.finished:
                    runs[mode] = trace.to_json(indent=None)
        ctx.emit("progress", done=done + 1, total=len(modes))
        if done + 1 < len(modes):
            ctx.between_units()  # between two modes: waiting lesson runs go first
    return runs


def run_compare_cache(ctx: JobContext, args: dict[str, Any]) -> dict[str, Any]:
    comparison = compare_cache(ctx.lm(args), [int(i) for i in args.get("prompt_ids", ())],
                               args.get("max_new_tokens"))
    return to_plain(comparison)


def run_decode_attention(ctx: JobContext, args: dict[str, Any]) -> dict[str, Any]:
    attention = decode_attention(ctx.lm(args), [int(i) for i in args.get("prompt_ids", ())],
                                 tuple(int(i) for i in args.get("output_ids", ())), args.get("decode_index"))
    return to_plain(attention)


def run_sweep_job(ctx: JobContext, args: dict[str, Any]) -> str:
    """A measured sweep; a `progress` event after each point. The result is Sweep.to_json()."""
    def progress(done: int, total: int, point) -> None:
        ctx.emit("progress", done=done, total=total)
        ctx.check_cancelled()  # raised inside run_sweep: "an exception from it stops the sweep"
        if done < total:
            ctx.between_units()  # between two points (none is timed here): waiting lesson runs go first

    points = args.get("points")
    sweep = run_sweep(ctx.lm(args), args.get("kind"), None if points is None else [int(p) for p in points],
                      repeats=args.get("repeats", 3), batch_context=args.get("batch_context", 128),
                      cap=args.get("cap"), seed=args.get("seed", 0), progress=progress)
    return sweep.to_json()


def run_serve(ctx: JobContext, args: dict[str, Any]) -> str:
    """A serving run of the workload under the config; the result is ServingRun.to_json(indent=None)."""
    requests = tuple(field_value(WorkloadRequest, r, "request")
                     for r in args.get("requests", ()))
    config = field_value(ServeConfig, args.get("config", {}), "config")

    # Progress in answer tokens written (of every request's budget): a run spends its time writing them,
    # so a page can say how far it is and how long is left; a request that ended early at EOS counts its
    # budget once the last request is done.
    budget, written = max(1, sum(r.max_new_tokens for r in requests)), 0

    def on_iteration(iteration, num_finished: int, num_requests: int) -> None:
        nonlocal written
        ctx.check_cancelled()
        written += sum(1 for e in iteration.entries if e.output_id is not None and not e.recompute)
        if num_finished == num_requests:
            ctx.emit("progress", done=budget, total=budget)
        elif iteration.index % SERVE_PROGRESS_EVERY == 0:
            ctx.emit("progress", done=min(written, budget - 1), total=budget)

    run = run_workload(ctx.lm(args), requests, config, scenario=str(args.get("scenario", "custom")),
                       on_iteration=on_iteration, between_units=ctx.between_units)
    return run.to_json(indent=None)


def run_decode_ops(ctx: JobContext, args: dict[str, Any]) -> dict[str, Any]:
    return to_plain(count_decode_ops(ctx.lm(args)))


def run_host_us(ctx: JobContext, args: dict[str, Any]) -> float:
    return per_op_host_us(str(args.get("device", "cpu")))


def run_machine_spec(ctx: JobContext, args: dict[str, Any]) -> dict[str, Any]:
    """This machine's roofs (engine.runtime.machine.measure_this_machine, kept per process); `fresh` measures anew."""
    if args.get("fresh"):
        machine.measure_this_machine.cache_clear()
    return to_plain(machine.measure_this_machine(args.get("device")))


def run_load(ctx: JobContext, args: dict[str, Any]) -> dict[str, Any]:
    return describe(ctx.lm(args))


# --- light: at once, no forward pass ---------------------------------------------------

def describe(lm: LoadedModel) -> dict[str, Any]:
    return {"info": to_plain(lm.info), "device": str(lm.device), "load_ms": lm.load_ms}


def run_describe(ctx: JobContext, args: dict[str, Any]) -> dict[str, Any]:
    return describe(ctx.lm(args))


def run_model_shape(ctx: JobContext, args: dict[str, Any]) -> dict[str, Any]:
    lm = ctx.lm(args)
    return to_plain(ModelShape.from_config(lm.model.config, name=lm.info.model_id))


def run_model_choices(ctx: JobContext, args: dict[str, Any]) -> list[str]:
    return list(model_choices(ctx.models.settings, str(args.get("device", "auto")), str(args.get("dtype", "auto"))))


def run_token_preview(ctx: JobContext, args: dict[str, Any]) -> dict[str, Any]:
    """(the prompt the model will get, its token pieces, the typed prompt's token count), as the
    page's prompt preview shows them: a target above the typed length stretches it with filler.

    Under the model's lock: this runs on a connection's thread, and tokenizing (a stretch to 1024
    tokens most of all) would otherwise take the GIL from another visitor's timed pass on that model;
    holding the lock it runs between two passes, never inside one."""
    lm = ctx.lm(args)
    prompt, target = str(args.get("prompt", "")), int(args.get("target_tokens", 0))
    with lm.lock:
        tokenizer = lm.tokenizer
        natural = len(prompt_token_ids(tokenizer, prompt)) if prompt.strip() else 0
        effective = extend_prompt(tokenizer, prompt, target) if prompt.strip() and target > natural else prompt
        ids = prompt_token_ids(tokenizer, effective) if effective.strip() else []
        pieces = list(token_pieces(tokenizer, ids))
    return {"prompt": effective, "pieces": pieces, "natural": natural}


def run_queue_history(ctx: JobContext, args: dict[str, Any]) -> dict[str, Any]:
    """The class's queue of the last minutes (engine.contract.engine_queue.QueueHistory's fields): kinds of
    job, waits, runs and pauses, visitors served; no visitor, prompt or setting named."""
    return ctx.queue.history()


def run_ping(ctx: JobContext, args: dict[str, Any]) -> dict[str, Any]:
    """Who answers: the worker's process, versions, and its queue now (`queue_length`: measured calls
    waiting or running; a pool of workers sends each call to the shortest, engine/contract/worker/pool.py)."""
    return {"pid": os.getpid(), "protocol": PROTOCOL_VERSION, "python": platform.python_version(),
            "platform": sys.platform, "torch": torch.__version__, "transformers": hf.VERSION,
            "threads": torch.get_num_threads(), "queue_length": len(ctx.queue) if ctx.queue is not None else 0}


HANDLERS: dict[str, Callable[[JobContext, dict[str, Any]], Any]] = {
    "trace": run_trace, "trace_repeats": run_trace_repeats, "modes": run_modes, "compare_cache": run_compare_cache,
    "decode_attention": run_decode_attention, "sweep": run_sweep_job, "serve_workload": run_serve,
    "decode_ops": run_decode_ops, "host_us_per_call": run_host_us, "machine_spec": run_machine_spec,
    "load": run_load, "ping": run_ping, "describe": run_describe, "model_shape": run_model_shape,
    "model_choices": run_model_choices, "token_preview": run_token_preview, "queue_history": run_queue_history,
}  # one handler per kind of engine/contract/worker/calls.py; which thread runs it is the table's lane
MEASURED = {name: handler for name, handler in HANDLERS.items() if name in MEASURED_METHODS}
LIGHT = {name: handler for name, handler in HANDLERS.items() if name in LIGHT_METHODS}
