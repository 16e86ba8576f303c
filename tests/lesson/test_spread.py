"""The lesson's headline numbers over repeated runs (lesson/spread.py) and the sentences that quote
them: medians and ranges computed by hand, and every caption read over measured ratios 0.2x-100x."""

from __future__ import annotations

import dataclasses
import re

import pytest

from lesson.formats import fmt_ratio
from lesson.metric_cards import bottleneck_contradicts, bottleneck_live_text, metric_cards
from lesson.spread import (
    Headline, Spread, headline, nearest_median, outlier_indices, run_label, run_numbers, shown_run, verdict,
)
from lesson.text import t
from tests.factories import make_trace

RATIOS = (0.2, 0.5, 0.9, 1.0, 1.02, 1.5, 2.9, 3.0, 7.0, 25.0, 100.0)


def run(prefill_ms: float, decode_ms: tuple[float, ...], tokenize_ms: float = 0.5, prompt_len: int = 4):
    """A finished trace: tokenizing, then Prefill, then one Decode step per entry, back to back."""
    trace = make_trace(tuple(f"p{i}" for i in range(prompt_len)), tuple(f"o{i}" for i in range(len(decode_ms) + 1)))
    clock, steps = tokenize_ms, []
    for step, ms in zip(trace.steps, (prefill_ms, *decode_ms)):
        steps.append(dataclasses.replace(step, start_ms=clock, end_ms=clock + ms))
        clock += ms
    return dataclasses.replace(trace, steps=tuple(steps), tokenize_ms=tokenize_ms)


def test_one_run_takes_its_prefill_and_the_median_of_its_decode_steps():
    numbers = run_numbers(run(6.0, (2.0, 9.0, 3.0)))  # one slow step (9 ms) does not move the median
    assert numbers.prefill_ms == 6.0 and numbers.decode_ms == 3.0 and numbers.ratio == 2.0
    assert numbers.ttft_ms == 6.5 and numbers.tpot_ms == pytest.approx(14.0 / 3)  # (20.5 - 6.5) / 3 gaps


def test_n_runs_give_the_median_and_the_fastest_and_slowest_run_of_each_number():
    runs = [run(6.0, (2.0, 2.0)), run(12.0, (3.0, 3.0)), run(4.0, (4.0, 4.0)), run(8.0, (2.0, 2.0)),
            run(10.0, (1.0, 1.0))]
    numbers = headline(runs)
    assert numbers.n == 5
    assert numbers.prefill_ms == Spread(8.0, 4.0, 12.0, 5)  # 4 6 8 10 12
    assert numbers.decode_ms == Spread(2.0, 1.0, 4.0, 5)  # 1 2 2 3 4
    assert numbers.ttft_ms == Spread(8.5, 4.5, 12.5, 5)
    assert numbers.tpot_ms == Spread(2.0, 1.0, 4.0, 5)
    # the ratio quoted beside the medians is their ratio: 8 / 2 = 4; per run 3, 4, 1, 4, 10
    assert numbers.ratio == Spread(4.0, 1.0, 10.0, 5)


def test_an_even_number_of_runs_takes_the_mean_of_the_middle_two():
    numbers = headline([run(2.0, (1.0,)), run(4.0, (1.0,)), run(6.0, (2.0,)), run(100.0, (2.0,))])
    assert numbers.prefill_ms.median == 5.0 and numbers.decode_ms.median == 1.5
    assert numbers.ratio.median == pytest.approx(5.0 / 1.5) and numbers.ratio.high == 50.0


def test_a_one_token_answer_has_no_decode_numbers():
    numbers = headline([run(5.0, ()), run(7.0, ())])
    assert numbers.decode_ms is None and numbers.tpot_ms is None and numbers.ratio is None
    assert numbers.prefill_ms == Spread(6.0, 5.0, 7.0, 2) and verdict(numbers, 4) is None


