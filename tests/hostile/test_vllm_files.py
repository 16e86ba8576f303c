"""Hostile vLLM result files: a few KB that say "200 million tokens", "a billion slots", 1e308 seconds,
100 000 brackets or a 5000-digit number. Each is refused in one line (or read in bounded time and
memory), before any file is written: the CLI (python -m lesson.export --from-vllm) and the serving
lab's upload (read_vllm_result + remote_message) alike."""

from __future__ import annotations

import json
import sys

import pytest

from engine.contract.interop.vllm_import import read_vllm_result
from lesson.messages import remote_message
from lesson.text import t
from tests.factories import VLLM_RESULT
from tests.hostile.bounded import assert_case_one_line, assert_one_line, each_in_one_child, python

SECONDS = 30  # a few KB must cost seconds, not minutes (the child's imports included)
PEAK_MB = 600


def fixture() -> dict:
    return json.loads(VLLM_RESULT.read_text(encoding="utf-8"))


def set_first(field: str, value):
    def change(data: dict) -> dict:
        data[field][0] = value
        return data
    return change


def first_gap(data: dict) -> dict:
    data["itls"][0][0] = 1e308
    return data


def many_requests(data: dict) -> dict:
    n = 200_000  # about 2 MB: more requests than any benchmark file, each a few bytes
    for key in ("input_lens", "output_lens", "ttfts", "latencies", "start_times", "queue_times"):
        data[key] = [1] * n
    data["itls"], data["generated_texts"], data["errors"] = [[]] * n, [""] * n, [""] * n
    return data


# name -> (change to the fixture, the words the refusal must hold)
REFUSED = {
    "input_lens of 2e8": (set_first("input_lens", 200_000_000), ("input_lens",)),
    "output_lens of 1e9": (set_first("output_lens", 10**9), ("output_lens",)),
    "ttft of 1e308 s": (set_first("ttfts", 1e308), ("ttfts",)),
    "latency of 1e308 s": (set_first("latencies", 1e308), ("latencies",)),
    "start time of 1e308 s": (set_first("start_times", 1e308), ("start_times",)),
    "an ITL of 1e308 s": (first_gap, ("itls",)),
    "200 000 requests": (many_requests, ("requests",)),
}
# Text-level attacks: json.dumps cannot write them, so they are spliced into the text in place of a value.
SPLICE = "@@hostile@@"
TEXTS = {
    "100 000 brackets": ("itls", "[" * 100_000 + "]" * 100_000, ("nested",)),
    "a 5000-digit number": ("input_lens", "9" * 5000, ("number",)),
    "a NaN ttft": ("ttfts", "NaN", ("ttfts",)),
}


def hostile_text(name: str) -> str:
    if name in REFUSED:
        return json.dumps(REFUSED[name][0](fixture()))
    field, raw, _ = TEXTS[name]
    return json.dumps(set_first(field, SPLICE)(fixture())).replace(f'"{SPLICE}"', raw)


ALL = [*REFUSED, *TEXTS]
WORDS = {**{k: v[1] for k, v in REFUSED.items()}, **{k: v[2] for k, v in TEXTS.items()}}


def drop_lists(data: dict, n: int) -> dict:
    for key in ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "queue_times",
                "generated_texts", "errors"):
        data[key] = data[key][:n]
    return data


def hostile_files(folder) -> dict[str, str]:
    """{case: the path of its hostile file in `folder`}."""
    paths = {}
    for number, name in enumerate(ALL):
        paths[name] = str(folder / f"result{number}.json")
        (folder / f"result{number}.json").write_text(hostile_text(name), encoding="utf-8")
    return paths


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """`python -m lesson.export --from-vllm` on every hostile file, all in one bounded child (each_in_one_child:
    the CLI's main once per file): (the child's Outcome, {case: CaseRun}, {case: its output folder})."""
    root = tmp_path_factory.mktemp("vllm_exports")
    outs = {name: root / f"out{number}" for number, name in enumerate(ALL)}
    argvs = {name: ["--out", str(outs[name]), "--from-vllm", path, "--perfetto"]
             for name, path in hostile_files(root).items()}
    return (*each_in_one_child("from lesson.export import main", argvs, root, timeout_s=SECONDS), outs)


