"""Record the gallery set on the machine this runs on: `python -m engine record --out DIR`.

    index = record_gallery(Path("assets/gallery"), RecordPlan())   # -> assets/gallery/<machine>/index.json

The set, each run written as the engine writes it anyway (JSON), and an index that says what each is:
  1) the lesson's example, 法国的首都是 and The capital of France is, as typed (4 prompt tokens) and
     stretched to 1024 with the lesson's filler (engine.contract.prompts.extend_prompt, as the app's prompt slider)
  2) cache on vs off for the Chinese example at its longest (engine.runtime.compare)
  3) every serving policy on one named scenario (engine.runtime.serving)
  4) a preset's Prefill and Decode sweeps (engine.contract.sweep) at points a CPU measures in a minute or two
Every number is measured here and now, and every run carries this machine's provenance; nothing is
copied or scaled from another machine. The folder is named after the machine ("cpu", or the device and
GPU: "cuda-nvidia-h200"), so a GPU machine fills its own folder beside the CPU's.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.contract.prompts import LESSON_PROMPTS, extend_prompt, prompt_token_ids
from engine.contract.recorded import FIGURES, INDEX_SCHEMA, FILE_NAME, RecordedComparison, RecordedFileError, read_index
from engine.contract.serving.config import ServeConfig
from engine.contract.serving.trace import POLICIES
from engine.contract.serving.workloads import scenario
from engine.contract.trace import Provenance
from engine.runtime.compare import compare_cache
from engine.runtime.generation import GenerationConfig, generate
from engine.runtime.model import LoadedModel, load_model
from engine.runtime.provenance import this_machine
from engine.runtime.serving.engine import run_workload
from engine.runtime.sweep import run_sweep


@dataclass(frozen=True)
class RecordPlan:
    """What one recording measures. The defaults are the gallery's set; `quick_plan` is a small one for tests."""

    model: str | None = None  # the lesson's model: None is the embedded default
    prompt_lengths: tuple[int, ...] = (4, 1024)  # prompt tokens; a length under the typed prompt's keeps it as typed
    answer_tokens: int = 8  # the app's default answer length (lesson.inputs.DEFAULT_OUTPUT_LEN); EOS ends it
    compare_tokens: int = 16  # cache on vs off: answer tokens, EOS ignored
    scenario: str = "long-prompt-during-chats"
    policies: tuple[str, ...] = POLICIES
    sweep_model: str | None = "preset:qwen2.5-0.5b"  # None: the lesson's model
    sweep_points: tuple[tuple[str, tuple[int, ...]], ...] = (("prefill", (8, 32, 128)),
                                                              ("decode-context", (8, 128, 1024)))
    sweep_repeats: int = 3


def quick_plan(model: str | None = None) -> RecordPlan:
    """A few seconds on a tiny model: every kind once, small (python -m engine record --quick)."""
    return RecordPlan(model=model, prompt_lengths=(4, 32), answer_tokens=3, compare_tokens=3,
                      scenario="capital-questions", policies=("one-at-a-time", "chunked"), sweep_model=None,
                      sweep_points=(("prefill", (4, 8)), ("decode-context", (4, 8))), sweep_repeats=1)


@dataclass(frozen=True)
class Recorded:
    """One run recorded: its index entry's fields, and its JSON."""

    name: str
    kind: str
    about: dict
    provenance: Provenance | None
    json: str


Say = Callable[[str], None]


def record_gallery(out: Path, plan: RecordPlan, *, device: str = "auto", dtype: str = "auto",
                   say: Say | None = None, command: str = "python -m engine record") -> Path:
    """Measure `plan` here, write out/<machine>/<name>.json and its index.json; returns the index's path.
    `say` hears one line per run (default: stderr); `command` is written into the index (how it was made)."""
    say = say or (lambda line: print(line, file=sys.stderr))
    lm = load_model(plan.model, device=device, dtype=dtype)
    runs = [*record_lessons(lm, plan, say), *record_serving(lm, plan, say)]
    sweep_lm = lm if plan.sweep_model is None else load_model(
        plan.sweep_model, device=device, dtype=dtype, max_context=max(max(p) for _, p in plan.sweep_points) + 1)
    runs += record_sweeps(sweep_lm, plan, say)
    folder = out / machine_folder(this_machine(lm.device))
    return write_gallery(folder, runs, command)


def lesson_prompt(lm: LoadedModel, prompt: str, num_tokens: int) -> str:
    """The prompt as the app's prompt slider makes it: stretched with filler only past its own length."""
    natural = len(prompt_token_ids(lm.tokenizer, prompt))
    return extend_prompt(lm.tokenizer, prompt, num_tokens) if num_tokens > natural else prompt


