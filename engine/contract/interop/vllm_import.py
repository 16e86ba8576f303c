"""Read the result file of `vllm bench serve --save-result --save-detailed` into a ServingRun.

Field names follow vLLM's benchmark code, read at two points of its history:
  - vllm/benchmarks/serve.py (`vllm bench serve`), vllm-project/vllm commit 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1:
    per request (--save-detailed) input_lens, output_lens, ttfts (s), itls (s, one list per request),
    latencies (s), start_times (the client's time.perf_counter() when each was sent, s), queue_times,
    generated_texts, errors; summary duration, completed, failed, total_input_tokens, total_output_tokens,
    request_throughput, request_goodput, output_throughput, total_token_throughput,
    {mean,median,std,p<P>}_{ttft,tpot,itl,e2el}_ms (only the --percentile-metrics chosen; default
    ttft,tpot,itl), max_output_tokens_per_s, max_concurrent_requests; setup date, backend,
    endpoint_type, label, model_id, tokenizer_id, num_prompts, request_rate ("inf" or a number),
    burstiness, max_concurrency, and any --metadata KEY=VALUE pairs.
  - benchmarks/benchmark_serving.py, commit 0049e29c41fd383bda519a3f250e3227713081ef (the script before
    `vllm bench serve`): the same per-request lists without latencies, start_times and queue_times, and the
    goodput key spelled "request_goodput:".
Both are read. Anything else at the top level is listed as ignored (a --metadata pair lands there too).

How a request becomes a RequestRecord (all times ms, the run's clock at the first send):
  arrival_ms      start_times when the file has them (measured send times). Otherwise they are not in the
                  file and are PLACED, and the run's notes say how: request_rate "inf" -> all at 0 (vLLM
                  sends them at once); a finite rate -> evenly i / rate (the real gaps were random:
                  Poisson or gamma); with max_concurrency, a request waits until one of the slots frees
                  (requests replayed in order through that many slots).
  token times     arrival + ttft, then + each ITL: one time per streamed chunk (output_pieces holds one
                  "" per chunk: the file has only the whole generated_text).
  finish_ms       arrival + latency (vLLM's E2EL, taken at the stream's end); without latencies, the
                  last chunk's time (a note says so).
  token counts    output_count = the output tokens vLLM counted (output_lens), so TPOT = (E2EL - TTFT) /
                  (tokens - 1) exactly as vLLM computes it; prompt_count = input_lens. The ids are not in the
                  file: prompt_ids and output_ids stay empty (a count, never a tuple of that many -1s).
Failed requests (a non-empty error) are left out of the run and counted, as vLLM does.

Every size and time is checked against engine.contract.limits before anything is built: the JSON's depth and
number lengths, the number of requests and streamed chunks, each token count (MAX_REQUEST_TOKENS),
each time (MAX_TIME_S; start_times' spread too) and the placed arrivals; max_concurrency beyond the
number of requests replays as that many slots (more could never be busy).

The percentiles are then recomputed from the per-request data (numpy, as vLLM) and set against the
file's own summary: `VllmImport.comparisons` lists every summary number it could check and the
difference; `differing()` those beyond rounding.
"""

from __future__ import annotations

import heapq
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.contract import limits
from engine.contract.errors import LimitError
from engine.contract.interop.observed import OBSERVED_NOTE, observed_model, observed_run
from engine.contract.serving.trace import OBSERVED_POLICY, RequestRecord, ServingRun

PER_REQUEST = ("input_lens", "output_lens", "ttfts", "itls")
OPTIONAL_PER_REQUEST = ("latencies", "start_times", "queue_times", "generated_texts", "errors")
SETUP = ("date", "backend", "endpoint_type", "label", "model_id", "tokenizer_id", "num_prompts", "request_rate",
         "burstiness", "max_concurrency", "ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps",
         "rps_change_events")
SUMMARY = ("duration", "completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput",
           "request_goodput", "request_goodput:", "output_throughput", "total_token_throughput",
           "max_output_tokens_per_s", "max_concurrent_requests", "rtfx")
_STAT_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el|client_queue_time|"
                       r"e2el_including_client_queue)_ms$")
_OTHER_PREFIXES = ("spec_decode_", "diffusion_", "probe_")
RELATIVE_TOLERANCE = 1e-6  # float rounding; beyond it a number "differs"
MEASURED_ARRIVALS_NOTE = "arrivals are vLLM's measured send times (start_times)"  # else they were placed


