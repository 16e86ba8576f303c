"""ONE batched forward pass over several requests, their K/V in paged blocks.

Every position the iteration computes, of every request in it, goes into one flat
row of tokens `[1, T]` with its own position id (nano-vllm's layout): a Decode
step adds one token, a Prefill (or a chunk of one) adds many. No padding.

Inside each attention layer (`_PassCache.update`, called by transformers with the
layer's new K and V after RoPE):
  1) write the new K/V into their slots of the layer's paged store;
  2) gather, for every request in the pass, the K/V of all its positions so far
     (cached ones and the new ones) into one key row `[1, kv_heads, S, head_dim]`;
  3) attention runs once per layer (the model's own SDPA/eager code) with a mask
     `[1, 1, T, S]` that lets each query see only its own request's keys at
     positions <= its own: causal inside a request, nothing across requests.
Logits are computed only where a request chooses its next token (the last
position of a Decode step, of a whole Prefill, or of a Prefill's final chunk).
Greedy only: the token is the argmax, as `engine.generation` picks at temperature 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..generation import _accepts, _cache_keyword
from .block_manager import BlockManager
from .sequence import Sequence


class PagedKVStore:
    """Per layer, K and V of every slot: `[num_blocks * block_size, kv_heads, head_dim]`
    (a view of `[num_blocks, block_size, kv_heads, head_dim]`)."""

    def __init__(self, num_layers: int, num_blocks: int, block_size: int, num_kv_heads: int, head_dim: int,
                 dtype: torch.dtype, device: torch.device) -> None:
        shape = (num_blocks * block_size, num_kv_heads, head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]

    @property
    def bytes_per_token(self) -> int:
        k = self.keys[0]
        return 2 * len(self.keys) * k.shape[1] * k.shape[2] * k.element_size()

    def read(self, slots: torch.Tensor) -> torch.Tensor:
        """K and V of `slots`, every layer: `[num_layers, 2, len(slots), kv_heads, head_dim]` (a copy)."""
        return torch.stack([torch.stack((k.index_select(0, slots), v.index_select(0, slots)))
                            for k, v in zip(self.keys, self.values)])

    def write(self, slots: torch.Tensor, kv: torch.Tensor) -> None:
        """Inverse of `read`: put `[num_layers, 2, len(slots), kv_heads, head_dim]` into `slots`."""
        for layer, (k, v) in enumerate(zip(self.keys, self.values)):
            k.index_copy_(0, slots, kv[layer, 0])
            v.index_copy_(0, slots, kv[layer, 1])


class _PassCache:
    """What transformers sees as the cache during one pass (it only calls `update`)."""

    is_compileable = False

    def __init__(self, store: PagedKVStore, write_slots: torch.Tensor, read_slots: torch.Tensor) -> None:
        self.store, self.write_slots, self.read_slots = store, write_slots, read_slots

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args, **kwargs):
        # key_states: (1, kv_heads, T, head_dim) -> slots (T, kv_heads, head_dim)
        k_store, v_store = self.store.keys[layer_idx], self.store.values[layer_idx]
        k_store.index_copy_(0, self.write_slots, key_states[0].transpose(0, 1).to(k_store.dtype))
        v_store.index_copy_(0, self.write_slots, value_states[0].transpose(0, 1).to(v_store.dtype))
        keys = k_store.index_select(0, self.read_slots).transpose(0, 1).unsqueeze(0)  # (1, kv_heads, S, head_dim)
        values = v_store.index_select(0, self.read_slots).transpose(0, 1).unsqueeze(0)
        return keys, values

    def get_seq_length(self, *args, **kwargs) -> int:
        return 0


@dataclass(frozen=True)
class Work:
    """One request's share of a pass: compute its next `num_new` positions."""

    seq: Sequence
    num_new: int

    @property
    def start(self) -> int:
        return self.seq.num_computed

    @property
    def end(self) -> int:
        return self.seq.num_computed + self.num_new

    @property
    def emits_token(self) -> bool:
        """The pass reaches the request's last token, so it chooses the next one."""
        return self.end == self.seq.num_tokens


class ModelRunner:
    def __init__(self, model, store: PagedKVStore, blocks: BlockManager) -> None:
        self.model, self.store, self.blocks = model, store, blocks
        self.device = next(model.parameters()).device
        self.dtype = store.keys[0].dtype
        self.cache_keyword = _cache_keyword(type(model))
        self.keeps_logits = _accepts(type(model), "logits_to_keep")
        # engine/attention.py logs which SDPA kernel each layer ran; read (and cleared) after every pass
        self.kernel_log = next((m._prefill_decode_kernels for m in model.modules()
                                if hasattr(m, "_prefill_decode_kernels")), None)
        self.last_kernel = ""

    @torch.inference_mode()
    def run(self, works: list[Work]) -> list[int | None]:
        """Compute every work's positions in one forward pass; the token each emitting work chose, else None.
        Blocks must already hold every position (the scheduler grows them)."""
        inputs = self._inputs(works)
        kwargs = {self.cache_keyword: inputs["cache"], "use_cache": True, "position_ids": inputs["position_ids"],
                  "attention_mask": inputs["mask"]}
        if self.keeps_logits:
            kwargs["logits_to_keep"] = inputs["emit_rows"]
            logits = self.model(input_ids=inputs["input_ids"], **kwargs).logits[0]  # (num emitting, vocab)
        else:
            logits = self.model(input_ids=inputs["input_ids"], **kwargs).logits[0, inputs["emit_rows"]]
        chosen = iter(logits.argmax(dim=-1).tolist())
        self.last_kernel = self.kernel_log.take() if self.kernel_log is not None else ""
        return [next(chosen) if w.emits_token else None for w in works]

    def _inputs(self, works: list[Work]) -> dict:
        ids, positions, write, read, q_seg, k_seg, k_pos, emit = [], [], [], [], [], [], [], []
        for i, w in enumerate(works):
            ids += w.seq.tokens[w.start:w.end]
            positions += range(w.start, w.end)
            write += self.blocks.slots(w.seq.request_id, w.start, w.end)
            read += self.blocks.slots(w.seq.request_id, 0, w.end)
            q_seg += [i] * w.num_new
            k_seg += [i] * w.end
            k_pos += range(w.end)
            if w.emits_token:
                emit.append(len(ids) - 1)
        dev = self.device
        q_pos_t, k_pos_t = torch.tensor(positions, device=dev), torch.tensor(k_pos, device=dev)
        same = torch.tensor(q_seg, device=dev)[:, None] == torch.tensor(k_seg, device=dev)[None, :]
        visible = same & (k_pos_t[None, :] <= q_pos_t[:, None])  # (T, S): own request, causal
        mask = torch.zeros(visible.shape, dtype=self.dtype, device=dev)
        mask.masked_fill_(~visible, torch.finfo(self.dtype).min)
        return {
            "input_ids": torch.tensor([ids], device=dev),  # (1, T)
            "position_ids": q_pos_t.unsqueeze(0),  # (1, T)
            "mask": mask[None, None],  # (1, 1, T, S)
            "cache": _PassCache(self.store, torch.tensor(write, device=dev), torch.tensor(read, device=dev)),
            "emit_rows": torch.tensor(emit, dtype=torch.long, device=dev),
        }


def new_store(lm, num_blocks: int, block_size: int) -> PagedKVStore:
    info = lm.info
    dtype = next(lm.model.parameters()).dtype
    return PagedKVStore(info.num_layers, num_blocks, block_size, info.num_kv_heads, info.head_dim, dtype, lm.device)