def test_the_headline_belongs_to_its_shown_run_only_and_round_trips_json():
    first, second = run(6.0, (2.0, 2.0)), run(7.0, (2.5, 2.5))
    numbers = headline([first, second], shown=0)
    assert numbers.belongs_to(first) and not numbers.belongs_to(second)
    prefix = dataclasses.replace(first, steps=first.steps[:2], stop_reason=None)  # the classroom's first passes
    assert not numbers.belongs_to(prefix)
    assert Headline.from_json(numbers.to_json()) == numbers
    assert headline([first, second], shown=1).belongs_to(second)
    old = numbers.to_json().replace(', "shown": 0', "")  # written before the page chose a run: it showed run 1
    assert '"shown"' not in old and Headline.from_json(old) == numbers
    with pytest.raises(ValueError):
        Headline(numbers.runs, shown=2)
    with pytest.raises(ValueError):
        Headline.from_json('{"schema": "something else", "runs": []}')
    with pytest.raises(ValueError):
        Headline(())


def test_the_verdict_follows_the_medians():
    assert [verdict(headline([run(3.0, (3.0 / r,) * 3)]), 4) for r in (0.5, 1.0, 1.5, 2.99, 3.0, 50.0)] == [
        "noise", "noise", "alike", "alike", "apart", "apart"]
    assert verdict(headline([run(3.0, (6.0,))]), prompt_len=1) == "same_work"  # one position each: no contradiction


def test_ratios_read_with_the_digits_they_need():
    assert [fmt_ratio(r) for r in (0.2, 1.0, 1.02, 1.5, 100.5)] == ["0.2", "1.0", "1.02", "1.5", "100.5"]


def test_outliers_are_repeats_far_from_the_others():
    assert outlier_indices([5.0, 5.1, 5.2, 5.0, 12.0]) == (4,)  # beyond the fences, and over 2x the median
    assert outlier_indices([1.000, 1.001, 1.002, 1.003, 1.010]) == ()  # past the fences but within 10 %
    assert outlier_indices([5.0, 5.2, 5.1, 5.3, 5.0, 1.0]) == (5,)  # a fast one counts too
    assert outlier_indices([2.0, 9.0]) == ()  # two repeats: neither is "the others"
    assert outlier_indices([1.0, 1.0, 1.0, 10.0, 10.0]) == (3, 4)  # above twice the median


# --- the sentences, over measured ratios from 0.2x to 100x ---------------------------------

def _sentences(ratio: float, lang: str, repeats: int) -> tuple[str, Headline]:
    decode = 3.0 / ratio
    runs = [run(3.0 * (1 + 0.02 * k), (decode,) * 3) for k in range(repeats)]
    shown, numbers = shown_run(runs)
    return bottleneck_live_text(shown, lang, numbers), numbers


# the numbers each variant quotes, and words it must never say
VARIANTS = {
    "noise": {"en": ("this machine's noise", "Measure again"), "zh": ("这台机器的噪声", "再测一次")},
    "alike": {"en": ("here Prefill is only",), "zh": ("这里 Prefill 只是一次 Decode 的",)},
    "apart": {"en": ("here Prefill took",), "zh": ("这里 Prefill 用时是一次 Decode 的",)},
}
NONSENSE = {"en": re.compile(r"only 0\.|only 1\.0×|took 0\.\d+×|grew .*×0\."),
            "zh": re.compile(r"只是一次 Decode 的 0\.|只是一次 Decode 的 1\.0 倍|的 0\.\d+ 倍。Prefill 随")}


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("repeats", [1, 5])
@pytest.mark.parametrize("ratio", RATIOS)
def test_the_bottleneck_sentence_reads_sensibly_for_any_measured_ratio(ratio, repeats, lang):
    text, numbers = _sentences(ratio, lang, repeats)
    own = numbers.shown_numbers.ratio  # every number quoted is the shown run's
    kind = "noise" if own <= 1 else "alike" if own < 3 else "apart"
    for phrase in VARIANTS[kind][lang]:
        assert phrase in text, (ratio, kind)
    for other in set(VARIANTS) - {kind}:
        assert not any(phrase in text for phrase in VARIANTS[other][lang]), (ratio, other)
    assert not NONSENSE[lang].search(text), text
    assert "{" not in text and "}" not in text  # every field filled
    if kind != "noise":
        assert f"{fmt_ratio(own)}" in text
    if repeats > 1:  # the spread is shown: the runs' number, both ends of the ratio's range
        assert str(repeats) in text and fmt_ratio(numbers.ratio.low) in text and fmt_ratio(numbers.ratio.high) in text
    assert bottleneck_contradicts(run(3.0, (3.0 / ratio,) * 3)) == (ratio <= 1)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_one_position_prompt_says_both_passes_do_the_same_work(lang):
    trace = run(3.0, (4.0, 4.0), prompt_len=1)  # Decode above Prefill: no contradiction with one position each
    text = bottleneck_live_text(trace, lang)
    assert {"en": "the prompt is a single position", "zh": "提示词只有 1 个位置"}[lang] in text
    assert "0.8" in text and not any(p in text for p in VARIANTS["noise"][lang])
    assert not bottleneck_contradicts(trace) and not NONSENSE[lang].search(text)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_cards_quote_the_shown_run_with_the_runs_range_and_number(lang):
    runs = [run(6.0, (2.0, 2.0)), run(12.0, (3.0, 3.0)), run(4.0, (4.0, 4.0))]
    # per-pass medians 6 / 3 / 3 ms: distances 2 ln 1.5 = 0.81, ln 2 = 0.69, ln 1.5 + 2 ln 4/3 = 0.98: run 2
    trace, numbers = shown_run(runs)
    assert numbers.shown == 1 and trace is runs[1]
    cards = {c.key: c for c in metric_cards(trace, lang, numbers)}
    assert cards["ttft"].value == "12.5 ms" and cards["tpot"].value == "3.0 ms"  # the shown run's, not medians
    k = numbers.shown + 1
    assert cards["ttft"].spread == t(lang, "metric_spread_shown", k=k, n=3, low="4.5 ms", high="12.5 ms")
    assert cards["tpot"].spread == t(lang, "metric_spread_shown", k=k, n=3, low="2.0 ms", high="4.0 ms")
    assert cards["itl"].spread == cards["e2el"].spread == t(lang, "metric_shown_run", k=k, n=3)
    single = {c.key: c for c in metric_cards(runs[0], lang, headline(runs[:1]))}
    assert single["ttft"].value == "6.5 ms" and all(not c.spread for c in single.values())


