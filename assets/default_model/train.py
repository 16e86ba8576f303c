"""Build the project's default teaching model from scratch, on CPU, in about ten minutes.

Run from anywhere:

    python assets/default_model/train.py

Contract:
- Inputs (read relative to this file, never the CWD): ``../data/capitals.csv``,
  ``../data/lesson_prefill_decode_zh.txt``, ``../data/prefill_decode_en.txt``, and the
  app's prompt filler (``engine/contract/prompts.py``), so the model is trained on prompts
  stretched exactly the way the app and the CLI stretch them.
- Outputs (written next to this file): ``corpus_sample.txt``, ``tokenizer.json``,
  ``tokenizer_config.json``, ``config.json``, ``generation_config.json``,
  ``model.safetensors``, ``eval.json``, ``train_facts.json`` (every measured number) and
  ``README.md`` (the model card).
- Deterministic: one seed fixes the corpus, the tokenizer and the weight init, so a rerun
  on the same machine gives the same files (float results may differ across machines).
- Nothing is downloaded; only torch, transformers and tokenizers are used.

What the model must do (and ``eval.json`` measures): answer ``X的首都是`` with ``Y。`` and
``The capital of X is`` with `` Y.``, then stop (end of sequence), for every country of the
table, also when the question comes after up to ``DEFAULT_MAX_PROMPT_TOKENS`` tokens of the
lesson's prose. So every training document is: some prose (none, or up to that many tokens),
then one fact sentence, then EOS. Documents are packed whole into windows that start at
position 0, so facts are seen at every position a stretched prompt can reach.

``main`` runs five numbered stages: 1) build the sentences and train the tokenizer,
2) build the documents, 3) train the model, 4) save it and evaluate the saved files,
5) write the model card.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import platform
import random
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)
from transformers.utils import logging as hf_logging

SEED = 20240611
OUT_DIR = Path(__file__).resolve().parent
REPO_DIR = OUT_DIR.parent.parent
DATA_DIR = OUT_DIR.parent / "data"
CAPITALS_CSV = DATA_DIR / "capitals.csv"
LESSON_ZH = DATA_DIR / "lesson_prefill_decode_zh.txt"
EXPLAIN_EN = DATA_DIR / "prefill_decode_en.txt"

sys.path.insert(0, str(REPO_DIR))  # the app's filler; engine.contract.prompts imports nothing heavy
from engine.contract.prompts import DEFAULT_MAX_PROMPT_TOKENS, FILLER_EN, FILLER_ZH  # noqa: E402

UNK, EOS = "<unk>", "</s>"  # no BOS token: prompts are encoded as they are
CONTINENT_ZH = {
    "Europe": "欧洲",
    "Asia": "亚洲",
    "Africa": "非洲",
    "North America": "北美洲",
    "South America": "南美洲",
    "Oceania": "大洋洲",
}


@dataclass(frozen=True)
class DocRecipe:
    """How training documents (prose context + one fact + EOS) are drawn.

    Two kinds, because they teach two things: bare questions ("X的首都是Y。</s>") teach the
    facts themselves; questions after prose teach that a long context before the question
    does not change the answer.
    """

    context_docs_per_language: int = 600  # a question after 1..max_prompt_tokens of prose
    bare_docs_per_language: int = 6000  # the question alone (~8 tokens each)
    long_fill_share: float = 0.25  # of the bare questions: fill the gaps of long windows
    app_filler_share: float = 0.5  # of the prose: the app's filler in its order, else shuffled prose
    eval_template_share: float = 0.6  # "X的首都是Y。" / "The capital of X is Y." (the others share the rest)
    max_prompt_tokens: int = DEFAULT_MAX_PROMPT_TOKENS  # context + question, as the app allows
    max_pad_marks: int = 2  # extend_prompt closes a gap of a token or two with 。 or spaces
    tokenizer_rounds: int = 24  # the tokenizer learns from every unique sentence this many times
    sample_docs: int = 200  # documents written to corpus_sample.txt (the whole corpus is rebuilt, not shipped)


@dataclass(frozen=True)
class ModelShape:
    """The Llama architecture; every field maps to a LlamaConfig field of the same name."""

    hidden_size: int = 256
    num_hidden_layers: int = 4
    num_attention_heads: int = 8  # query heads: 8 x head_dim 32 = hidden 256
    num_key_value_heads: int = 2  # grouped-query attention: 4 query heads share one K/V head
    head_dim: int = 32
    intermediate_size: int = 688  # SwiGLU width, about 2.7 x hidden
    max_position_embeddings: int = 4096  # RoPE has no table: this is only a declared limit
    rope_theta: float = 10000.0


@dataclass(frozen=True)
class TrainRecipe:
    """Tokenizer size and the optimisation schedule (sized for ~10 min on 2 idle CPU cores).

    A length curriculum: a first try that trained on long windows from the start got only
    0-11 % of the capitals right after 620 steps (it had learned the prose, not the facts).
    So the model first learns from short windows, then from long and short ones mixed.
    """

    vocab_size: int = 3000  # upper bound; BPE stops early if it runs out of repeated pairs
    short_len: int = 128  # short windows: bare questions, packed
    seq_len: int = 1152  # long windows: the longest prompt (1024) + the longest answer the app allows (128)
    tokens_per_batch: int = 2304  # 18 short windows or 2 long ones
    num_steps: int = 700
    short_only_steps: int = 250  # the curriculum's first part
    long_share: float = 0.65  # after it: this share of batches is long windows
    warmup_steps: int = 30
    peak_lr: float = 3e-3
    min_lr_ratio: float = 0.05  # cosine decays to peak_lr * min_lr_ratio
    weight_decay: float = 0.05
    grad_clip: float = 1.0
    log_every: int = 25
    num_threads: int = 2


@dataclass(frozen=True)
class Capital:
    """One row of capitals.csv."""

    country_en: str
    capital_en: str
    country_zh: str
    capital_zh: str
    continent: str


# ---------------------------------------------------------------------------
# 1) Sentences
# ---------------------------------------------------------------------------


def load_capitals(path: Path = CAPITALS_CSV) -> list[Capital]:
    """Read the capitals table; every continent must have a Chinese name above."""
    with path.open(encoding="utf-8", newline="") as f:
        rows = [Capital(**row) for row in csv.DictReader(f)]
    unknown = {r.continent for r in rows} - CONTINENT_ZH.keys()
    if unknown:
        raise ValueError(f"no Chinese name for continent(s): {sorted(unknown)}")
    return rows


def sentence_case(text: str) -> str:
    """Capitalise the first letter only ("the Netherlands ..." -> "The Netherlands ...")."""
    return text[:1].upper() + text[1:]


def fact_sentences_zh(c: Capital) -> list[str]:
    """Chinese fact sentences; the first one is exactly the eval prompt plus its answer."""
    continent = CONTINENT_ZH[c.continent]
    return [
        f"{c.country_zh}的首都是{c.capital_zh}。",
        f"{c.capital_zh}是{c.country_zh}的首都。",
        f"{c.country_zh}位于{continent}。",
    ]


def fact_sentences_en(c: Capital) -> list[str]:
    """English fact sentences; the first one is exactly the eval prompt plus its answer."""
    return [
        f"The capital of {c.country_en} is {c.capital_en}.",
        f"{c.capital_en} is the capital of {c.country_en}.",
        sentence_case(f"{c.country_en} is in {c.continent}."),
    ]


def lesson_sentences_zh(path: Path = LESSON_ZH) -> list[str]:
    """Prose sentences of the Chinese lesson text.

    Skips what is not prose (tables, list items, references, figure captions, headings
    without end punctuation), removes citation marks like ``[1]``, and splits at 。！？.
    """
    skip_prefixes = ("|", "- ", "参考文献", "目录")
    sentences = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = re.sub(r"\[\d+\]", "", line).strip()
        if not line or line.startswith(skip_prefixes) or "点击查看" in line:
            continue
        # An end mark directly followed by a closing quote (模型回答“巴黎。”。) is quoted
        # text, not the end of the sentence.
        for sentence in re.findall(r".+?[。！？](?!”)", line):
            sentence = sentence.strip()
            if len(sentence) >= 8:  # drops fragments such as "。" after a quote
                sentences.append(sentence)
    return sentences


def explain_sentences_en(path: Path = EXPLAIN_EN) -> list[str]:
    """English sentences explaining Prefill and Decode, one per line in the data file."""
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def prose_pools(capitals: list[Capital]) -> dict[str, list[str]]:
    """The prose a context is made of, per language: lesson sentences that name no country
    and no capital (so a context never holds a second, distracting answer).

    The app's filler must be part of it: the model is trained on what the app sends.
    """
    names = [n for c in capitals for n in (c.country_zh, c.capital_zh, c.country_en, c.capital_en)]
    names += ["首都", "capital"]

    def clean(sentences: list[str]) -> list[str]:
        return [s for s in sentences if not any(n in s for n in names)]

    pools = {"zh": clean(lesson_sentences_zh()), "en": clean(explain_sentences_en())}
    for lang, filler in (("zh", FILLER_ZH), ("en", FILLER_EN)):
        missing = [s for s in filler if s.strip() not in pools[lang]]
        if missing:
            raise ValueError(f"filler sentences missing from the {lang} lesson data: {missing}")
    return pools


def tokenizer_text(capitals: list[Capital], pools: dict[str, list[str]], recipe: DocRecipe) -> list[str]:
    """Lines the tokenizer learns from: every unique sentence, ``tokenizer_rounds`` times,
    shuffled into single-language lines (so merge counts do not depend on document lengths)."""
    rng = random.Random(SEED)
    facts = {"zh": [s for c in capitals for s in fact_sentences_zh(c)],
             "en": [s for c in capitals for s in fact_sentences_en(c)]}
    lines = []
    for _ in range(recipe.tokenizer_rounds):
        for lang, joiner in (("zh", ""), ("en", " ")):
            order = facts[lang] + pools[lang]
            rng.shuffle(order)
            lines += [joiner.join(order[i : i + 8]) for i in range(0, len(order), 8)]
    return lines


# ---------------------------------------------------------------------------
# 2) Tokenizer
# ---------------------------------------------------------------------------

# Pieces that always stand alone before BPE runs, so that merges never cross them:
# punctuation, and the Chinese function words of the fact templates. Without this, BPE
# on such a repetitive corpus would learn pieces like "的首都是" or "是巴黎", and the
# prompt "法国的首都是" would end in the middle of a training-time piece.
ISOLATED_PIECES = r"\p{P}|\p{N}|的|是|位于"


def train_tokenizer(paragraphs: list[str], vocab_size: int) -> Tokenizer:
    """Train a Llama-style BPE tokenizer on ``paragraphs``.

    - BPE over Unicode characters with ``byte_fallback``: any character that is not in the
      vocabulary becomes its UTF-8 bytes ``<0x00>``..``<0xFF>``, so no input maps to <unk>.
    - Spaces become "▁" (Metaspace) and start a new word; no "▁" is prepended to the text,
      so a prompt tokenizes the same at the start of a text as inside the training stream.
    - Ids 0 and 1 are <unk> and </s>; ids 2..257 are the 256 byte tokens; BPE pieces follow.
    - Nothing is added around an encoded text: no BOS, no EOS.
    """
    specials = [UNK, EOS]
    byte_tokens = [f"<0x{i:02X}>" for i in range(256)]
    tokenizer = Tokenizer(models.BPE(unk_token=UNK, byte_fallback=True, fuse_unk=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=True),
            pre_tokenizers.Split(Regex(ISOLATED_PIECES), behavior="isolated"),
        ]
    )
    tokenizer.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=specials + byte_tokens,  # reserve ids 0..257 in this order
        show_progress=False,
    )
    tokenizer.train_from_iterator(paragraphs, trainer=trainer)
    # The byte tokens must be ordinary vocabulary entries (as in Llama), not "added tokens"
    # that would match the literal text "<0x41>" in user input.
    return rebuild_without_added_bytes(tokenizer, specials)


def rebuild_without_added_bytes(trained: Tokenizer, specials: list[str]) -> Tokenizer:
    """Copy a trained BPE tokenizer, keeping only ``specials`` as added (special) tokens."""
    state = json.loads(trained.to_str())
    state["added_tokens"] = [t for t in state["added_tokens"] if t["content"] in specials]
    return Tokenizer.from_str(json.dumps(state, ensure_ascii=False))


def wrap_for_transformers(tokenizer: Tokenizer, model_max_length: int) -> PreTrainedTokenizerFast:
    """Wrap the raw tokenizer so ``AutoTokenizer.from_pretrained`` can load it offline."""
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token=UNK,
        eos_token=EOS,
        pad_token=EOS,  # only used to fill batches; padded positions carry no loss
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
    )


# ---------------------------------------------------------------------------
# 3) Model training
# ---------------------------------------------------------------------------


def make_config(shape: ModelShape, vocab_size: int, eos_id: int) -> LlamaConfig:
    """A standard transformers Llama config (GQA, RoPE, RMSNorm, SwiGLU, tied embeddings)."""
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.num_hidden_layers,
        num_attention_heads=shape.num_attention_heads,
        num_key_value_heads=shape.num_key_value_heads,
        head_dim=shape.head_dim,
        max_position_embeddings=shape.max_position_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": shape.rope_theta},
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=eos_id,
    )


# ---------------------------------------------------------------------------
# 2) Documents: prose context + one fact + EOS, packed into windows
# ---------------------------------------------------------------------------


class SentenceSizer:
    """Token counts of sentences, cached: a context is built to a token target."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer, self.cache = tokenizer, {}

    def __call__(self, text: str) -> int:
        if text not in self.cache:
            self.cache[text] = len(self.tokenizer.encode(text).ids)
        return self.cache[text]