def record_lessons(lm: LoadedModel, plan: RecordPlan, say: Say) -> list[Recorded]:
    """The lesson's example in each language at each prompt length, then cache on vs off at the longest."""
    runs, longest = [], None
    for lang, prompt in LESSON_PROMPTS.items():
        for length in plan.prompt_lengths:
            say(f"recording the lesson's example ({lang}) at {length} prompt tokens")
            trace = generate(lm, lesson_prompt(lm, prompt, length), GenerationConfig(max_new_tokens=plan.answer_tokens))
            about = {"lang": lang, "prompt_tokens": trace.prompt_len, "answer_tokens": len(trace.steps),
                     "model": trace.model.model_id}
            runs.append(Recorded(f"lesson-{lang}-{length}", "trace", about, trace.provenance, compact_json(trace)))
            if lang == "zh" and (longest is None or trace.prompt_len > longest.prompt_len):
                longest = trace
    say(f"recording cache on vs off at {longest.prompt_len} prompt tokens")
    comparison = compare_cache(lm, list(longest.prompt_ids), plan.compare_tokens)
    recorded = RecordedComparison(lm.info.model_id, comparison, this_machine(lm.device))
    about = {"prompt_tokens": comparison.prompt_len, "answer_tokens": comparison.num_steps, "model": lm.info.model_id}
    runs.append(Recorded(f"cache-on-off-zh-{max(plan.prompt_lengths)}", "cache_comparison", about,
                         recorded.provenance, recorded.to_json(indent=None)))
    return runs


def record_serving(lm: LoadedModel, plan: RecordPlan, say: Say) -> list[Recorded]:
    """Every policy of the plan on its scenario, one after another, the same workload each time."""
    workload, runs = scenario(plan.scenario), []
    for policy in plan.policies:
        say(f"recording the {policy} policy on {plan.scenario} ({len(workload)} requests)")
        run = run_workload(lm, workload, ServeConfig(policy=policy), scenario=plan.scenario)
        about = {"scenario": plan.scenario, "policy": policy, "requests": len(run.requests),
                 "model": run.model.model_id}
        runs.append(Recorded(f"serving-{plan.scenario}-{policy}", "serving_run", about, run.provenance,
                             compact_json(run)))
    return runs


def record_sweeps(lm: LoadedModel, plan: RecordPlan, say: Say) -> list[Recorded]:
    runs = []
    for kind, points in plan.sweep_points:
        say(f"recording the {kind} sweep of {lm.info.model_id} at {', '.join(map(str, points))}")
        sweep = run_sweep(lm, kind, points, repeats=plan.sweep_repeats)
        about = {"sweep": kind, "model": sweep.model_id, "points": ",".join(str(p.value) for p in sweep.points),
                 "repeats": sweep.repeats}
        runs.append(Recorded(f"sweep-{kind}-{slug(sweep.model_id)}", "sweep", about, sweep.provenance,
                             sweep.to_json(indent=None)))
    return runs


def compact_json(run) -> str:
    """A trace or serving run as its reader reads it, written small: no spaces, and without the
    "derived" values `to_dict` adds for people reading the JSON (every reader recomputes them)."""
    return json.dumps(_without_derived(run.to_dict()), ensure_ascii=False, separators=(",", ":"))


def _without_derived(value):
    if isinstance(value, dict):
        return {k: _without_derived(v) for k, v in value.items() if k != "derived"}
    if isinstance(value, list):
        return [_without_derived(v) for v in value]
    return value


def machine_folder(provenance: Provenance) -> str:
    """The gallery folder of a machine: "cpu", "mps", or the device and GPU ("cuda-nvidia-h200")."""
    return provenance.device if not provenance.gpu else f"{provenance.device}-{slug(provenance.gpu)}"


def slug(text: str) -> str:
    """Lower-case letters, digits and dashes: a safe part of a file name."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "run"


def write_gallery(folder: Path, runs: list[Recorded], recorded_with: str) -> Path:
    """Write every run and the index (what each run is, what draws it, where and when it was measured).

    The files an earlier index of this folder listed are removed first, so the folder holds one set."""
    folder.mkdir(parents=True, exist_ok=True)
    index_path = folder / "index.json"
    _remove_listed(index_path)
    entries = []
    for run in runs:
        file = f"{run.name}.json"
        if not FILE_NAME.fullmatch(file):
            raise ValueError(f"not a gallery file name: {file!r}")
        (folder / file).write_text(run.json + "\n", encoding="utf-8")
        entries.append({"name": run.name, "kind": run.kind, "file": file, "figures": list(FIGURES[run.kind]),
                        "about": run.about, "provenance": _plain(run.provenance)})
    first = runs[0].provenance if runs else None
    index = {"schema": INDEX_SCHEMA, "device": folder.name, "machine": first.machine if first else "",
             "recorded_with": recorded_with, "provenance": _plain(first), "runs": entries}
    index_path.write_text(json.dumps(index, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return index_path


def _remove_listed(index_path: Path) -> None:
    if not index_path.is_file():
        return
    try:
        entries = read_index(index_path)
    except RecordedFileError:
        return  # not an index this build wrote: leave the folder's files alone
    for entry in entries:
        entry.path.unlink(missing_ok=True)


def _plain(provenance: Provenance | None) -> dict | None:
    return None if provenance is None else dataclasses.asdict(provenance)
