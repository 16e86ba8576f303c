"""Every operator setting: the PREFILL_DECODE_* environment variables, declared once, read one way.

Each variable is declared below (name, kind, default, range or values, one-line meaning) and
listed in VARIABLES; docs/configuration.md holds the same table (`python -m engine.contract.config`
prints it, and a test keeps the two equal). One parser per kind reads every variable the same way:

    read_number  digits (a decimal for megabytes), clamped into the declared range; anything
                 else (unset, empty, "-3", "lots") is the default
    read_flag    on: 1, true, yes, on; off: 0, false, no, off (any case, spaces ignored);
                 anything else is the default
    read_text    the value with spaces trimmed; unset or empty is the default
    read_names   a comma-separated list, each name trimmed; unset or empty is the default

The settings each part of the house uses are built from them: ServerSettings
(settings_from_env: the lesson's limits, the model picker, the bottleneck lab), ServingCaps
(the serving lab), ProbeSettings (the probe and the vLLM upload), EngineSettings (torch's
threads, where the engine runs). Stdlib only, plus two plain engine constants (the default
prompt cap, the serving policies' names), so the page, the engine and the CLI read the same
words the same way.

To add a variable: declare it here, add it to VARIABLES, read it with its kind's parser, and
paste `python -m engine.contract.config`'s table into docs/configuration.md.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.contract import limits
from engine.contract.prompts import DEFAULT_MAX_PROMPT_TOKENS
from engine.contract.serving.trace import POLICIES

NUMBER_KINDS = {"int": r"\d+", "megabytes": r"\d+(\.\d+)?"}  # kind -> the text it accepts
KINDS = (*NUMBER_KINDS, "flag", "text", "path", "address", "names", "secret")
FLAG_ON = ("1", "true", "yes", "on")
FLAG_OFF = ("0", "false", "no", "off")


@dataclass(frozen=True)
class Variable:
    """One environment variable: what it is called, how it is read, what it means.

    `default` is the value when the variable is unset or unreadable (None: worked out at run
    time, `shown_default` says how); number kinds clamp into [low, high]; `values` says in
    words what the other kinds accept."""

    name: str
    kind: str  # one of KINDS: which parser reads it
    default: object
    meaning: str
    low: float | None = None
    high: float | None = None
    values: str = ""
    shown_default: str = ""

    def __post_init__(self) -> None:
        if not self.name.startswith("PREFILL_DECODE_") or self.kind not in KINDS:
            raise ValueError(f"{self.name}: a PREFILL_DECODE_ name and one of {KINDS} (got {self.kind!r})")
        if self.kind in NUMBER_KINDS and not _in_range(self):
            raise ValueError(f"{self.name}: a number needs low <= default <= high")
        if "|" in self.meaning + self.values + self.shown_default:
            raise ValueError(f"{self.name}: '|' would split its row of the documentation table")

    @property
    def default_text(self) -> str:
        """The table's "default" cell."""
        if self.shown_default:
            return self.shown_default
        if self.kind == "flag":
            return "on" if self.default else "off"
        if self.kind in NUMBER_KINDS:
            return _number_text(self.default)
        if self.kind == "names":
            return f"`{','.join(self.default)}`"
        return f"`{self.default}`" if self.default else "empty"

    @property
    def values_text(self) -> str:
        """The table's "range / values" cell."""
        if self.kind in NUMBER_KINDS:
            return f"{_number_text(self.low)} to {_number_text(self.high)}"
        if self.kind == "flag":
            return "on/off, 1/0, true/false, yes/no"
        return self.values


def _in_range(var: Variable) -> bool:
    if var.low is None or var.high is None or var.low > var.high:
        return False
    return var.default is None or var.low <= var.default <= var.high


