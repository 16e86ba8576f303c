"""Make a prompt longer, to a target number of tokens, so a learner can watch Prefill grow.

The filler is the lesson's own prose, placed *before* the learner's prompt, so the
prompt's own last position (which predicts the first answer token) stays last.
It names no country and no capital on purpose: a capital fact in the filler would
be a distractor for the question at the end, and the embedded default model is
trained (assets/default_model/train.py) on exactly this filler, at every length
up to `DEFAULT_MAX_PROMPT_TOKENS`, so its answer survives the stretch.
"""

from __future__ import annotations

import re

from engine.contract import limits

# The longest prompt the app and the CLI accept by default, and the longest the
# embedded default model was trained to answer after (see its model card).
DEFAULT_MAX_PROMPT_TOKENS = 1024

# The lesson's running example, as typed, in each of its languages (-> 巴黎。 / " Paris."): the app's default
# prompt (lesson.inputs), the gallery's recorded runs (engine.runtime.record), the worker's warm-up.
LESSON_PROMPTS = {"zh": "法国的首都是", "en": "The capital of France is"}

FILLER_ZH = (
    "研究 LLM 推理系统时，通常把它们叫作 Prefill 和 Decode。",
    "Prefill 负责“读”；Decode 负责“接着写”。",
    "它们用的是同一模型，但每次送进模型的 Token 数量不同。",
    "Prefill 一次处理提示词中的多个位置。",
    "因果掩码仍然有效：前面的 Token 看不到后面的 Token；但各位置的计算可以在一次前向中用较大的矩阵运算组织起来。",
    "同时，模型会建立各层的 KV Cache，供后续生成复用。",
    "提示词越长，这一步要处理的位置就越多。",
    "这只是性能倾向，不是对所有长度、模型和硬件的绝对判断。",
    "下一步的输入要等上一步选出结果。",
    "因此 Decode 是一个接一个的依赖链。",
    "缓存省去旧位置的重复计算，不能省去当前 Query 读取历史的工作。",
    "“一个接一个”说的是同一请求内部。",
    "服务器可以把多个用户请求的 Decode 步骤放进一个批次，并行使用 GPU。",
    "不能把这两种并行混为一谈。",
    "两个阶段的资源需求不同，还会互相干扰。",
    "比如一个很长的 Prefill 插入正在运行的 Decode 批次，可能让其他用户等更久。",
    "TTFT 主要受首次处理影响，TPOT/ITL 更能反映持续 Decode 的体验。",
    "一个长提示词可能让首字迟迟不出现；首字很快出现，也不保证后面写得流畅。",
    "用户请求的提示词长度、到达时间和输出长度都不同。",
    "KV Cache 还会随各请求动态增长，PagedAttention 等方法则重点改善它的内存管理。",
    "它们要优化的等待，不是同一种等待。",
)
FILLER_EN = (
    "An LLM answers a prompt in two phases called Prefill and Decode. ",
    "Prefill reads the whole prompt in one forward pass. ",
    "Prefill also builds the KV cache for every layer. ",
    "A longer prompt gives Prefill more positions to process. ",
    "Decode writes the answer one token at a time. ",
    "Each Decode step feeds only the newest token into the model. ",
    "The new query still reads all earlier keys and values from the KV cache. ",
    "The KV cache grows by one position for every generated token. ",
    "Prefill and Decode use the same model with the same weights. ",
    "The difference is how many new tokens go into each forward pass. ",
    "TTFT means time to first token. ",
    "A long prompt makes the first token arrive later. ",
    "TPOT means time per output token. ",
    "A fast first token does not promise that the rest of the answer will be fast. ",
    "Continuous batching lets new requests join and finished requests leave at every step. ",
    "PagedAttention stores the KV cache in small blocks to save memory. ",
    "Prefill reads. ",
    "Decode writes. ",
    "The cache grows. ",
    "Each step waits. ",
)
_CJK = re.compile(r"[\u3400-\u9fff]")


