"""Figures in words: the alt text of each diagram (what it shows, its key numbers), and the cache
on/off figure's caption, from the same numbers.

Plain text for an <img alt>: a screen reader reads it, a browser never parses it.
"""

from __future__ import annotations

import math

from engine.contract.trace import RequestTrace

from .answer import answer_text
from .diagrams.ttft_parts import ttft_parts_alt
from .formats import fmt_bytes, fmt_count, format_ms, shown_piece
from .text import t

ALT_QUOTE_CHARS = 40  # a quoted prompt or answer in an alt text keeps at most this many characters


def _quoted(text: str, keep_end: bool = False) -> str:
    """Visible text, cut to ALT_QUOTE_CHARS (a stretched prompt keeps its end, the part that asks)."""
    shown = " ".join(shown_piece(text).split())
    if len(shown) <= ALT_QUOTE_CHARS:
        return shown
    return "…" + shown[-ALT_QUOTE_CHARS + 1:] if keep_end else shown[:ALT_QUOTE_CHARS - 1] + "…"


def _alt_numbers(trace: RequestTrace, lang: str) -> dict[str, object]:
    """Every number any figure's alt text quotes, formatted for the page."""
    metrics, prefill = trace.metrics, trace.prefill
    answer = answer_text(trace)
    return {
        "prompt": _quoted(trace.prompt, keep_end=True), "answer": _quoted(answer),
        "first": _quoted(trace.steps[0].output_piece) if trace.steps else "",
        "prompt_len": trace.prompt_len, "output_len": len(trace.steps), "num_passes": len(trace.steps),
        "num_decode": len(trace.decode_steps), "num_positions": sum(s.num_positions for s in trace.steps),
        "prefill_ms": format_ms(prefill.duration_ms if prefill else None),
        "ttft": format_ms(metrics.ttft_ms if metrics else None),
        "e2el": format_ms(metrics.e2el_ms if metrics else None),
        "tpot": format_ms(metrics.tpot_ms if metrics else None),
        "p50": format_ms(metrics.p50_itl_ms if metrics and metrics.itl_ms else None),
        "p99": format_ms(metrics.p99_itl_ms if metrics and metrics.itl_ms else None),
        "max": format_ms(metrics.max_itl_ms if metrics and metrics.itl_ms else None),
        "num_layers": trace.model.num_layers, "per_token": fmt_bytes(trace.model.kv_bytes_per_token),
        "prefill_bytes": fmt_bytes(prefill.kv_bytes if prefill else 0), "final_bytes": fmt_bytes(trace.kv_bytes),
        "num_tokens": trace.steps[-1].context_kept if trace.steps else 0,
        "prefill_positions": prefill.num_positions if prefill else 0,
        "reused": t(lang, "alt_blocks_reused", last=prefill.context_before - 1) if prefill and prefill.context_before
        else "",
    }


FIGURE_ALT_KEYS = {name: f"alt_{name}" for name in
                   ("timeline", "blocks", "kv_growth", "latency", "animation", "review_map")}


def figure_alt(name: str, trace: RequestTrace, lang: str) -> str:
    """The text alternative of the live diagram `name` (lesson.diagrams.DIAGRAMS) for `trace`.

    Plain text for an <img alt>: a screen reader reads it, a browser never parses it. TTFT's parts: the
    engine's (a trace alone; the page's own alt text adds the visitor's, ttft_parts_alt with `felt`).
    """
    if name == "ttft_parts":
        return ttft_parts_alt(trace, lang)
    return t(lang, FIGURE_ALT_KEYS[name], **_alt_numbers(trace, lang))


def with_run_note(alt: str, run_note: str) -> str:
    """A figure's alt text ending with which of several repeats it draws ("median run 3 of 5 (...)",
    lesson.spread.run_label), as the figure's own note says; unchanged for "" (a single run)."""
    return f"{alt} {run_note}" if run_note else alt


def schematic_alt(prompt_len: int, output_len: int, lang: str) -> str:
    """The text alternative of the block sketch (lesson.diagrams.render_blocks_schematic)."""
    return t(lang, "alt_blocks_schematic", prompt_len=prompt_len, num_decode=output_len - 1,
             num_passes=output_len, num_positions=prompt_len + output_len - 1)


def _compare_numbers(comparison) -> dict[str, object]:
    """The totals of an engine.runtime.compare.CacheComparison, formatted for the page (measured, never made up)."""
    return {
        "prompt_len": comparison.prompt_len, "num_tokens": comparison.num_steps,
        "off_ms": format_ms(comparison.off_total_ms), "on_ms": format_ms(comparison.on_total_ms),
        "off_flops": fmt_count(int(comparison.off_total_flops)),
        "on_flops": fmt_count(int(comparison.on_total_flops)),
    }


def cache_compare_alt(comparison, lang: str) -> str:
    """The text alternative of the cache on/off figure (lesson.diagrams.render_cache_compare)."""
    return t(lang, "alt_cache_compare", **_compare_numbers(comparison))


def cache_compare_caption(comparison, lang: str) -> str:
    """One line under that figure: the totals off vs on and how many times more the cache-off run cost
    (and, when it cost no more time, why: a short run's fixed cost per pass, and noise)."""
    time_ratio = comparison.off_total_ms / comparison.on_total_ms if comparison.on_total_ms > 0 else math.inf
    flops_ratio = comparison.off_total_flops / comparison.on_total_flops if comparison.on_total_flops > 0 else math.inf
    words = t(lang, "cache_compare_caption", time_ratio=f"{time_ratio:.1f}", flops_ratio=f"{flops_ratio:.1f}",
              **_compare_numbers(comparison))
    if time_ratio <= 1.0:  # the cache-off run was as fast or faster: say why, or the ratio reads as nonsense
        words += " " + t(lang, "cache_compare_no_saving")
    return words


def attention_alt(attention, lang: str) -> str:
    """The text alternative of one Decode step's attention map (lesson.diagrams.render_attention)."""
    return t(lang, "alt_attention", step=attention.decode_index, num_layers=attention.num_layers,
             context=attention.context)