def _number_text(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# --- the variables -------------------------------------------------------------------

DEFAULT_ALLOW = ("localhost", "127.0.0.1", "::1")
DEFAULT_KEY_VARS = ("OPENAI_API_KEY", "VLLM_API_KEY", "SGLANG_API_KEY", "PREFILL_DECODE_PROBE_API_KEY")

# Where the model runs
MODELS_DIR = Variable("PREFILL_DECODE_MODELS_DIR", "path", "", "a folder whose sub-folders appear in the model "
                      "picker (a visitor picks a name, never types a path)", values="a folder")
DEVICE = Variable("PREFILL_DECODE_DEVICE", "text", "auto", "where the app's model runs (auto: cuda, then mps, "
                  "then cpu)", values="auto, cpu, cuda, mps")
DTYPE = Variable("PREFILL_DECODE_DTYPE", "text", "auto", "the weights' dtype (auto: bfloat16 on CUDA, float16 on "
                 "MPS, float32 on CPU)", values="auto, float32, bfloat16, float16")
THREADS = Variable("PREFILL_DECODE_THREADS", "int", None, "torch's CPU threads (on a busy machine more threads "
                   "make a small Decode step slower)", low=1, high=256, shown_default="half the cores, 1 to 4")
ENGINE = Variable("PREFILL_DECODE_ENGINE", "address", "", "a remote engine worker the app sends its runs to, or "
                  "several (a pool, comma-separated: each call goes to the shortest queue); empty: the app starts "
                  "a local one", values="HOST:PORT[,HOST:PORT...]")
ENGINE_TOKEN_FILE = Variable("PREFILL_DECODE_ENGINE_TOKEN_FILE", "path", "", "a file whose first line is the remote "
                             "engine worker's token (the app's side; a worker reads it with --token-file)",
                             values="a file")
ENGINE_TOKEN = Variable("PREFILL_DECODE_ENGINE_TOKEN", "secret", "", "the engine worker's token itself, where no "
                        "token file is set (the app's side and the worker's; never printed or written)",
                        values="at least 16 characters")
# The lesson's limits (a shared classroom server stays responsive on a CPU)
MAX_PROMPT_TOKENS = Variable("PREFILL_DECODE_MAX_PROMPT_TOKENS", "int", DEFAULT_MAX_PROMPT_TOKENS,
                             "the longest prompt (after stretching), in tokens", low=8, high=32768)
MAX_NEW_TOKENS = Variable("PREFILL_DECODE_MAX_NEW_TOKENS", "int", 128, "the longest answer, in tokens",
                          low=1, high=limits.MAX_NEW_TOKENS)
MAX_PROMPT_CHARS = Variable("PREFILL_DECODE_MAX_PROMPT_CHARS", "int", 8000, "longer prompts are refused before "
                            "tokenizing", low=16, high=1_000_000)
REPEATS = Variable("PREFILL_DECODE_REPEATS", "int", 5, "how many times the lesson runs each request: its "
                   "headline numbers (Prefill, a Decode step, their ratio, TTFT, TPOT) are the median, with the "
                   "fastest and slowest run", low=1, high=20)
# The bottleneck lab
PRESETS = Variable("PREFILL_DECODE_PRESETS", "flag", True, "off hides the real-size presets (random weights) from "
                   "the model picker")
COMPILE = Variable("PREFILL_DECODE_COMPILE", "flag", True, "off hides the lab's \"compiled\" engine mode "
                   "(torch.compile: a server with no C compiler, or one that should never spend seconds compiling)")
SWEEP_MAX_POSITIONS = Variable("PREFILL_DECODE_SWEEP_MAX_POSITIONS", "int", 1024, "the lab's sweeps measure "
                               "prompts and contexts up to this many positions", low=8, high=8192)
SWEEP_MAX_BATCH = Variable("PREFILL_DECODE_SWEEP_MAX_BATCH", "int", 64, "the lab's batch sweep goes up to this "
                           "batch", low=1, high=64)
# The serving lab
SERVING_MAX_REQUESTS = Variable("PREFILL_DECODE_SERVING_MAX_REQUESTS", "int", 16, "the most requests in one "
                                "workload", low=1, high=limits.MAX_WORKLOAD_REQUESTS)
SERVING_MAX_PROMPT_TOKENS = Variable("PREFILL_DECODE_SERVING_MAX_PROMPT_TOKENS", "int", 1024, "the longest "
                                     "(stretched) prompt in a workload, in tokens", low=8,
                                     high=limits.MAX_WORKLOAD_PROMPT_TOKENS)
SERVING_MAX_NEW_TOKENS = Variable("PREFILL_DECODE_SERVING_MAX_NEW_TOKENS", "int", 64, "the longest answer in a "
                                  "workload, in tokens", low=1, high=limits.MAX_NEW_TOKENS)
SERVING_DISAGGREGATED = Variable("PREFILL_DECODE_SERVING_DISAGGREGATED", "flag", True, "off leaves out the "
                                 "disaggregated policy (it starts two extra processes)")
# Servers outside this process: the probe and the vLLM result upload
PROBE = Variable("PREFILL_DECODE_PROBE", "flag", True, "off hides \"measure a real server\" (a classroom server "
                 "that must send no requests)")
PROBE_ALLOW = Variable("PREFILL_DECODE_PROBE_ALLOW", "names", DEFAULT_ALLOW, "the hosts the probe may reach (the "
                       "page states the list, so a public server cannot be used to send requests anywhere)",
                       values="comma-separated: a name matches itself, `10.0.` every address it starts, "
                       "`.example.org` every host it ends, `*` any host")
PROBE_KEY_VARS = Variable("PREFILL_DECODE_PROBE_KEY_VARS", "names", DEFAULT_KEY_VARS, "the only environment "
                          "variables a visitor may name as the API key's holder (never another of the server's "
                          "secrets)", values="comma-separated variable names")
PROBE_API_KEY = Variable("PREFILL_DECODE_PROBE_API_KEY", "secret", "", "an API key the probe sends when a visitor "
                         "names this variable (one of the default key variables)", values="a key")
VLLM_MAX_MB = Variable("PREFILL_DECODE_VLLM_MAX_MB", "megabytes", 20.0, "the largest vLLM result file read "
                       "(Streamlit's server.maxUploadSize in .streamlit/config.toml, also 20, caps the upload: "
                       "raise both)", low=0.01, high=1024.0)
# Recorded runs (app_support/gallery.py): an uploaded or gallery file is read only up to this size
RECORDED_MAX_MB = Variable("PREFILL_DECODE_RECORDED_MAX_MB", "megabytes", 5.0, "the largest recorded run file "
                           "(trace, serving run, sweep) the app opens, uploaded or from assets/gallery/ (Streamlit's "
                           "server.maxUploadSize, 20, also caps the upload)", low=0.01, high=1024.0)
# A class opening the lesson at once (app_support/first_screens.py): the page's work below the first figure waits
# while other sessions still draw theirs, at most this long
FIRST_SCREEN_WAIT_MS = Variable("PREFILL_DECODE_FIRST_SCREEN_WAIT_MS", "int", 2000, "a session opening the lesson "
                                "draws what lies below its first figure only once no other session opening it is "
                                "still before its own first figure, or after this many ms (0: never waits)",
                                low=0, high=10000)

VARIABLES = (
    MODELS_DIR, DEVICE, DTYPE, THREADS, ENGINE, ENGINE_TOKEN_FILE, ENGINE_TOKEN,
    MAX_PROMPT_TOKENS, MAX_NEW_TOKENS, MAX_PROMPT_CHARS, REPEATS, PRESETS,
    COMPILE, SWEEP_MAX_POSITIONS, SWEEP_MAX_BATCH, SERVING_MAX_REQUESTS, SERVING_MAX_PROMPT_TOKENS,
    SERVING_MAX_NEW_TOKENS, SERVING_DISAGGREGATED, PROBE, PROBE_ALLOW, PROBE_KEY_VARS, PROBE_API_KEY, VLLM_MAX_MB,
    RECORDED_MAX_MB, FIRST_SCREEN_WAIT_MS,
)


# --- the parsers: one per kind, the same for every variable ---------------------------

def read_number(environ: Mapping[str, str], var: Variable) -> int | float | None:
    """An int (a float for megabytes) clamped into [var.low, var.high]; var.default for
    anything that is not plain digits (a decimal for megabytes): unset, empty, "-3", "lots"."""
    raw = environ.get(var.name, "").strip()
    if not re.fullmatch(NUMBER_KINDS[var.kind], raw):
        return var.default
    value = int(raw) if var.kind == "int" else float(raw)
    return min(max(value, var.low), var.high)


def read_flag(environ: Mapping[str, str], var: Variable) -> bool:
    """True for 1/true/yes/on, False for 0/false/no/off (any case, spaces ignored), else var.default."""
    raw = environ.get(var.name, "").strip().lower()
    return True if raw in FLAG_ON else False if raw in FLAG_OFF else var.default


def read_text(environ: Mapping[str, str], var: Variable) -> str:
    """The value, spaces trimmed; var.default when unset or empty."""
    return environ.get(var.name, "").strip() or var.default


def read_names(environ: Mapping[str, str], var: Variable) -> tuple[str, ...]:
    """The comma-separated names, each trimmed (empty ones dropped); var.default when unset or empty."""
    raw = environ.get(var.name, "")
    if not raw.strip():
        return var.default
    return tuple(n.strip() for n in raw.split(",") if n.strip())


# --- the settings built from them -----------------------------------------------------

@dataclass(frozen=True)
class Limits:
    """Caps that keep a shared classroom server responsive on a CPU."""

    max_prompt_tokens: int = MAX_PROMPT_TOKENS.default
    max_new_tokens: int = MAX_NEW_TOKENS.default
    max_prompt_chars: int = MAX_PROMPT_CHARS.default  # refused before tokenizing


@dataclass(frozen=True)
class ServerSettings:
    """The lesson's and the bottleneck lab's settings (the variables named beside each field)."""

    limits: Limits
    models_dir: Path | None  # MODELS_DIR: folders a visitor may pick from
    device: str  # DEVICE
    dtype: str  # DTYPE
    presets: bool = PRESETS.default  # the real-size presets (random weights) in the picker
    sweep_max_positions: int = SWEEP_MAX_POSITIONS.default
    sweep_max_batch: int = SWEEP_MAX_BATCH.default
    compile_mode: bool = COMPILE.default  # the lab's "compiled" engine mode (torch.compile)
    repeats: int = REPEATS.default  # runs of each lesson request; the headline numbers are their medians
    recorded_max_mb: float = RECORDED_MAX_MB.default  # the largest recorded run file opened (app_support/gallery.py)
    first_screen_wait_ms: int = FIRST_SCREEN_WAIT_MS.default  # app_support/first_screens.py


def settings_from_env(environ: Mapping[str, str] = os.environ) -> ServerSettings:
    """Read the operator's settings; bad values fall back to the defaults."""
    limits = Limits(read_number(environ, MAX_PROMPT_TOKENS), read_number(environ, MAX_NEW_TOKENS),
                    read_number(environ, MAX_PROMPT_CHARS))
    models_dir = read_text(environ, MODELS_DIR)
    return ServerSettings(
        limits=limits,
        models_dir=Path(models_dir).expanduser() if models_dir else None,
        device=read_text(environ, DEVICE),
        dtype=read_text(environ, DTYPE),
        presets=read_flag(environ, PRESETS),
        sweep_max_positions=read_number(environ, SWEEP_MAX_POSITIONS),
        sweep_max_batch=read_number(environ, SWEEP_MAX_BATCH),
        compile_mode=read_flag(environ, COMPILE),
        repeats=read_number(environ, REPEATS),
        recorded_max_mb=read_number(environ, RECORDED_MAX_MB),
        first_screen_wait_ms=read_number(environ, FIRST_SCREEN_WAIT_MS),
    )


@dataclass(frozen=True)
class ServingCaps:
    """What one click of the serving lab may ask of this server."""

    max_requests: int = SERVING_MAX_REQUESTS.default
    max_prompt_tokens: int = SERVING_MAX_PROMPT_TOKENS.default  # the longest (stretched) prompt
    max_new_tokens: int = SERVING_MAX_NEW_TOKENS.default  # the longest answer
    disaggregated: bool = SERVING_DISAGGREGATED.default  # off: two extra processes are too much here

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> ServingCaps:
        return cls(max_requests=read_number(environ, SERVING_MAX_REQUESTS),
                   max_prompt_tokens=read_number(environ, SERVING_MAX_PROMPT_TOKENS),
                   max_new_tokens=read_number(environ, SERVING_MAX_NEW_TOKENS),
                   disaggregated=read_flag(environ, SERVING_DISAGGREGATED))

    @property
    def policies(self) -> tuple[str, ...]:
        return tuple(p for p in POLICIES if p != "disaggregated" or self.disaggregated)


@dataclass(frozen=True)
class ProbeSettings:
    """What the serving lab may do with servers outside this process."""

    enabled: bool = PROBE.default
    allow: tuple[str, ...] = DEFAULT_ALLOW  # lower case
    key_vars: tuple[str, ...] = DEFAULT_KEY_VARS
    vllm_max_mb: float = VLLM_MAX_MB.default

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> ProbeSettings:
        return cls(enabled=read_flag(environ, PROBE),
                   allow=tuple(host.lower() for host in read_names(environ, PROBE_ALLOW)),
                   key_vars=read_names(environ, PROBE_KEY_VARS), vllm_max_mb=read_number(environ, VLLM_MAX_MB))

    def host_allowed(self, host: str) -> bool:
        host = host.lower().strip("[]")
        for entry in self.allow:
            if entry == "*" or host == entry.strip("[]"):
                return True
            if entry.endswith(".") and host.startswith(entry) and _is_ip(host):  # an address prefix: "10.0."
                return True
            if entry.startswith(".") and host.endswith(entry):  # a domain: ".cluster.local"
                return True
        return False


def _is_ip(host: str) -> bool:
    """An address literal (so "10.0." never matches a name such as 10.0.example.com)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class EngineSettings:
    """How the engine runs: torch's CPU threads, and where (a local worker, or a remote one)."""

    num_threads: int  # THREADS
    address: str = ENGINE.default  # ENGINE: HOST:PORT of a remote worker (or several, comma-separated); "" = local

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> EngineSettings:
        threads = read_number(environ, THREADS)
        return cls(num_threads=default_threads() if threads is None else threads,
                   address=read_text(environ, ENGINE))


def default_threads() -> int:
    """Half the cores, at most 4.

    Measured on a 2-core machine: with one other busy process, torch's default (one thread
    per core) made a decode step about 50x slower, because its threads wait on each other at
    every small matmul. Tiny decode steps gain nothing from more threads."""
    return max(1, min(4, (os.cpu_count() or 2) // 2))


# --- the documentation table -----------------------------------------------------------

def markdown_table() -> str:
    """docs/configuration.md's table of every variable, one row each, in VARIABLES' order."""
    rows = ["| Variable | Default | Range / values | Meaning |", "|---|---|---|---|"]
    rows += [f"| `{v.name}` | {v.default_text} | {v.values_text} | {v.meaning} |" for v in VARIABLES]
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