class VllmResultError(ValueError):
    """The file is not a vLLM serving-benchmark result this reader understands; the message says why.

    `params["why"]` names the failure ("missing", "length_mismatch", ...) and the other params hold only
    data (field names, counts, an index), so a page can say it in its own language; `reason` is the English.
    """

    def __init__(self, why: str, reason: str, **fields: Any) -> None:
        super().__init__(f"not a usable vLLM bench serve result: {reason}")
        self.key = "vllm_result"
        self.params = {"why": why, "reason": reason, **fields}


@dataclass(frozen=True)
class Comparison:
    """One summary number of the file against the same number recomputed from its per-request data."""

    key: str  # the file's key, e.g. "p99_ttft_ms"
    file_value: float
    recomputed: float | None  # None: nothing to recompute it from
    note: str = ""

    @property
    def difference(self) -> float | None:
        return None if self.recomputed is None else self.recomputed - self.file_value

    @property
    def differs(self) -> bool:
        if self.recomputed is None:
            return False
        return abs(self.recomputed - self.file_value) > RELATIVE_TOLERANCE * max(1.0, abs(self.file_value))


@dataclass(frozen=True)
class VllmImport:
    run: ServingRun
    placement: str  # "start_times", "burst", "rate", plus "+concurrency" when slots were replayed
    comparisons: tuple[Comparison, ...]
    failed: tuple[tuple[int, str], ...]  # (index in the file, vLLM's error text)
    ignored_fields: tuple[str, ...]
    source: dict[str, Any]  # backend, model_id, date, request_rate, max_concurrency, num_prompts (as in the file)

    def differing(self) -> tuple[Comparison, ...]:
        return tuple(c for c in self.comparisons if c.differs)

    def comparison_rows(self) -> list[dict[str, Any]]:
        return [{"key": c.key, "file": c.file_value, "recomputed": c.recomputed, "difference": c.difference,
                 "differs": c.differs, "note": c.note} for c in self.comparisons]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "vllm_import", "source": self.source, "placement": self.placement,
                "failed": [list(f) for f in self.failed], "ignored_fields": list(self.ignored_fields),
                "comparisons": self.comparison_rows(), "run": self.run.to_dict()}


# --- reading -------------------------------------------------------------------

def load_vllm_result(path: str | Path) -> VllmImport:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise VllmResultError("cannot_read", f"cannot read {Path(path).name} ({type(err).__name__})",
                              name=Path(path).name) from err
    return read_vllm_result(text, name=Path(path).stem)


def read_vllm_result(text: str, name: str = "vllm") -> VllmImport:
    """The file's run, or a VllmResultError saying why not; nothing is built before every size and time in
    it is checked (engine.contract.limits: a refused limit is the why `limit_*`, with the field and the limit)."""
    try:
        return _read(text, name)
    except LimitError as err:
        raise VllmResultError(err.key, str(err), **err.params) from None


