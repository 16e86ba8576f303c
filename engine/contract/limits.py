"""Every input limit, in one place, and the checks that apply them before anything is allocated.

A few bytes of input must never become gigabytes or minutes: a size, a count, a depth or a
time read from a file, a flag, a model config or a server's reply is checked against a limit
here first, and only then used. Each refusal is a `LimitError` (engine.contract.errors): a key, the field
or line it names, and the limit, so the CLI prints one line (exit 2) and a page says it in its
own language (lesson.messages).

The operator's own caps (prompt lengths, requests per serving run, the vLLM upload size) are
settings in engine/contract/config.py; these are the hard bounds no setting lifts. docs/operators.md
("Limits") is this table, checked by tests/hostile/test_limits_doc.py:

    python -m engine.contract.limits      # prints the table

Pure Python: no torch, no transformers.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from engine.contract.errors import LimitError

# --- JSON, whatever file or reply it comes from -------------------------------------------
MAX_JSON_DEPTH = 64  # nested lists/objects; a serving run nests 6 deep, so 64 is far beyond any real file
MAX_NUMBER_DIGITS = 100  # characters of one JSON number: a 5000-digit integer costs seconds to convert
# --- a request's answer and a serving workload: the hard caps a setting may lower, never lift ---
MAX_NEW_TOKENS = 4096  # new tokens one request may ask for: a trace's Decode steps (PREFILL_DECODE_MAX_NEW_TOKENS' top)
MAX_WORKLOAD_REQUESTS = 512  # requests in one serving workload (a classroom server, not a load test)
MAX_WORKLOAD_PROMPT_TOKENS = 4096  # a workload request's prompt_tokens (a prompt stretched with the lesson's filler)
# --- times and counts read from a serving run, a vLLM result or a workload -------------------
MAX_TIME_MS = 1e10  # any time or duration in a serving run, in ms (about 116 days): 1e308 overflows sums
MAX_MAGNITUDE = 1e15  # any number in a saved serving run: sums and scales of numbers this size stay finite
MAX_TIME_S = MAX_TIME_MS / 1e3  # the same bound for vLLM's seconds
MAX_CLOCK_S = 1e12  # vLLM's start_times are a monotonic clock (time since boot): only their spread is bounded
MAX_REQUEST_TOKENS = 16_777_216  # prompt or answer length of one request in an imported file (no context is longer)
MAX_IMPORT_REQUESTS = 100_000  # requests in one vLLM result file (vLLM's benchmarks send hundreds to thousands)
MAX_IMPORT_TOKEN_TIMES = 4_000_000  # streamed chunks (itls entries) across one vLLM result file
MAX_ARRIVAL_MS = 60_000.0  # a workload's latest arrival: the engine really waits for it (a minute)
MAX_WORKLOAD_PROMPT_CHARS = 65_536  # characters of one workload prompt, checked before it is tokenized
MAX_WORKLOAD_BYTES = 64 * 2**20  # a workload file (serve --workload): its most requests times its longest prompts
# --- the engine worker and its clients (engine/runtime/worker/server.py, engine/contract/worker/client.py) ---
WORKER_MAX_CALL_BYTES = 1 << 20  # one call's frame (a call is a few KB; a serving workload's prompts a few hundred)
WORKER_MAX_RESULT_BYTES = 64 << 20  # one frame from a worker (a 4096-step trace is about 4 MB), before it is read
WORKER_SEND_BUFFER_BYTES = 16 << 20  # events one client may leave unread in the worker before it is dropped
WORKER_SEND_DEADLINE_S = 10.0  # an event a client has not taken in this long: its call is cancelled, it is dropped
WORKER_HANDSHAKE_DEADLINE_S = 5.0  # a connection that has not finished the key challenge by then is closed
WORKER_MAX_PENDING = 1024  # connections in the key challenge (or keyed, their call not in) at once
WORKER_MAX_PENDING_PER_HOST = 512  # of those, from one address (past either, the oldest is closed): a class's burst
WORKER_CALL_DEADLINE_S = 5.0  # a keyed connection that has not sent its call by then is closed (a pending slot)
WORKER_MAX_SESSIONS = 256  # keyed connections with a call served at once (a thread each; more wait at the door)
WORKER_MAX_SESSIONS_PER_HOST = 64  # of those, from one peer (its address and replica); more of its calls wait
WORKER_MAX_PARKED = 4096  # calls in, waiting at the door for a session slot (past it: engine_busy)
WORKER_PARK_DEADLINE_S = 120.0  # a call that waited this long for a session slot: engine_busy
WORKER_PROMPT_CHARS_PER_TOKEN = 16  # a prompt's characters per token of the worker's prompt cap (a stretched prompt)
WORKER_SILENCE_S = 20.0  # a client hearing nothing (not even a heartbeat) this long: "the engine stopped answering"
WORKER_STALL_S = 3.0  # the worker's clock jumped this far (the process stood still): the run is discarded
WORKER_MAX_CALL_S = 3600.0  # the longest any call may take, heartbeats or not
# --- the CLI's numbers ------------------------------------------------------------------------
MAX_STRETCH_TOKENS = 131_072  # --prompt-tokens (a prompt stretched with filler), before the model's context is checked
MAX_SEED = 2**32 - 1  # --seed: numpy's and torch's generators both take it
MAX_COST_BATCH = 1_048_576  # python -m engine cost --batch (its --prompt-len and --context: MAX_POSITIONS)
# --- a model config's declared shape, checked before one weight is allocated -----------------
MAX_LAYERS = 1024  # num_hidden_layers (the largest published dense models have about 130)
MAX_HIDDEN_SIZE = 65_536  # hidden_size, intermediate_size / 4 alike (Llama 3.1 405B: 16384)
MAX_INTERMEDIATE_SIZE = 262_144  # intermediate_size (Llama 3.1 405B: 53248)
MAX_HEADS = 1024  # query or K/V heads per layer
MAX_VOCAB_SIZE = 1_048_576  # vocab_size (Gemma 3: 262144)
MAX_POSITIONS = 16_777_216  # max_position_embeddings (Llama 4 Scout: 10M)
MAX_EXPERTS = 1024  # num_local_experts / num_experts (DeepSeek-V3: 256)
MAX_CONFIG_BYTES = 4 * 2**20  # a model's config.json, read before anything else of the folder
MAX_INDEX_BYTES = 64 * 2**20  # a model.safetensors.index.json (a 400B model's lists some 2000 tensors)
MAX_SAFETENSORS_HEADER = 100 * 2**20  # a safetensors file's JSON header (the format's own limit)
HUB_FETCH_TIMEOUT_S = 1800.0  # a model fetched from the Hugging Face Hub (the CLI only): the whole download
MEMORY_FRACTION = 0.9  # a model's weights may take at most this share of the device's free memory
# --- the serving engine's KV store -----------------------------------------------------------
MAX_BLOCK_SIZE = 1024  # tokens per KV block
MAX_KV_BLOCKS = 1_048_576  # blocks in one KV store
KV_MEMORY_FRACTION = 0.5  # a serving run's KV store may take at most this share of free memory
# --- a server's replies to the probe (engine/contract/interop/probe.py): one request fails, the others are kept ---
PROBE_SECONDS_PER_TOKEN = 1.0  # a request's deadline: its --timeout plus this per max_tokens, however it trickles
PROBE_CHUNKS_PER_TOKEN = 2  # streamed data chunks allowed per max_tokens (a server may split a token) ...
PROBE_CHUNK_SLACK = 32  # ... plus these (the role, finish and usage chunks, empty ones)
PROBE_BYTES_PER_CHUNK = 4096  # a stream's bytes: this per allowed chunk (a real chunk is a few hundred) ...
PROBE_MAX_STREAM_BYTES = 64 << 20  # ... and never more than this in one stream
PROBE_MAX_LINE_BYTES = 1 << 20  # one Server-Sent Events line
PROBE_MAX_USAGE_TOKENS = MAX_REQUEST_TOKENS  # a server's usage.prompt_tokens / completion_tokens (a count, kept as one)
PROBE_MAX_ERROR_BYTES = 4096  # of an HTTP error's body, read for its message
PROBE_MODELS_DEADLINE_S = 30.0  # GET /v1/models in all (or --timeout when shorter)
PROBE_MAX_MODELS_BYTES = 1 << 20  # GET /v1/models' body
PROBE_METRICS_DEADLINE_S = 5.0  # one /metrics scrape in all (or 8 sampling intervals when shorter)
PROBE_MAX_METRICS_BYTES = 4 << 20  # one /metrics scrape's body


@dataclass(frozen=True)
class Limit:
    """One row of the operators' table: the constant, its value, what is refused, how."""

    name: str
    value: float
    refused: str
    how: str = "one line (python -m engine: exit 2, python -m lesson.export: exit 1); the app: one message"


