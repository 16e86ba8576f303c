"""ONE batched forward pass over several requests, their K/V in paged blocks.

Every position the iteration computes, of every request in it, goes into one flat
row of tokens `[1, T]` with its own position id (nano-vllm's layout): a Decode
step adds one token, a Prefill (or a chunk of one) adds many. No padding in the
row: the weights (every linear layer, the MLP) see all T tokens in one matmul.

Attention is the only step that must keep requests apart. Per layer:
  1) `_PassCache.update` (transformers calls it with the layer's new K and V,
     after RoPE) writes them into their slots of the layer's paged store;
  2) `serving_attention` (registered with transformers' AttentionInterface and
     switched on for the pass only) reads each request's K/V back from its blocks:
     - the Decode steps as one padded batch `[num_decodes, heads, 1, head_dim]`
       against keys `[num_decodes, kv_heads, longest context, head_dim]`, a mask
       hiding each row's padding;
     - each Prefill (or chunk) on its own, causal over its own positions.
     So no query ever scans another request's keys.
The SDPA kernel is chosen as for a single request (engine/runtime/attention.py: flash,
efficient or math, never cuDNN's per-length plan). Logits are computed only where
a request chooses its next token (the last position of a Decode step, of a whole
Prefill, or of a Prefill's final chunk). Greedy only: the token is the argmax, as
`engine.runtime.generation` picks at temperature 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.runtime import hf
from engine.runtime.attention import chosen_kernel_attention
from engine.runtime.serving.block_manager import BlockManager
from engine.runtime.serving.sequence import Sequence


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
    """What transformers sees as the cache during one pass: `update` files the new K/V away."""

    is_compileable = False

    def __init__(self, store: PagedKVStore, write_slots: torch.Tensor) -> None:
        self.store, self.write_slots = store, write_slots

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args, **kwargs):
        # key_states: (1, kv_heads, T, head_dim) -> slots (T, kv_heads, head_dim)
        k_store, v_store = self.store.keys[layer_idx], self.store.values[layer_idx]
        k_store.index_copy_(0, self.write_slots, key_states[0].transpose(0, 1).to(k_store.dtype))
        v_store.index_copy_(0, self.write_slots, value_states[0].transpose(0, 1).to(v_store.dtype))
        return key_states, value_states  # serving_attention reads every position from the store

    def get_seq_length(self, *args, **kwargs) -> int:
        return 0


@dataclass(frozen=True)
class _Prefill:
    rows: slice  # its tokens in the flat row
    read_slots: torch.Tensor  # (L,) slots of positions 0..end-1
    mask: torch.Tensor | None  # (1, 1, n, L) bool; None: a whole Prefill (plain causal)


@dataclass(frozen=True)
class AttentionPlan:
    """Where each request's queries and keys are, for every layer of one pass (built once per pass)."""

    store: PagedKVStore
    num_tokens: int
    decode_rows: torch.Tensor | None  # (B,) the Decode tokens' places in the flat row
    decode_slots: torch.Tensor | None  # (B, longest) slots of each one's positions, padded with slot 0
    decode_mask: torch.Tensor | None  # (B, 1, 1, longest) bool: True where a real position is
    prefills: tuple[_Prefill, ...]


SERVING_ATTENTION = "prefill_decode_serving"


