"""The lab's engine modes in tables and words: which modes are offered here, one row per
mode measured, and where a measurement departs from the lesson's story (app_support/modes.py draws
these).
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.contract.config import ServerSettings
from engine.contract.trace import ENGINE_MODES, RequestTrace

from .diagrams.modes import kernel_words, step_kernels
from .formats import format_ms
from .text import t

MODES_MAX_NEW_TOKENS = 64  # per mode: a few seconds for every mode together on the default model


def engine_caption(trace: RequestTrace, lang: str) -> str:
    """"Engine: eager · attention kernel: Prefill flash, Decode flash" ("n/a" for an older trace;
    "no Decode step" for a one-token answer)."""
    prefill = trace.prefill
    kernels = kernel_words(lang, prefill.attention_kernel if prefill else "", step_kernels(trace.decode_steps),
                           decode_ran=bool(trace.decode_steps))
    return t(lang, "modes_engine_caption", mode=trace.engine_mode, kernels=kernels)


def offered_modes(device_type: str, settings: ServerSettings, lang: str) -> list[tuple[str, str | None]]:
    """(mode, why it cannot run here or None) for each mode the lab offers: graph needs CUDA;
    compiled is left out where the operator turned it off (PREFILL_DECODE_COMPILE=0)."""
    out = []
    for mode in ENGINE_MODES:
        if mode == "compiled" and not settings.compile_mode:
            continue
        reason = t(lang, "modes_graph_off", device=device_type) if mode == "graph" and device_type != "cuda" else None
        out.append((mode, reason))
    return out


def modes_table(rows, lang: str) -> list[dict]:
    """One row per mode asked (lesson.diagrams.modes.ModeSummary): what ran (and why it fell back, a
    column only when one did), Prefill, the median Decode step, measured ÷ floor, the attention
    kernels (Prefill / Decode), and whether the tokens match eager's."""
    na = t(lang, "modes_kernel_na")
    same = {True: "✓", False: "✗", None: "—"}
    any_note = any(row.note for row in rows)
    table = []
    for row in rows:
        # One column for both: "compiled", or "compiled → static" when the mode asked for fell back.
        line = {t(lang, "modes_col_mode"): row.asked if row.ran == row.asked else f"{row.asked} → {row.ran}"}
        if any_note:
            line[t(lang, "modes_col_note")] = row.note or "—"
        line.update({
            t(lang, "modes_col_prefill"): format_ms(row.prefill_ms),
            t(lang, "modes_col_decode"): format_ms(row.median_ms),
            t(lang, "modes_col_floor"): f"{row.vs_floor:,.1f}×" if row.vs_floor else "—",
            t(lang, "modes_col_kernels"): f"{row.prefill_kernel or na} / "
                                          f"{row.decode_kernel or (na if row.decode_ms else '—')}",
            t(lang, "modes_col_setup"): format_ms(row.setup_ms) if row.setup_ms >= 0.05 else "—",
            t(lang, "modes_col_same"): "—" if row.asked == "eager" else same[row.same_tokens],
        })
        table.append(line)
    return table


def modes_explanations(rows, runs: Mapping[str, RequestTrace], device_type: str, lang: str,
                       estimate_ms: float | None = None) -> list[str]:
    """Where this measurement departs from the lesson's story, in Markdown sentences: static slower
    than eager (a preallocated cache attended in full), compiled not faster, no graph off CUDA, every
    mode above the floor, tokens that differ from eager's."""
    by_mode = {r.asked: r for r in rows if r.median_ms is not None and r.ran == r.asked}
    eager, static, compiled = by_mode.get("eager"), by_mode.get("static"), by_mode.get("compiled")
    words = []
    if eager and static and static.median_ms > eager.median_ms:
        trace = runs["static"]
        per_token = trace.model.kv_bytes_per_token
        positions = trace.steps[-1].kv_bytes // per_token if per_token else 0
        words.append(t(lang, "modes_why_static_slower", static=format_ms(static.median_ms),
                       eager=format_ms(eager.median_ms), positions=f"{positions:,}",
                       context=trace.steps[-1].context_before if trace.steps else 0))
    if eager and compiled:
        key = "modes_why_compiled_faster" if compiled.median_ms < eager.median_ms else "modes_why_compiled_not_faster"
        words.append(t(lang, key, saved=format_ms(eager.median_ms - compiled.median_ms),
                       eager=format_ms(eager.median_ms), compiled=format_ms(compiled.median_ms)))
    if device_type != "cuda":
        words.append(t(lang, "modes_why_graph_cpu", device=device_type))
    timed = [r for r in rows if r.median_ms is not None]
    best = min(timed, key=lambda r: r.median_ms) if timed else None
    if best is not None and best.floor_ms and best.vs_floor > 1:
        words.append(t(lang, "modes_why_floor", best=format_ms(best.median_ms), floor=format_ms(best.floor_ms),
                       factor=f"{best.vs_floor:,.1f}"))
    if eager and best is not None and best is not eager and estimate_ms:
        words.append(t(lang, "modes_estimate_vs_saved", est=format_ms(estimate_ms), best=best.asked,
                       saved=format_ms(eager.median_ms - best.median_ms)))
    built = max(rows, key=lambda r: r.setup_ms, default=None)
    if built is not None and built.setup_ms >= 1000:
        words.append(t(lang, "modes_why_setup", mode=built.asked, setup=format_ms(built.setup_ms)))
    differ = [r.asked for r in rows if r.same_tokens is False]
    if differ:
        words.append(t(lang, "modes_why_tokens_differ", modes=", ".join(differ)))
    return words
