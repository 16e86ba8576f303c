"""Build the project's default teaching model from scratch, on CPU, in a few minutes.

Run from anywhere:

    python assets/default_model/train.py

Contract:
- Inputs (read relative to this file, never the CWD): ``../data/capitals.csv``,
  ``../data/lesson_prefill_decode_zh.txt`` and ``../data/prefill_decode_en.txt``.
- Outputs (written next to this file): ``corpus.txt``, ``tokenizer.json``,
  ``tokenizer_config.json``, ``config.json``, ``generation_config.json``,
  ``model.safetensors``, ``eval.json`` and ``README.md`` (the model card).
- Deterministic: one seed fixes the corpus, the tokenizer and the weight init, so a rerun
  on the same machine gives the same files (float results may differ across machines).
- Nothing is downloaded; only torch, transformers and tokenizers are used.

``main`` runs five numbered stages: 1) build the corpus, 2) train the tokenizer,
3) train the model, 4) save it and evaluate the saved files, 5) write the model card.
"""

from __future__ import annotations

import csv
import json
import math
import os
import platform
import random
import re
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
DATA_DIR = OUT_DIR.parent / "data"
CAPITALS_CSV = DATA_DIR / "capitals.csv"
LESSON_ZH = DATA_DIR / "lesson_prefill_decode_zh.txt"
EXPLAIN_EN = DATA_DIR / "prefill_decode_en.txt"

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
class CorpusRecipe:
    """How the fact and lesson sentences are repeated and grouped into paragraphs."""

    num_rounds: int = 24  # every sentence appears once per round, in a new shuffled paragraph
    # Paragraph length budget in characters (80-125 tokens in either language), drawn
    # per paragraph from [min_fill * max_chars, max_chars]. EOS comes only at a paragraph
    # end, so it is only likely far from the start: after a short prompt and its answer
    # the model keeps writing sentences, and the app gets many Decode steps to show.
    min_fill: float = 0.75
    max_chars_zh: int = 240  # the longest paragraphs come out at ~125 tokens, under seq_len
    max_chars_en: int = 560


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
    """Tokenizer size and the optimisation schedule (sized for ~5 min on 2 idle CPU cores)."""

    vocab_size: int = 3000  # upper bound; BPE stops early if it runs out of repeated pairs
    seq_len: int = 128  # longest training sample (one paragraph + EOS)
    batch_size: int = 12  # paragraphs of ~100 tokens: ~1,200 tokens per step
    num_steps: int = 1000
    warmup_steps: int = 60
    peak_lr: float = 3e-3
    min_lr_ratio: float = 0.05  # cosine decays to peak_lr * min_lr_ratio
    weight_decay: float = 0.05
    grad_clip: float = 1.0
    log_every: int = 50
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
# 1) Corpus
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


def make_paragraphs(
    sentences: list[str], joiner: str, max_chars: int, recipe: CorpusRecipe, rng: random.Random
) -> list[str]:
    """Shuffle ``sentences`` and fill paragraphs with them, each up to a random length budget.

    Each sentence is used exactly once. A paragraph is closed when the next sentence would
    push it past its budget (at most ``max_chars``; a single longer sentence would still
    form a paragraph of its own).
    """

    def new_budget() -> int:
        return rng.randint(int(recipe.min_fill * max_chars), max_chars)

    order = sentences[:]
    rng.shuffle(order)
    paragraphs, current, budget = [], [], new_budget()
    for sentence in order:
        if current and len(joiner.join(current + [sentence])) > budget:
            paragraphs.append(joiner.join(current))
            current, budget = [], new_budget()
        current.append(sentence)
    if current:
        paragraphs.append(joiner.join(current))
    return paragraphs


