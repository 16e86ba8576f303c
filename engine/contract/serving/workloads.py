"""Who arrives when, asking what: named scenarios, Poisson arrivals, JSON Lines files.

A workload is a tuple of `WorkloadRequest`s. Prompts are the default model's own
questions (a country's capital, in Chinese or English, from assets/data/capitals.csv),
so its answers mean something; `prompt_tokens` stretches one with the lesson's
filler before it (engine/contract/prompts.py), as the app's slider does.

The default model ends an answer after three or four tokens (巴黎。</s>); chats
that should keep decoding long enough to be seen set `ignore_eos` and write on
past the end of the answer, as `python -m engine trace --ignore-eos` does.

A workload file has one JSON object per line:
    {"arrival_ms": 0, "prompt": "法国的首都是", "max_new_tokens": 16}
optional keys: "ignore_eos" (bool), "prompt_tokens" (int, stretch to N tokens),
"system_tokens" (int, a shared system prompt of N filler tokens before the prompt), "request_id" (str).
Blank lines are skipped; a bad line is refused with its number.
Each line is read bounded (engine.contract.limits): nesting, number lengths, a prompt's characters and
text that cannot be written as UTF-8 are refused before anything is tokenized.

Every refusal is a WorkloadError whose `params["why"]` names the failure (not_json,
unknown_keys, arrival_range, ...) and whose other params hold only data (the line, a
key, a value, a limit), so a page can say it in any language; `str(err)` is English.
"""

from __future__ import annotations

import csv
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.contract import limits
from engine.contract.errors import InputError, LimitError
from engine.contract.limits import (
    MAX_ARRIVAL_MS, MAX_NEW_TOKENS, MAX_WORKLOAD_BYTES, MAX_WORKLOAD_PROMPT_TOKENS, MAX_WORKLOAD_REQUESTS,
)
from engine.contract.prompts import FILLER_ZH

CAPITALS_CSV = Path(__file__).resolve().parents[3] / "assets" / "data" / "capitals.csv"


class WorkloadError(InputError):
    """A workload file or scenario setting is not usable; the message names the line."""


@dataclass(frozen=True)
class WorkloadRequest:
    arrival_ms: float  # when it arrives, ms after the run's clock starts
    prompt: str
    max_new_tokens: int
    ignore_eos: bool = False  # keep writing past EOS (the default model's answers are 3-4 tokens)
    prompt_tokens: int = 0  # stretch the prompt to this many tokens with the lesson's filler (0: as written)
    request_id: str = ""  # "" -> r0, r1, ... in arrival order
    # a system prompt before it: this many tokens of the lesson's filler, the same text in every request that
    # asks for the same number (what prefix caching finds); 0: none
    system_tokens: int = 0


def questions() -> list[str]:
    """Capital questions, alternating Chinese and English: 法国的首都是, The capital of Germany is, ..."""
    with CAPITALS_CSV.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [f"{r['country_zh']}的首都是" if i % 2 == 0 else f"The capital of {r['country_en']} is"
            for i, r in enumerate(rows)]


def _chats(n: int, max_new_tokens: int, gap_ms: float = 0.0, start_ms: float = 0.0,
           ignore_eos: bool = True) -> list[WorkloadRequest]:
    qs = questions()
    return [WorkloadRequest(start_ms + i * gap_ms, qs[i % len(qs)], max_new_tokens, ignore_eos) for i in range(n)]


def poisson_workload(num_requests: int = 16, rate_per_s: float = 20.0, seed: int = 0,
                     max_new_tokens: tuple[int, int] = (8, 48), prompt_tokens: tuple[int, int] = (0, 0),
                     ignore_eos: bool = True) -> tuple[WorkloadRequest, ...]:
    """Arrivals with exponential gaps (a Poisson process of `rate_per_s`); lengths uniform in the given ranges."""
    if not 1 <= num_requests <= MAX_WORKLOAD_REQUESTS or not rate_per_s > 0:
        raise WorkloadError("bad_workload", f"need 1..{MAX_WORKLOAD_REQUESTS} requests and a positive rate, got "
                                            f"{num_requests} at {rate_per_s}/s", line=0, why="poisson_range",
                            n=num_requests, rate=rate_per_s, limit=MAX_WORKLOAD_REQUESTS)
    rng, qs, t = random.Random(seed), questions(), 0.0
    out = []
    for _ in range(num_requests):
        out.append(WorkloadRequest(round(t, 3), qs[rng.randrange(len(qs))], rng.randint(*max_new_tokens), ignore_eos,
                                   rng.randint(*prompt_tokens)))
        t += rng.expovariate(rate_per_s) * 1e3
    return tuple(out)


def _long_prompt_during_chats(seed: int) -> tuple[WorkloadRequest, ...]:
    chats = _chats(4, 48, gap_ms=15.0)
    long = WorkloadRequest(100.0, "法国的首都是", 8, ignore_eos=False, prompt_tokens=1024)
    return (*chats, long)


