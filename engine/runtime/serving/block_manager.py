"""Paged KV memory (PagedAttention, arXiv 2309.06180): the cache is cut into blocks of
`block_size` token slots; each request holds a block table (its blocks, in position
order) and takes a new block only when its last one is full. Blocks come from a
free list and go back when the request finishes or is preempted.

Position p of a request lives in slot `table[p // block_size] * block_size + p % block_size`
of every layer's K and V store (runner.PagedKVStore). Only the last block of a
request can be partly empty, so internal waste is under one block per request;
contiguous pre-allocation reserves prompt + max_new_tokens slots up front instead.

Prefix caching (vLLM's automatic prefix caching; `prefix_caching=True`): once a block is
full of computed positions it is named by its hash (engine/contract/serving/prefix.py:
the hash of its tokens chained to the hash of the blocks before it), and `cached` maps
that hash to the block. A request admitted later whose first blocks have the same hashes
takes those blocks into its table (`take`): each block counts the tables holding it
(`ref_counts`). A finished request's hashed blocks are not freed but parked, least
recently used first, in `idle`; they count as free, and are evicted (their hash
forgotten, the eviction recorded) only when a block is needed and the free list is
empty. A block that is not full has no hash, so it is never shared, and no request
ever writes into a block another one holds.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass

from engine.contract import limits
from engine.contract.errors import InputError
from engine.contract.serving.config import blocks_for
from engine.contract.serving.prefix import block_hashes, chain_hash, short, usable_blocks
from engine.contract.serving.trace import BlockSnapshot, BlockTable, Eviction


@dataclass(frozen=True)
class CachedBlock:
    """What the cache remembers of a block it named: its prefix's hash and its tokens."""

    block_id: int
    parent: str  # the hash of the block before it ("" for a first block)
    tokens: tuple[int, ...]
    request_id: str  # the request that computed it


