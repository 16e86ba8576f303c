"""Synthetic traces for tests that must not need a model (renderers, app views).

The numbers are shaped like a real CPU run of the default model: Prefill costs
more than a Decode step, Decode steps are similar, KV bytes grow by a fixed
amount per position, except in a sliding-window layer, which holds at most its
window. Real traces come from `engine.generate` in engine tests.
"""

from __future__ import annotations

from dataclasses import replace

from engine.trace import ModelInfo, RequestTrace, Sampling, Step

TINY_MODEL = ModelInfo(
    model_id="synthetic",
    architecture="LlamaForCausalLM",
    num_layers=4,
    num_heads=8,
    num_kv_heads=2,
    head_dim=32,
    hidden_size=256,
    vocab_size=2048,
    max_positions=2048,
    num_params=3_000_000,
    dtype="float32",
    bytes_per_element=4,
    device="cpu",
)

# Mistral-style: every layer attends to (and caches) only the last 8 positions.
SLIDING_MODEL = replace(TINY_MODEL, model_id="synthetic-sliding", architecture="MistralForCausalLM",
                        sliding_window=8, num_sliding_layers=TINY_MODEL.num_layers)


def layer_kv_bytes(model: ModelInfo, positions: int) -> tuple[int, ...]:
    """Each layer's cache bytes after `positions` positions; the first num_sliding_layers
    layers hold at most sliding_window of them."""
    per_position = model.kv_bytes_per_token // model.num_layers
    return tuple(per_position * (min(positions, model.sliding_window) if layer < model.num_sliding_layers else positions)
                 for layer in range(model.num_layers))


def make_trace(
    prompt_pieces: tuple[str, ...] = ("法国", "的", "首都", "是"),
    output_pieces: tuple[str, ...] = ("巴黎", "。"),
    *,
    model: ModelInfo = TINY_MODEL,
    prompt: str | None = None,
    prefill_ms_per_position: float = 0.5,
    decode_ms: float = 2.0,
    tokenize_ms: float = 0.3,
    stop_reason: str | None = "length",
) -> RequestTrace:
    """A finished (or, with stop_reason=None, running) trace with made-up times."""
    prompt_ids = tuple(range(10, 10 + len(prompt_pieces)))
    output_ids = tuple(range(500, 500 + len(output_pieces)))
    steps, clock, context = [], tokenize_ms, 0
    for i, (out_id, out_piece) in enumerate(zip(output_ids, output_pieces)):
        if i == 0:
            phase, ids, pieces = "prefill", prompt_ids, prompt_pieces
            duration = 1.0 + prefill_ms_per_position * len(ids)
        else:
            phase, ids, pieces = "decode", (output_ids[i - 1],), (output_pieces[i - 1],)
            duration = decode_ms
        after = context + len(ids)
        steps.append(Step(
            index=i, phase=phase, request_id="r0", input_ids=ids, input_pieces=pieces,
            output_id=out_id, output_piece=out_piece, context_before=context, context_after=after,
            kv_bytes=sum(layer_kv_bytes(model, after)),
            kv_bytes_per_layer=layer_kv_bytes(model, after),
            start_ms=clock, end_ms=clock + duration,
        ))
        clock, context = clock + duration, after
    return RequestTrace(
        request_id="r0", model=model, prompt=prompt if prompt is not None else "".join(prompt_pieces),
        prompt_ids=prompt_ids, prompt_pieces=prompt_pieces, sampling=Sampling(),
        max_new_tokens=len(output_pieces), steps=tuple(steps), tokenize_ms=tokenize_ms,
        stop_reason=stop_reason, output_text="".join(output_pieces),
    )


def make_long_trace(prompt_len: int = 4096, output_len: int = 512) -> RequestTrace:
    """The scale case from the diagrams issue: thousands of positions."""
    prompt = tuple(f"t{i}" for i in range(prompt_len))
    output = tuple(f"o{i}" for i in range(output_len))
    return make_trace(prompt, output, prefill_ms_per_position=0.05)


def build_bos_tokenizer(folder, texts: tuple[str, ...] = (
    "The capital of France is Paris. The capital of Germany is Berlin.",
    "法国的首都是巴黎。德国的首都是柏林。",
)):
    """A Llama-style tokenizer that puts a BOS `<s>` in front of every prompt, as real Llama
    and Gemma tokenizers do (the template lives in its tokenizer.json, like theirs).

    At most 400 entries, so it fits the tiny random models' vocabulary. Saved to `folder`.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    tok.decoder = decoders.Sequence([
        decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0),
    ])
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=400, special_tokens=specials, show_progress=False))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                   pad_token="</s>", add_bos_token=True)
    fast.save_pretrained(folder)
    return fast
