"""The run panel's sentences about a run: what was shown, each pass of the live log, the queue it
waited in, and why it stopped.
"""

from __future__ import annotations

import datetime

from engine.contract.trace import RequestTrace

from .formats import escape_markdown, format_ms, shown_piece
from .text import t

def pass_phase(trace: RequestTrace, shown: int, lang: str) -> str:
    """The stepping's name for the last of the first `shown` passes: "Prefill", "Decode N", or "Verify N"
    (zh: 验证 N) for a speculative run's verify pass; N is the pass's index, as the figures' D<n> and V<n>."""
    index = max(1, min(shown, len(trace.steps))) - 1
    step = trace.steps[index]
    if step.phase == "prefill":
        return t(lang, "phase_prefill")
    return t(lang, "phase_step_verify" if step.phase == "verify" else "phase_step_decode", n=index)


def sampling_text(trace: RequestTrace, lang: str) -> str:
    s = trace.sampling
    return t(lang, "greedy") if s.greedy else t(lang, "sampled", temperature=s.temperature, seed=s.seed)


def trace_summary(trace: RequestTrace, lang: str) -> str:
    return t(
        lang, "showing_trace", prompt_len=trace.prompt_len, output_len=len(trace.steps),
        model_id=escape_markdown(trace.model.model_id), sampling=sampling_text(trace, lang),
    )


def step_log_line(trace: RequestTrace, index: int, lang: str) -> str:
    """One Markdown line for the live log: what a forward pass took in and gave out."""
    step = trace.steps[index]
    if step.phase == "prefill" and step.context_before:  # the prefix cache held the positions before it
        return t(lang, "log_prefill_reused", num_positions=step.num_positions, cached=step.context_before,
                 piece=_piece(step.output_piece), ms=format_ms(step.duration_ms))
    if step.phase == "prefill":
        return t(lang, "log_prefill", num_positions=step.num_positions, piece=_piece(step.output_piece),
                 ms=format_ms(step.duration_ms))
    return t(lang, "log_decode", index=step.index, piece=_piece(step.output_piece), ms=format_ms(step.duration_ms))


def prefix_note(trace: RequestTrace, lang: str) -> str | None:
    """What the prefix cache did for this run (trace.prefix), as one Markdown sentence; None when it was off.
    Pieces go in code spans (a token's text is the visitor's own), times as the server's clock reads them."""
    p = trace.prefix
    if p is None:
        return None
    fields = dict(prompt=p.num_tokens, cached=p.num_cached_tokens, computed=p.num_computed_tokens,
                  last=p.num_cached_tokens - 1, rate=f"{p.hit_rate:.0%}", kept=p.kept_runs, mode=trace.engine_mode,
                  when=clock(p.source_started_at_s), evicted=clock(p.evicted_at_s))
    if p.miss == "diverged":
        fields.update(k=p.diverged_at, end=p.num_tokens - 1, piece=_piece(p.token_piece),
                      cached_piece=_piece(p.cached_piece))
    key = {"": "pr_hit", "first_seen": "pr_first_seen_some" if p.num_cached_tokens else "pr_first_seen_none"} \
        .get(p.miss, f"pr_{p.miss}")
    return t(lang, key, **fields)


def clock(at_s: float | None) -> str:
    """time.time() seconds as the server's clock shows them, HH:MM:SS; a dash for none."""
    return datetime.datetime.fromtimestamp(at_s).strftime("%H:%M:%S") if at_s is not None else "—"


def _piece(piece: str) -> str:
    # The templates wrap {piece} in single backticks; a code span must not hold one.
    return shown_piece(piece).replace("`", "ˋ") or " "


QUEUE_NOTE_MIN_MS = 1.0  # an uncontended lock is taken in microseconds; a real queue is far longer


def queue_wait_ms(trace: RequestTrace) -> float | None:
    """How long the request's passes waited for the model's lock, in total.

    Only the lock wait the engine measured around each pass (Step.lock_wait_ms:
    another visitor's pass was running), never tokenizing, building token
    pieces or assembling the trace. Returns None when it is too short to mention.
    """
    wait = sum(s.lock_wait_ms for s in trace.steps)
    return wait if wait >= QUEUE_NOTE_MIN_MS else None


def queue_note(trace: RequestTrace, lang: str) -> str | None:
    """The page's sentence about queueing, or None when the request did not queue."""
    waited = queue_wait_ms(trace)
    if waited is None:
        return None
    return t(lang, "queued_for", ms=format_ms(waited), prefill_ms=format_ms(trace.steps[0].lock_wait_ms))


def stop_reason_text(trace: RequestTrace, lang: str) -> str:
    return t(lang, "stop_eos") if trace.stop_reason == "eos" else t(lang, "stop_length")
