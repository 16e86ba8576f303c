"""Prefix caching's names for blocks: a hash of a full block's tokens, chained to the hash of
the blocks before it (vLLM's automatic prefix caching, nano-vllm's block manager).

    h0 = sha256("" | tokens[0:B]),  h1 = sha256(h0 | tokens[B:2B]),  ...

Two requests whose first k blocks hold the same tokens have the same first k hashes, so the
K/V of those positions (which depend only on the tokens up to them, the model being causal)
can be read from one copy. A block that is not full has no hash: it is never shared.
The hash is sha256 over plain bytes, so it is the same in every process and on every machine.

No torch: the engine (engine/runtime/serving/block_manager.py), the record and the tests all
compute the same names with `block_hashes`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

SHORT_HASH = 8  # hex digits a figure or a record shows of a block's hash

# Why a request's prompt was not served (wholly) from the cache: RequestRecord.prefix.miss
MISS_REASONS = (
    "cache_off",  # the run had prefix caching off
    "too_short",  # no full block before the last position (which is always computed)
    "first_seen",  # no request before it had computed this prefix
    "in_flight",  # another request holds this prefix's block but has not finished computing it
    "diverged",  # a cached block has the same prefix before it, and its tokens differ at token k
    "evicted",  # this very block was cached, and evicted to make room for another request
)


def chain_hash(previous: str, tokens: Sequence[int]) -> str:
    """The hash of one full block: sha256 of the previous block's hash and this block's token ids."""
    data = previous.encode("ascii") + b"|" + ",".join(str(int(t)) for t in tokens).encode("ascii")
    return hashlib.sha256(data).hexdigest()


def block_hashes(tokens: Sequence[int], block_size: int, known: Sequence[str] = ()) -> list[str]:
    """The chained hashes of every full block of `tokens`; `known` (a prefix of the answer) is kept."""
    out = list(known)
    for i in range(len(out), len(tokens) // block_size):
        out.append(chain_hash(out[-1] if out else "", tokens[i * block_size:(i + 1) * block_size]))
    return out


def usable_blocks(num_tokens: int, block_size: int) -> int:
    """Full blocks a request may take from the cache: the last position is always computed (it yields
    the next token), so a block holding it is never taken."""
    return max(0, num_tokens - 1) // block_size


def short(block_hash: str) -> str:
    return block_hash[:SHORT_HASH]
