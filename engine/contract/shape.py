"""The one reader of a model config's shape: layers, heads, head size, K/V heads, sliding window.

Model loading (engine.runtime.model.describe) and the cost model (engine.contract.cost.ModelShape) both read
these numbers, from a transformers config object or from a dict as in config.json. Each
number comes from a field that exists; a config that lacks one is refused with a
ModelLoadError naming the model and the fields tried, instead of guessing a shape.

    fields = ConfigReader.of(config, "Qwen2.5-0.5B")
    num_heads = fields.required("num_attention_heads", "n_head", "num_heads")
    fields.num_kv_heads(num_heads), fields.head_dim(hidden, num_heads)

`declared_params(config_dict, name)` checks the shape a config.json declares against engine.contract.limits
(layers, widths, heads, vocabulary, context, experts) and estimates its weights, before a loader
allocates anything from it: a config declaring a million layers is refused in microseconds.

Pure Python: no torch, no transformers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.contract import limits
from engine.contract.errors import ModelLoadError

# The fields config families use for K/V heads per layer, in the order they are tried.
KV_HEAD_FIELDS = ("num_key_value_heads", "num_kv_heads", "n_head_kv")
READ_FAILURE = "could not read the shape of"  # how a refusal starts; loading a model says "could not load"


def text_config(config):
    """Multimodal configs keep the language model's numbers in a sub-config."""
    if isinstance(config, Mapping):
        return config.get("text_config") or config
    get = getattr(config, "get_text_config", None)
    return get() if callable(get) else config


def shape_error(model_name: str, reason: str, failure: str = READ_FAILURE) -> ModelLoadError:
    """A config whose KV-cache shape cannot be read: say which model and why."""
    return ModelLoadError("model_load_failed", f"{failure} {model_name}: {reason}", path=model_name, reason=reason)


@dataclass(frozen=True)
class ConfigReader:
    """A config's text part, read field by field; a refusal names `model_name` and starts with `failure`."""

    cfg: Any
    model_name: str
    failure: str = READ_FAILURE

    @classmethod
    def of(cls, config, model_name: str, failure: str = READ_FAILURE) -> ConfigReader:
        return cls(text_config(config), model_name, failure)

    def error(self, reason: str) -> ModelLoadError:
        return shape_error(self.model_name, reason, self.failure)

    def first(self, *names: str):
        """The value of the first of `names` the config sets (not None), else None."""
        for name in names:
            value = self.cfg.get(name) if isinstance(self.cfg, Mapping) else getattr(self.cfg, name, None)
            if value is not None:
                return value
        return None

    def required(self, *names: str):
        """As `first`, but a config that sets none of `names` is refused."""
        value = self.first(*names)
        if value is None:
            raise self.error(f"the config has none of {', '.join(names)}")
        return value

    def num_kv_heads(self, num_heads: int) -> int:
        """K/V heads per layer, from the field this config family uses.

        Falcon-7B and GPT-BigCode say `multi_query` (one K/V head shared by every
        query head); Falcon's own `num_kv_heads` then still holds the query count,
        so multi_query is read first. A config with no K/V field at all is plain
        multi-head attention (GPT-2): one K/V head per query head.
        """
        if self.first("multi_query") and not self.first("new_decoder_architecture"):
            return 1
        num_kv_heads = self.first(*KV_HEAD_FIELDS)
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if not isinstance(num_kv_heads, int) or num_kv_heads < 1 or num_heads % num_kv_heads:
            raise self.error(f"{num_kv_heads!r} K/V heads cannot serve {num_heads} query heads "
                             f"(read from {', '.join(KV_HEAD_FIELDS)})")
        return num_kv_heads

    def head_dim(self, hidden: int, num_heads: int) -> int:
        """The config's explicit head_dim (Qwen3, Gemma: not hidden / heads); else hidden / heads,
        which must divide evenly to be a head size."""
        head_dim = self.first("head_dim")
        if head_dim is not None:
            return head_dim
        if hidden % num_heads:
            raise self.error(f"no head_dim, and hidden size {hidden} does not split into {num_heads} heads")
        return hidden // num_heads

    def sliding_layers(self, num_layers: int) -> tuple[int | None, int]:
        """(window, number of layers using it), decided per layer as transformers' DynamicCache does:
        `layer_types` when the config lists them, else every layer when `sliding_window` is set."""
        window = self.first("sliding_window") or self.first("attention_chunk_size")
        if not window:
            return None, 0
        layer_types = self.first("layer_types")
        count = num_layers if layer_types is None else \
            sum(kind in ("sliding_attention", "chunked_attention") for kind in layer_types)
        return (int(window), count) if count else (None, 0)


# (the fields a config family may use, the most it may declare, the least): each checked before loading
DECLARED_LIMITS = (
    (("num_hidden_layers", "n_layer", "num_layers"), limits.MAX_LAYERS, 1),
    (("hidden_size", "n_embd", "d_model"), limits.MAX_HIDDEN_SIZE, 1),
    (("num_attention_heads", "n_head", "num_heads"), limits.MAX_HEADS, 1),
    (KV_HEAD_FIELDS, limits.MAX_HEADS, 1),
    (("head_dim",), limits.MAX_HIDDEN_SIZE, 1),
    (("intermediate_size", "ffn_hidden_size", "ffn_dim", "n_inner"), limits.MAX_INTERMEDIATE_SIZE, 1),
    (("vocab_size",), limits.MAX_VOCAB_SIZE, 1),
    (("max_position_embeddings", "n_positions", "n_ctx", "seq_length"), limits.MAX_POSITIONS, 1),
    (("num_local_experts", "num_experts", "n_routed_experts"), limits.MAX_EXPERTS, 0),
)


def declared_params(config: Mapping, model_name: str) -> int:
    """An upper estimate of the weights a config.json (as a dict) declares, after every number its shape
    reads is checked against engine.contract.limits (LimitError naming the field). Per layer: the attention's
    four matrices and three MLP matrices per expert; the embedding and an untied LM head."""
    fields = ConfigReader.of(config, model_name)
    for names, limit, low in DECLARED_LIMITS:
        for name in names:
            value = fields.first(name)
            if value is not None:
                limits.check_count(name, value, limit, low=low)
    layers = fields.required("num_hidden_layers", "n_layer", "num_layers")
    hidden = fields.required("hidden_size", "n_embd", "d_model")
    heads = fields.required("num_attention_heads", "n_head", "num_heads")
    kv_heads, head_dim = fields.num_kv_heads(heads), fields.head_dim(hidden, heads)
    mlp = fields.first("intermediate_size", "ffn_hidden_size", "ffn_dim", "n_inner") or 4 * hidden
    experts = max(1, fields.first("num_local_experts", "num_experts", "n_routed_experts") or 1)
    attention = hidden * head_dim * (2 * heads + 2 * kv_heads)
    return layers * (attention + 3 * hidden * mlp * experts) + 2 * fields.required("vocab_size") * hidden
