"""A real server's prefix cache, seen two ways, and whether the two agree.

    the OpenAI usage      usage.prompt_tokens_details.cached_tokens, per request (vLLM sends it with
                          --enable-prompt-tokens-details; SGLang and OpenAI send it by default)
    Prometheus /metrics   vLLM's counters vllm:prefix_cache_queries / vllm:prefix_cache_hits (tokens
                          looked up / found; exposed with a _total suffix), read at the probe's first
                          and last scrape: the difference is what this run's requests looked up and hit

The two count the same tokens when nothing else uses the server meanwhile, so the probe says whether
they agree, disagree (both numbers, and that other clients' requests also count in /metrics), or which
one is missing. Standard library only, no torch (engine/contract/).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

PREFIX_COUNTERS = {  # series -> the Prometheus names that carry it (summed over label sets)
    "queries": ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries"),
    "hits": ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits"),
}
VERDICTS = ("agree", "disagree", "usage_missing", "metrics_missing", "both_missing")
AGREE_WITHIN = 0.02  # of the larger count (at least one token): counted alike


def prefix_counters(parsed: dict[str, list[float]]) -> tuple[dict[str, str], dict[str, float]]:
    """From one parsed scrape: (series -> the name found, series -> its value summed over label sets)."""
    names, values = {}, {}
    for series, candidates in PREFIX_COUNTERS.items():
        name = next((n for n in candidates if parsed.get(n)), None)
        if name is None:
            continue
        vals = [v for v in parsed[name] if math.isfinite(v) and v >= 0]
        if vals:
            names[series], values[series] = name, sum(vals)
    return names, values


@dataclass(frozen=True)
class PrefixCacheCheck:
    """The run's cached prompt tokens by the usage and by /metrics, and the verdict (one of VERDICTS)."""

    verdict: str
    usage_cached_tokens: int | None = None  # summed over the requests that reported it; None: none did
    usage_prompt_tokens: int | None = None  # of those same requests
    usage_requests: int = 0  # requests whose usage carried prompt_tokens_details.cached_tokens
    num_requests: int = 0
    metrics_hits: float | None = None  # the counters' growth over the run; None: not exposed
    metrics_queries: float | None = None
    metrics_names: dict[str, str] = field(default_factory=dict)

    @property
    def sentence(self) -> str:
        """The verdict in one English line (the page words it from the fields)."""
        usage = (f"the usage says {self.usage_cached_tokens:,} of {self.usage_prompt_tokens:,} prompt tokens were "
                 f"cached ({self.usage_requests} of {self.num_requests} requests reported it)"
                 if self.usage_cached_tokens is not None else "the usage reports no cached tokens "
                 "(prompt_tokens_details.cached_tokens; vLLM sends it with --enable-prompt-tokens-details)")
        metrics = (f"/metrics counted {self.metrics_hits:,.0f} hits of {self.metrics_queries or 0:,.0f} queried "
                   "tokens during the run" if self.metrics_hits is not None
                   else "/metrics has no prefix-cache counters (vllm:prefix_cache_hits / _queries)")
        verdict = {"agree": "they agree", "disagree": "they DISAGREE (other clients' requests also count in "
                   "/metrics)", "usage_missing": "only /metrics says", "metrics_missing": "only the usage says",
                   "both_missing": "the server says nothing about its prefix cache"}[self.verdict]
        return f"prefix cache: {usage}; {metrics}: {verdict}"


def check_prefix_cache(cached: Sequence[int | None], prompts: Sequence[int | None], before: dict[str, float],
                       after: dict[str, float], names: dict[str, str]) -> PrefixCacheCheck:
    """`cached` / `prompts`: each finished request's usage counts (None: not reported); `before` / `after`:
    the prefix counters at the first and the last scrape (empty: not exposed)."""
    reported = [(c, p) for c, p in zip(cached, prompts) if c is not None]
    usage_cached = sum(c for c, _ in reported) if reported else None
    usage_prompt = sum(p or 0 for _, p in reported) if reported else None
    hits = after["hits"] - before["hits"] if "hits" in after and "hits" in before else None
    queries = after["queries"] - before["queries"] if "queries" in after and "queries" in before else None
    if hits is not None and hits < 0:  # the server restarted meanwhile: its counters say nothing of this run
        hits = queries = None
    if usage_cached is None and hits is None:
        verdict = "both_missing"
    elif usage_cached is None:
        verdict = "usage_missing"
    elif hits is None:
        verdict = "metrics_missing"
    else:
        verdict = "agree" if abs(hits - usage_cached) <= max(1.0, AGREE_WITHIN * max(hits, usage_cached)) \
            else "disagree"
    return PrefixCacheCheck(verdict, usage_cached, usage_prompt, len(reported), len(cached), hits, queries,
                            dict(names))
