"""`python -m lesson.export`: run the engine once, write every diagram as SVG.

    python -m lesson.export --out DIR [--prompt TEXT] [--max-new-tokens N] [--lang zh|en] [--model DIR]
                            [--speculative ngram [--num-speculative-tokens K]]   (verify passes in every figure)
    python -m lesson.export --out DIR --schematic PROMPT_LEN OUTPUT_LEN [--lang zh|en]
    python -m lesson.export --out DIR --serving SCENARIO [--policies P,P..] [--seed N] [--lang zh|en] [--model DIR]
    python -m lesson.export --out DIR --serving-run RUN.json [--lang zh|en]     (lesson/serving_export.py)
    python -m lesson.export --out DIR --perfetto [...]     also DIR/trace.perfetto.json (ui.perfetto.dev)
    python -m lesson.export --out DIR --formats [...]      also DIR/format_kl.svg, format_time.svg (formats measured)
    python -m lesson.export --out DIR --from-vllm RESULT.json [--perfetto]   a vLLM bench serve result

Writes DIR/<diagram>.svg (standalone SVG 1.1 files) and, after a model run,
DIR/trace.json, DIR/roofline.svg and DIR/step_floors.svg (every pass against the cost
model's floor on this machine, measured once: engine.runtime.machine.measure_this_machine). Bad input gives one
line on stderr and a non-zero exit: 2 for bad arguments, 1 for a model or file problem; a file that is
refused leaves the output folder as it was (everything is made before the first file is written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.contract.cost import trace_floors
from engine.contract.errors import LimitError
from engine.contract.results import GenerationConfig
from engine.contract.interop.vllm_import import format_comparison, load_vllm_result
from engine.contract.limits import check_text, dump_json

from . import serving_export
from .diagrams import (
    DIAGRAMS, SCHEMATIC_DIAGRAMS, render_acceptance, render_format_kl, render_format_time, render_roofline,
    render_step_floors,
)
from .diagrams.serving_gantt import render_serving_gantt
from .diagrams.serving_metrics import render_serving_metrics
from .perfetto import to_perfetto_json
from .text import LANGUAGES

XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
DEFAULT_PROMPT = "法国的首都是"


class _UsageError(Exception):
    """A bad command line: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print usage + exit; we want one clear line
        raise _UsageError(message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m lesson.export", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="folder to write the SVG files into")
    parser.add_argument("--prompt", default=DEFAULT_PROMPT, help="the prompt (default: %(default)s)")
    parser.add_argument("--max-new-tokens", type=_positive_int, default=8, help="answer length (default: 8)")
    parser.add_argument("--lang", choices=LANGUAGES, default="zh", help="label language (default: zh)")
    parser.add_argument("--model", default=None, help="a local model folder (default: the embedded model)")
    parser.add_argument("--speculative", choices=("ngram",), default=None,
                        help="speculative decoding with prompt lookup: the figures draw its verify passes")
    parser.add_argument("--num-speculative-tokens", type=_positive_int, default=4, metavar="K",
                        help="drafts per verify pass (default: 4)")
    parser.add_argument("--schematic", nargs=2, type=_positive_int, metavar=("PROMPT_LEN", "OUTPUT_LEN"),
                        help="draw the schematic diagrams from two lengths, without a model")
    parser.add_argument("--from-vllm", type=Path, default=None, metavar="RESULT.json",
                        help="no model run: read a `vllm bench serve --save-result --save-detailed` file and write "
                             "serving_run.json, the comparison of its summary with percentiles recomputed from its "
                             "per-request data (vllm_comparison.txt / .json) and the serving figures")
    parser.add_argument("--perfetto", action="store_true",
                        help="also write the trace as Chrome Trace Event JSON (trace.perfetto.json: open it in "
                             "ui.perfetto.dev or chrome://tracing)")
    parser.add_argument("--formats", action="store_true",
                        help="also measure the embedded model in fp32, bf16, int8 and int4 (a few seconds) and write "
                             "weight-formats.json, format_kl.svg and format_time.svg")
    serving_export.add_arguments(parser)  # --serving, --policies, --seed, --serving-run
    return parser


def render_trace_diagrams(trace, lang: str) -> dict[str, str]:
    """name -> SVG for every trace diagram, and a speculative run's acceptance chart."""
    svgs = {name: render(trace, lang=lang) for name, render in DIAGRAMS.items()}
    if trace.verify_steps:
        svgs["acceptance"] = render_acceptance(trace, lang=lang)
    return svgs


def render_schematic_diagrams(prompt_len: int, output_len: int, lang: str) -> dict[str, str]:
    return {name: render(prompt_len, output_len, lang=lang) for name, render in SCHEMATIC_DIAGRAMS.items()}


def render_floor_diagrams(trace, shape, device, lang: str) -> dict[str, str]:
    """The roofline and the per-pass floor bars of `trace` on `device` (an engine.contract.cost.DeviceSpec)."""
    floors = trace_floors(trace, shape, device)
    return {"roofline": render_roofline(floors, lang=lang), "step_floors": render_step_floors(floors, lang=lang)}


def _floor_inputs(model: str | None, trace):
    """(the model's shape from its config, this machine measured on the device the trace ran on)."""
    from engine.runtime import machine, presets  # torch: only after a model run, never for --schematic
    from engine.runtime.model import DEFAULT_MODEL_DIR, DEFAULT_MODEL_ID, load_shape

    preset = presets.preset_name(model)
    if preset is not None:
        shape = presets.preset_shape(preset)
    elif model is None:
        shape = load_shape(DEFAULT_MODEL_DIR, name=DEFAULT_MODEL_ID)
    else:
        shape = load_shape(model)
    return shape, machine.measure_this_machine(trace.model.device)


def write_files(out_dir: Path, svgs: dict[str, str], trace_json: str | None = None) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, svg in svgs.items():
        path = out_dir / f"{name}.svg"
        path.write_text(XML_DECLARATION + svg + "\n", encoding="utf-8")
        written.append(path)
    if trace_json is not None:
        path = out_dir / "trace.json"
        path.write_text(trace_json + "\n", encoding="utf-8")
        written.append(path)
    return written


def run_engine(prompt: str, max_new_tokens: int, model: str | None, speculative: str = "",
               num_speculative_tokens: int = 4):
    """The one forward-pass run: imported lazily so --schematic never loads torch."""
    from engine.runtime.generation import generate
    from engine.runtime.model import load_model

    cfg = GenerationConfig(max_new_tokens=max_new_tokens, speculative=speculative,
                           num_speculative_tokens=num_speculative_tokens)
    return generate(load_model(model), prompt, cfg)


def measure_formats():
    """The lesson's live weight-format run, in this process (engine.runtime.format_run: imported lazily)."""
    from engine.runtime.format_run import measure_formats as measure

    return measure(None)


def export_vllm(out_dir: Path, result_path: Path, lang: str, perfetto: bool) -> list[Path]:
    """--from-vllm: the vLLM result as a ServingRun, its summary checked, the serving figures drawn."""
    imported = load_vllm_result(result_path)
    # Everything is made before the first file is written: a refusal leaves the folder as it was.
    files = {"serving_run.json": imported.run.to_json(), "vllm_comparison.txt": format_comparison(imported),
             "vllm_comparison.json": dump_json({k: v for k, v in imported.to_dict().items() if k != "run"},
                                               ensure_ascii=False, indent=2)}
    svgs = {"serving_gantt": render_serving_gantt(imported.run, lang=lang),
            "serving_metrics": render_serving_metrics([imported.run], lang=lang)}
    if perfetto:
        files["serving.perfetto.json"] = to_perfetto_json(imported.run)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in files.items():
        (out_dir / name).write_text(text + "\n", encoding="utf-8")
        written.append(out_dir / name)
    return written + write_files(out_dir, svgs)


def _export(args) -> list[Path]:
    if (serving := serving_export.export(args, write_files, write_perfetto if args.perfetto else None)) is not None:
        return serving
    if args.from_vllm is not None:
        if args.schematic:
            raise _UsageError("--from-vllm and --schematic draw different things; pass one")
        return export_vllm(args.out, args.from_vllm, args.lang, args.perfetto)
    if args.schematic:
        return write_files(args.out, render_schematic_diagrams(*args.schematic, args.lang))
    if not args.prompt.strip():
        raise ValueError("the prompt is empty; pass some text with --prompt")
    trace = run_engine(args.prompt, args.max_new_tokens, args.model, args.speculative or "",
                       args.num_speculative_tokens)
    svgs = {**render_trace_diagrams(trace, args.lang),
            **render_floor_diagrams(trace, *_floor_inputs(args.model, trace), args.lang)}
    runs = measure_formats() if args.formats else None
    if runs is not None:
        svgs["format_kl"] = render_format_kl(runs, lang=args.lang)
        svgs["format_time"] = render_format_time(runs, lang=args.lang)
    written = write_files(args.out, svgs, trace.to_json())
    if runs is not None:
        path = args.out / "weight-formats.json"
        path.write_text(runs.to_json() + "\n", encoding="utf-8")
        written.append(path)
    if args.perfetto:
        written.append(write_perfetto(args.out, trace))
    return written


def write_perfetto(out_dir: Path, trace, name: str = "trace") -> Path:
    """DIR/NAME.perfetto.json: the trace (RequestTrace or ServingRun) as Chrome Trace Event JSON."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.perfetto.json"
    path.write_text(to_perfetto_json(trace) + "\n", encoding="utf-8")
    return path


def _check_argv(argv: list[str]) -> None:
    """Every argument writable as UTF-8: bytes that are not UTF-8 arrive as lone surrogates (a usage error)."""
    for number, text in enumerate(argv, start=1):
        try:
            check_text(f"argument {number}", text)
        except LimitError as err:
            raise _UsageError(str(err)) from None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        _check_argv(argv)
        args = build_parser().parse_args(argv)
        for path in _export(args):
            print(path)
    except _UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as err:  # engine.contract.errors.EngineError is a ValueError with a one-line message
        print(f"error: {str(err).splitlines()[0] if str(err) else type(err).__name__}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
