"""Plain helpers behind the serving lab's prefix-caching part, in zh and en: the per-request hit table,
TTFT with and without the cache on the same workload, and the figure's text alternative.

No streamlit, no torch: ServingRun values in (engine/contract/serving/trace.py), rows and sentences out.
"""

from __future__ import annotations

from statistics import median

from engine.contract.interop.prefix_check import VERDICTS
from engine.contract.serving.metrics import prefix_cache_totals
from engine.contract.serving.trace import ServingRun

from .diagrams.prefix_cache import miss_words
from .diagrams.serving_gantt import policy_label
from .formats import fmt_int, fmt_ms
from .text import t


def prefix_records(run: ServingRun, lang: str) -> list[dict[str, str]]:
    """One row per request: prompt, cached and computed tokens, hit rate, and why the rest missed."""
    rows = []
    for r in run.requests:
        p = r.prefix
        cached = p.num_cached_tokens if p else 0
        rows.append({t(lang, "pc_col_request"): r.request_id, t(lang, "pc_col_prompt"): fmt_int(r.prompt_len),
                     t(lang, "pc_col_cached"): fmt_int(cached),
                     t(lang, "pc_col_computed"): fmt_int(r.prompt_len - cached),
                     t(lang, "pc_col_rate"): f"{cached / r.prompt_len:.0%}" if r.prompt_len else "—",
                     t(lang, "pc_col_reason"): miss_words(p, lang)})
    return rows


def same_tokens(off: ServingRun, on: ServingRun) -> bool:
    """Both runs wrote the same tokens for every request (greedy: the cache must change no answer)."""
    return len(off.requests) == len(on.requests) and all(
        a.request_id == b.request_id and a.output_ids == b.output_ids for a, b in zip(off.requests, on.requests))


def ttft_records(off: ServingRun, on: ServingRun, lang: str) -> list[dict[str, str]]:
    """Per request, TTFT without and with the cache (two measured runs of one workload)."""
    with_cache = {r.request_id: r for r in on.requests}
    rows = []
    for r in off.requests:
        other = with_cache.get(r.request_id)
        rows.append({t(lang, "pc_col_request"): r.request_id, t(lang, "pc_col_ttft_off"): fmt_ms(r.ttft_ms),
                     t(lang, "pc_col_ttft_on"): fmt_ms(other.ttft_ms) if other else "—",
                     t(lang, "pc_col_cached"): fmt_int(other.prefix.num_cached_tokens)
                     if other and other.prefix else "0"})
    return rows


def ttft_sentence(off: ServingRun, on: ServingRun, lang: str) -> str:
    """The medians side by side, their ratio, and whether the tokens matched."""
    a = median(r.ttft_ms for r in off.requests)
    b = median(r.ttft_ms for r in on.requests)
    return t(lang, "pc_ttft_p50", off=f"{a:.1f}", on=f"{b:.1f}", ratio=f"{b / a:.2f}" if a > 0 else "—",
             same=t(lang, "pc_same_yes" if same_tokens(off, on) else "pc_same_no"))


def ttft_heading(run: ServingRun, lang: str) -> str:
    return t(lang, "pc_ttft_heading", policy=policy_label(lang, run.settings.policy))


def prefix_alt(run: ServingRun, lang: str) -> str:
    """The block-sharing figure in words: the subtitle's totals and each request's row."""
    total, cached, rate = prefix_cache_totals(run.requests)
    rows = "; ".join(f"{r.request_id}: {fmt_int(r.prefix.num_cached_tokens if r.prefix else 0)} / "
                     f"{fmt_int(r.prompt_len)}, {miss_words(r.prefix, lang)}" for r in run.requests[:24])
    return t(lang, "pc_title", policy=policy_label(lang, run.settings.policy)) + ". " + \
        f"{fmt_int(cached)} / {fmt_int(total)} ({rate:.0%}). " + rows


def _count(value) -> str:
    """A count from a probe's JSON as the page writes it; anything but a finite number >= 0 as a dash."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf")
    return fmt_int(round(value)) if ok else "—"


def probe_prefix_words(check, lang: str) -> str | None:
    """A probe's `prefix_cache` (engine/contract/interop/prefix_check.py, as its JSON) in `lang`; None when
    the result has none (an older probe) or its verdict is not one the probe gives."""
    if not isinstance(check, dict) or check.get("verdict") not in VERDICTS:
        return None
    usage = t(lang, "pc_probe_usage", cached=_count(check.get("usage_cached_tokens")),
              prompt=_count(check.get("usage_prompt_tokens")), n=_count(check.get("usage_requests")),
              total=_count(check.get("num_requests"))) if check.get("usage_cached_tokens") is not None \
        else t(lang, "pc_probe_no_usage")
    metrics = t(lang, "pc_probe_metrics", hits=_count(check.get("metrics_hits")),
                queries=_count(check.get("metrics_queries"))) if check.get("metrics_hits") is not None \
        else t(lang, "pc_probe_no_metrics")
    sep = "；" if lang == "zh" else "; "
    return f"{t(lang, 'pc_probe_heading')} {usage}{sep}{metrics}{sep}{t(lang, 'pc_probe_verdict_' + check['verdict'])}"