LIMITS: tuple[Limit, ...] = (
    Limit("MAX_JSON_DEPTH", MAX_JSON_DEPTH, "JSON nested deeper (workload lines, vLLM results, serving runs)"),
    Limit("MAX_NUMBER_DIGITS", MAX_NUMBER_DIGITS, "a JSON number longer than this many characters"),
    Limit("MAX_TIME_MS", MAX_TIME_MS, "a vLLM arrival placed (at request_rate) beyond this many ms"),
    Limit("MAX_MAGNITUDE", MAX_MAGNITUDE, "a number in a saved serving run (--serving-run) beyond it, or not finite"),
    Limit("MAX_TIME_S", MAX_TIME_S, "a vLLM time or duration beyond this many seconds, or not finite"),
    Limit("MAX_CLOCK_S", MAX_CLOCK_S, "a vLLM start_times clock reading beyond this many seconds"),
    Limit("MAX_REQUEST_TOKENS", MAX_REQUEST_TOKENS, "a vLLM input_lens / output_lens entry above it"),
    Limit("MAX_IMPORT_REQUESTS", MAX_IMPORT_REQUESTS, "a vLLM result with more requests"),
    Limit("MAX_IMPORT_TOKEN_TIMES", MAX_IMPORT_TOKEN_TIMES, "a vLLM result with more streamed chunks in all"),
    Limit("MAX_NEW_TOKENS", MAX_NEW_TOKENS, "a request asking more new tokens (--max-new-tokens, a workload line, "
          "a saved trace)"),
    Limit("MAX_WORKLOAD_REQUESTS", MAX_WORKLOAD_REQUESTS, "a workload with more requests (serve --workload, a "
          "Poisson scenario), counted before a line is parsed"),
    Limit("MAX_WORKLOAD_PROMPT_TOKENS", MAX_WORKLOAD_PROMPT_TOKENS, "a workload line stretching its prompt to more "
          "tokens (prompt_tokens)", "the line named, one line / one message"),
    Limit("MAX_ARRIVAL_MS", MAX_ARRIVAL_MS, "a workload request arriving later (the lab, serve --workload)",
          "the line named, one line / one message"),
    Limit("MAX_WORKLOAD_PROMPT_CHARS", MAX_WORKLOAD_PROMPT_CHARS, "a workload prompt with more characters",
          "the line named, one line / one message"),
    Limit("MAX_WORKLOAD_BYTES", MAX_WORKLOAD_BYTES, "a larger workload file (serve --workload), before it is read"),
    Limit("WORKER_MAX_CALL_BYTES", WORKER_MAX_CALL_BYTES, "a larger call frame, before it is read",
          "the worker: one keyed error, the connection closed"),
    Limit("WORKER_MAX_RESULT_BYTES", WORKER_MAX_RESULT_BYTES, "a larger frame from a worker, before it is read",
          "the client: one keyed error"),
    Limit("WORKER_SEND_BUFFER_BYTES", WORKER_SEND_BUFFER_BYTES, "more unread events held for one client",
          "that client's call cancelled, its connection dropped; the others go on"),
    Limit("WORKER_SEND_DEADLINE_S", WORKER_SEND_DEADLINE_S, "an event a client has not read after this many seconds",
          "that client's call cancelled, its connection dropped; the others go on"),
    Limit("WORKER_HANDSHAKE_DEADLINE_S", WORKER_HANDSHAKE_DEADLINE_S, "a key challenge unfinished after this many "
          "seconds", "the connection closed"),
    Limit("WORKER_MAX_PENDING", WORKER_MAX_PENDING, "more connections at once in the key challenge or keyed "
          "without their call", "the oldest of them closed (a real client needs milliseconds there)"),
    Limit("WORKER_MAX_PENDING_PER_HOST", WORKER_MAX_PENDING_PER_HOST, "more of them from one address",
          "that address's oldest closed"),
    Limit("WORKER_CALL_DEADLINE_S", WORKER_CALL_DEADLINE_S, "a keyed connection without a call after this many seconds",
          "the connection closed"),
    Limit("WORKER_MAX_SESSIONS", WORKER_MAX_SESSIONS, "more keyed connections with a call at once",
          "the call waits at the door for a slot (it hears `alive`)"),
    Limit("WORKER_MAX_SESSIONS_PER_HOST", WORKER_MAX_SESSIONS_PER_HOST, "more of them from one peer (its address "
          "and replica)", "the call waits at the door for a slot (it hears `alive`)"),
    Limit("WORKER_MAX_PARKED", WORKER_MAX_PARKED, "more calls waiting at the door for a slot",
          "engine_busy, the connection closed"),
    Limit("WORKER_PARK_DEADLINE_S", WORKER_PARK_DEADLINE_S, "a call that waited this many seconds for a slot",
          "engine_busy, the connection closed"),
    Limit("WORKER_PROMPT_CHARS_PER_TOKEN", WORKER_PROMPT_CHARS_PER_TOKEN, "a prompt longer than this many characters "
          "per token of the worker's prompt cap (or than PREFILL_DECODE_MAX_PROMPT_CHARS, if larger)",
          "before tokenizing: prompt_too_long"),
    Limit("WORKER_SILENCE_S", WORKER_SILENCE_S, "a worker silent (no event, no heartbeat) for this many seconds",
          "the client: engine_silent (a local worker is started again)"),
    Limit("WORKER_STALL_S", WORKER_STALL_S, "a run during which the worker stood still this many seconds",
          "the run discarded: engine_stalled"),
    Limit("WORKER_MAX_CALL_S", WORKER_MAX_CALL_S, "a call still unfinished after this many seconds",
          "the client: engine_silent"),
    Limit("MAX_STRETCH_TOKENS", MAX_STRETCH_TOKENS, "--prompt-tokens above it (or above the model's context)",
          "CLI: one line, exit 2"),
    Limit("MAX_SEED", MAX_SEED, "--seed below 0 or above it", "CLI: one line, exit 2"),
    Limit("MAX_COST_BATCH", MAX_COST_BATCH, "cost --batch above it (--prompt-len, --context: above MAX_POSITIONS)",
          "CLI: one line, exit 2"),
    Limit("MAX_LAYERS", MAX_LAYERS, "a model config declaring more layers", "before loading: one line / message"),
    Limit("MAX_HIDDEN_SIZE", MAX_HIDDEN_SIZE, "a wider hidden size (or head_dim)", "before loading"),
    Limit("MAX_INTERMEDIATE_SIZE", MAX_INTERMEDIATE_SIZE, "a wider MLP", "before loading"),
    Limit("MAX_HEADS", MAX_HEADS, "more query or K/V heads", "before loading"),
    Limit("MAX_VOCAB_SIZE", MAX_VOCAB_SIZE, "a larger vocabulary", "before loading"),
    Limit("MAX_POSITIONS", MAX_POSITIONS, "a longer declared context", "before loading"),
    Limit("MAX_EXPERTS", MAX_EXPERTS, "more experts per layer", "before loading"),
    Limit("MAX_CONFIG_BYTES", MAX_CONFIG_BYTES, "a larger config.json", "before loading"),
    Limit("MAX_INDEX_BYTES", MAX_INDEX_BYTES, "a larger model.safetensors.index.json", "before loading"),
    Limit("MAX_SAFETENSORS_HEADER", MAX_SAFETENSORS_HEADER,
          "a safetensors header declaring more bytes, or tensors past the file's end", "before loading"),
    Limit("HUB_FETCH_TIMEOUT_S", HUB_FETCH_TIMEOUT_S, "a hub download (CLI: --model org/name) taking longer",
          "stopped: one line, exit 2"),
    Limit("MEMORY_FRACTION", MEMORY_FRACTION, "weights the config implies beyond this share of free memory",
          "before loading"),
    Limit("MAX_BLOCK_SIZE", MAX_BLOCK_SIZE, "serve --block-size / the lab's block size above it"),
    Limit("MAX_KV_BLOCKS", MAX_KV_BLOCKS, "serve --kv-blocks / the lab's KV blocks above it"),
    Limit("KV_MEMORY_FRACTION", KV_MEMORY_FRACTION,
          "a KV store (blocks x block size x the model's K/V bytes per token) beyond this share of free memory",
          "before allocating"),
    Limit("PROBE_SECONDS_PER_TOKEN", PROBE_SECONDS_PER_TOKEN, "a probed stream still open after --timeout plus "
          "this many seconds per max_tokens", "that request fails, cut; the others are kept"),
    Limit("PROBE_CHUNKS_PER_TOKEN", PROBE_CHUNKS_PER_TOKEN, "a probed stream with more chunks than this per "
          "max_tokens (plus PROBE_CHUNK_SLACK)", "that request fails, cut; the others are kept"),
    Limit("PROBE_CHUNK_SLACK", PROBE_CHUNK_SLACK, "chunks allowed beyond PROBE_CHUNKS_PER_TOKEN x max_tokens",
          "that request fails, cut; the others are kept"),
    Limit("PROBE_BYTES_PER_CHUNK", PROBE_BYTES_PER_CHUNK, "a probed stream over this many bytes per allowed chunk",
          "that request fails, cut; the others are kept"),
    Limit("PROBE_MAX_STREAM_BYTES", PROBE_MAX_STREAM_BYTES, "a probed stream over this many bytes",
          "that request fails, cut; the others are kept"),
    Limit("PROBE_MAX_LINE_BYTES", PROBE_MAX_LINE_BYTES, "one Server-Sent Events line over this many bytes",
          "that request fails, cut; the others are kept"),
    Limit("PROBE_MAX_USAGE_TOKENS", PROBE_MAX_USAGE_TOKENS, "a server's usage token count above it, or not a "
          "whole number", "that request fails; the others are kept"),
    Limit("PROBE_MAX_ERROR_BYTES", PROBE_MAX_ERROR_BYTES, "bytes of an HTTP error body read (the rest unread)",
          "the message shows the first 300 characters"),
    Limit("PROBE_MODELS_DEADLINE_S", PROBE_MODELS_DEADLINE_S, "GET /v1/models unanswered after this many seconds "
          "(or --timeout)", "the probe stops: one line, exit 2"),
    Limit("PROBE_MAX_MODELS_BYTES", PROBE_MAX_MODELS_BYTES, "a /v1/models body over this many bytes",
          "the model is not checked (a note says so)"),
    Limit("PROBE_METRICS_DEADLINE_S", PROBE_METRICS_DEADLINE_S, "a /metrics scrape unanswered after this many "
          "seconds", "that sample is skipped"),
    Limit("PROBE_MAX_METRICS_BYTES", PROBE_MAX_METRICS_BYTES, "a /metrics body over this many bytes",
          "that sample is skipped"),
)


