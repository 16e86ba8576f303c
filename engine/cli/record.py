"""`python -m engine record --out DIR`: record the gallery set on this machine (engine/runtime/record.py).

    python -m engine record --out assets/gallery                 # -> assets/gallery/cpu/index.json and its runs
    python -m engine record --out /tmp/g --quick --model DIR      # every kind once, small: seconds on a tiny model

Prints the index's path; one line per run on stderr while it measures.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from engine.cli.common import add_device_arguments

NAME = "record"


def add_parser(sub) -> None:
    record = sub.add_parser(NAME, help="record the gallery set on this machine: the lesson's example at 4 and 1024 "
                                       "prompt tokens, cache on/off, every serving policy, a preset's sweeps")
    record.add_argument("--out", required=True, metavar="DIR",
                        help="the gallery folder: the runs go into DIR/<machine>/ with an index.json")
    record.add_argument("--model", default=None,
                        help="the lesson's model: a local folder (default: the embedded model) or preset:NAME")
    record.add_argument("--sweep-model", default=None, metavar="MODEL",
                        help="the sweeps' model (default: preset:qwen2.5-0.5b; with --quick, --model)")
    record.add_argument("--quick", action="store_true",
                        help="a small set (short prompts, two policies, two-point sweeps, one repeat): for tests")
    add_device_arguments(record)


def run(args: argparse.Namespace) -> int:
    # torch loads here, when a recording runs, not when the parser is built
    from engine.runtime.record import RecordPlan, quick_plan, record_gallery

    plan = quick_plan(args.model) if args.quick else RecordPlan(model=args.model)
    if args.sweep_model is not None:
        plan = dataclasses.replace(plan, sweep_model=args.sweep_model)
    command = "python -m engine record" + (" --quick" if args.quick else "")
    print(record_gallery(Path(args.out), plan, device=args.device, dtype=args.dtype, command=command))
    return 0
