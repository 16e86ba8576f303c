"""Every operator setting is declared once (engine/contract/config.py), documented once
(docs/configuration.md) and read one way: the same words turn every flag off, and every number
clamps into its range or falls back to its default by the same rule."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.contract import config
from engine.contract.config import (
    VARIABLES, EngineSettings, ProbeSettings, ServingCaps, Variable, default_threads, read_names, settings_from_env,
)

ROOT = Path(__file__).resolve().parents[2]
# The test harness's own switches (tests/conftest.py, bench/): not settings of the app.
TEST_SWITCHES = {"PREFILL_DECODE_CHROMIUM", "PREFILL_DECODE_REQUIRE_BROWSER"}
NAME = re.compile(r"PREFILL_DECODE_[A-Z0-9_]*[A-Z0-9]")
# A read of one variable by name: environ.get("X"), getenv("X"), environ["X"] (not a write: environ["X"] = ...)
READ = re.compile(r"(?:environ\.get|getenv)\s*\(\s*[\"'](PREFILL_DECODE_\w+)"
                  r"|environ\s*\[\s*[\"'](PREFILL_DECODE_\w+)[\"']\s*\](?!\s*=[^=])")

# Each flag -> the setting it switches, as the app reads it.
FLAGS = {
    "PREFILL_DECODE_PRESETS": lambda env: settings_from_env(env).presets,
    "PREFILL_DECODE_COMPILE": lambda env: settings_from_env(env).compile_mode,
    "PREFILL_DECODE_SERVING_DISAGGREGATED": lambda env: ServingCaps.from_env(env).disaggregated,
    "PREFILL_DECODE_PROBE": lambda env: ProbeSettings.from_env(env).enabled,
}
# Each number -> the setting it sets.
NUMBERS = {
    "PREFILL_DECODE_MAX_PROMPT_TOKENS": lambda env: settings_from_env(env).limits.max_prompt_tokens,
    "PREFILL_DECODE_MAX_NEW_TOKENS": lambda env: settings_from_env(env).limits.max_new_tokens,
    "PREFILL_DECODE_MAX_PROMPT_CHARS": lambda env: settings_from_env(env).limits.max_prompt_chars,
    "PREFILL_DECODE_REPEATS": lambda env: settings_from_env(env).repeats,
    "PREFILL_DECODE_SWEEP_MAX_POSITIONS": lambda env: settings_from_env(env).sweep_max_positions,
    "PREFILL_DECODE_SWEEP_MAX_BATCH": lambda env: settings_from_env(env).sweep_max_batch,
    "PREFILL_DECODE_SERVING_MAX_REQUESTS": lambda env: ServingCaps.from_env(env).max_requests,
    "PREFILL_DECODE_SERVING_MAX_PROMPT_TOKENS": lambda env: ServingCaps.from_env(env).max_prompt_tokens,
    "PREFILL_DECODE_SERVING_MAX_NEW_TOKENS": lambda env: ServingCaps.from_env(env).max_new_tokens,
    "PREFILL_DECODE_THREADS": lambda env: EngineSettings.from_env(env).num_threads,
    "PREFILL_DECODE_VLLM_MAX_MB": lambda env: ProbeSettings.from_env(env).vllm_max_mb,
    "PREFILL_DECODE_RECORDED_MAX_MB": lambda env: settings_from_env(env).recorded_max_mb,
    "PREFILL_DECODE_FIRST_SCREEN_WAIT_MS": lambda env: settings_from_env(env).first_screen_wait_ms,
}
BY_NAME = {v.name: v for v in VARIABLES}


def source_files() -> list[Path]:
    """What the app, the engine, the benchmarks and the docs are made of (not the tests)."""
    files = [ROOT / "app.py", ROOT / "README.md", ROOT / ".streamlit" / "config.toml"]
    for folder in ("app_pages", "app_support", "engine", "lesson", "bench"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return files + sorted((ROOT / "docs").glob("*.md"))


def test_every_variable_the_source_names_is_declared_and_documented():
    named = {name for path in source_files() if path.is_file() for name in NAME.findall(path.read_text("utf-8"))}
    assert named - TEST_SWITCHES - set(BY_NAME) == set()
    assert TEST_SWITCHES.isdisjoint(BY_NAME)
    docs = (ROOT / "docs" / "configuration.md").read_text("utf-8")
    assert config.markdown_table() in docs  # the same table, row for row
    assert all(f"| `{name}` |" in docs for name in BY_NAME)


def reads(text: str) -> set[str]:
    return {a or b for a, b in READ.findall(text)} - TEST_SWITCHES


def test_only_engine_config_reads_a_setting_from_the_environment():
    """engine/contract/config.py reads each variable through its declaration; nothing else reads one by name."""
    assert reads('os.environ.get("PREFILL_DECODE_X", "1") or os.environ["PREFILL_DECODE_Y"]') == {
        "PREFILL_DECODE_X", "PREFILL_DECODE_Y"}
    assert reads('os.environ["PREFILL_DECODE_MODELS_DIR"] = folder') == set()  # setting one for a child is no read
    readers = {path.relative_to(ROOT).as_posix(): reads(path.read_text("utf-8")) for path in source_files()
               if path.suffix == ".py"}
    assert {path: names for path, names in readers.items() if names} == {}


def test_each_variable_is_declared_once_and_listed():
    declared = [v for v in vars(config).values() if isinstance(v, Variable)]
    assert len(BY_NAME) == len(VARIABLES) and set(declared) == set(VARIABLES)
    assert set(FLAGS) == {v.name for v in VARIABLES if v.kind == "flag"}
    assert set(NUMBERS) == {v.name for v in VARIABLES if v.kind in config.NUMBER_KINDS}


@pytest.mark.parametrize("bad", [
    dict(name="OTHER_THING", kind="flag", default=True), dict(name="PREFILL_DECODE_X", kind="bool", default=True),
    dict(name="PREFILL_DECODE_X", kind="int", default=4, low=8, high=16),
    dict(name="PREFILL_DECODE_X", kind="int", default=8),
    dict(name="PREFILL_DECODE_X", kind="flag", default=True, meaning="on | off"),
])
def test_a_declaration_that_cannot_be_read_or_documented_is_refused(bad):
    with pytest.raises(ValueError):
        Variable(**{"meaning": "m", **bad})


@pytest.mark.parametrize("name", sorted(FLAGS))
def test_the_same_words_switch_every_flag(name):
    setting, default = FLAGS[name], BY_NAME[name].default
    assert setting({}) is default
    for word in ("0", "false", "no", "off", "OFF", " No ", "False"):
        assert setting({name: word}) is False, word
    for word in ("1", "true", "yes", "on", "ON", " Yes ", "True"):
        assert setting({name: word}) is True, word
    for word in ("", "  ", "maybe", "2", "nope"):
        assert setting({name: word}) is default, word


def test_disaggregation_off_leaves_out_its_policy():
    assert "disaggregated" in ServingCaps.from_env({}).policies
    for word in ("off", "0", "No"):
        assert "disaggregated" not in ServingCaps.from_env({"PREFILL_DECODE_SERVING_DISAGGREGATED": word}).policies


@pytest.mark.parametrize("name", sorted(NUMBERS))
def test_every_number_clamps_into_its_range_or_falls_back(name):
    var, setting = BY_NAME[name], NUMBERS[name]
    default = default_threads() if var.default is None else var.default
    assert setting({}) == default
    for bad in ("", " ", "lots", "-3", "1e3", "0x10", "12abc", "+5"):
        assert setting({name: bad}) == default, bad
    assert setting({name: "99999999"}) == var.high
    assert setting({name: "0"}) == var.low
    inside = min(var.low + 1, var.high)
    assert setting({name: f" {inside:g} "}) == inside


def test_a_whole_number_setting_refuses_a_decimal_and_megabytes_take_one():
    assert settings_from_env({"PREFILL_DECODE_MAX_NEW_TOKENS": "12.5"}).limits.max_new_tokens == 128
    assert ProbeSettings.from_env({"PREFILL_DECODE_VLLM_MAX_MB": "0.5"}).vllm_max_mb == 0.5


def test_text_and_names_fall_back_when_empty():
    assert settings_from_env({"PREFILL_DECODE_DEVICE": "  ", "PREFILL_DECODE_DTYPE": " bfloat16 "}).device == "auto"
    assert settings_from_env({"PREFILL_DECODE_DTYPE": " bfloat16 "}).dtype == "bfloat16"
    assert settings_from_env({"PREFILL_DECODE_MODELS_DIR": " "}).models_dir is None
    allow = config.PROBE_ALLOW
    assert read_names({allow.name: " , "}, allow) == () and read_names({allow.name: ""}, allow) == allow.default
    assert EngineSettings.from_env({}).address == ""
    assert EngineSettings.from_env({"PREFILL_DECODE_ENGINE": " gpu-box:8470 "}).address == "gpu-box:8470"