# --- checks -----------------------------------------------------------------------------------

def is_number(value: Any) -> bool:
    """An int or float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_count(name: str, value: Any, limit: int, low: int = 0, **where: Any) -> int:
    """`value` as a whole number in low..limit, else LimitError("limit_count") naming `name` and the
    limit; `where` (a line, an index, a request) goes into the params."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= limit:
        raise LimitError("limit_count", f"{name} must be a whole number from {low} to {limit}; got {_short(value)}",
                         field=name, value=_short(value), low=low, limit=limit, **where)
    return value


def check_finite(name: str, value: Any, limit: float, low: float | None = None, **where: Any) -> float:
    """`value` as a finite float in low..limit (low defaults to -limit), else LimitError("limit_number")."""
    low = -limit if low is None else low
    if not is_number(value) or not math.isfinite(value) or not low <= value <= limit:
        raise LimitError("limit_number", f"{name} must be a finite number from {_bound(low)} to {_bound(limit)}; "
                         f"got {_short(value)}", field=name, value=_short(value), low=low, limit=limit, **where)
    return float(value)


def check_bytes(name: str, need: int, free: int, fraction: float, **where: Any) -> None:
    """Refuse `need` bytes beyond `fraction` of `free` (LimitError("limit_memory")), before allocating."""
    allowed = int(free * fraction)
    if need > allowed:
        raise LimitError("limit_memory", f"{name} needs {need / 2**30:.2f} GiB; at most {allowed / 2**30:.2f} GiB "
                         f"({fraction:.0%} of the {free / 2**30:.2f} GiB free) is allowed", field=name,
                         need_gib=round(need / 2**30, 2), limit_gib=round(allowed / 2**30, 2), **where)


