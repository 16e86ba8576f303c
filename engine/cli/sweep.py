"""`python -m engine sweep --kind prefill`: measure one phase across a range (engine/contract/sweep.py)."""

from __future__ import annotations

import argparse
import sys

from engine.cli.common import add_device_arguments
from engine.cli.cost import DEVICE_SPEC_CHOICES
from engine.contract import cost
from engine.contract.errors import InputError
from engine.contract.sweep import DEFAULT_REPEATS, KINDS, MAX_BATCH, check_points, format_sweep

NAME = "sweep"


def add_parser(sub) -> None:
    sweep = sub.add_parser(NAME, help="measure Prefill vs prompt length, a Decode step vs context, or a "
                                      "batched Decode step vs batch size, each beside the cost model's floor")
    sweep.add_argument("--kind", required=True, choices=KINDS)
    sweep.add_argument("--model", default=None,
                       help="a local folder (default: the embedded model) or preset:NAME (random weights)")
    sweep.add_argument("--points", default=None, metavar="A,B,...",
                       help="the values to measure, comma-separated (default: prefill and decode-context 8..8192 "
                            f"in powers of two, as far as the model allows; decode-batch 1..{MAX_BATCH})")
    sweep.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                       help="timed passes per point (median kept), after a warm-up")
    sweep.add_argument("--context", type=int, default=128, metavar="C",
                       help="decode-batch: positions cached in every row")
    add_device_arguments(sweep)
    sweep.add_argument("--device-spec", default="auto", choices=("auto", *DEVICE_SPEC_CHOICES),
                       help="the roofs of the floors (auto: h200 on a GPU, this machine measured on a CPU)")
    sweep.add_argument("--json", action="store_true", help="print the sweep as JSON")


def run(args: argparse.Namespace) -> int:
    print(run_sweep_command(args))
    return 0


def parse_points(text: str | None) -> tuple[int, ...] | None:
    """--points "8,16,32" -> (8, 16, 32); None: the kind's default points."""
    try:
        return None if text is None else tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise InputError("length_range", f"--points must be whole numbers separated by commas, got {text!r}",
                         name="points", value=text) from None


def run_sweep_command(args: argparse.Namespace) -> str:
    # torch loads here, when a sweep runs, not when the parser is built
    from engine.runtime import machine
    from engine.runtime.sweep import run_sweep
    from engine.runtime.model import load_model, resolve_device

    points = parse_points(args.points)
    check_points(args.kind, points)  # before the model loads: bad input fails fast
    if args.device_spec == "this":
        spec = machine.measure_this_machine(resolve_device(args.device).type)
    else:
        spec = None if args.device_spec == "auto" else cost.DEVICE_SPECS[args.device_spec]
    longest = (max(points or (8192,)) + 1 if args.kind != "decode-batch"
               else (args.context + 1) * max(points or (64,)))  # a preset's memory check: every row's cache
    lm = load_model(args.model, device=args.device, dtype=args.dtype, max_context=longest)
    def done(i: int, total: int, p) -> None:
        print(f"  {i}/{total}: {p.value} -> {p.median_ms:.3f} ms", file=sys.stderr)

    sweep = run_sweep(lm, args.kind, points, repeats=args.repeats, batch_context=args.context, device_spec=spec,
                      progress=done)
    return sweep.to_json() if args.json else format_sweep(sweep)