# --- one run, one set of numbers: the run nearest the medians ----------------------------------

def test_the_shown_run_is_the_one_whose_passes_are_nearest_the_per_pass_medians():
    runs = [run(10.0, (5.0, 5.0)), run(4.0, (2.1, 2.0)), run(4.2, (2.0, 2.2)), run(3.9, (1.9, 9.0)),
            run(4.1, (2.0, 2.0))]
    # medians per pass: 4.1, 2.0, 2.2; run 3 is ln(4.2 / 4.1) = 0.024 away, run 5 ln(2.2 / 2.0) = 0.095,
    # run 2 ln(4.1 / 4) + ln(2.1 / 2) + ln(2.2 / 2) = 0.17; runs 1 and 4 (a 9 ms step) much further
    assert nearest_median(runs) == 2
    trace, numbers = shown_run(runs)
    assert trace is runs[2] and numbers.shown == 2 and numbers.belongs_to(trace)
    assert nearest_median(runs[:1]) == 0
    assert nearest_median([runs[1], runs[1]]) == 0  # equal distances: the earliest
    twice, half = run(8.0, (2.0,)), run(2.0, (2.0,))  # |ln 2| == |ln 1/2|: as far either way
    assert nearest_median([twice, run(4.0, (2.0,)), half]) == 1
    with pytest.raises(ValueError):
        nearest_median([])


def test_runs_of_different_lengths_are_compared_over_the_passes_all_of_them_have():
    runs = [run(4.0, (2.0,)), run(4.0, (2.0, 50.0)), run(9.0, (2.0, 2.0, 2.0))]
    assert nearest_median(runs) == 0  # the 50 ms third pass is past the shortest run: not counted


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_run_label_says_which_run_and_the_ranges(lang):
    runs = [run(6.0, (2.0, 2.0)), run(12.0, (3.0, 3.0)), run(4.0, (4.0, 4.0))]
    words = run_label(headline(runs), lang)
    assert "2" in words and "3" in words and "4.0 ms–12.0 ms" in words and "2.0 ms–4.0 ms" in words
    assert words.startswith({"zh": "中位数那一次：第 2 / 3 次", "en": "median run: run 2 of 3"}[lang])
    assert run_label(headline(runs[:1]), lang) == "" and run_label(None, lang) == ""
    one_token = run_label(headline([run(5.0, ()), run(7.0, ())]), lang)
    assert "5.0 ms–7.0 ms" in one_token and "Decode" not in one_token
