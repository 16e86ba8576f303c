"""The same request run N times, every trace kept: the spread behind the lesson's headline numbers.

    for trace in stream_repeats(lm, prompt, cfg, repeats=5):
        if not trace.finished: ...            # run 1, pass by pass, as stream_trace yields it
        else: ...                             # a whole run: run 1 first, then runs 2..5
    runs = measure(lm, prompt, cfg, repeats=5)  # the five finished traces, run 1 first

One pass on a shared machine can take anything (another program held the cores meanwhile), so
one run's Prefill beside one run's Decode step may contradict the lesson by chance; the median
of a few runs (lesson/spread.py) seldom does. Run 1 is the one a page streams and shows; runs
2..N repeat it exactly (same prompt, same config, the same seed: the same tokens) right after,
with nothing drawn in between, so they are as clean as this process allows.
"""

from __future__ import annotations

from collections.abc import Iterator

from engine.contract import config
from engine.contract.errors import InputError
from engine.contract.trace import RequestTrace
from engine.runtime.generation import GenerationConfig, encode_prompt, generate, look_up_prefix, stream_trace
from engine.runtime.model import LoadedModel

MAX_REPEATS = int(config.REPEATS.high)  # the page waits for every repeat before its numbers settle


def check_repeats(repeats: object) -> int:
    """`repeats` as a whole number from 1 to MAX_REPEATS; anything else is an InputError."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise InputError("length_range", f"repeats must be between 1 and {MAX_REPEATS}, got {repeats!r}",
                         name="repeats", value=repeats)
    return repeats


def stream_repeats(lm: LoadedModel, prompt: str, cfg: GenerationConfig = GenerationConfig(), *, repeats: int = 1,
                   max_prompt_tokens: int | None = None, request_id: str = "r0") -> Iterator[RequestTrace]:
    """Run 1 as stream_trace yields it (a growing trace after every pass, the last one finished),
    then the finished trace of each further run. Exactly `repeats` finished traces come out."""
    check_repeats(repeats)
    # With the prefix cache on, every run reads the kept run the first look-up found, and only run 1 is
    # kept: run 2 must not find run 1 and skip a Prefill that run 1 computed (the repeats would differ).
    found = look_up_prefix(lm, encode_prompt(lm, prompt, cfg, max_prompt_tokens), cfg) \
        if cfg.prefix_cache and repeats > 1 else None
    yield from stream_trace(lm, prompt, cfg, request_id=request_id, max_prompt_tokens=max_prompt_tokens, found=found)
    for _ in range(repeats - 1):  # nobody draws between these passes: no page time lands in their waits
        yield generate(lm, prompt, cfg, request_id=request_id, max_prompt_tokens=max_prompt_tokens, found=found,
                       keep=False)


def measure(lm: LoadedModel, prompt: str, cfg: GenerationConfig = GenerationConfig(), *, repeats: int = 1,
            max_prompt_tokens: int | None = None, request_id: str = "r0") -> tuple[RequestTrace, ...]:
    """The finished traces of `repeats` runs of one request, run 1 first."""
    return tuple(t for t in stream_repeats(lm, prompt, cfg, repeats=repeats, max_prompt_tokens=max_prompt_tokens,
                                           request_id=request_id) if t.finished)