def app_style_context(filler: tuple[str, ...], target: int, size: SentenceSizer, pad: str, rng: random.Random) -> str:
    """What ``engine.contract.prompts.extend_prompt`` puts before a question, for a context of about
    ``target`` tokens: whole filler sentences in order (cycling), then later sentences that
    still fit the gap, then a few pad marks. Counts add up per sentence here (exactly in
    Chinese, where sentences end with an isolated mark; within a token in English)."""
    parts, used, i = [], 0, 0
    while used + size(filler[i % len(filler)]) <= target:
        parts.append(filler[i % len(filler)])
        used += size(parts[-1])
        i += 1
    for sentence in filler:
        if used + size(sentence) <= target:
            parts.append(sentence)
            used += size(sentence)
    return "".join(parts) + pad * rng.randint(0, min(2, target - used))


def shuffled_context(pool: list[str], joiner: str, target: int, size: SentenceSizer, rng: random.Random) -> str:
    """Prose sentences in a random order (repeating only after the whole pool), about
    ``target`` tokens; the text ends with the joiner so the question starts a new sentence."""
    parts, used, order = [], 0, []
    while True:
        if not order:
            order = rng.sample(pool, len(pool))
        if used + size(order[-1]) > target:
            break
        parts.append(order.pop())
        used += size(parts[-1])
    return "".join(s + joiner for s in parts)


