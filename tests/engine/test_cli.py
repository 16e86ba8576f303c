"""`python -m engine trace`: the readable table, the JSON form, and one-line errors."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from engine.cli import main
from engine.contract.trace import RequestTrace


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, timeout=300,
                          env=env)


def test_table_shows_prefill_then_single_position_decodes(tiny_model_dirs, capsys):
    code = main(["trace", "--model", str(tiny_model_dirs["llama"]), "--prompt", "The capital of France is",
                 "--max-new-tokens", "4", "--ignore-eos"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("step"))
    rows = lines[header + 1: header + 5]
    assert rows[0].split()[1] == "prefill" and "0..4 (5)" in rows[0]
    assert all(r.split()[1] == "decode" and "(1)" in r for r in rows[1:])
    assert "TTFT" in out and "TPOT" in out and "KV per token" in out


def test_json_output_is_a_trace(tiny_model_dirs, capsys):
    assert main(["trace", "--model", str(tiny_model_dirs["gpt2"]), "--prompt", "The capital",
                 "--max-new-tokens", "3", "--json", "--ignore-eos"]) == 0
    trace = RequestTrace.from_json(capsys.readouterr().out)
    assert [s.phase for s in trace.steps] == ["prefill", "decode", "decode"]


def test_speculative_rows_say_how_many_drafts_each_verify_pass_kept(default_lm, capsys):
    prompt = ("An LLM answers a prompt in two phases called Prefill and Decode. Prefill reads the whole prompt in "
              "one forward pass. An LLM answers a prompt")
    assert main(["trace", "--device", "cpu", "--prompt", prompt, "--max-new-tokens", "16", "--ignore-eos",
                 "--speculative", "ngram", "--num-speculative-tokens", "4"]) == 0
    out = capsys.readouterr().out
    verify = [line for line in out.splitlines() if line.split()[1:2] == ["verify"]]
    assert verify and all("(5)" in line and "drafts)" in line for line in verify[:1])
    assert "kept 4 of 4 drafts" in out  # the embedded model knows this text: the first guesses are all kept
    assert "16 tokens in" in out and "tokens per target pass" in out


def test_a_draft_model_drafts_from_the_command_line(tiny_model_dirs, tmp_path, capsys):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests.conftest import tiny_config

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dirs["llama"])
    config = tiny_config("llama", len(tokenizer), tokenizer.eos_token_id)
    config.num_hidden_layers = 1
    AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    assert main(["trace", "--model", str(tiny_model_dirs["llama"]), "--prompt", "The capital of France is",
                 "--max-new-tokens", "8", "--ignore-eos", "--draft-model", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert " verify " in out and "speculative (draft:" in out and "8 tokens in" in out


@pytest.mark.parametrize("args, message", [  # in a real process: nothing the imports print may add a line
    pytest.param(["--model", "/no/such/folder"], "model folder not found", marks=pytest.mark.slow),
    (["--max-new-tokens", "many"], "invalid int value"),
    (["--device", "tpu"], "invalid choice"),
])
def test_bad_input_is_one_line_and_nonzero(args, message):
    result = run_cli("trace", *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, message", [  # the engine's own checks, after its imports: in this process
    (["--prompt", "   "], "the prompt is empty"),
    (["--max-new-tokens", "0"], "max-new-tokens must be between"),
    (["--max-new-tokens", "999999"], "max-new-tokens must be between"),
    (["--model", "<gpt2>", "--prompt", "capital " * 400], "fit (context 256"),
    (["--speculative", "ngram", "--num-speculative-tokens", "0"], "num-speculative-tokens must be between 1 and"),
    (["--speculative", "ngram", "--mode", "static"], "speculative decoding runs in eager mode only"),
])
def test_the_engines_own_checks_are_one_line_and_nonzero(args, message, tiny_model_dirs, capfd):
    """What the engine checks once torch is imported, through the command's own entry point (`main`, all that
    `python -m engine` runs) in this process; capfd reads file descriptor 2, so a library's logging counts."""
    args = [str(tiny_model_dirs["gpt2"]) if a == "<gpt2>" else a for a in args]
    assert main(["trace", *args]) == 2
    err = capfd.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_hub_id_says_it_fetches_first_and_fails_fast_offline():
    """`models/my-model` is no folder here, so the CLI takes it for a hub id: it says so before any
    network traffic, and with the hub unreachable fails at once: the short probe found no hub, so the
    fetch looked in the local cache only (what the error says), with none of the download's retries
    (they were ~26 s). A real process: the hub library reads HF_HUB_OFFLINE when it is imported."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["HF_ENDPOINT"] = f"http://127.0.0.1:{closed}"  # nothing listens: as offline as it gets
    result = run_cli("trace", "--model", "models/my-model", env=env)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    note, error = result.stderr.strip().splitlines()
    assert note == "note: no local folder 'models/my-model'; fetching models/my-model from the Hugging Face Hub"
    assert error.startswith("error: could not load models/my-model: the Hugging Face Hub cannot be reached")


def test_default_model_paris(capsys):
    """The README's first command: the embedded model answers 巴黎。 through the CLI."""
    assert main(["trace", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "prefill" in out and "巴黎" in out


def test_prompt_tokens_stretches_like_the_app_and_the_default_cap_refuses_longer(tiny_model_dirs, capsys):
    model = str(tiny_model_dirs["llama"])
    assert main(["trace", "--model", model, "--prompt", "The capital of France is", "--prompt-tokens", "40",
                 "--max-new-tokens", "2", "--json"]) == 0
    trace = RequestTrace.from_json(capsys.readouterr().out)
    assert trace.prompt_len == 40 and trace.prompt.endswith("The capital of France is")
    assert main(["trace", "--model", model, "--prompt", "The capital of France is", "--prompt-tokens", "40",
                 "--max-prompt-tokens", "39"]) == 2
    assert "at most 39 fit" in capsys.readouterr().err
    assert main(["trace", "--model", model, "--prompt-tokens", "-1"]) == 2
    assert "--prompt-tokens must be at least 0" in capsys.readouterr().err


def test_the_table_says_when_the_measured_cache_differs_from_the_formula(tiny_model_dirs, capsys):
    assert main(["trace", "--model", str(tiny_model_dirs["llama"]), "--prompt", "The capital of France is",
                 "--max-new-tokens", "3", "--ignore-eos"]) == 0
    assert "as the formula says" in capsys.readouterr().out
    assert main(["trace", "--model", str(tiny_model_dirs["mistral"]), "--prompt", "The capital of France is",
                 "--max-new-tokens", "12", "--ignore-eos"]) == 0
    out = capsys.readouterr().out
    assert "not the formula's" in out and "sliding window of 8 positions" in out
    assert "ITL p50" in out and "mean ITL" not in out


def test_every_commands_parser_builds_without_torch():
    """`--help` is instant and `probe` runs where torch is absent: no command module loads torch until it runs."""
    code = ("import sys; from engine.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("command, flag, spellings, canonical", [
    (["trace"], "--dtype", ("bf16", "bfloat16"), "bfloat16"),
    (["trace"], "--dtype", ("fp16", "float16"), "float16"),
    (["serve", "--scenario", "burst-16", "--policy", "chunked"], "--dtype", ("fp32", "float32"), "float32"),
    (["sweep", "--kind", "prefill"], "--dtype", ("bf16", "bfloat16"), "bfloat16"),
    (["cost", "--prompt-len", "8", "--context", "8"], "--weight-dtype", ("bf16", "bfloat16"), "bf16"),
    (["cost", "--prompt-len", "8", "--context", "8"], "--kv-dtype", ("fp32", "float32"), "fp32"),
])
def test_both_spellings_of_a_dtype_name_the_same_one(command, flag, spellings, canonical):
    from engine.cli import build_parser

    dest = flag.removeprefix("--").replace("-", "_")
    for spelling in spellings:
        args = build_parser().parse_args([*command, flag, spelling])
        assert getattr(args, dest) == canonical


def test_an_unknown_dtype_is_still_one_line_naming_the_choices():
    result = run_cli("cost", "--prompt-len", "8", "--context", "8", "--weight-dtype", "bf17")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == ("error: argument --weight-dtype: invalid choice: 'bf17' (choose from 'auto', 'fp32', "
                             "'bf16', 'fp16', 'int8', 'int4') (see --help)\n")