def build_corpus(capitals: list[Capital], recipe: CorpusRecipe, seed: int = SEED) -> tuple[list[str], dict]:
    """Return (paragraphs, stats). Paragraphs are single-language; facts dominate.

    Chinese paragraphs join sentences with no space, English ones with one space, so the
    text looks like ordinary prose in each language.
    """
    rng = random.Random(seed)
    facts_zh = [s for c in capitals for s in fact_sentences_zh(c)]
    facts_en = [s for c in capitals for s in fact_sentences_en(c)]
    general_zh, general_en = lesson_sentences_zh(), explain_sentences_en()
    paragraphs = []
    for _ in range(recipe.num_rounds):
        paragraphs += make_paragraphs(facts_zh + general_zh, "", recipe.max_chars_zh, recipe, rng)
        paragraphs += make_paragraphs(facts_en + general_en, " ", recipe.max_chars_en, recipe, rng)
    rng.shuffle(paragraphs)
    stats = {
        "unique_sentences": {
            "fact_zh": len(facts_zh),
            "fact_en": len(facts_en),
            "lesson_zh": len(general_zh),
            "explain_en": len(general_en),
        },
        "rounds": recipe.num_rounds,
        "paragraphs": len(paragraphs),
        "chars": sum(len(p) for p in paragraphs),
    }
    return paragraphs, stats


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


def encode_paragraphs(tokenizer: Tokenizer, paragraphs: list[str], seq_len: int, eos_id: int) -> list[list[int]]:
    """Token ids of each paragraph followed by EOS; every sample must fit in ``seq_len``."""
    samples = [enc.ids + [eos_id] for enc in tokenizer.encode_batch(paragraphs)]
    longest = max(len(s) for s in samples)
    if longest > seq_len:
        raise ValueError(f"a paragraph has {longest} tokens > seq_len {seq_len}; lower max_chars_*")
    return samples


def batch_order(lengths: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """One epoch of batches (lists of sample indices), grouped by similar length.

    Samples are shuffled, then sorted by length inside windows of 16 batches, so each
    batch needs little padding while the batch order stays random.
    """
    order = list(range(len(lengths)))
    rng.shuffle(order)
    window = batch_size * 16
    batches = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window], key=lengths.__getitem__)
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


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


def train_model(
    model: LlamaForCausalLM, samples: list[list[int]], recipe: TrainRecipe, pad_id: int, seed: int = SEED
) -> dict:
    """Train in place for ``recipe.num_steps`` steps; return a log with losses and wall time."""
    rng = random.Random(seed + 1)
    lengths = [len(s) for s in samples]
    optimizer = make_optimizer(model, recipe)
    batches: list[list[int]] = []
    losses, num_tokens = [], 0
    model.train()
    start = time.perf_counter()
    for step in range(recipe.num_steps):
        if not batches:  # start a new epoch
            batches = batch_order(lengths, recipe.batch_size, rng)
        input_ids, labels = collate([samples[i] for i in batches.pop()], pad_id)
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
            print(f"step {step:5d}  loss {loss.item():.4f}  lr {learning_rate(step, recipe):.2e}  {elapsed:6.1f}s", flush=True)
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


@torch.no_grad()
def greedy_continuation(model, tokenizer, prompt: str, max_new_tokens: int) -> str:
    """Decoded text that greedy decoding appends to ``prompt`` (the prompt gets no BOS)."""
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


def evaluate(model, tokenizer, capitals: list[Capital], max_new_tokens: int = 12) -> dict:
    """Greedy-decode every eval case; return per-language accuracy and every answer."""
    results = []
    for case in eval_cases(capitals):
        output = greedy_continuation(model, tokenizer, case["prompt"], max_new_tokens)
        results.append({**case, "output": output, "correct": is_correct(output, case["expected"])})
    accuracy = {}
    for lang in ("zh", "en"):
        rows = [r for r in results if r["lang"] == lang]
        correct = sum(r["correct"] for r in rows)
        accuracy[lang] = {"correct": correct, "total": len(rows), "accuracy": round(correct / len(rows), 4)}
    return {"accuracy": accuracy, "max_new_tokens": max_new_tokens, "results": results}