@dataclass(frozen=True)
class Doc:
    text: str  # prose (maybe none) + one fact sentence; EOS is added when encoding
    country: str  # a window never holds two documents about one country: no copying answers
    bare: bool  # no prose before the fact


def build_documents(
    capitals: list[Capital], pools: dict[str, list[str]], size: SentenceSizer, recipe: DocRecipe, seed: int = SEED
) -> list[Doc]:
    """Every document ends with one fact sentence; facts come round-robin, so each country
    is asked about equally often, in the question template the eval uses most of the time."""
    rng = random.Random(seed)
    docs = []
    for lang, filler, facts_of, joiner, pad in (
        ("zh", FILLER_ZH, fact_sentences_zh, "", "。"),
        ("en", FILLER_EN, fact_sentences_en, " ", " "),
    ):
        countries: list[Capital] = []
        num_docs = recipe.context_docs_per_language + recipe.bare_docs_per_language
        with_context = set(rng.sample(range(num_docs), recipe.context_docs_per_language))
        for i in range(num_docs):
            if not countries:
                countries = rng.sample(capitals, len(capitals))
            country = countries.pop()
            facts = facts_of(country)
            share = recipe.eval_template_share
            fact = rng.choices(facts, weights=[share] + [(1 - share) / (len(facts) - 1)] * (len(facts) - 1))[0]
            context = ""
            if i in with_context:
                target = rng.randint(1, recipe.max_prompt_tokens - size(fact))
                if rng.random() < recipe.app_filler_share:
                    context = app_style_context(filler, target, size, pad, rng)
                else:
                    context = shuffled_context(pools[lang], joiner, target, size, rng)
            docs.append(Doc(context + fact, country.country_en, bare=not context))
    rng.shuffle(docs)
    return docs


