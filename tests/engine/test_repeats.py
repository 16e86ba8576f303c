"""engine.runtime.repeats: the same request N times, every trace kept, the first one streamed."""

from __future__ import annotations

import pytest

from engine.contract.errors import InputError
from engine.contract.results import GenerationConfig
from engine.runtime.repeats import MAX_REPEATS, check_repeats, measure, stream_repeats


def test_n_repeats_give_n_finished_traces_of_the_same_answer(default_lm):
    cfg = GenerationConfig(max_new_tokens=4, ignore_eos=True)
    runs = measure(default_lm, "法国的首都是", cfg, repeats=3)
    assert len(runs) == 3 and all(r.finished for r in runs)
    assert len({r.output_ids for r in runs}) == 1 and len({r.prompt_ids for r in runs}) == 1
    assert all(len(r.steps) == 4 and r.steps[0].phase == "prefill" for r in runs)


def test_the_first_run_streams_pass_by_pass_then_the_repeats_come_whole(default_lm):
    cfg = GenerationConfig(max_new_tokens=3, ignore_eos=True)
    seen = list(stream_repeats(default_lm, "The capital of France is", cfg, repeats=2))
    assert [len(t.steps) for t in seen] == [1, 2, 3, 3]  # run 1 after each pass, then run 2 finished
    assert [t.finished for t in seen] == [False, False, True, True]
    assert seen[2].output_ids == seen[3].output_ids


@pytest.mark.parametrize("bad", [0, MAX_REPEATS + 1, 2.5, True, "3"])
def test_a_repeat_count_out_of_range_is_an_input_error(bad):
    with pytest.raises(InputError) as caught:
        check_repeats(bad)
    assert caught.value.key == "length_range" and caught.value.params["name"] == "repeats"
    assert check_repeats(MAX_REPEATS) == MAX_REPEATS
