"""The first figure's caption (lesson.metric_cards.timeline_lesson): what the timeline measured in the
lesson's terms, read over per-position ratios from 0.2x to 100x, zh and en, one run and five."""

from __future__ import annotations

import pytest

from lesson.formats import fmt_ratio, format_ms
from lesson.metric_cards import bottleneck_contradicts, timeline_lesson
from lesson.spread import headline, shown_run
from lesson.text import t
from tests.lesson.test_spread import run

PER_POSITION = (0.2, 0.5, 0.97, 1.0, 1.5, 3.7, 4.0, 7.0, 25.0, 100.0)
PROMPT_LEN, PREFILL_MS = 4, 8.0
WORDS = {  # the phrase each case says, and no other case's
    "cheaper": {"zh": "Prefill 便宜了", "en": "Prefill was"},
    "same": {"zh": "两者差不多", "en": "about the same"},
    "dearer": {"zh": "反而贵了", "en": "dearer this time"},
    "noise": {"zh": "这台机器的噪声", "en": "the machine's noise"},
}


def _case(per_position: float) -> str:
    decode_ms = per_position * PREFILL_MS / PROMPT_LEN
    if decode_ms >= PREFILL_MS:
        return "noise"
    if abs(per_position - 1) <= 0.05:
        return "same"
    return "cheaper" if per_position > 1 else "dearer"


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("repeats", [1, 5])
@pytest.mark.parametrize("per_position", PER_POSITION)
def test_the_caption_says_what_was_measured_per_position(per_position, repeats, lang):
    decode_ms = per_position * PREFILL_MS / PROMPT_LEN
    runs = [run(PREFILL_MS * (1 + 0.03 * k), (decode_ms * (1 + 0.01 * k),) * 3, prompt_len=PROMPT_LEN)
            for k in range(repeats)]
    trace, numbers = shown_run(runs)
    text = timeline_lesson(trace, lang, numbers)
    own = numbers.shown_numbers
    # N positions in one pass in X ms, X/N per position, Y per Decode step: the shown run's own numbers
    for number in (format_ms(own.prefill_ms), format_ms(own.prefill_ms / PROMPT_LEN), format_ms(own.decode_ms)):
        assert number in text, (number, text)
    assert str(PROMPT_LEN) in text and "{" not in text and "}" not in text
    case = _case(own.decode_ms * PROMPT_LEN / own.prefill_ms)
    assert WORDS[case][lang] in text, (case, text)
    for other in set(WORDS) - {case} - ({"cheaper"} if lang == "en" and case == "dearer" else set()):
        assert WORDS[other][lang] not in text, (other, text)
    if case == "cheaper":
        assert fmt_ratio(own.decode_ms * PROMPT_LEN / own.prefill_ms) in text
    if case == "dearer":
        assert fmt_ratio(own.prefill_ms / (own.decode_ms * PROMPT_LEN)) in text
    if case == "noise":  # says so, with the range over the runs, and the page offers to measure again
        assert {"zh": "请再测一次", "en": "Measure again"}[lang] in text
        assert bottleneck_contradicts(trace, numbers)
        if repeats > 1:
            assert f"{format_ms(numbers.prefill_ms.low)}–{format_ms(numbers.prefill_ms.high)}" in text
            assert f"{format_ms(numbers.decode_ms.low)}–{format_ms(numbers.decode_ms.high)}" in text
    else:
        assert not bottleneck_contradicts(trace, numbers)
    which = t(lang, "tl_lesson_which", k=numbers.shown + 1, n=repeats)
    assert (which in text) == (repeats > 1)  # which of the repeats, when there are several


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_one_position_prompt_and_a_one_token_answer(lang):
    one = run(3.0, (4.0, 4.0), prompt_len=1)
    text = timeline_lesson(one, lang, headline([one]))
    assert t(lang, "tl_lesson_one_position") in text and WORDS["noise"][lang] not in text
    assert timeline_lesson(run(3.0, ()), lang) is None  # no Decode step yet: nothing to compare


def test_the_lessons_own_example_reads_as_the_issue_asks():
    trace = run(38.2, (35.4, 45.1))  # the busy machine's 4-token prompt: a Decode step near the Prefill
    text = timeline_lesson(trace, "en")
    assert "Prefill read 4 positions in one pass in 38.2 ms (9.6 ms per position)" in text
    assert "each Decode step read one position in 40.2 ms (the median step)" in text
    assert "noise" in text  # 40.2 ms >= 38.2 ms
