"""The serving figures in `python -m lesson.export` (its --serving and --serving-run options).

    python -m lesson.export --out DIR --serving SCENARIO [--policies P,P..] [--seed N] [--lang zh|en] [--model DIR]
    python -m lesson.export --out DIR --serving-run RUN.json [--lang zh|en]

--serving runs a named scenario (engine.contract.serving.workloads) under each policy on the real
engine, one model loaded once, and writes DIR/serving_<policy>_{gantt,batch,kv}.svg,
DIR/serving_<policy>.json and DIR/serving_metrics.svg (every policy side by side).
--serving-run draws a saved run (engine.contract.serving.trace.ServingRun JSON, read bounded:
engine.contract.limits): its Gantt, and its batch and KV figures when it has iterations (a run measured from
a client has none).
With --perfetto, each run's Perfetto trace too (serving.perfetto.json; serving_<policy>.perfetto.json).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from engine.contract.serving.config import ServeConfig
from engine.contract.serving.trace import ServingRun
from engine.contract.serving.workloads import scenario
from engine.contract.trace import TraceFormatError

from .diagrams.batch_composition import render_batch_composition
from .diagrams.kv_blocks import render_kv_blocks
from .diagrams.serving_gantt import render_serving_gantt
from .diagrams.serving_metrics import render_serving_metrics

POLICIES = ("one-at-a-time", "prefill-first", "chunked", "disaggregated")


def _policy_list(text: str) -> tuple[str, ...]:
    policies = tuple(p.strip() for p in text.split(",") if p.strip())
    unknown = [p for p in policies if p not in POLICIES]
    if unknown or not policies:
        raise argparse.ArgumentTypeError(f"unknown policy {', '.join(unknown) or '(none)'}; "
                                         f"choose from {', '.join(POLICIES)}")
    return policies


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--serving", metavar="SCENARIO",
                        help="run a serving scenario under each policy on the real engine and draw it")
    parser.add_argument("--policies", type=_policy_list, default=POLICIES, metavar="P,P..",
                        help="with --serving: comma-separated policies (default: all four)")
    parser.add_argument("--seed", type=int, default=0, help="with --serving: the scenario's seed (default: 0)")
    parser.add_argument("--serving-run", type=Path, metavar="RUN.json", help="draw a saved serving run (JSON)")


def render_serving_figures(run, lang: str, stem: str = "serving") -> dict[str, str]:
    """{stem}_gantt for every run; {stem}_batch and {stem}_kv for a run with iterations."""
    svgs = {f"{stem}_gantt": render_serving_gantt(run, lang=lang)}
    if run.iterations:
        svgs[f"{stem}_batch"] = render_batch_composition(run, lang=lang)
        svgs[f"{stem}_kv"] = render_kv_blocks(run, lang=lang)
    return svgs


def export(args, write_files: Callable[..., list[Path]],
           write_perfetto: Callable[..., Path] | None = None) -> list[Path] | None:
    """The files written for --serving / --serving-run, or None when neither was asked for; with
    `write_perfetto` (--perfetto), each run's Perfetto trace too."""
    if getattr(args, "serving_run", None) is not None:
        return _saved_run(args, write_files, write_perfetto)
    if getattr(args, "serving", None):
        return _scenario(args, write_files, write_perfetto)
    return None


def _saved_run(args, write_files, write_perfetto=None) -> list[Path]:
    try:
        run = ServingRun.from_json(args.serving_run.read_text(encoding="utf-8"))
    except (TraceFormatError, UnicodeDecodeError) as err:
        raise ValueError(f"{args.serving_run.name}: {err}") from None
    written = write_files(args.out, render_serving_figures(run, args.lang))
    return written + ([write_perfetto(args.out, run, name="serving")] if write_perfetto else [])


def _scenario(args, write_files, write_perfetto=None) -> list[Path]:
    # torch and transformers: loaded only when a scenario runs on the real engine, never to draw a saved run
    from engine.runtime.model import load_model
    from engine.runtime.serving.engine import run_workload

    workload = scenario(args.serving, args.seed)  # an unknown name: a ValueError naming the choices
    lm = load_model(args.model)
    runs, svgs, written = [], {}, []
    args.out.mkdir(parents=True, exist_ok=True)
    for policy in args.policies:
        run = run_workload(lm, workload, ServeConfig(policy=policy), scenario=args.serving)
        runs.append(run)
        svgs.update(render_serving_figures(run, args.lang, f"serving_{policy}"))
        path = args.out / f"serving_{policy}.json"
        path.write_text(run.to_json() + "\n", encoding="utf-8")
        written.append(path)
        if write_perfetto:
            written.append(write_perfetto(args.out, run, name=f"serving_{policy}"))
    svgs["serving_metrics"] = render_serving_metrics(runs, lang=args.lang)
    return write_files(args.out, svgs) + written
