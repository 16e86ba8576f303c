"""Paged KV memory (PagedAttention, arXiv 2309.06180): the cache is cut into blocks of
`block_size` token slots; each request holds a block table (its blocks, in position
order) and takes a new block only when its last one is full. Blocks come from a
free list and go back when the request finishes or is preempted.

Position p of a request lives in slot `table[p // block_size] * block_size + p % block_size`
of every layer's K and V store (runner.PagedKVStore). Only the last block of a
request can be partly empty, so internal waste is under one block per request;
contiguous pre-allocation reserves prompt + max_new_tokens slots up front instead.
"""

from __future__ import annotations

from collections import deque

from engine.contract import limits
from engine.contract.errors import InputError
from engine.contract.serving.config import blocks_for
from engine.contract.serving.trace import BlockSnapshot, BlockTable


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int) -> None:
        if num_blocks < 1 or block_size < 1:
            raise InputError("bad_kv_blocks", f"need at least one block of at least one token, got "
                                              f"{num_blocks} blocks of {block_size}", num_blocks=num_blocks)
        limits.check_count("KV blocks", num_blocks, limits.MAX_KV_BLOCKS, low=1)  # the free list is a list of ids
        self.num_blocks, self.block_size = num_blocks, block_size
        self.free_blocks: deque[int] = deque(range(num_blocks))
        self.tables: dict[str, list[int]] = {}
        self.num_allocated = 0  # counters for the invariant freed == allocated (none leaked)
        self.num_freed = 0

    @property
    def num_free(self) -> int:
        return len(self.free_blocks)

    def blocks_needed(self, request_id: str, num_tokens: int) -> int:
        """New blocks a request needs to hold `num_tokens` positions in all."""
        return max(0, blocks_for(num_tokens, self.block_size) - len(self.tables.get(request_id, ())))

    def can_hold(self, request_id: str, num_tokens: int) -> bool:
        return self.blocks_needed(request_id, num_tokens) <= self.num_free

    def grow(self, request_id: str, num_tokens: int) -> None:
        """Take blocks from the free list until the request can hold `num_tokens` positions."""
        need = self.blocks_needed(request_id, num_tokens)
        if need > self.num_free:
            raise RuntimeError(f"{request_id} needs {need} blocks, {self.num_free} free: schedule first")
        table = self.tables.setdefault(request_id, [])
        for _ in range(need):
            table.append(self.free_blocks.popleft())
        self.num_allocated += need

    def free(self, request_id: str) -> None:
        table = self.tables.pop(request_id, [])
        self.free_blocks.extend(table)
        self.num_freed += len(table)

    def slots(self, request_id: str, start: int, end: int) -> list[int]:
        """Cache slots of positions start..end-1."""
        table, size = self.tables[request_id], self.block_size
        return [table[p // size] * size + p % size for p in range(start, end)]

    def snapshot(self, num_tokens: dict[str, int]) -> BlockSnapshot:
        """The tables now, with how many of each block's slots hold a computed position."""
        size, rows = self.block_size, []
        for rid, table in self.tables.items():
            held = num_tokens.get(rid, 0)
            rows.append(BlockTable(rid, tuple(table), tuple(max(0, min(size, held - i * size))
                                                            for i in range(len(table)))))
        return BlockSnapshot(block_size=size, num_blocks=self.num_blocks, num_free_blocks=self.num_free,
                             tables=tuple(rows))
