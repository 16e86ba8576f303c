"""Hostile command lines: --prompt-tokens 1e8 / 1e6 (minutes of tokenizing and gigabytes before), --seed
2**70, bytes that are not UTF-8, a KV store of 1048576 blocks of 1024 tokens, the cost model asked for
1e100 positions. Each is one line and
exit 2, checked before anything large is made; the sizes before torch is even imported."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import torch

from engine.contract.errors import LimitError
from engine.contract.serving.config import ServeConfig
from engine.runtime.serving.core import check_kv_memory
from lesson.messages import serving_message
from tests.factories import TINY_MODEL
from tests.hostile.bounded import assert_one_line, python

ENGINE = ("-m", "engine")
FAST = dict(seconds=10, peak_mb=200)  # refused before torch is imported
LOADED = dict(seconds=60, peak_mb=900)  # refused after the default model loaded, before anything large

CASES = {
    "--prompt-tokens 1e8": (("trace", "--prompt-tokens", "100000000"), "--prompt-tokens", FAST),
    "--prompt-tokens 1e6": (("trace", "--prompt-tokens", "1000000"), "--prompt-tokens", FAST),
    "--prompt-tokens over --max-prompt-tokens": (("trace", "--prompt-tokens", "5000"), "at most 1024", FAST),
    "--prompt-tokens over the model's context": (("trace", "--prompt-tokens", "100000", "--max-prompt-tokens",
                                                  "100000"), "fit", LOADED),
    "trace --seed 2**70": (("trace", "--seed", str(2**70)), "--seed", FAST),
    "serve --seed 2**70": (("serve", "--scenario", "burst-16", "--policy", "chunked", "--seed", str(2**70)),
                           "--seed", FAST),
    "serve --kv-blocks 1048576 --block-size 1024": (("serve", "--scenario", "burst-16", "--policy", "chunked",
                                                     "--kv-blocks", "1048576", "--block-size", "1024"), "KV store",
                                                    LOADED),
    "a prompt that is not UTF-8": (("trace", "--prompt", b"\xff\xfe"), "argument 3", FAST),
    "cost --batch 1e11": (("cost", "--prompt-len", "4", "--context", "4", "--batch", "100000000000"), "--batch",
                          FAST),
    "cost --context 1e100": (("cost", "--prompt-len", "4", "--context", "1" + "0" * 100), "--context", FAST),
}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if CASES[name][2] is LOADED else name
                                  for name in CASES])  # slow: the default model loads in the child first
def test_a_hostile_argument_is_one_line_and_exit_2(name):
    argv, word, bounds = CASES[name]
    assert_one_line(python(*ENGINE, *argv, timeout_s=120), 2, word, **bounds)


def test_the_export_refuses_bytes_that_are_not_utf8(tmp_path):
    outcome = python("-m", "lesson.export", "--out", str(tmp_path), "--prompt", b"\xff")
    assert_one_line(outcome, 2, "argument 4", **FAST)


BIG_MODEL = dataclasses.replace(TINY_MODEL, num_layers=32, num_kv_heads=8, head_dim=128, bytes_per_element=2)


@pytest.mark.parametrize("policy, stores", [("chunked", 1), ("disaggregated", 2)])
def test_the_labs_kv_blocks_are_checked_against_free_memory_first(policy, stores):
    """The serving lab's 100 000 blocks of 32 tokens of an 8B model's K/V: 390 GiB, refused before a store."""
    lm = SimpleNamespace(info=BIG_MODEL, device=torch.device("cpu"))
    with pytest.raises(LimitError) as err:
        check_kv_memory(lm, 100_000, ServeConfig(policy=policy, block_size=32))
    assert err.value.key == "limit_memory" and err.value.params["need_gib"] == round(
        stores * 100_000 * 32 * BIG_MODEL.kv_bytes_per_token / 2**30, 2)
    for lang in ("zh", "en"):
        message = serving_message(err.value, lang)
        assert "GiB" in message and "{" not in message
    check_kv_memory(lm, 64, ServeConfig(policy=policy, block_size=16))  # a classroom's budget fits
