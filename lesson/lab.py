"""The bottleneck lab's tables and captions (app_pages/bottleneck_lab.py): the cost model beside
the clock, the roof rule, the dtype preview and the sweeps in words.
"""

from __future__ import annotations

import dataclasses
import statistics

from engine.contract.cost import DEVICE_SPECS, spec_for_device_name
from engine.contract.trace import RequestTrace

from .formats import escape_markdown, fmt_bytes, fmt_share, fmt_time, si
from .spread import point_spread
from .text import device_label, t

LAB_DEVICE_SPECS = ("this", "h200", "h100", "a100", "l4")  # "this": the machine running the app, measured
LAB_DTYPES = ("fp32", "bf16", "int8", "int4")  # engine.contract.cost.DTYPE_BYTES: 4, 2, 1, 0.5 bytes per element
OVERHEAD_EFFICIENCY = 0.3  # a pass under 30 % of its floor spends most of its time on something else


def lab_roofs_are_the_runs(trace: RequestTrace, spec_key: str, as_run: bool) -> bool:
    """The roof rule: a measured pass is drawn only against the roofs of the machine that measured it,
    in the dtypes it ran in. True for "this" (this machine's measured roofs) and for the datasheet of
    the very chip the trace's provenance names (a run recorded on an H200 against H200's datasheet);
    False for any other datasheet and for a preview in other dtypes: there the cost model's
    prediction is drawn alone (lab_prediction_only) and the measurement stays this machine's."""
    if not as_run:
        return False
    if spec_key == "this":
        return True
    provenance = trace.provenance
    return bool(provenance and provenance.gpu) and spec_for_device_name(provenance.gpu) is DEVICE_SPECS.get(spec_key)


def lab_prediction_only(floors):
    """The same floors with no measured time (every measured_ms 0): the figures then draw the cost
    model's prediction alone, and no ratio of a floor to another machine's time can be formed."""
    return dataclasses.replace(floors, steps=tuple(dataclasses.replace(s, measured_ms=0.0) for s in floors.steps))