@torch.no_grad()
def long_prompt_check(model, num_tokens: int = 2000) -> dict:
    """Run one forward pass over a prompt far longer than any training sample.

    The answer is nonsense (the model never saw positions past the training length), but
    the pass must run and give finite logits: RoPE has no position table to run out of.
    """
    input_ids = torch.randint(2, model.config.vocab_size, (1, num_tokens), generator=torch.Generator().manual_seed(SEED))
    logits = model(input_ids=input_ids).logits
    return {"prompt_tokens": num_tokens, "logits_finite": bool(torch.isfinite(logits).all())}


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
    train, acc, tok = facts["training"], facts["eval"]["accuracy"], facts["tokenizer"]
    failures = [r for r in facts["eval"]["results"] if not r["correct"]]
    failure_lines = "\n".join(f"- `{r['prompt']}` -> `{r['output']!r}` (expected `{r['expected']}`)" for r in failures)
    sample_lines = "\n".join(f"- `{p}` -> `{out!r}`" for p, out in facts["samples"].items())
    return f"""# Default teaching model: a tiny Llama that knows 71 capitals

A {params['total'] / 1e6:.2f}M-parameter `LlamaForCausalLM`, trained from scratch on CPU by
`train.py` in this folder, so the visualizer has a real transformers model to run Prefill and
Decode on without downloading anything. It answers `法国的首都是` with `巴黎。` and
`The capital of France is` with ` Paris.`, then keeps writing short sentences like the ones it
was trained on. It is a toy: it memorised a table of capitals and a few paragraphs about
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
| positions | RoPE (theta {cfg['rope_parameters']['rope_theta']:g}), `max_position_embeddings` {cfg['max_position_embeddings']} |
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
- No BOS token is added to a prompt. EOS is `</s>` (id {tok['eos_id']}); padding reuses EOS.

| text | tokens |
|---|---|
| `法国的首都是` | {tok['split_zh']} |
| `The capital of France is` | {tok['split_en']} |

## Data

`corpus.txt` holds the exact training text, one paragraph per line (each paragraph is one
training sample, followed by EOS). It is built from:

- `../data/capitals.csv`: {corpus['unique_sentences']['fact_zh'] // 3} countries, each as 3 Chinese
  sentences (`X的首都是Y。` `Y是X的首都。` `X位于<洲>。`) and 3 English ones
  (`The capital of X is Y.` `Y is the capital of X.` `X is in <continent>.`).
- `../data/lesson_prefill_decode_zh.txt`: {corpus['unique_sentences']['lesson_zh']} prose sentences of the Chinese lesson on Prefill and Decode.
- `../data/prefill_decode_en.txt`: {corpus['unique_sentences']['explain_en']} English sentences explaining the same ideas.

Each of {corpus['rounds']} rounds shuffles every sentence once and fills single-language paragraphs
with them, each up to a random budget of {facts['corpus_recipe']['min_fill']:.0%}-100% of {facts['corpus_recipe']['max_chars_zh']} characters
(Chinese) or {facts['corpus_recipe']['max_chars_en']} characters (English). EOS only ends a paragraph, so after
an answer the model goes on with more sentences instead of stopping. Totals: {corpus['paragraphs']:,} paragraphs,
{corpus['chars']:,} characters, {corpus['tokens']:,} tokens (EOS included). Capital facts make up
{corpus['fact_token_share']:.0%} of the tokens.

## Training recipe

| field | value |
|---|---|
| objective | next-token cross-entropy on every paragraph token and its EOS |
| steps | {recipe['num_steps']:,} |
| batch | {recipe['batch_size']} paragraphs (right-padded, padding ignored by the loss), at most {recipe['seq_len']} tokens each |
| tokens seen | {train['tokens_seen']:,} ({train['tokens_seen'] / corpus['tokens']:.1f} passes over the corpus) |
| optimizer | AdamW, betas (0.9, 0.95), weight decay {recipe['weight_decay']} on matrices, grad clip {recipe['grad_clip']} |
| learning rate | {recipe['peak_lr']:g} peak, {recipe['warmup_steps']} warmup steps, cosine decay to {recipe['peak_lr'] * recipe['min_lr_ratio']:g} |
| seed | {facts['seed']} (corpus, tokenizer and init) |
| loss | {train['first_loss']} at step 0, {train['final_loss_avg_last_50']} averaged over the last 50 steps |
| training wall time | {train['wall_time_s']:.0f} s ({train['wall_time_s'] / 60:.1f} min); whole script {facts['total_wall_time_s']:.0f} s; 1-minute load average {train['load_average_1min_at_end']} at the end of training (above {recipe['num_threads']} means other jobs shared the cores) |
| machine | CPU only, torch with {recipe['num_threads']} threads ({facts['machine']}) |

## Evaluation

Greedy decoding (`do_sample=False`, no BOS) from each question, reading the saved files back
with `AutoTokenizer` / `AutoModelForCausalLM`. An answer counts if it starts with the capital
followed by the full stop. Every answer is in `eval.json`.

| language | prompt | correct |
|---|---|---|
| Chinese | `{{country_zh}}的首都是` -> `{{capital_zh}}。` | {acc['zh']['correct']}/{acc['zh']['total']} ({acc['zh']['accuracy']:.1%}) |
| English | `The capital of {{country_en}} is` -> ` {{capital_en}}.` | {acc['en']['correct']}/{acc['en']['total']} ({acc['en']['accuracy']:.1%}) |

{"Wrong answers:" + chr(10) + chr(10) + failure_lines if failures else "No wrong answers."}

Greedy continuations of {facts['sample_new_tokens']} tokens:

{sample_lines}

## Limits

- It memorised {corpus['unique_sentences']['fact_zh'] // 3} capitals and a few hundred sentences. Other questions, other
  phrasings and other languages get fluent-looking but wrong or meaningless text.
- It never saw a sample longer than {recipe['seq_len']} tokens. Longer prompts still run (a
  {facts['long_prompt']['prompt_tokens']}-token prompt gives finite logits) but the output is nonsense.
- Its facts (capitals, continents) are only as good as `capitals.csv`.
- Greedy decoding can loop, most often in English (the same fact sentence again and again);
  the Chinese continuations vary more. Sampling breaks such loops.
- The character `▁` (U+2581) in an input decodes back as a space, as with Llama's tokenizer;
  all other text decodes back to exactly what was encoded.
- Rebuilding on another machine may give slightly different weights (floating point), but the
  same corpus and tokenizer.

## Rebuild

```
python assets/default_model/train.py
```

Needs torch, transformers and tokenizers only; no network.
"""


