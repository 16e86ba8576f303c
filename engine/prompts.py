"""Make a prompt longer, to a target number of tokens, so a learner can watch Prefill grow.

The filler is ordinary sentences placed *before* the learner's prompt, so the
prompt's own last position (which predicts the first answer token) stays last.
"""

from __future__ import annotations

import re

FILLER_ZH = (
    "德国的首都是柏林。", "日本的首都是东京。", "意大利的首都是罗马。", "西班牙的首都是马德里。",
    "埃及的首都是开罗。", "加拿大的首都是渥太华。", "巴西的首都是巴西利亚。", "印度的首都是新德里。",
    "澳大利亚的首都是堪培拉。", "肯尼亚的首都是内罗毕。", "韩国的首都是首尔。", "希腊的首都是雅典。",
)
FILLER_EN = (
    "The capital of Germany is Berlin. ", "The capital of Japan is Tokyo. ", "The capital of Italy is Rome. ",
    "The capital of Spain is Madrid. ", "The capital of Egypt is Cairo. ", "The capital of Canada is Ottawa. ",
    "The capital of Brazil is Brasilia. ", "The capital of India is New Delhi. ",
    "The capital of Australia is Canberra. ", "The capital of Kenya is Nairobi. ",
)
_CJK = re.compile(r"[\u3400-\u9fff]")


def count_tokens(tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False))


def extend_prompt(tokenizer, prompt: str, target_tokens: int) -> str:
    """`prompt` with filler sentences before it: exactly `target_tokens` tokens where the
    tokenizer allows, never more. A prompt already that long is returned unchanged."""
    if count_tokens(tokenizer, prompt) >= target_tokens:
        return prompt
    sentences = FILLER_ZH if _CJK.search(prompt) else FILLER_EN
    budget = target_tokens - count_tokens(tokenizer, prompt)  # every sentence costs >= 1 token
    stream = [sentences[i % len(sentences)] for i in range(budget)]

    def fits(text: str) -> bool:
        return count_tokens(tokenizer, text + prompt) <= target_tokens

    # Whole sentences first, then single marks up to the target. Token counts grow with
    # the text, so a binary search finds each length in a few encodes. Marks can merge
    # with their neighbours, so try a few and keep the closest to the target.
    filler = "".join(stream[:_largest(lambda k: fits("".join(stream[:k])), budget)])
    candidates = [
        filler + pad * _largest(lambda m: fits(filler + pad * m), budget) + prompt
        for pad in (sentences[0][-1], " ", "\n")
    ]
    return max(candidates, key=lambda text: count_tokens(tokenizer, text))


def _largest(ok, high: int) -> int:
    """The largest k in [0, high] with ok(k), given ok(0) and ok monotone (True then False)."""
    low = 0
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if ok(mid) else (low, mid - 1)
    return low