def check_magnitudes(data: Any, limit: float = MAX_MAGNITUDE, name: str = "") -> None:
    """Every number in parsed JSON `data` finite and within ±`limit`, else LimitError("limit_number")
    naming where (requests[3].finish_ms). Walks without recursion, so any depth json.loads built is fine."""
    stack = [(name, data)]
    while stack:
        path, value = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(item, (dict, list)):
                stack.append((_child(path, key), item))
            elif is_number(item) and not (math.isfinite(item) and -limit <= item <= limit):
                check_finite(_child(path, key), item, limit)


def _child(path: str, key: Any) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else str(key)


def check_text(name: str, text: str, **where: Any) -> str:
    """`text` that can be written as UTF-8 (no lone surrogates, as argv's undecodable bytes become)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise LimitError("limit_text", f"{name} is not valid text (character {err.start + 1} cannot be written "
                         "as UTF-8)", field=name, position=err.start + 1, **where) from None
    return text


def _bound(value: float) -> str:
    """A limit as a refusal says it: 16,777,216 rather than 1.67772e+07; 1e+15 as it is."""
    return f"{int(value):,}" if float(value).is_integer() and abs(value) < 1e12 else f"{value:g}"


def _short(value: Any) -> str:
    """A value as a refusal shows it: at most 40 characters (a 5000-digit number is not echoed whole)."""
    text = repr(value) if not isinstance(value, int) or isinstance(value, bool) or abs(value) < 10**30 else \
        f"a {len(str(abs(value)))}-digit number"
    return text if len(text) <= 40 else text[:37] + "..."


# --- bounded JSON -----------------------------------------------------------------------------

# A string (consumed whole, so brackets and digits inside it are not counted), a bracket, or a
# run of number characters: one pass over the text in C, no recursion.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|[-+0-9.eE]+')


def check_json_shape(text: str, max_depth: int = MAX_JSON_DEPTH, max_digits: int = MAX_NUMBER_DIGITS,
                     first_line: int = 1) -> None:
    """Refuse JSON text nested deeper than `max_depth` or with a number longer than `max_digits`
    characters, before it is parsed: LimitError("limit_json_depth" / "limit_json_number") naming the line."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > max_depth:
                raise _json_limit("limit_json_depth", "is nested more levels deep than", max_depth, text, match.start(),
                                  first_line)
        elif token in "]}":
            depth -= 1
        elif token[0] != '"' and len(token) > max_digits:
            raise _json_limit("limit_json_number", "has a number longer than", max_digits, text, match.start(),
                              first_line)