@dataclass(frozen=True)
class Match:
    """The longest run of a request's first blocks found in the cache (block ids, in order), and the
    hash of the first usable block that was not (None: every usable block was found)."""

    block_ids: tuple[int, ...]
    hashes: tuple[str, ...]  # every full block's hash
    num_usable: int
    missing: str | None


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int, prefix_caching: bool = False) -> None:
        if num_blocks < 1 or block_size < 1:
            raise InputError("bad_kv_blocks", f"need at least one block of at least one token, got "
                                              f"{num_blocks} blocks of {block_size}", num_blocks=num_blocks)
        limits.check_count("KV blocks", num_blocks, limits.MAX_KV_BLOCKS, low=1)  # the free list is a list of ids
        self.num_blocks, self.block_size, self.prefix_caching = num_blocks, block_size, prefix_caching
        self.free_blocks: deque[int] = deque(range(num_blocks))
        self.tables: dict[str, list[int]] = {}
        self.ref_counts = [0] * num_blocks  # tables holding each block
        self.num_allocated = 0  # counters for the invariant freed == allocated (none leaked)
        self.num_freed = 0
        # --- prefix caching ---
        self.cached: dict[str, int] = {}  # block hash -> block id, for full computed blocks
        self.block_hash: dict[int, str] = {}  # block id -> its hash (inverse of `cached`)
        self.known: dict[str, CachedBlock] = {}  # every block ever named (a miss's reason reads it)
        self.idle: OrderedDict[int, None] = OrderedDict()  # cached blocks nobody holds, least recently used first
        self.evicted: dict[str, Eviction] = {}  # block hash -> its last eviction
        self.num_hashed: dict[str, int] = {}  # request id -> how many of its first blocks are named
        self.new_evictions: list[Eviction] = []  # since the last `take_evictions`
        self.now_ms = 0.0  # when the pass being scheduled began scheduling (EngineCore sets it)

    @property
    def num_free(self) -> int:
        """Blocks a request can get: the free list and the idle cached blocks (evicted when taken)."""
        return len(self.free_blocks) + len(self.idle)

    def blocks_needed(self, request_id: str, num_tokens: int) -> int:
        """New blocks a request needs to hold `num_tokens` positions in all."""
        return max(0, blocks_for(num_tokens, self.block_size) - len(self.tables.get(request_id, ())))

    def can_hold(self, request_id: str, num_tokens: int) -> bool:
        return self.blocks_needed(request_id, num_tokens) <= self.num_free

    def grow(self, request_id: str, num_tokens: int) -> None:
        """Take blocks from the free list (else evict idle cached ones) until the request can hold
        `num_tokens` positions."""
        need = self.blocks_needed(request_id, num_tokens)
        if need > self.num_free:
            raise RuntimeError(f"{request_id} needs {need} blocks, {self.num_free} free: schedule first")
        table = self.tables.setdefault(request_id, [])
        for _ in range(need):
            block = self.free_blocks.popleft() if self.free_blocks else self._evict(request_id)
            self.ref_counts[block] = 1
            table.append(block)
        self.num_allocated += need

    def free(self, request_id: str) -> None:
        """Drop the request's hold on its blocks; a block nobody holds goes back to the free list, or,
        if it is cached, parks as idle (the request's last blocks are evicted first: reversed order)."""
        table = self.tables.pop(request_id, [])
        self.num_hashed.pop(request_id, None)
        unheld = []
        for block in table:
            if self.ref_counts[block] <= 0:
                raise RuntimeError(f"block {block} freed twice ({request_id})")
            self.ref_counts[block] -= 1
            if self.ref_counts[block] == 0:
                unheld.append(block)
        self.free_blocks.extend(b for b in unheld if b not in self.block_hash)
        for block in reversed(unheld):  # the tail of a prefix is evicted before its head
            if block in self.block_hash:
                self.idle[block] = None  # most recently used: evicted last
        self.num_freed += len(unheld)

    def slots(self, request_id: str, start: int, end: int) -> list[int]:
        """Cache slots of positions start..end-1."""
        table, size = self.tables[request_id], self.block_size
        return [table[p // size] * size + p % size for p in range(start, end)]

    # --- prefix caching -------------------------------------------------------

    def match(self, tokens: list[int], hashes: list[str]) -> Match:
        """The cached blocks that hold the first positions of `tokens` (never the last one)."""
        num_usable = usable_blocks(len(tokens), self.block_size) if self.prefix_caching else 0
        found = []
        for h in hashes[:num_usable]:
            if h not in self.cached:
                break
            found.append(self.cached[h])
        missing = hashes[len(found)] if len(found) < num_usable else None
        return Match(tuple(found), tuple(hashes), num_usable, missing)

    def num_idle_in(self, block_ids) -> int:
        """Of these cached blocks, those nobody holds (taking them leaves fewer free)."""
        return sum(1 for b in block_ids if b in self.idle)

    def take(self, request_id: str, block_ids) -> None:
        """Start a request's table with cached blocks (another request's, or its own before a preemption)."""
        if request_id in self.tables:
            raise RuntimeError(f"{request_id} already holds blocks: cached ones come first")
        for block in block_ids:
            if self.ref_counts[block] == 0:
                del self.idle[block]
                self.num_allocated += 1
            else:
                self.idle.pop(block, None)
            self.ref_counts[block] += 1
        self.tables[request_id] = list(block_ids)
        self.num_hashed[request_id] = len(block_ids)

    def name_blocks(self, request_id: str, tokens: list[int], hashes: list[str], num_computed: int) -> None:
        """Name (hash) every block of the request that is full of computed positions, so later requests find
        it. A block whose hash another block already has stays unnamed (two requests computed the same prefix
        at once: one copy is cached, the other is freed when its holder is done)."""
        if not self.prefix_caching or request_id not in self.tables:
            return
        table, size = self.tables[request_id], self.block_size
        done = min(num_computed // size, len(hashes), len(table))
        for i in range(self.num_hashed.get(request_id, 0), done):
            h, block = hashes[i], table[i]
            if h not in self.cached and block not in self.block_hash:
                self.cached[h], self.block_hash[block] = block, h
                self.known[h] = CachedBlock(block, hashes[i - 1] if i else "", tuple(tokens[i * size:(i + 1) * size]),
                                            request_id)
                self.evicted.pop(h, None)
        self.num_hashed[request_id] = max(done, self.num_hashed.get(request_id, 0))

    def _evict(self, request_id: str) -> int:
        block, _ = self.idle.popitem(last=False)  # least recently used
        h = self.block_hash.pop(block)
        del self.cached[h]
        eviction = Eviction(block, short(h), request_id, self.now_ms)
        self.evicted[h] = eviction
        self.new_evictions.append(eviction)
        return block

    def take_evictions(self) -> tuple[Eviction, ...]:
        out, self.new_evictions = tuple(self.new_evictions), []
        return out

    # --- what tests and figures read ---------------------------------------------

    def check(self, tokens_of: dict[str, list[int]]) -> None:
        """Raise AssertionError unless: every block is free, idle or held, exactly one of them; each
        block's reference count is the number of tables holding it (never negative); and every named
        block's hash is the hash of its tokens and prefix, and of the tokens of each request holding it."""
        held = [b for table in self.tables.values() for b in table]
        counts = [0] * self.num_blocks
        for b in held:
            counts[b] += 1
        assert counts == self.ref_counts, "a reference count differs from the tables holding the block"
        free, idle = list(self.free_blocks), list(self.idle)
        assert len(set(free)) == len(free), "a block is on the free list twice (freed twice)"
        assert not set(free) & set(idle) and not (set(free) | set(idle)) & set(held), "a block is in two states"
        assert len(set(free) | set(idle) | set(held)) == self.num_blocks, "a block was lost"
        assert all(b in self.block_hash for b in idle), "an idle block has no hash"
        for h, block in self.cached.items():
            entry = self.known[h]
            assert self.block_hash[block] == h and chain_hash(entry.parent, entry.tokens) == h, "bad block hash"
        for rid, table in self.tables.items():
            hashes = block_hashes(tokens_of[rid], self.block_size)
            for i, block in enumerate(table):
                if block in self.block_hash:
                    assert self.block_hash[block] == hashes[i], f"{rid} holds block {block} under another hash"

    def snapshot(self, num_tokens: dict[str, int]) -> BlockSnapshot:
        """The tables now, with how many of each block's slots hold a computed position."""
        size, rows = self.block_size, []
        for rid, table in self.tables.items():
            held = num_tokens.get(rid, 0)
            rows.append(BlockTable(rid, tuple(table), tuple(max(0, min(size, held - i * size))
                                                            for i in range(len(table)))))
        return BlockSnapshot(block_size=size, num_blocks=self.num_blocks, num_free_blocks=self.num_free,
                             tables=tuple(rows), num_cached_free_blocks=len(self.idle))