def lab_median_decode(floors):
    """The run's Decode steps as one row, by the lesson's statistic (lesson.spread.run_numbers: the median of
    their measured times, the mean of the middle two for an even count), so the lab and the lesson quote one
    number for one run; its floor, FLOPs and bytes are the middle pass's (a Decode step's differ by a
    position of context). None without Decode."""
    decode = sorted(floors.phase_steps("decode"), key=lambda s: s.measured_ms)
    if not decode:
        return None
    middle = decode[(len(decode) - 1) // 2]
    return dataclasses.replace(middle, measured_ms=statistics.median(s.measured_ms for s in decode))


def decode_row_name(floors, step, lang: str) -> str:
    """"Decode (the median of its 5 steps)", in the lesson's words for that statistic; "Decode D1" for one step."""
    num_steps = len(floors.phase_steps("decode"))
    if num_steps > 1:
        return t(lang, "lab_decode_median", n=num_steps)
    return f"{t(lang, 'phase_decode')} D{step.index}"


def lab_cost_table(floors, lang: str, compared: bool = True) -> list[dict]:
    """One row for the run's Prefill and one for its median Decode step: the cost model beside the clock.

    `compared` False (lab_roofs_are_the_runs: another device's datasheet, or other dtypes): the run's
    time stays in the table, headed as this machine's measurement, and no floor ÷ measured is formed."""
    rows = []
    picks = [s for s in (floors.steps[0] if floors.steps else None, lab_median_decode(floors)) if s is not None]
    measured = t(lang, "lab_col_measured" if compared else "lab_col_measured_here")
    for step in picks:
        name = t(lang, "phase_prefill") if step.phase == "prefill" else decode_row_name(floors, step, lang)
        row = {
            t(lang, "lab_col_pass"): name,
            t(lang, "lab_col_positions"): t(lang, "lab_positions", n=step.new_positions, c=step.context),
            "FLOPs": si(step.flops).strip(),
            t(lang, "lab_col_bytes"): si(step.bytes).strip() + "B",
            "FLOP/B": f"{step.intensity:,.2f}",
            t(lang, "lab_col_floor"): fmt_time(step.floor_ms),
            t(lang, "lab_col_bound"): t(lang, f"lab_bound_{step.bound}"),
            measured: fmt_time(step.measured_ms),
        }
        if compared:
            row[t(lang, "lab_col_efficiency")] = fmt_share(step.efficiency)
        rows.append(row)
    return rows


def lab_prediction_text(floors, lang: str) -> str:
    """Which bound the cost model predicts for each phase on this device, and why (intensity vs ridge)."""
    prefill, decode = floors.steps[0], lab_median_decode(floors)
    words = t(lang, "lab_prediction", device=escape_markdown(device_label(floors.device_name, lang)),
              ridge=f"{floors.ridge_intensity:,.1f}",
              n=prefill.new_positions, prefill_i=f"{prefill.intensity:,.1f}",
              prefill_bound=t(lang, f"lab_bound_{prefill.bound}"))
    if decode is not None:
        words += " " + t(lang, "lab_prediction_decode", c=decode.context, decode_i=f"{decode.intensity:,.2f}",
                         decode_bound=t(lang, f"lab_bound_{decode.bound}"))
    return words


def lab_agreement_text(floors, lang: str, measured_here: bool, as_run: bool = True) -> str:
    """Does the measurement agree with the floor? On a CPU with a tiny model it mostly does not:
    each pass pays a fixed cost (Python, launching every layer's operations) the cost model leaves out."""
    if not measured_here:
        return t(lang, "lab_other_device", device=escape_markdown(device_label(floors.device_name, lang)))
    if not as_run:  # floors for other dtypes than the run's: a preview, not a check
        return t(lang, "lab_other_dtype", weights=floors.weight_dtype, kv=floors.kv_dtype)
    prefill, decode = floors.steps[0], lab_median_decode(floors)
    parts = []
    for step in (prefill, decode):
        if step is None:
            continue
        # under its floor: the roofs were measured low (a busy machine), never "only 0.5x slower"
        key = "lab_under_floor" if step.efficiency > 1 else \
            "lab_agrees" if step.efficiency >= OVERHEAD_EFFICIENCY else "lab_overhead"
        parts.append(t(lang, key, phase=t(lang, f"phase_{step.phase}"), measured=fmt_time(step.measured_ms),
                       floor=fmt_time(step.floor_ms), eff=fmt_share(step.efficiency),
                       factor=f"{step.measured_ms / step.floor_ms:,.1f}" if step.floor_ms > 0 else "—"))
    if any(s is not None and s.efficiency < OVERHEAD_EFFICIENCY for s in (prefill, decode)):
        parts.append(t(lang, "lab_overhead_why"))
    return " ".join(parts)


def lab_dtype_rows(floors_by_dtype: dict[str, object], lang: str) -> list[dict]:
    """The Decode step's floor at each weight dtype (the next lesson, quantization, previewed)."""
    rows = []
    for dtype, floors in floors_by_dtype.items():
        step = lab_median_decode(floors) or floors.steps[0]
        rows.append({t(lang, "lab_col_weights"): dtype, t(lang, "lab_col_kv"): floors.kv_dtype,
                     t(lang, "lab_col_floor"): fmt_time(step.floor_ms),
                     t(lang, "lab_col_bound"): t(lang, f"lab_bound_{step.bound}")})
    return rows


def lab_format_rows(runs: dict[str, tuple[int, object]], lang: str) -> list[dict]:
    """The run's answer in each weight format the engine ran it in ({format: (weight bytes held, TraceFloors)},
    floors from this machine's measured roofs): bytes held, median Decode step measured, its floor, the share."""
    rows = []
    for name, (weight_bytes, floors) in runs.items():
        step = lab_median_decode(floors)
        if step is None:
            continue
        rows.append({t(lang, "lab_col_weights"): name, t(lang, "lab_col_held"): fmt_bytes(weight_bytes),
                     t(lang, "lab_col_measured"): fmt_time(step.measured_ms), t(lang, "lab_col_floor"): fmt_time(
                         step.floor_ms), t(lang, "lab_col_share"): fmt_share(step.efficiency)})
    return rows


SWEEP_GROWS = 1.5  # last point over first: above it a sweep "grew", below it is "nearly flat"
BATCH_PAYS = 1.2  # positions per second, largest batch over batch 1: above it batching paid


def lab_sweep_caption(sweep, lang: str) -> str:
    """First and last point of a sweep, measured and floor, in words that fit what was measured:
    Prefill grew, hardly grew or (only noise can) did not; a Decode step stayed flat or grew with
    the context; batching paid or did not. Then the outliers, if any, and the points left out."""
    first, last = sweep.points[0], sweep.points[-1]
    ratio, gain = last.median_ms / first.median_ms, last.tokens_per_s / first.tokens_per_s
    key = f"lab_sweep_caption_{sweep.kind.replace('-', '_')}" + _sweep_variant(sweep.kind, ratio, gain)
    words = t(lang, key, x0=f"{first.value:,}", x1=f"{last.value:,}",
              m0=fmt_time(first.median_ms), m1=fmt_time(last.median_ms), f0=fmt_time(first.floor_ms),
              f1=fmt_time(last.floor_ms), ratio=f"{ratio:,.1f}" if ratio >= 0.095 else f"{ratio:.2g}",
              r0=f"{first.tokens_per_s:,.0f}", r1=f"{last.tokens_per_s:,.0f}", gain=f"{gain:,.1f}")
    outliers = sum(len(point_spread(p.times_ms)[2]) for p in sweep.points)
    if outliers:
        words += " " + t(lang, "lab_sweep_outliers", n=outliers, total=sum(len(p.times_ms) for p in sweep.points))
    if sweep.skipped:
        words += " " + t(lang, "lab_sweep_skipped", values=", ".join(f"{v:,}" for v in sweep.skipped))
    return words


def _sweep_variant(kind: str, ratio: float, gain: float) -> str:
    """The caption key's ending for what the sweep measured (see lab_sweep_caption)."""
    if kind == "prefill":
        return "" if ratio >= SWEEP_GROWS else "_flat" if ratio > 1.0 else "_noise"
    if kind == "decode-context":
        return "_grows" if ratio >= SWEEP_GROWS else ""
    return "" if gain >= BATCH_PAYS else "_flat"


def lab_sweep_kept_text(sweep, lang: str) -> str:
    """When and where a kept sweep was measured (its provenance), so a visitor knows how old it is."""
    provenance = sweep.provenance
    if provenance is None or not provenance.recorded_at:
        return t(lang, "lab_sweep_kept_unknown")
    when = provenance.recorded_at.replace("T", " ").replace("Z", " UTC")
    return t(lang, "lab_sweep_kept", when=when, machine=escape_markdown(provenance.machine))