def _json_limit(key: str, what: str, limit: int, text: str, position: int, first_line: int) -> LimitError:
    line = first_line + text.count("\n", 0, position)
    return LimitError(key, f"line {line}: the JSON {what} {limit}", line=line, limit=limit)


def _refuse_constant(name: str) -> float:
    raise LimitError("limit_not_finite", f"the JSON holds {name}, not a finite number", value=name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise LimitError("limit_not_finite", f"the JSON number {text[:40]} is not finite", value=text[:40])
    return value


def load_json(text: str, *, max_depth: int = MAX_JSON_DEPTH, max_digits: int = MAX_NUMBER_DIGITS,
              allow_nonfinite: bool = False, first_line: int = 1) -> Any:
    """json.loads, bounded: depth and number length checked first (check_json_shape); NaN, Infinity and
    numbers that overflow to inf (1e400) refused unless `allow_nonfinite` (then parsed as Python does).
    Malformed JSON still raises json.JSONDecodeError, so a caller keeps its own words for that."""
    check_json_shape(text, max_depth, max_digits, first_line)
    if allow_nonfinite:
        return json.loads(text)
    return json.loads(text, parse_float=_finite_float, parse_constant=_refuse_constant)


def dump_json(value: Any, **kwargs: Any) -> str:
    """json.dumps that never writes NaN or Infinity: a non-finite number is a LimitError, not output."""
    try:
        return json.dumps(value, allow_nan=False, **kwargs)
    except ValueError as err:
        raise LimitError("limit_not_finite", f"refusing to write a number that is not finite ({err})",
                         value="nan/inf") from None


def markdown_table() -> str:
    """The operators' table of every limit (docs/operators.md, "Limits")."""
    rows = ["| limit | value | what is refused | how |", "|---|---|---|---|"]
    for limit in LIMITS:
        whole = isinstance(limit.value, int) or float(limit.value).is_integer() and abs(limit.value) < 1e9
        value = f"{int(limit.value):,}" if whole else f"{limit.value:g}"
        rows.append(f"| `{limit.name}` | {value} | {limit.refused} | {limit.how} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