def _read(text: str, name: str) -> VllmImport:
    try:
        data = limits.load_json(text, allow_nonfinite=True)  # vLLM may write request_rate as Infinity
    except json.JSONDecodeError as err:
        if err.msg == "Extra data":
            raise VllmResultError("appended", "the file holds several results (written with --append-result); "
                                  "keep one line") from None
        raise VllmResultError("not_json", f"not JSON ({err.msg}, line {err.lineno})", line=err.lineno) from None
    if not isinstance(data, dict):
        raise VllmResultError("not_object", "expected a JSON object, as vllm bench serve --save-result writes")
    missing = [k for k in PER_REQUEST if k not in data]
    if missing:
        summary_only = any(_STAT_KEY.match(k) for k in data)
        raise VllmResultError("summary_only" if summary_only else "missing", f"missing {', '.join(missing)}" + (
            ": this file has only the summary; run vllm bench serve with --save-result --save-detailed"
            if summary_only else ""), fields=", ".join(missing))
    lists = _per_request_lists(data)
    n = len(lists["ttfts"])
    errors = lists.get("errors") or [""] * n
    ok = [i for i in range(n) if not errors[i]]
    if not ok:
        if n:
            raise VllmResultError("all_failed", f"all {n} requests failed (first error: {str(errors[0])[:120]!r})",
                                  n=n, error=str(errors[0])[:120])
        raise VllmResultError("no_requests", "the file has no requests")
    arrivals, placement, place_note = _arrivals(data, lists, ok)
    records = []
    for i in ok:
        records.append(_record(i, arrivals[i], lists))
    notes = [OBSERVED_NOTE, f"imported from vLLM bench serve ({name}): " + place_note,
             "policy \"observed\"; block size and KV blocks are placeholders the serving record requires: vLLM's "
             "scheduling is not in the file",
             "output_pieces: one empty piece per streamed chunk (the file keeps only the whole text); stop "
             "reasons and requested lengths are not in the file (max_new_tokens = tokens received)"]
    if "latencies" not in lists:
        notes.append("no per-request latencies in this file (an older vLLM): E2EL is taken at the last chunk, "
                     "vLLM measured it at the stream's end")
    failed = tuple((i, str(errors[i])) for i in range(n) if errors[i])
    if failed:
        notes.append(f"{len(failed)} of {n} requests failed in vLLM's run and are left out, as vLLM does")
    records.sort(key=lambda r: (r.arrival_ms, r.request_id))
    model = observed_model(str(data.get("model_id") or "unknown"), "(vLLM server)", str(data.get("backend") or "vllm"))
    duration = data.get("duration")
    wall_ms = 0.0 if duration is None else limits.check_finite("duration", duration, limits.MAX_TIME_S, low=0) * 1e3
    run = observed_run(f"vllm:{name}", model, records, wall_ms=wall_ms, notes=notes)
    known = set(PER_REQUEST) | set(OPTIONAL_PER_REQUEST) | set(SETUP) | set(SUMMARY)
    ignored = tuple(sorted(k for k in data if k not in known and not _STAT_KEY.match(k)
                           and not k.startswith(_OTHER_PREFIXES)))
    source = {k: data.get(k) for k in ("backend", "model_id", "date", "request_rate", "burstiness",
                                       "max_concurrency", "num_prompts")}
    return VllmImport(run, placement, _compare(data, lists, ok), failed, ignored, source)


def is_vllm_import(run: ServingRun) -> bool:
    """A run this module made (its scenario is "vllm:<file name>")."""
    return run.settings.policy == OBSERVED_POLICY and run.scenario.startswith("vllm:")


def arrivals_placed(run: ServingRun) -> bool:
    """True when the file had no send times and the arrivals were placed (see the module docstring)."""
    return is_vllm_import(run) and not any(MEASURED_ARRIVALS_NOTE in note for note in run.notes)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _per_request_lists(data: dict[str, Any]) -> dict[str, list]:
    lists: dict[str, list] = {}
    for key in (*PER_REQUEST, *OPTIONAL_PER_REQUEST):
        if key not in data:
            continue
        value = data[key]
        if not isinstance(value, list):
            raise VllmResultError("not_list", f"{key!r} should be a list, one entry per request; it is a "
                                  f"{type(value).__name__}", field=key)
        lists[key] = value
    n = len(lists["ttfts"])
    limits.check_count("requests", n, limits.MAX_IMPORT_REQUESTS)
    for key, value in lists.items():
        if len(value) != n:
            raise VllmResultError("length_mismatch", f"{key!r} has {len(value)} entries but ttfts has {n}",
                                  field=key, n=len(value), expected=n)
    for key in ("input_lens", "output_lens", "ttfts", "latencies", "start_times", "queue_times"):
        for i, v in enumerate(lists.get(key, ())):
            if not _number(v) or v < 0 and key != "start_times":
                raise VllmResultError("not_number", f"{key}[{i}] is {v!r}, not a number >= 0", field=key, index=i,
                                      value=repr(v)[:60])
            limits.check_finite(f"{key}[{i}]", v, *_BOUNDS[key])
    _check_gaps(lists["itls"])
    for key in ("generated_texts", "errors"):
        for i, v in enumerate(lists.get(key, ())):
            if v is not None and not isinstance(v, str):
                raise VllmResultError("not_text", f"{key}[{i}] should be text, got {type(v).__name__}", field=key,
                                      index=i)
    return lists


# field -> (limit, low) of each per-request number: token counts, seconds, a monotonic clock's readings
_BOUNDS = {"input_lens": (limits.MAX_REQUEST_TOKENS, 0), "output_lens": (limits.MAX_REQUEST_TOKENS, 0),
           "ttfts": (limits.MAX_TIME_S, 0), "latencies": (limits.MAX_TIME_S, 0), "queue_times": (limits.MAX_TIME_S, 0),
           "start_times": (limits.MAX_CLOCK_S, None)}