def write_json(path: Path, data: dict) -> None:
    """Write UTF-8 JSON with sorted keys, readable in a diff."""
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def fact_token_share(tokenizer: Tokenizer, capitals: list[Capital]) -> float:
    """Fraction of corpus tokens that belong to capital facts (EOS not counted).

    Every round of the corpus uses each sentence once, so the share per unique sentence
    is the share in the whole corpus.
    """
    def num_tokens(sentences: list[str]) -> int:
        return sum(len(enc.ids) for enc in tokenizer.encode_batch(sentences))

    facts = [s for c in capitals for s in fact_sentences_zh(c) + fact_sentences_en(c)]
    general = lesson_sentences_zh() + explain_sentences_en()
    return num_tokens(facts) / (num_tokens(facts) + num_tokens(general))


def load_saved():
    """Load the shipped files back, exactly as the app will: (model, tokenizer)."""
    tokenizer = AutoTokenizer.from_pretrained(OUT_DIR)
    model = AutoModelForCausalLM.from_pretrained(OUT_DIR, dtype=torch.float32)
    return model.eval(), tokenizer


def showcase(model, tokenizer, num_new_tokens: int = 32) -> dict:
    """Longer greedy continuations, to show that the model keeps writing after the answer."""
    prompts = ["法国的首都是", "The capital of France is", "Prefill", "东京是"]
    return {p: greedy_continuation(model, tokenizer, p, num_new_tokens) for p in prompts}