@pytest.mark.parametrize("name", ALL)
def test_the_export_refuses_in_one_line_and_writes_nothing(name, exports):
    child, runs, outs = exports
    assert_case_one_line(child, runs[name], 1, *WORDS[name], seconds=SECONDS, peak_mb=PEAK_MB)
    assert not outs[name].exists() or not any(outs[name].iterdir()), "files were written before the refusal"


def test_a_refusal_in_a_real_process_is_one_line(tmp_path):
    """What `python -m lesson.export` itself prints, its imports included: the one line and nothing else."""
    path = tmp_path / "result.json"
    path.write_text(hostile_text("a NaN ttft"), encoding="utf-8")
    outcome = python("-m", "lesson.export", "--out", str(tmp_path / "out"), "--from-vllm", str(path))
    assert_one_line(outcome, 1, *WORDS["a NaN ttft"], seconds=SECONDS, peak_mb=PEAK_MB)


APP_CHECK = """
import sys
from engine.contract.interop.vllm_import import read_vllm_result
from lesson.messages import remote_message
def main(argv):
    try:
        read_vllm_result(open(argv[0], encoding="utf-8").read())
    except Exception as err:
        print(type(err).__name__, remote_message(err, "en"), sep="\\n")
        return 3
    return 0
"""


@pytest.fixture(scope="module")
def app_reads(tmp_path_factory):
    """The serving lab's reading of every hostile file (read_vllm_result, then remote_message), in one bounded
    child: (the child's Outcome, {case: CaseRun})."""
    root = tmp_path_factory.mktemp("vllm_reads")
    return each_in_one_child(APP_CHECK, {name: [path] for name, path in hostile_files(root).items()}, root,
                             timeout_s=SECONDS)


@pytest.mark.parametrize("name", ALL)
def test_the_serving_lab_says_why_in_bounded_time_and_memory(name, app_reads):
    child, runs = app_reads
    run = runs[name]
    assert not child.timed_out and child.seconds < SECONDS and child.peak_mb < PEAK_MB, child.describe()
    assert run.returncode == 3, run.describe()
    kind, message = run.stdout.splitlines()[:2]
    assert kind in ("VllmResultError", "LimitError"), run.describe()
    assert "Something went wrong" not in message and any(w in message for w in WORDS[name]), message


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_refusal_has_words_in_both_languages(lang):
    for name in ["100 000 brackets", "a 5000-digit number", "ttft of 1e308 s", "output_lens of 1e9"]:
        with pytest.raises(ValueError) as err:
            read_vllm_result(hostile_text(name))
        message = remote_message(err.value, lang)
        assert message and t(lang, "err_internal", kind="x")[:6] not in message


def test_a_billion_slots_replay_in_bounded_time_and_memory(tmp_path):
    """max_concurrency 1e9 with placed arrivals: as many slots as requests, not a list of a billion."""
    data = fixture()
    del data["start_times"]
    data["max_concurrency"] = 10**9
    path, out = tmp_path / "result.json", tmp_path / "out"
    path.write_text(json.dumps(data), encoding="utf-8")
    outcome = python("-m", "lesson.export", "--out", str(out), "--from-vllm", str(path))
    assert outcome.returncode == 0 and outcome.seconds < SECONDS and outcome.peak_mb < PEAK_MB, outcome.describe()
    run = json.loads((out / "serving_run.json").read_text(encoding="utf-8"))
    assert len(run["requests"]) == 7


def test_large_token_counts_are_kept_as_counts():
    """A real long-context file (128k-token prompts) is read as counts: no tuple of 131072 entries."""
    data = drop_lists(fixture(), 2)
    data["input_lens"] = [131_072, 5]
    imp = read_vllm_result(json.dumps(data))
    record = imp.run.requests[0]
    assert record.prompt_len == 131_072 and record.prompt_ids == ()
    assert sys.getsizeof(imp.run.to_json()) < 200_000