def _mixed_lengths(seed: int) -> tuple[WorkloadRequest, ...]:
    qs = questions()
    lengths = (0, 64, 0, 256, 0, 128, 512, 0)
    return tuple(WorkloadRequest(20.0 * i, qs[i], 16 + 8 * (i % 3), True, n) for i, n in enumerate(lengths))


SHARED_SYSTEM_TOKENS = 512


def _shared_system_prompt(seed: int) -> tuple[WorkloadRequest, ...]:
    """8 chats, one every 50 ms, each a capital question after the same 512-token system prompt."""
    qs = questions()
    return tuple(WorkloadRequest(50.0 * i, qs[i], 16, True, system_tokens=SHARED_SYSTEM_TOKENS) for i in range(8))


def _capitals() -> list[tuple[str, str]]:
    with CAPITALS_CSV.open(encoding="utf-8") as f:
        return [(r["country_zh"], r["capital_zh"]) for r in csv.DictReader(f)]


def _multi_turn_chat(seed: int) -> tuple[WorkloadRequest, ...]:
    """One conversation, four turns 400 ms apart; each turn resends everything before it (a 128-token system
    prompt, every earlier question and its answer) and asks the next question."""
    pairs, turns, said = _capitals()[:4], [], ""
    for i, (country, capital) in enumerate(pairs):
        turns.append(WorkloadRequest(400.0 * i, f"{said}{country}的首都是", 8, False, system_tokens=128,
                                     request_id=f"turn{i + 1}"))
        said += f"{country}的首都是{capital}。"
    return tuple(turns)


def _near_miss(seed: int) -> tuple[WorkloadRequest, ...]:
    """The same ~180-token text three times, 300 ms apart: the second after a different first token (a miss
    from token 1 on, however long the rest agrees), the third exactly the first again (a hit)."""
    text = "".join(FILLER_ZH) + "法国的首都是"
    return (WorkloadRequest(0.0, "Q: " + text, 8, False, request_id="first"),
            WorkloadRequest(300.0, "A: " + text, 8, False, request_id="other-first-token"),
            WorkloadRequest(600.0, "Q: " + text, 8, False, request_id="same-again"))


# name -> (what it shows, builder(seed) -> workload). Names are kebab-case.
SCENARIOS: dict[str, tuple[str, Callable[[int], tuple[WorkloadRequest, ...]]]] = {
    "long-prompt-during-chats": ("four chats decoding when a 1024-token prompt arrives at 100 ms",
                                 _long_prompt_during_chats),
    "burst-16": ("16 short chats arrive at once (32 tokens each)", lambda seed: tuple(_chats(16, 32))),
    "eight-chats": ("8 chats at once, 64 tokens each (the benchmark's batch)", lambda seed: tuple(_chats(8, 64))),
    "poisson-16": ("16 chats, Poisson arrivals at 20 per second (--seed), 8..48 tokens",
                   lambda seed: poisson_workload(16, 20.0, seed)),
    "mixed-lengths": ("8 requests every 20 ms, prompts stretched to 0..512 tokens", _mixed_lengths),
    "capital-questions": ("8 capital questions at once, each answered until its own EOS",
                          lambda seed: tuple(_chats(8, 16, ignore_eos=False))),
    "shared-system-prompt": ("8 chats every 50 ms after one 512-token system prompt (prefix caching)",
                             _shared_system_prompt),
    "multi-turn-chat": ("one chat, 4 turns 400 ms apart, each resending the conversation (prefix caching)",
                        _multi_turn_chat),
    "near-miss": ("one text 3 times: after a different first token, then the same again (prefix caching)",
                  _near_miss),
}


def scenario(name: str, seed: int = 0) -> tuple[WorkloadRequest, ...]:
    if name not in SCENARIOS:
        raise WorkloadError("unknown_scenario", f"unknown scenario {name!r}; choose one of {', '.join(SCENARIOS)}",
                            name=name)
    return SCENARIOS[name][1](seed)


# --- JSON Lines ---------------------------------------------------------------

_REQUIRED = {"arrival_ms": (int, float), "prompt": str, "max_new_tokens": int}
_OPTIONAL = {"ignore_eos": bool, "prompt_tokens": int, "request_id": str, "system_tokens": int}


def parse_workload_lines(lines: list[str], max_new_tokens: int = MAX_NEW_TOKENS,
                         max_prompt_tokens: int = MAX_WORKLOAD_PROMPT_TOKENS) -> tuple[WorkloadRequest, ...]:
    """The requests of a JSON Lines workload, sorted by arrival. A page that enforces lower caps passes
    them (`max_new_tokens`, `max_prompt_tokens`), so the refusal names the limit it really applies."""
    count = sum(1 for line in lines if line.strip())
    if count > MAX_WORKLOAD_REQUESTS:  # counted before any line is parsed
        raise WorkloadError("bad_workload", f"the workload has {count} requests; at most {MAX_WORKLOAD_REQUESTS}",
                            line=0, why="too_many", n=count, limit=MAX_WORKLOAD_REQUESTS)
    out = []
    for number, line in enumerate(lines, start=1):
        if line.strip():
            out.append(_parse_line(line, number, max_new_tokens, max_prompt_tokens))
    if not out:
        raise WorkloadError("bad_workload", "the workload has no requests", line=0, why="no_requests")
    return tuple(sorted(out, key=lambda r: r.arrival_ms))