def serving_attention(module, query, key, value, attention_mask, serving_plan: AttentionPlan | None = None,
                      **kwargs):
    """query (1, heads, T, head_dim) -> (1, T, heads, head_dim), each request against its own blocks only."""
    if serving_plan is None:  # a forward that is not a serving pass: plain SDPA, as the mask was made for
        return chosen_kernel_attention(module, query, key, value, attention_mask, **kwargs)
    plan, layer = serving_plan, module.layer_idx
    k_store, v_store = plan.store.keys[layer], plan.store.values[layer]
    q = query[0]  # (heads, T, head_dim)
    out = query.new_empty(plan.num_tokens, q.shape[0], q.shape[2])  # (T, heads, head_dim)
    kwargs.pop("is_causal", None)
    if plan.decode_rows is not None:
        qd = q.index_select(1, plan.decode_rows).transpose(0, 1).unsqueeze(2)  # (B, heads, 1, head_dim)
        kd = k_store[plan.decode_slots].transpose(1, 2)  # (B, kv_heads, longest, head_dim)
        vd = v_store[plan.decode_slots].transpose(1, 2)
        o, _ = chosen_kernel_attention(module, qd, kd, vd, plan.decode_mask, is_causal=False, **kwargs)
        out.index_copy_(0, plan.decode_rows, o[:, 0])  # o: (B, 1, heads, head_dim)
    for p in plan.prefills:
        kp = k_store.index_select(0, p.read_slots).transpose(0, 1).unsqueeze(0)  # (1, kv_heads, L, head_dim)
        vp = v_store.index_select(0, p.read_slots).transpose(0, 1).unsqueeze(0)
        o, _ = chosen_kernel_attention(module, q[None, :, p.rows], kp, vp, p.mask, is_causal=p.mask is None,
                                       **kwargs)
        out[p.rows] = o[0]  # (n, heads, head_dim)
    return out.unsqueeze(0), None


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
        # engine/runtime/attention.py logs which SDPA kernel each layer ran; read (and cleared) after every pass
        self.kernel_log = next((m._prefill_decode_kernels for m in model.modules()
                                if hasattr(m, "_prefill_decode_kernels")), None)
        self.last_kernel = ""
        self.placeholder_mask = torch.ones((1, 1, 1, 1), dtype=torch.bool, device=self.device)
        hf.register_attention(SERVING_ATTENTION, serving_attention)  # outside a serving pass: plain SDPA's masks

    @torch.inference_mode()
    def run(self, works: list[Work]) -> list[int | None]:
        """Compute every work's positions in one forward pass; the token each emitting work chose, else None.
        Blocks must already hold every position (the scheduler grows them)."""
        inputs = self._inputs(works)
        # A 4D mask is taken as-is by transformers (no mask is built from the cache); serving_attention
        # ignores it: the plan says which keys each query sees.
        with hf.attention_for_pass(self.model, SERVING_ATTENTION):  # under the model's lock: no other pass
            out = hf.forward(self.model, inputs["input_ids"], inputs["cache"], position_ids=inputs["position_ids"],
                             logits_to_keep=inputs["emit_rows"], attention_mask=self.placeholder_mask,
                             serving_plan=inputs["plan"])
        logits = out.logits[0]  # (num emitting, vocab): only the rows where a request chooses its next token
        chosen = iter(logits.argmax(dim=-1).tolist())
        self.last_kernel = self.kernel_log.take() if self.kernel_log is not None else "sdpa"
        return [next(chosen) if w.emits_token else None for w in works]

    def _inputs(self, works: list[Work]) -> dict:
        dev, ids, positions, write, emit = self.device, [], [], [], []
        decode_rows, decode_slots, prefills = [], [], []
        for w in works:
            row = len(ids)
            ids += w.seq.tokens[w.start:w.end]
            positions += range(w.start, w.end)
            write += self.blocks.slots(w.seq.request_id, w.start, w.end)
            read = self.blocks.slots(w.seq.request_id, 0, w.end)
            if w.num_new == 1 and w.start > 0:  # one new query (a Decode step): joins the padded batch
                decode_rows.append(row)
                decode_slots.append(read)
            else:
                prefills.append(self._prefill_plan(row, w, read))
            if w.emits_token:
                emit.append(len(ids) - 1)
        longest = max(map(len, decode_slots), default=0)
        padded = [s + [0] * (longest - len(s)) for s in decode_slots]
        plan = AttentionPlan(
            store=self.store, num_tokens=len(ids),
            decode_rows=torch.tensor(decode_rows, device=dev) if decode_rows else None,
            decode_slots=torch.tensor(padded, device=dev) if decode_rows else None,
            decode_mask=(torch.arange(longest, device=dev)[None, :] < torch.tensor(
                [len(s) for s in decode_slots], device=dev)[:, None])[:, None, None] if decode_rows else None,
            prefills=tuple(prefills),
        )
        return {
            "input_ids": torch.tensor([ids], device=dev),  # (1, T)
            "position_ids": torch.tensor([positions], device=dev),  # (1, T)
            "cache": _PassCache(self.store, torch.tensor(write, device=dev)),
            "plan": plan,
            "emit_rows": torch.tensor(emit, dtype=torch.long, device=dev),
        }

    def _prefill_plan(self, row: int, w: Work, read: list[int]) -> _Prefill:
        dev = self.device
        mask = None
        if w.start > 0:  # a later chunk: its queries see the earlier chunks' positions too (causal, offset)
            q_pos = torch.arange(w.start, w.end, device=dev)[:, None]
            mask = (torch.arange(w.end, device=dev)[None, :] <= q_pos)[None, None]  # (1, 1, n, L)
        return _Prefill(slice(row, row + w.num_new), torch.tensor(read, device=dev), mask)


def new_store(lm, num_blocks: int, block_size: int) -> PagedKVStore:
    info = lm.info
    dtype = next(lm.model.parameters()).dtype
    return PagedKVStore(info.num_layers, num_blocks, block_size, info.num_kv_heads, info.head_dim, dtype, lm.device)