def machine_summary() -> str:
    """One line describing the machine the numbers were measured on."""
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPU cores visible, torch {torch.__version__}"


def main() -> None:
    start = time.perf_counter()
    corpus_recipe, shape, recipe = CorpusRecipe(), ModelShape(), TrainRecipe()
    torch.set_num_threads(recipe.num_threads)  # the budget is 2 CPU cores
    torch.manual_seed(SEED)  # fixes the weight init
    hf_logging.disable_progress_bar()  # keep the log to one line per stage

    # 1) corpus: shuffled single-language paragraphs, written out exactly as trained on
    capitals = load_capitals()
    paragraphs, corpus_stats = build_corpus(capitals, corpus_recipe)
    (OUT_DIR / "corpus.txt").write_text("\n".join(paragraphs) + "\n", encoding="utf-8")

    # 2) tokenizer, trained on that corpus
    raw_tokenizer = train_tokenizer(paragraphs, recipe.vocab_size)
    eos_id = raw_tokenizer.token_to_id(EOS)
    samples = encode_paragraphs(raw_tokenizer, paragraphs, recipe.seq_len, eos_id)
    corpus_stats["tokens"] = sum(len(s) for s in samples)
    corpus_stats["fact_token_share"] = round(fact_token_share(raw_tokenizer, capitals), 4)
    print(f"corpus: {corpus_stats}", flush=True)

    # 3) model, trained from random init
    model = LlamaForCausalLM(make_config(shape, raw_tokenizer.get_vocab_size(), eos_id))
    params = count_params(model)
    print(f"model: {params['total']:,} parameters", flush=True)
    training = train_model(model, samples, recipe, pad_id=eos_id)

    # 4) save, then evaluate the files as shipped (not the in-memory objects)
    save_model(model, wrap_for_transformers(raw_tokenizer, shape.max_position_embeddings), eos_id)
    model, tokenizer = load_saved()
    evaluation = evaluate(model, tokenizer, capitals)
    evaluation["samples"] = showcase(model, tokenizer)
    evaluation["long_prompt"] = long_prompt_check(model)
    write_json(OUT_DIR / "eval.json", evaluation)
    print(f"accuracy: {evaluation['accuracy']}", flush=True)

    # 5) model card, from the numbers measured above
    facts = {
        "seed": SEED,
        "config": model.config.to_dict(),
        "params": params,
        "corpus": corpus_stats,
        "corpus_recipe": asdict(corpus_recipe),
        "recipe": asdict(recipe),
        "training": training,
        "eval": evaluation,
        "samples": evaluation["samples"],
        "sample_new_tokens": 32,
        "long_prompt": evaluation["long_prompt"],
        "tokenizer": {
            "eos_id": eos_id,
            "split_zh": show_split(tokenizer, "法国的首都是"),
            "split_en": show_split(tokenizer, "The capital of France is"),
        },
        "weights_bytes": (OUT_DIR / "model.safetensors").stat().st_size,
        "kv_bytes_per_token": 2 * shape.num_hidden_layers * shape.num_key_value_heads * shape.head_dim * 4,
        "machine": machine_summary(),
        "total_wall_time_s": time.perf_counter() - start,
    }
    (OUT_DIR / "README.md").write_text(render_model_card(facts), encoding="utf-8")
    print(f"done in {facts['total_wall_time_s']:.0f} s; files in {OUT_DIR}", flush=True)


if __name__ == "__main__":
    main()