def pack_windows(docs: list[tuple[list[int], str]], seq_len: int) -> list[list[int]]:
    """Pack (token ids with EOS, country) documents whole into windows of at most ``seq_len``
    tokens, first fit, never two documents about one country in a window (the model must
    remember a capital, not copy it from earlier in the window). A window starts with a
    document, at position 0, like a prompt does; after an EOS the next document follows
    (which is what "ignore end of sequence" shows)."""
    smallest = min(len(ids) for ids, _ in docs)
    open_windows: list[tuple[list[int], set[str]]] = []
    full_windows: list[list[int]] = []
    for ids, country in docs:
        if len(ids) > seq_len:
            raise ValueError(f"a document has {len(ids)} tokens > window {seq_len}")
        window = next((w for w in open_windows if len(w[0]) + len(ids) <= seq_len and country not in w[1]), None)
        if window is None:
            open_windows.append(window := ([], set()))
        window[0].extend(ids)
        window[1].add(country)
        if seq_len - len(window[0]) < smallest:
            open_windows.remove(window)
            full_windows.append(window[0])
    return full_windows + [w for w, _ in open_windows]


def make_windows(
    tokenizer: Tokenizer, docs: list[Doc], doc_recipe: DocRecipe, recipe: TrainRecipe, eos_id: int
) -> tuple[list[list[int]], list[list[int]]]:
    """(short windows, long windows). Short: bare questions and the shortest contexts.
    Long: every longer context, its gaps filled with a share of the bare questions."""
    encoded = [(enc.ids + [eos_id], doc.country) for enc, doc in zip(tokenizer.encode_batch([d.text for d in docs]), docs)]
    bare = [e for e, d in zip(encoded, docs) if d.bare]
    contexts = [e for e, d in zip(encoded, docs) if not d.bare]
    num_fill = int(doc_recipe.long_fill_share * len(bare))
    short = [e for e in contexts if len(e[0]) <= recipe.short_len] + bare[num_fill:]
    long = [e for e in contexts if len(e[0]) > recipe.short_len] + bare[:num_fill]
    random.Random(SEED + 2).shuffle(long)  # long documents first would leave the fill for last
    return pack_windows(short, recipe.short_len), pack_windows(long, recipe.seq_len)


