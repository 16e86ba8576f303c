"""Shared fixtures: the embedded default model, and tiny random models of four families.

Nothing here downloads anything: the random models get a small byte-fallback BPE
tokenizer trained in a second on a few sentences, and are saved as real
Hugging Face folders so they go through the same `load_model` path as any user folder.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from xdist.scheduler import LoadFileScheduling


os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Under `pytest -n N` each test process gets its share of the cores for torch's threads (read when torch is first
# imported, after this file), so N processes do not each spin as many threads as there are cores.
if workers := int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0")):
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))

TINY_TEXT = [
    "法国的首都是巴黎。德国的首都是柏林。日本的首都是东京。",
    "The capital of France is Paris. The capital of Germany is Berlin.",
    "Prefill reads the whole prompt; decode writes one token at a time.",
]


def build_tiny_tokenizer(folder: Path):
    """A Llama-style tokenizer: BPE over characters with byte fallback (no unknown tokens)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "</s>"]
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    tok.decoder = decoders.Sequence([
        decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0),
    ])
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials + byte_tokens, show_progress=False)
    tok.train_from_iterator(TINY_TEXT, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="</s>", pad_token="</s>")
    fast.save_pretrained(folder)
    return fast


SLIDING_WINDOW = 8  # positions the tiny Mistral attends to


def tiny_config(kind: str, vocab_size: int, eos_id: int):
    """Random models small enough to run in milliseconds, big enough to disagree with a lookup table."""
    from transformers import GPT2Config, LlamaConfig, MistralConfig, Qwen2Config

    common = dict(vocab_size=vocab_size, initializer_range=0.2, eos_token_id=eos_id, bos_token_id=eos_id,
                  pad_token_id=eos_id, tie_word_embeddings=False)
    if kind == "gpt2":  # no GQA, learned positions
        return GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=256, **common)
    # mistral: a sliding window of 8 positions, shorter than a test prompt plus its answer,
    # so its cache stops growing mid-run and the KV formula over-counts.
    window = {"mistral": {"sliding_window": SLIDING_WINDOW}}.get(kind, {})
    cls = {"llama": LlamaConfig, "qwen2": Qwen2Config, "mistral": MistralConfig}[kind]
    return cls(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, max_position_embeddings=512, **window, **common)


@pytest.fixture(scope="session")
def tiny_model_dirs(tmp_path_factory) -> dict[str, Path]:
    """{"llama": dir, "qwen2": dir, "gpt2": dir, "mistral": dir}: random-weight HF folders with safetensors."""
    import torch
    from transformers import AutoModelForCausalLM

    root = tmp_path_factory.mktemp("tiny_models")
    tokenizer = build_tiny_tokenizer(root / "tokenizer")
    dirs = {}
    for kind in ("llama", "qwen2", "gpt2", "mistral"):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(tiny_config(kind, len(tokenizer), tokenizer.eos_token_id))
        model.save_pretrained(root / kind, safe_serialization=True)
        tokenizer.save_pretrained(root / kind)
        dirs[kind] = root / kind
    return dirs


@pytest.fixture(scope="session")
def default_lm():
    """The embedded default model, loaded once for the whole test session."""
    from engine.runtime.model import load_model

    return load_model(device="cpu")


@pytest.fixture(scope="session")
def chromium():
    """(the Debian chromium binary, playwright's sync_api) for the browser tests; never downloads a browser.

    Missing either, each browser test skips here, at setup, never at collection: a module
    that skips while it is collected has no tests for the hook below to turn into failures.
    PREFILL_DECODE_CHROMIUM points at another binary (the rule's own test uses a missing one).
    """
    path = Path(os.environ.get("PREFILL_DECODE_CHROMIUM", "/usr/bin/chromium"))
    if not path.exists():
        pytest.skip(f"Debian chromium is not installed at {path}")
    return path, pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


# Folders whose tests share one costly thing per test process (the app's engine worker and its models folder;
# the browser lane's Streamlit server and chromium): under `pytest -n N --dist loadfile` each is one unit of work,
# run whole by one test process, and every other test file is a unit of its own. (The browser folder cut in two,
# a server and a chromium each, took as long: its tests then waited on a busier machine.)
BROWSER_LANE = "tests/browser/"
ONE_PROCESS_FOLDERS = ("tests/app/", BROWSER_LANE)


def work_unit(nodeid: str) -> str:
    """The unit of `--dist loadfile` a test belongs to: one of ONE_PROCESS_FOLDERS, else its file."""
    path = nodeid.split("::")[0]
    return next((folder for folder in ONE_PROCESS_FOLDERS if path.startswith(folder)), path)


class FolderOrFile(LoadFileScheduling):
    """xdist's scheduler for `--dist loadfile`, its units given by `work_unit`. (pytest 9 keeps node ids where
    xdist's own `--dist loadgroup` no longer reaches them, so a group mark would go unread.)"""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)


def costliest_units_first(items: list) -> list:
    """`items` in the order the lanes hand their units out: ONE_PROCESS_FOLDERS first, then the files with the
    most tests marked slow. A long unit handed out last would leave the other processes idle while it runs
    alone, so the short ones come last. Each unit's own tests keep their order; ties keep the collection's."""
    first: dict[str, int] = {}
    slow: Counter[str] = Counter()
    for index, item in enumerate(items):
        unit = work_unit(item.nodeid)
        first.setdefault(unit, index)
        slow[unit] += item.get_closest_marker("slow") is not None

    def rank(item) -> tuple[int, int, int]:
        unit = work_unit(item.nodeid)
        folder = ONE_PROCESS_FOLDERS.index(unit) if unit in ONE_PROCESS_FOLDERS else len(ONE_PROCESS_FOLDERS)
        return folder, -slow[unit], first[unit]

    return sorted(items, key=rank)


def pytest_collection_modifyitems(items):
    items[:] = costliest_units_first(items)


def pytest_xdist_make_scheduler(config, log):
    return FolderOrFile(config, log) if config.getvalue("dist") == "loadfile" else None


PRIORITY = os.getpriority(os.PRIO_PROCESS, 0)  # the test process's own (its nice value)


def pytest_runtest_setup(item):
    """A test process that ran the browser lane at a higher priority (tests/browser/conftest.py's
    `critical_path`) goes back to its own for every test of another unit."""
    if work_unit(item.nodeid) != BROWSER_LANE and os.getpriority(os.PRIO_PROCESS, 0) < PRIORITY:
        os.setpriority(os.PRIO_PROCESS, 0, PRIORITY)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI (PREFILL_DECODE_REQUIRE_BROWSER=1) a skipped browser test is a failure:
    a missing chromium must not turn the real-browser checks into a silent pass.
    (tests/browser/test_browser_rule.py checks that every browser test fails that way.)"""
    outcome = yield
    report = outcome.get_result()
    in_ci = os.environ.get("PREFILL_DECODE_REQUIRE_BROWSER") == "1"
    if report.skipped and item.get_closest_marker("browser") and in_ci:
        report.outcome = "failed"
        report.longrepr = f"browser test skipped in CI: {report.longrepr}"
