"""`python -m engine serve`: exit codes, one-line errors, the JSON contract's keys, the table."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine.cli import main


def run_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", "serve", *argv], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture()
def workload(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text('{"arrival_ms": 0, "prompt": "法国的首都是", "max_new_tokens": 5}\n'
                    '{"arrival_ms": 3, "prompt": "The capital of Spain is", "max_new_tokens": 6, "ignore_eos": true}\n',
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("argv, message", [
    (["--scenario", "burst-16", "--policy", "fastest"], "invalid choice: 'fastest'"),
    (["--scenario", "burst-16"], "the following arguments are required: --policy"),
    (["--policy", "chunked"], "one of the arguments --scenario --workload is required"),
    (["--scenario", "nope", "--policy", "chunked"], "invalid choice: 'nope'"),
    (["--scenario", "burst-16", "--policy", "chunked", "--token-budget", "x"], "invalid int value"),
    (["--scenario", "burst-16", "--policy", "chunked", "--token-budget", "0"], "--token-budget must be 1..65536"),
    (["--scenario", "burst-16", "--policy", "chunked", "--block-size", "0"], "--block-size must be 1..1024"),
    (["--scenario", "burst-16", "--policy", "chunked", "--kv-blocks", "-3"], "--kv-blocks must be"),
    (["--scenario", "burst-16", "--policy", "chunked", "--slo-ttft-ms", "0"], "--slo-ttft-ms must be > 0"),
])
def test_bad_values_print_one_line_and_exit_2(capsys, argv, message):
    try:
        code = main(["serve", *argv])
    except SystemExit as stop:  # argparse's own checks exit from inside parse_args
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_bad_workload_line_exits_2_naming_the_line(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"arrival_ms": 0, "prompt": "x", "max_new_tokens": 2}\n{"arrival_ms": 1}\n', encoding="utf-8")
    assert main(["serve", "--workload", str(path), "--policy", "chunked"]) == 2
    assert capsys.readouterr().err == "error: workload line 2: missing 'prompt'\n"


def test_never_fitting_request_exits_2(workload, capsys):
    assert main(["serve", "--workload", str(workload), "--policy", "chunked", "--block-size", "2",
                 "--kv-blocks", "3"]) == 2
    assert "can never fit" in capsys.readouterr().err


def test_help_lists_the_scenarios():
    out = run_cli("--help").stdout
    for name in ("long-prompt-during-chats", "burst-16", "poisson-16"):
        assert name in out


def test_json_holds_the_contract(workload, capsys):
    assert main(["serve", "--workload", str(workload), "--policy", "chunked", "--token-budget", "4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "serving_run" and data["settings"]["policy"] == "chunked"
    assert data["settings"]["token_budget"] == 4
    for request in data["requests"]:
        for key in ("request_id", "prompt_ids", "output_ids", "arrival_ms", "first_token_ms", "finish_ms", "itl_ms"):
            assert key in request
    assert data["requests"][0]["output_text"].startswith("巴黎")
    it = data["iterations"][0]
    assert {"start_ms", "end_ms", "entries", "blocks"} <= set(it)
    assert {"request_id", "phase", "start", "end"} <= set(it["entries"][0])
    assert {"ttft", "tpot", "itl", "e2el", "output_throughput_tok_s", "goodput_req_per_s"} <= set(data["metrics"])
    assert {"p50", "p90", "p99"} <= set(data["metrics"]["itl"])


@pytest.mark.slow
def test_table_and_all_policies_side_by_side(workload, capsys):
    assert main(["serve", "--workload", str(workload), "--policy", "all", "--slo-ttft-ms", "5000"]) == 0
    out = capsys.readouterr().out
    for policy in ("one-at-a-time", "prefill-first", "chunked", "disaggregated"):
        assert f"policy {policy}" in out
    assert "side by side:" in out and "TTFT <= 5000 ms" in out and "KV hand-offs: 2" in out