def training_schedule(short: list[list[int]], long: list[list[int]], recipe: TrainRecipe, seed: int = SEED) -> list[list[list[int]]]:
    """The batches, in order: ``short_only_steps`` of short windows, then long and short
    batches mixed. Each kind is drawn in shuffled epochs of its own."""
    rng = random.Random(seed + 1)

    def draws(windows: list[list[int]], size: int):
        while True:
            order = rng.sample(windows, len(windows))
            for i in range(0, len(order) - size + 1, size):
                yield order[i : i + size]

    short_batches = draws(short, recipe.tokens_per_batch // recipe.short_len)
    long_batches = draws(long, recipe.tokens_per_batch // recipe.seq_len)
    return [
        next(long_batches if step >= recipe.short_only_steps and rng.random() < recipe.long_share else short_batches)
        for step in range(recipe.num_steps)
    ]


def collate(samples: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad samples to the longest one. Returns (input_ids, labels), both (B, T).

    Padding goes on the right and attention is causal, so a real token never attends to a
    pad: no attention mask is needed. Pads get label -100, which the loss ignores.
    """
    width = max(len(s) for s in samples)
    input_ids = torch.full((len(samples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(samples), width), -100, dtype=torch.long)
    for row, sample in enumerate(samples):
        input_ids[row, : len(sample)] = torch.tensor(sample)
        labels[row, : len(sample)] = torch.tensor(sample)
    return input_ids, labels


def learning_rate(step: int, recipe: TrainRecipe) -> float:
    """Linear warmup, then cosine decay from peak_lr to peak_lr * min_lr_ratio."""
    if step < recipe.warmup_steps:
        return recipe.peak_lr * (step + 1) / recipe.warmup_steps
    progress = (step - recipe.warmup_steps) / max(1, recipe.num_steps - recipe.warmup_steps)
    cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
    return recipe.peak_lr * (recipe.min_lr_ratio + (1.0 - recipe.min_lr_ratio) * cosine)


def make_optimizer(model: torch.nn.Module, recipe: TrainRecipe) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only (not on RMSNorm gains)."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": recipe.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=recipe.peak_lr, betas=(0.9, 0.95), eps=1e-8)


def train_model(model: LlamaForCausalLM, schedule: list[list[list[int]]], recipe: TrainRecipe, pad_id: int) -> dict:
    """Train in place, one step per batch of ``schedule``; return a log with losses and wall time."""
    optimizer = make_optimizer(model, recipe)
    losses, num_tokens = [], 0
    model.train()
    start = time.perf_counter()
    for step, batch in enumerate(schedule):
        input_ids, labels = collate(batch, pad_id)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, recipe)
        loss = model(input_ids=input_ids, labels=labels).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.grad_clip)
        optimizer.step()
        num_tokens += int((labels != -100).sum())
        losses.append(loss.item())
        if step % recipe.log_every == 0 or step == recipe.num_steps - 1:
            elapsed = time.perf_counter() - start
            print(f"step {step:5d}  width {input_ids.shape[1]:4d}  loss {loss.item():.4f}  "
                  f"lr {learning_rate(step, recipe):.2e}  {elapsed:6.1f}s", flush=True)
    model.eval()
    wall_s = time.perf_counter() - start
    return {
        "wall_time_s": round(wall_s, 1),
        # Other jobs on the machine slow training down; a 1-minute load average above
        # num_threads at the end of training means the CPU cores were shared.
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "tokens_seen": num_tokens,
        "final_loss_avg_last_50": round(sum(losses[-50:]) / len(losses[-50:]), 4),
        "first_loss": round(losses[0], 4),
    }


# ---------------------------------------------------------------------------
# 4) Evaluation
# ---------------------------------------------------------------------------


EVAL_PROMPT_TOKENS = (0, 64, 256, 512, DEFAULT_MAX_PROMPT_TOKENS)  # 0: the question as typed


@torch.no_grad()
def greedy_continuation(model, tokenizer, prompt: str, max_new_tokens: int) -> str:
    """Decoded text that greedy decoding appends to ``prompt``, special tokens kept (so an
    end of sequence shows as ``</s>``); stops at EOS like the app does."""
    input_ids = tokenizer(prompt, return_tensors="pt").input_ids
    output = model.generate(
        input_ids,
        attention_mask=torch.ones_like(input_ids),
        do_sample=False,
        max_new_tokens=max_new_tokens,
    )
    return tokenizer.decode(output[0, input_ids.shape[1] :])


def eval_cases(capitals: list[Capital]) -> list[dict]:
    """One zh and one en question per country: prompt and the text the answer must start with."""
    cases = []
    for c in capitals:
        cases.append({"lang": "zh", "prompt": f"{c.country_zh}的首都是", "expected": f"{c.capital_zh}。"})
        cases.append({"lang": "en", "prompt": f"The capital of {c.country_en} is", "expected": f" {c.capital_en}."})
    return cases


def is_correct(output: str, expected: str) -> bool:
    """True if the answer starts with the expected text; a leading space is optional."""
    return output.lstrip(" ").startswith(expected.lstrip(" "))


def evaluate(model, tokenizer, capitals: list[Capital], max_new_tokens: int = 10) -> dict:
    """Greedy-decode every question, as typed and stretched by the app's ``extend_prompt`` to
    each length in ``EVAL_PROMPT_TOKENS``; per language and length: how many answers are
    right, and how many stop (EOS) right after the answer."""
    from engine.contract.prompts import extend_prompt

    results = []
    for num_tokens in EVAL_PROMPT_TOKENS:
        for case in eval_cases(capitals):
            prompt = extend_prompt(tokenizer, case["prompt"], num_tokens) if num_tokens else case["prompt"]
            output = greedy_continuation(model, tokenizer, prompt, max_new_tokens)
            results.append({
                **case, "prompt_tokens": len(tokenizer(prompt).input_ids), "stretched_to": num_tokens,
                "output": output, "correct": is_correct(output, case["expected"]),
                "stops": output.lstrip(" ") == case["expected"].lstrip(" ") + EOS,
            })
    accuracy = {}
    for lang in ("zh", "en"):
        for num_tokens in EVAL_PROMPT_TOKENS:
            rows = [r for r in results if r["lang"] == lang and r["stretched_to"] == num_tokens]
            correct, stops = sum(r["correct"] for r in rows), sum(r["stops"] for r in rows)
            accuracy.setdefault(lang, {})[str(num_tokens)] = {
                "correct": correct, "stops": stops, "total": len(rows), "accuracy": round(correct / len(rows), 4),
            }
    return {"accuracy": accuracy, "max_new_tokens": max_new_tokens, "prompt_tokens": list(EVAL_PROMPT_TOKENS),
            "results": results}


# ---------------------------------------------------------------------------
# 5) Saving and the model card
# ---------------------------------------------------------------------------


def save_model(model: LlamaForCausalLM, tokenizer: PreTrainedTokenizerFast, eos_id: int) -> None:
    """Write weights (fp32 safetensors), configs and tokenizer files into OUT_DIR."""
    model.generation_config = GenerationConfig(
        do_sample=False, eos_token_id=eos_id, pad_token_id=eos_id, max_new_tokens=32
    )
    model.save_pretrained(OUT_DIR, safe_serialization=True)
    tokenizer.save_pretrained(OUT_DIR)
    # transformers 5 records its new class name "TokenizersBackend"; the older alias
    # "PreTrainedTokenizerFast" names the same class and also loads in transformers 4.
    config_path = OUT_DIR / "tokenizer_config.json"
    tokenizer_config = json.loads(config_path.read_text(encoding="utf-8"))
    tokenizer_config["tokenizer_class"] = "PreTrainedTokenizerFast"
    write_json(config_path, tokenizer_config)


def count_params(model: torch.nn.Module) -> dict:
    """Total parameters (tied embedding counted once) and those outside the embedding."""
    total = sum(p.numel() for p in model.parameters())
    embedding = model.get_input_embeddings().weight.numel()
    return {"total": total, "embedding": embedding, "non_embedding": total - embedding}


def show_split(tokenizer, text: str) -> str:
    """Tokens of ``text`` joined with " / " for the model card, e.g. 法国 / 的 / 首都 / 是."""
    return " / ".join(tokenizer.convert_ids_to_tokens(tokenizer(text).input_ids))


def render_model_card(facts: dict) -> str:
    """Markdown model card built only from measured numbers in ``facts``."""
    cfg, params, corpus, recipe = facts["config"], facts["params"], facts["corpus"], facts["recipe"]
    docs, train, tok, ev = facts["doc_recipe"], facts["training"], facts["tokenizer"], facts["eval"]
    lengths = ev["prompt_tokens"]
    failures = [r for r in ev["results"] if not r["correct"]]
    failure_lines = "\n".join(
        f"- `{r['prompt']}` {'stretched to ' + str(r['stretched_to']) + ' tokens' if r['stretched_to'] else 'as typed'}"
        f" -> `{r['output']!r}` (expected `{r['expected']}`)"
        for r in failures[:20]
    ) + (f"\n- ... and {len(failures) - 20} more in `eval.json`" if len(failures) > 20 else "")
    sample_lines = "\n".join(f"- `{p}` -> `{out!r}`" for p, out in ev["samples"].items())

    def cell(lang: str, n: int) -> str:
        a = ev["accuracy"][lang][str(n)]
        return f"{a['correct']}/{a['total']} right, {a['stops']} stop"

    eval_rows = "\n".join(
        f"| {'as typed' if n == 0 else f'stretched to {n}'} | {cell('zh', n)} | {cell('en', n)} |" for n in lengths
    )
    max_len = max(lengths)
    return f"""# Default teaching model: a tiny Llama that knows 71 capitals

A {params['total'] / 1e6:.2f}M-parameter `LlamaForCausalLM`, trained from scratch on CPU by
`train.py` in this folder, so the visualizer has a real transformers model to run Prefill and
Decode on without downloading anything. It answers `法国的首都是` with `巴黎。` and
`The capital of France is` with ` Paris.`, and then ends its answer (end of sequence, `</s>`),
as the lesson's table does. The answer holds when the app stretches the prompt with the
lesson's prose to any length up to **{max_len} tokens**, the longest prompt the app and the CLI
accept by default. It is a toy: it memorised a table of capitals and a few paragraphs about
inference; it is not a general language model.

## Architecture

| field | value |
|---|---|
| class / model_type | `LlamaForCausalLM` / `llama` |
| parameters | {params['total']:,} total ({params['embedding']:,} in the tied embedding, {params['non_embedding']:,} elsewhere) |
| layers | {cfg['num_hidden_layers']} |
| hidden size | {cfg['hidden_size']} |
| query heads / KV heads | {cfg['num_attention_heads']} / {cfg['num_key_value_heads']} (grouped-query attention, {cfg['num_attention_heads'] // cfg['num_key_value_heads']} query heads per KV head) |
| head_dim | {cfg['head_dim']} |
| MLP (SwiGLU) width | {cfg['intermediate_size']} |
| vocabulary | {cfg['vocab_size']} |
| positions | RoPE (theta {cfg['rope_parameters']['rope_theta']:g}), `max_position_embeddings` {cfg['max_position_embeddings']} (declared; trained up to {recipe['seq_len']}) |
| norm | RMSNorm, eps {cfg['rms_norm_eps']:g} |
| input/output embeddings | tied |
| weights | float32, `model.safetensors` ({facts['weights_bytes'] / 1e6:.1f} MB) |
| KV cache per token | {facts['kv_bytes_per_token']:,} bytes in float32 (2 x layers x KV heads x head_dim x 4) |

## Tokenizer

Byte-pair encoding over Unicode characters trained with the `tokenizers` library, Llama style:

- `byte_fallback`: a character that is not in the vocabulary becomes its UTF-8 bytes, tokens
  `<0x00>`..`<0xFF>` (ids 2..257), so any input (emoji, Arabic, control characters) encodes
  without `<unk>` and decodes back to the same text.
- Spaces become `▁` and start a new word (Metaspace, nothing prepended at the start of a text).
- Before BPE, punctuation, digits and the Chinese function words 的 / 是 / 位于 are split off,
  so merges stay inside names and words instead of learning pieces like `的首都是`.
- It learns from every unique sentence below, {docs['tokenizer_rounds']} times each.
- No BOS token is added to a prompt. EOS is `</s>` (id {tok['eos_id']}); padding reuses EOS.

| text | tokens |
|---|---|
| `法国的首都是` | {tok['split_zh']} |
| `The capital of France is` | {tok['split_en']} |

## Data

Every training document is some prose, then **one** fact sentence, then EOS
(`corpus_sample.txt` holds the first {docs['sample_docs']} documents, one per line; the whole corpus is
{corpus['chars']:,} characters of mostly repeated prose, so it is rebuilt by `train.py`, not shipped: its
SHA-256 is `{corpus['sha256']}`):

- the fact comes from `../data/capitals.csv` (71 countries): `X的首都是Y。` `Y是X的首都。`
  `X位于<洲>。` in Chinese, `The capital of X is Y.` `Y is the capital of X.` `X is in <continent>.`
  in English; the first form (the eval question) {docs['eval_template_share']:.0%} of the time, countries in turn;
- the prose before it is none at all (the question alone: {corpus['bare_questions']:,} of {corpus['documents']:,}
  documents), or a random length up to {docs['max_prompt_tokens']} tokens minus the fact: half the time the
  app's own filler (`engine/contract/prompts.py`, the lesson's sentences in order, as `extend_prompt` builds it,
  with up to {docs['max_pad_marks']} pad marks), else the same prose pool shuffled. The pool is the
  sentences of `../data/lesson_prefill_decode_zh.txt` ({corpus['prose_sentences']['zh']}) and
  `../data/prefill_decode_en.txt` ({corpus['prose_sentences']['en']}) that name no country and no capital,
  so a context never holds a second, distracting answer.

Because a fact is always followed by EOS, the model learns to stop after its answer.
Documents are packed whole, first fit, into windows that start at position 0 (after an EOS the
next document follows, which is what "ignore end of sequence" shows), never two documents about
one country in a window (the answer must be remembered, not copied from earlier in the window):
{corpus['short_windows']:,} short windows of at most {recipe['short_len']} tokens (bare questions and the shortest
contexts) and {corpus['long_windows']:,} long windows of at most {recipe['seq_len']} tokens (every longer context,
its gaps filled with {docs['long_fill_share']:.0%} of the bare questions). Totals: {corpus['tokens']:,} tokens (EOS included),
{corpus['chars']:,} characters.

## Training recipe

| field | value |
|---|---|
| objective | next-token cross-entropy on every token of every window (prose, fact and EOS) |
| steps | {recipe['num_steps']:,} |
| batch | {recipe['tokens_per_batch']:,} tokens: {recipe['tokens_per_batch'] // recipe['short_len']} short windows or {recipe['tokens_per_batch'] // recipe['seq_len']} long ones (right-padded, padding ignored by the loss) |
| length curriculum | the first {recipe['short_only_steps']} steps short windows only, then {recipe['long_share']:.0%} of batches long ({corpus['long_batches']} long batches in all): a first try that trained on long windows from the start got only 0-11 % of the capitals right after 620 steps |
| tokens seen | {train['tokens_seen']:,} |
| optimizer | AdamW, betas (0.9, 0.95), weight decay {recipe['weight_decay']} on matrices, grad clip {recipe['grad_clip']} |
| learning rate | {recipe['peak_lr']:g} peak, {recipe['warmup_steps']} warmup steps, cosine decay to {recipe['peak_lr'] * recipe['min_lr_ratio']:g} |
| seed | {facts['seed']} (corpus, tokenizer and init) |
| loss | {train['first_loss']} at step 0, {train['final_loss_avg_last_50']} averaged over the last 50 steps |
| training wall time | {train['wall_time_s']:.0f} s ({train['wall_time_s'] / 60:.1f} min); whole script {facts['total_wall_time_s']:.0f} s; 1-minute load average {train['load_average_1min_at_end']} at the end of training (above {recipe['num_threads']} means other jobs shared the cores) |
| machine | CPU only, torch with {recipe['num_threads']} threads ({facts['machine']}) |

## Evaluation

Greedy decoding (`do_sample=False`, no BOS, at most {ev['max_new_tokens']} new tokens, stopping at EOS)
of every country's question, reading the saved files back with `AutoTokenizer` /
`AutoModelForCausalLM`: as typed, and stretched by the app's own `extend_prompt` to each length.
"right": the answer starts with the capital and the full stop. "stop": the whole output is
exactly the answer and then `</s>`. Every answer is in `eval.json` ({ev['wall_time_s']:.0f} s to run).

| prompt | Chinese `X的首都是` -> `Y。` | English `The capital of X is` -> ` Y.` |
|---|---|---|
{eval_rows}

{"Wrong answers:" + chr(10) + chr(10) + failure_lines if failures else "No wrong answers."}

Greedy continuations (up to 32 tokens, or EOS):

{sample_lines}

## Limits

- It memorised 71 capitals and a few hundred sentences. Other questions, other
  phrasings and other languages get fluent-looking but wrong or meaningless text.
- It never saw a window longer than {recipe['seq_len']} tokens. Longer prompts still run (RoPE has no
  position table to run out of), but nothing is promised past {max_len} prompt tokens.
- Prose it never saw (your own long text before a question) is not the filler it was trained
  on; answers after such text are less reliable than after the app's filler.
- Its facts (capitals, continents) are only as good as `capitals.csv`.
- After `</s>` (with "ignore end of sequence") it starts a new document: lesson sentences,
  then another capital fact.
- The character `▁` (U+2581) in an input decodes back as a space, as with Llama's tokenizer;
  all other text decodes back to exactly what was encoded.
- Rebuilding on another machine may give slightly different weights (floating point), but the
  same corpus and tokenizer.

## Rebuild

```
python assets/default_model/train.py          # everything (about ten minutes on 2 cores)
python assets/default_model/train.py --card   # only this card, from train_facts.json and eval.json
```

Needs torch, transformers and tokenizers only; no network.
"""


def write_json(path: Path, data: dict) -> None:
    """Write UTF-8 JSON with sorted keys, readable in a diff."""
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def load_saved():
    """Load the shipped files back, exactly as the app will: (model, tokenizer)."""
    tokenizer = AutoTokenizer.from_pretrained(OUT_DIR)
    model = AutoModelForCausalLM.from_pretrained(OUT_DIR, dtype=torch.float32)
    return model.eval(), tokenizer


def showcase(model, tokenizer, num_new_tokens: int = 32) -> dict:
    """Greedy continuations of a few prompts, up to EOS or ``num_new_tokens``."""
    prompts = ["法国的首都是", "The capital of France is", "Prefill", "东京是"]
    return {p: greedy_continuation(model, tokenizer, p, num_new_tokens) for p in prompts}


def machine_summary() -> str:
    """One line describing the machine the numbers were measured on."""
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPU cores visible, torch {torch.__version__}"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--card"]:  # rewrite the card from the stored measurements, no training
        facts = json.loads((OUT_DIR / "train_facts.json").read_text(encoding="utf-8"))
        facts["eval"] = json.loads((OUT_DIR / "eval.json").read_text(encoding="utf-8"))
        (OUT_DIR / "README.md").write_text(render_model_card(facts), encoding="utf-8")
        return
    start = time.perf_counter()
    doc_recipe, shape, recipe = DocRecipe(), ModelShape(), TrainRecipe()
    torch.set_num_threads(recipe.num_threads)  # the budget is 2 CPU cores
    torch.manual_seed(SEED)  # fixes the weight init
    hf_logging.disable_progress_bar()  # keep the log to one line per stage

    # 1) sentences, and the tokenizer trained on them
    capitals = load_capitals()
    pools = prose_pools(capitals)
    raw_tokenizer = train_tokenizer(tokenizer_text(capitals, pools, doc_recipe), recipe.vocab_size)
    eos_id = raw_tokenizer.token_to_id(EOS)

    # 2) documents, written out exactly as trained on (one per line), packed into windows
    docs = build_documents(capitals, pools, SentenceSizer(raw_tokenizer), doc_recipe)
    # The whole corpus is megabytes of repeated prose: ship a sample and its fingerprint
    # (a rebuild makes the same corpus, so the hash checks that it did).
    texts = [d.text for d in docs]
    (OUT_DIR / "corpus_sample.txt").write_text("\n".join(texts[: doc_recipe.sample_docs]) + "\n", encoding="utf-8")
    short, long = make_windows(raw_tokenizer, docs, doc_recipe, recipe, eos_id)
    schedule = training_schedule(short, long, recipe)
    corpus = {"documents": len(docs), "bare_questions": sum(d.bare for d in docs),
              "short_windows": len(short), "long_windows": len(long),
              "long_batches": sum(len(b[0]) > recipe.short_len for b in schedule),
              "sha256": hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest(),
              "tokens": sum(map(len, short)) + sum(map(len, long)), "chars": sum(map(len, texts)),
              "prose_sentences": {lang: len(pool) for lang, pool in pools.items()}}
    print(f"corpus: {corpus}", flush=True)

    # 3) model, trained from random init
    model = LlamaForCausalLM(make_config(shape, raw_tokenizer.get_vocab_size(), eos_id))
    params = count_params(model)
    print(f"model: {params['total']:,} parameters", flush=True)
    training = train_model(model, schedule, recipe, pad_id=eos_id)

    # 4) save, then evaluate the files as shipped (not the in-memory objects)
    save_model(model, wrap_for_transformers(raw_tokenizer, shape.max_position_embeddings), eos_id)
    model, tokenizer = load_saved()
    eval_start = time.perf_counter()
    evaluation = evaluate(model, tokenizer, capitals)
    evaluation["samples"] = showcase(model, tokenizer)
    evaluation["wall_time_s"] = round(time.perf_counter() - eval_start, 1)
    write_json(OUT_DIR / "eval.json", evaluation)
    print(f"accuracy: {json.dumps(evaluation['accuracy'])}", flush=True)

    # 5) model card, from the numbers measured above (kept, so --card can redraw it)
    facts = {
        "seed": SEED,
        "config": model.config.to_dict(),
        "params": params,
        "corpus": corpus,
        "doc_recipe": asdict(doc_recipe),
        "recipe": asdict(recipe),
        "training": training,
        "tokenizer": {
            "eos_id": eos_id,
            "split_zh": show_split(tokenizer, "法国的首都是"),
            "split_en": show_split(tokenizer, "The capital of France is"),
        },
        "weights_bytes": (OUT_DIR / "model.safetensors").stat().st_size,
        "kv_bytes_per_token": 2 * shape.num_hidden_layers * shape.num_key_value_heads * shape.head_dim * 4,
        "machine": machine_summary(),
        "total_wall_time_s": round(time.perf_counter() - start, 1),
    }
    write_json(OUT_DIR / "train_facts.json", facts)
    facts["eval"] = evaluation
    (OUT_DIR / "README.md").write_text(render_model_card(facts), encoding="utf-8")
    print(f"done in {facts['total_wall_time_s']:.0f} s; files in {OUT_DIR}", flush=True)


if __name__ == "__main__":
    main()
