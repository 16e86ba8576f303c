"""`python -m engine cost --prompt-len 512 --context 512`: FLOPs, bytes and device floors (engine/contract/cost.py).

Reads a config.json (or a preset's shape) only: no weights load.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from engine.cli.common import cost_dtype
from engine.contract import cost, limits
from engine.contract.errors import ModelLoadError
from engine.contract.shape import declared_params

NAME = "cost"
DEVICE_SPEC_CHOICES = (*cost.DEVICE_SPECS, "this")  # a datasheet, or this machine measured
DTYPE_CHOICES = ("auto", *cost.DTYPE_BYTES)


def add_parser(sub) -> None:
    parser = sub.add_parser(NAME, help="FLOPs, bytes and device floor of a Prefill and of one Decode step "
                                       "(reads config.json only)")
    parser.add_argument("--model", default="default",
                        help="a local folder with a config.json (default: the embedded model), or preset:NAME")
    parser.add_argument("--device-spec", default="h200", choices=DEVICE_SPEC_CHOICES,
                        help="a datasheet, or 'this': measure this machine once (copy and matmul)")
    parser.add_argument("--prompt-len", type=int, required=True, metavar="N", help="positions in the Prefill")
    parser.add_argument("--context", type=int, required=True, metavar="C",
                        help="positions cached before the Decode step")
    parser.add_argument("--batch", type=int, default=1, metavar="B", help="requests in each pass")
    parser.add_argument("--weight-dtype", default="auto", type=cost_dtype, choices=DTYPE_CHOICES,
                        help="auto: fp32 when 'this' is a CPU (as the engine runs there), else bf16")
    parser.add_argument("--kv-dtype", default="auto", type=cost_dtype, choices=DTYPE_CHOICES,
                        help="auto: the weights' dtype, bf16 for int8/int4")
    parser.add_argument("--formats", action="store_true",
                        help="add the Decode step's floor per weight format (fp32, bf16, int8, int4 per group size)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    print(run_cost(args))
    return 0


def check_declared(folder: Path) -> None:
    """The shape a folder's config.json declares, within engine.contract.limits (LimitError), before AutoConfig reads it
    (a config of 10**12 layers has it build that many layer types); a config that is no shape at all is left
    to the cost model's reader, which says why in its words."""
    from engine.runtime.model import read_config  # torch: only when a folder is costed

    if (folder / "config.json").is_file():
        try:
            declared_params(read_config(folder, folder.name), folder.name)
        except ModelLoadError:
            pass


def run_cost(args: argparse.Namespace) -> str:
    """The cost table (or JSON) of the Prefill of --prompt-len positions and one Decode step at --context."""
    for name, value, limit in (("--prompt-len", args.prompt_len, limits.MAX_POSITIONS),
                               ("--context", args.context, limits.MAX_POSITIONS),
                               ("--batch", args.batch, limits.MAX_COST_BATCH)):
        if value > limit:  # the floors of 10**100 positions are infinite; too few is the cost model's to say
            limits.check_count(name, value, limit)
    # torch loads here (the presets and the thread count live beside the model), not when the parser is built
    from engine.runtime import presets
    from engine.runtime import machine
    from engine.runtime.model import DEFAULT_MODEL_DIR, DEFAULT_MODEL_ID, load_shape, set_num_threads

    default, preset = args.model == DEFAULT_MODEL_ID, presets.preset_name(args.model)
    if preset is not None:  # the shape only: the cost model reads no weights, random or not
        shape = presets.preset_shape(preset)
    else:
        folder = DEFAULT_MODEL_DIR if default else Path(args.model).expanduser()
        check_declared(folder)
        shape = load_shape(folder, name=DEFAULT_MODEL_ID if default else None)
    if args.device_spec == "this":
        set_num_threads()  # measure with the threads a traced run uses
        device = machine.measure_this_machine()
    else:
        device = cost.DEVICE_SPECS[args.device_spec]
    on_cpu = device.device_type == "cpu"  # as the engine's dtype=auto: fp32 on a CPU, else bf16
    weight = args.weight_dtype if args.weight_dtype != "auto" else ("fp32" if on_cpu else "bf16")
    kv = args.kv_dtype if args.kv_dtype != "auto" else (weight if weight in ("fp32", "bf16", "fp16") else "bf16")
    prefill, decode = cost.prefill_and_decode(shape, device, prompt_len=args.prompt_len, context=args.context,
                                              batch=args.batch, weight_dtype=weight, kv_dtype=kv)
    floors = cost.format_floors(shape, device, context=args.context, batch=args.batch, kv_dtype=kv)
    if args.json:
        report = cost.cost_report(shape, device, prefill, decode)
        if args.formats:
            report["weight_formats"] = [{"weights": f.weights, "group_size": f.group_size, "bytes_per_weight":
                                         f.bytes_per_weight, "weight_bytes": f.weight_bytes, "floor_ms": f.floor_ms}
                                        for f in floors]
        return json.dumps(report, indent=2)
    text = cost.format_report(shape, device, prefill, decode)
    if not args.formats:
        return text
    return "\n".join([text, "", f"the Decode step's floor per weight format (KV {kv}; scales and zeros counted; "
                                 "engine trace --weights runs them):", cost.format_floors_table(floors)])
