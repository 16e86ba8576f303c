"""What the commands share: the one-line-error parser, the device and dtype choices, the SLO
arguments, and the plain-text table every command prints.

Standard library and torch-free modules only: `python -m engine probe` runs where torch is absent.
"""

from __future__ import annotations

import argparse
import unicodedata

from engine.contract.errors import InputError
from engine.contract.serving.trace import SLO, Distribution

DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")
# A loaded model's dtypes are spelled as torch spells them (engine/runtime/model.py); the cost model's as its
# DTYPE_BYTES does (engine/contract/cost.py). Either command accepts either spelling of the three floating ones.
MODEL_DTYPE_CHOICES = ("auto", "float32", "bfloat16", "float16")
SHORT_DTYPE = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
LONG_DTYPE = {short: long for long, short in SHORT_DTYPE.items()}
SLO_ARGUMENTS = ("slo_ttft_ms", "slo_tpot_ms", "slo_e2el_ms")


class Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line on stderr and exit status 2, not a usage block."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see --help)\n")


def model_dtype(text: str) -> str:
    """argparse `type=` of a loaded model's dtype: bf16 -> bfloat16, fp16 -> float16, fp32 -> float32."""
    return LONG_DTYPE.get(text, text)


def cost_dtype(text: str) -> str:
    """argparse `type=` of the cost model's dtypes: bfloat16 -> bf16, float16 -> fp16, float32 -> fp32."""
    return SHORT_DTYPE.get(text, text)


def add_device_arguments(parser: argparse.ArgumentParser) -> None:
    """--device and --dtype of a command that loads a model."""
    parser.add_argument("--device", default="auto", choices=DEVICE_CHOICES)
    parser.add_argument("--dtype", default="auto", type=model_dtype, choices=MODEL_DTYPE_CHOICES)


def add_slo_arguments(parser: argparse.ArgumentParser) -> None:
    """--slo-ttft-ms, --slo-tpot-ms, --slo-e2el-ms: the objectives goodput counts against."""
    for name in ("TTFT", "TPOT", "E2EL"):
        parser.add_argument(f"--slo-{name.lower()}-ms", type=float, default=None, metavar="MS",
                            help=f"goodput: {name} objective")


def check_positive(args: argparse.Namespace, names: tuple[str, ...], key: str) -> None:
    """Refuse an argument in `names` that is set and not > 0, as InputError(`key`) naming it."""
    for name in names:
        value = getattr(args, name)
        if value is not None and not value > 0:
            raise InputError(key, f"--{name.replace('_', '-')} must be > 0, got {value}", name=name)


def slo_from_args(args: argparse.Namespace, key: str) -> SLO:
    """The SLO of the --slo-* arguments, each checked > 0 (InputError `key` otherwise)."""
    check_positive(args, SLO_ARGUMENTS, key)
    return SLO(args.slo_ttft_ms, args.slo_tpot_ms, args.slo_e2el_ms)


# --- the readable table ------------------------------------------------------

def shown(text: str) -> str:
    """Control characters made visible, so one token cannot break the table."""
    return "".join(repr(c)[1:-1] if unicodedata.category(c).startswith("C") else c for c in text)


def width(text: str) -> int:
    """Columns `text` takes in a terminal: wide (CJK) characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def cell(text: str, columns: int) -> str:
    """`text` padded with spaces to `columns` terminal columns."""
    return text + " " * max(0, columns - width(text))


def table(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """The header and the rows as lines, each column as wide as its widest cell, two spaces between."""
    widths = [max(width(r[i]) for r in [columns, *rows]) for i in range(len(columns))]
    return ["  ".join(cell(c, w) for c, w in zip(row, widths)).rstrip() for row in [columns, *rows]]


def ms(value: float | None) -> str:
    """A time in ms to one decimal; '-' when there is none."""
    return "-" if value is None else f"{value:.1f}"


def dist(name: str, d: Distribution) -> str:
    """One line of a latency distribution: mean, p50, p90, p99 in ms."""
    return f"{name} mean {ms(d.mean)} / p50 {ms(d.p50)} / p90 {ms(d.p90)} / p99 {ms(d.p99)} ms"