def _check_gaps(itls: list) -> None:
    """Each request's ITLs a list of seconds in 0..MAX_TIME_S; all of them together at most MAX_IMPORT_TOKEN_TIMES."""
    total = 0
    for i, gaps in enumerate(itls):
        if not isinstance(gaps, list) or not all(_number(g) and g >= 0 for g in gaps):
            raise VllmResultError("bad_itls", f"itls[{i}] should be a list of seconds >= 0", index=i)
        if gaps:
            limits.check_finite(f"itls[{i}]", max(gaps), limits.MAX_TIME_S, low=0)
        total += len(gaps)
    limits.check_count("itls (streamed chunks in all)", total, limits.MAX_IMPORT_TOKEN_TIMES)


def _arrivals(data: dict[str, Any], lists: dict[str, list], ok: list[int]) -> tuple[list[float], str, str]:
    n = len(lists["ttfts"])
    if "start_times" in lists:
        t0 = min(lists["start_times"][i] for i in ok)
        spread = max(lists["start_times"]) - min(lists["start_times"])
        limits.check_finite("start_times (last - first)", spread, limits.MAX_TIME_S, low=0)
        return ([(t - t0) * 1e3 for t in lists["start_times"]], "start_times",
                MEASURED_ARRIVALS_NOTE)
    rate = data.get("request_rate", "inf")
    if rate in ("inf", None) or (_number(rate) and math.isinf(rate)):
        planned, placement, how = [0.0] * n, "burst", "request_rate inf: all sent at 0 ms"
    elif _number(rate) and rate > 0:
        limits.check_finite("the last arrival placed at request_rate (ms)", (n - 1) / rate * 1e3, limits.MAX_TIME_MS,
                            low=0)
        planned, placement = [i / rate * 1e3 for i in range(n)], "rate"
        how = (f"arrivals PLACED evenly at the request rate ({rate:g}/s); vLLM's real gaps were random "
               f"(burstiness {data.get('burstiness', 1.0)}) and are not in this file")
    else:
        raise VllmResultError("bad_rate", f"request_rate is {rate!r}, not 'inf' or a positive number",
                              value=repr(rate)[:60])
    slots = data.get("max_concurrency")
    if slots is None:
        return planned, placement, how
    if not (isinstance(slots, int) and slots >= 1):
        raise VllmResultError("bad_concurrency", f"max_concurrency is {slots!r}, not a whole number >= 1",
                              value=repr(slots)[:60])
    # Replay the slots: a request is sent at its planned time or when a slot frees, whichever is later.
    # More slots than requests are never all busy: n of them replay the same. A heap of (free at, slot)
    # picks the slot that frees first (the lowest-numbered on a tie) in log time.
    free = [(0.0, k) for k in range(min(slots, n))]
    out = []
    for i in range(n):
        at, k = heapq.heappop(free)
        start = max(planned[i], at)
        out.append(start)
        heapq.heappush(free, (start + _latency_s(lists, i) * 1e3, k))
    return out, placement + "+concurrency", how + f"; then replayed through max_concurrency={slots} slots"


def _latency_s(lists: dict[str, list], i: int) -> float:
    if "latencies" in lists:
        return float(lists["latencies"][i])
    return float(lists["ttfts"][i]) + float(sum(lists["itls"][i]))


def _record(i: int, arrival: float, lists: dict[str, list]) -> RequestRecord:
    ttft_ms = float(lists["ttfts"][i]) * 1e3
    times = [arrival + ttft_ms]
    for gap in lists["itls"][i]:
        times.append(times[-1] + float(gap) * 1e3)
    finish = arrival + float(lists["latencies"][i]) * 1e3 if "latencies" in lists else times[-1]
    n_out = max(int(lists["output_lens"][i]), 1)  # a successful request streamed at least one token
    text = (lists.get("generated_texts") or [""] * (i + 1))[i] or ""
    return RequestRecord(
        request_id=f"r{i}", prompt="", prompt_ids=(), prompt_count=int(lists["input_lens"][i]), prompt_pieces=(),
        output_ids=(), output_count=n_out, output_pieces=("",) * len(times), output_text=text, max_new_tokens=n_out,
        ignore_eos=False, arrival_ms=arrival, first_scheduled_ms=arrival, first_token_ms=times[0],
        finish_ms=max(finish, times[-1]) if "latencies" not in lists else finish, token_times_ms=tuple(times),
        itl_ms=tuple(b - a for a, b in zip(times, times[1:])), stop_reason="length",
    )