def prompt_token_ids(tokenizer, text: str) -> list[int]:
    """The ids the model is given for `text`, special tokens included.

    Whether a BOS (or any other special token) goes in front is the tokenizer's
    own setting: Llama and Gemma checkpoints add one and answer worse without it;
    Qwen, GPT-2 and the embedded default model add nothing.
    """
    return list(tokenizer(text, add_special_tokens=True)["input_ids"])


def count_tokens(tokenizer, text: str) -> int:
    """Tokens the model gets for `text`, a BOS included where the tokenizer adds one."""
    return len(prompt_token_ids(tokenizer, text))


def filler_for(prompt: str) -> tuple[str, ...]:
    """The filler sentences in the prompt's language (Chinese if it has any CJK character)."""
    return FILLER_ZH if _CJK.search(prompt) else FILLER_EN


def pad_marks_for(prompt: str) -> tuple[str, ...]:
    """Marks that close the last token or two of a gap no whole sentence fits."""
    return ("。", " ", "\n") if _CJK.search(prompt) else (" ", "\n")


def extend_prompt(tokenizer, prompt: str, target_tokens: int) -> str:
    """`prompt` with filler sentences before it: exactly `target_tokens` tokens where the
    tokenizer allows, never more. A prompt already that long is returned unchanged.

    1) whole filler sentences in their order, cycling, as many as fit;
    2) the gap left is closed with later sentences short enough to fit, in order;
    3) what still remains (a token or two) is padded with marks (。 or spaces).

    A target over engine.contract.limits.MAX_STRETCH_TOKENS is refused (LimitError) before anything is tokenized;
    callers check it against the model's context and their caps first.
    """
    limits.check_count("prompt_tokens", target_tokens, limits.MAX_STRETCH_TOKENS)
    if count_tokens(tokenizer, prompt) >= target_tokens:
        return prompt
    sentences = filler_for(prompt)

    def fits(text: str) -> bool:
        return count_tokens(tokenizer, text + prompt) <= target_tokens

    def cycle(k: int) -> str:
        return "".join(sentences[i % len(sentences)] for i in range(k))

    # Token counts add up across sentences (within a token or so where a space joins them), so
    # summing each sentence's own count guesses how many fit; a few exact encodes correct it.
    specials = count_tokens(tokenizer, "")  # a BOS, where the tokenizer adds one
    # Counted without the joining space: alone, a trailing space is a token of its own,
    # in the stream it joins the next word.
    sizes = {s: max(1, count_tokens(tokenizer, s.strip()) - specials) for s in sentences}
    budget, num_whole = target_tokens - count_tokens(tokenizer, prompt), 0
    while budget >= sizes[sentences[num_whole % len(sentences)]]:
        budget -= sizes[sentences[num_whole % len(sentences)]]
        num_whole += 1
    while num_whole and not fits(cycle(num_whole)):
        num_whole -= 1
    while fits(cycle(num_whole + 1)):
        num_whole += 1
    filler = cycle(num_whole)
    for sentence in sentences:
        gap = target_tokens - count_tokens(tokenizer, filler + prompt)
        if gap <= 0:
            break
        if sizes[sentence] <= gap and fits(filler + sentence):
            filler += sentence
    # Marks can merge with their neighbours, so try each and keep the closest to the target.
    gap = target_tokens - count_tokens(tokenizer, filler + prompt)
    high = 4 * gap + 4  # marks that merge (several spaces in one token) need more than one per token
    candidates = [filler + pad * _largest(lambda m, pad=pad: fits(filler + pad * m), high) + prompt
                  for pad in pad_marks_for(prompt)]
    return max(candidates, key=lambda text: count_tokens(tokenizer, text))


def _largest(ok, high: int) -> int:
    """The largest k in [0, high] with ok(k), given ok(0) and ok monotone (True then False)."""
    low = 0
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if ok(mid) else (low, mid - 1)
    return low