def load_workload_file(path: str | Path) -> tuple[WorkloadRequest, ...]:
    """A JSON Lines file's requests; a file over MAX_WORKLOAD_BYTES is refused before it is read."""
    try:
        size = Path(path).stat().st_size
        if size > MAX_WORKLOAD_BYTES:
            raise WorkloadError("bad_workload", f"workload file {Path(path).name} has {size} bytes; at most "
                                f"{MAX_WORKLOAD_BYTES}", line=0, why="too_large", n=size, limit=MAX_WORKLOAD_BYTES)
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise WorkloadError("bad_workload", f"cannot read workload file {path}: {err}", line=0, why="cannot_read",
                            name=Path(path).name) from err
    return parse_workload_lines(text.splitlines())


def _bad(number: int, why: str, reason: str, **fields) -> WorkloadError:
    """`why` names the failure, `fields` carry its data (a key, a value, a limit); `reason` is the English."""
    return WorkloadError("bad_workload_line", f"workload line {number}: {reason}", line=number, why=why,
                         reason=reason, **fields)


def _parse_line(line: str, number: int, max_new_tokens: int = MAX_NEW_TOKENS,
                max_prompt_tokens: int = MAX_WORKLOAD_PROMPT_TOKENS) -> WorkloadRequest:
    try:
        return _checked_line(line, number, max_new_tokens, max_prompt_tokens)
    except LimitError as err:  # the limit's key is the why; the line is this line
        fields = {k: v for k, v in err.params.items() if k != "line"}
        raise _bad(number, err.key, str(err).removeprefix(f"line {number}: "), **fields) from None


def _checked_line(line: str, number: int, max_new_tokens: int, max_prompt_tokens: int) -> WorkloadRequest:
    try:
        data = limits.load_json(line, allow_nonfinite=True, first_line=number)  # NaN: arrival_range says it
    except json.JSONDecodeError as err:
        raise _bad(number, "not_json", f"not JSON ({err.msg})", column=err.colno) from err
    if not isinstance(data, dict):
        raise _bad(number, "not_object", "expected a JSON object")
    unknown = set(data) - set(_REQUIRED) - set(_OPTIONAL)
    if unknown:
        keys = ", ".join(sorted(unknown))
        raise _bad(number, "unknown_keys", f"unknown key(s) {keys}", keys=keys)
    for key, kind in {**_REQUIRED, **_OPTIONAL}.items():
        if key not in data:
            if key in _REQUIRED:
                raise _bad(number, "missing_key", f"missing {key!r}", field=key)
            continue
        value = data[key]
        if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
            raise _bad(number, "wrong_type", f"{key!r} has the wrong type ({type(value).__name__})", field=key)
    arrival, prompt, max_new = float(data["arrival_ms"]), data["prompt"], data["max_new_tokens"]
    if not math.isfinite(arrival) or not 0 <= arrival <= MAX_ARRIVAL_MS:
        raise _bad(number, "arrival_range", f"arrival_ms must be a number in 0..{MAX_ARRIVAL_MS:.0f}, got "
                   f"{data['arrival_ms']}", value=data["arrival_ms"], limit=f"{MAX_ARRIVAL_MS:.0f}")
    limits.check_count("prompt (characters)", len(prompt), limits.MAX_WORKLOAD_PROMPT_CHARS)
    limits.check_text("prompt", prompt)
    limits.check_text("request_id", data.get("request_id", ""))
    if not prompt.strip():
        raise _bad(number, "empty_prompt", "the prompt is empty")
    if not 1 <= max_new <= max_new_tokens:
        raise _bad(number, "max_new_tokens_range", f"max_new_tokens must be 1..{max_new_tokens}, got {max_new}",
                   value=max_new, limit=max_new_tokens)
    stretch = data.get("prompt_tokens", 0)
    if not 0 <= stretch <= max_prompt_tokens:
        raise _bad(number, "prompt_tokens_range", f"prompt_tokens must be 0..{max_prompt_tokens}, got {stretch}",
                   value=stretch, limit=max_prompt_tokens)
    system = data.get("system_tokens", 0)
    if not 0 <= system <= max_prompt_tokens:
        raise _bad(number, "system_tokens_range", f"system_tokens must be 0..{max_prompt_tokens}, got {system}",
                   value=system, limit=max_prompt_tokens)
    return WorkloadRequest(arrival, prompt, max_new, data.get("ignore_eos", False), stretch, data.get("request_id", ""),
                           system)