# --- the file's summary against the per-request data ------------------------------

def _values(lists: dict[str, list], ok: list[int]) -> dict[str, list[float]]:
    """Per-metric values in ms, as vLLM's calculate_metrics gathers them (successful requests only)."""
    ttft = [float(lists["ttfts"][i]) * 1e3 for i in ok]
    e2el = [_latency_s(lists, i) * 1e3 for i in ok]
    tpot = [(e - t) / (max(int(lists["output_lens"][i]), 1) - 1) for i, t, e in zip(ok, ttft, e2el)
            if max(int(lists["output_lens"][i]), 1) > 1]
    itl = [float(g) * 1e3 for i in ok for g in lists["itls"][i]]
    out = {"ttft": ttft, "tpot": tpot, "itl": itl, "e2el": e2el}
    if "queue_times" in lists:
        out["client_queue_time"] = [float(lists["queue_times"][i]) * 1e3 for i in ok]
    return out


def _stat(values: list[float], stat: str) -> float:
    x = np.asarray(values or [0.0], dtype=np.float64)  # vLLM: np.mean(values or 0)
    if stat == "mean":
        return float(x.mean())
    if stat == "median":
        return float(np.median(x))
    if stat == "std":
        return float(x.std())
    return float(np.percentile(x, float(stat[1:])))


def _compare(data: dict[str, Any], lists: dict[str, list], ok: list[int]) -> tuple[Comparison, ...]:
    values = _values(lists, ok)
    out = []
    for key in data:
        m = _STAT_KEY.match(key)
        if not m or not _number(data[key]):
            continue
        stat, metric = m.groups()
        if metric not in values:
            out.append(Comparison(key, float(data[key]), None, "not recomputable from this file"))
            continue
        note = "E2EL from TTFT + ITLs (no latencies in the file)" if metric in ("e2el", "tpot") and \
            "latencies" not in lists else ""
        out.append(Comparison(key, float(data[key]), _stat(values[metric], stat), note))
    completed = len(ok)
    total_in = sum(int(lists["input_lens"][i]) for i in ok)
    total_out = sum(int(lists["output_lens"][i]) for i in ok)
    counts = {"completed": completed, "total_input_tokens": total_in, "total_output_tokens": total_out,
              "failed": len(lists["ttfts"]) - completed}
    for key, value in counts.items():
        if _number(data.get(key)):
            out.append(Comparison(key, float(data[key]), float(value)))
    duration = data.get("duration")
    if _number(duration) and duration > 0:
        rates = {"request_throughput": completed, "output_throughput": total_out,
                 "total_token_throughput": total_in + total_out}
        for key, amount in rates.items():
            if _number(data.get(key)):
                out.append(Comparison(key, float(data[key]), amount / duration, "over the file's duration"))
    return tuple(out)


def format_comparison(imp: VllmImport) -> str:
    """A plain table: every summary number checked, the recomputed value, the difference."""
    lines = [f"vLLM result: model {imp.source.get('model_id')} ({imp.source.get('backend')}), "
             f"{len(imp.run.requests)} requests measured, {len(imp.failed)} failed; arrivals: {imp.placement}",
             f"{'key':<28} {'file':>14} {'recomputed':>14} {'difference':>12}"]
    for c in imp.comparisons:
        rec = "-" if c.recomputed is None else f"{c.recomputed:14.4f}"
        diff = "-" if c.difference is None else f"{c.difference:+12.4f}"
        flag = "  DIFFERS" if c.differs else ""
        lines.append(f"{c.key:<28} {c.file_value:14.4f} {rec:>14} {diff:>12}{flag}"
                     + (f"  ({c.note})" if c.note else ""))
    differing = imp.differing()
    lines.append(f"{len(differing)} of {len(imp.comparisons)} summary numbers differ from the per-request data"
                 + (": " + ", ".join(c.key for c in differing) if differing else ""))
    if imp.ignored_fields:
        lines.append("ignored fields (not read): " + ", ".join(imp.ignored_fields))
    return "\n".join(lines)
