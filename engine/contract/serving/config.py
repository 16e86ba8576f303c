"""A serving run's settings as a plain, validated value: what a client sends and the engine runs.

    ServeConfig(policy="chunked", token_budget=64, block_size=16, num_kv_blocks=None, prefix_caching=False, ...)

The engine (engine/runtime/serving/) turns it into a scheduler's config and a KV store; a client of the
engine worker builds it without torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.contract import limits
from engine.contract.errors import InputError
from engine.contract.serving.trace import ON_KV_FULL, POLICIES, SLO, ServingSettings

DEFAULT_TOKEN_BUDGET = 64  # positions per pass under chunked prefill (small: a CPU pass of 64 costs ~ a Decode step)
DEFAULT_BLOCK_SIZE = 16


@dataclass(frozen=True)
class ServeConfig:
    policy: str = "chunked"
    token_budget: int | None = None  # chunked: None -> DEFAULT_TOKEN_BUDGET
    block_size: int = DEFAULT_BLOCK_SIZE
    num_kv_blocks: int | None = None  # None: enough for every request at its longest (nothing waits for memory)
    on_kv_full: str = "preempt"
    max_num_seqs: int = 256
    slo: SLO = SLO()
    timeout_s: float = 600.0  # a run that takes longer is stopped with an error
    prefix_caching: bool = False  # take full prompt blocks already computed from the cache (serving/prefix.py)

    def __post_init__(self) -> None:
        def bad(name: str, why: str) -> InputError:
            return InputError("bad_serve_setting", f"--{name} {why}", name=name)

        if self.policy not in POLICIES:
            raise bad("policy", f"must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        if self.token_budget is not None and not 1 <= self.token_budget <= 1 << 16:
            raise bad("token-budget", f"must be 1..65536, got {self.token_budget}")
        if not 1 <= self.block_size <= limits.MAX_BLOCK_SIZE:
            raise bad("block-size", f"must be 1..{limits.MAX_BLOCK_SIZE}, got {self.block_size}")
        if self.num_kv_blocks is not None and not 1 <= self.num_kv_blocks <= limits.MAX_KV_BLOCKS:
            raise bad("kv-blocks", f"must be 1..{limits.MAX_KV_BLOCKS}, got {self.num_kv_blocks}")
        if self.on_kv_full not in ON_KV_FULL:
            raise bad("on-kv-full", f"must be one of {', '.join(ON_KV_FULL)}, got {self.on_kv_full!r}")
        if not 1 <= self.max_num_seqs <= 4096:
            raise bad("max-num-seqs", f"must be 1..4096, got {self.max_num_seqs}")
        if not isinstance(self.prefix_caching, bool):
            raise bad("prefix-caching", f"must be on or off, got {self.prefix_caching!r}")

    @property
    def budget(self) -> int | None:
        if self.policy != "chunked":
            return None
        return self.token_budget or DEFAULT_TOKEN_BUDGET

    def blocks_for_run(self, seqs) -> int:
        """KV blocks for a run of `seqs` (each with .max_num_tokens): the set number, or enough for all."""
        if self.num_kv_blocks is not None:
            return self.num_kv_blocks
        return max(1, sum(blocks_for(s.max_num_tokens, self.block_size) for s in seqs))

    def settings(self, num_blocks: int, num_threads: int, worker_cores=()) -> ServingSettings:
        return ServingSettings(policy=self.policy, block_size=self.block_size, num_kv_blocks=num_blocks,
                               token_budget=self.budget, on_kv_full=self.on_kv_full, max_num_seqs=self.max_num_seqs,
                               num_threads=num_threads, worker_cores=tuple(worker_cores),
                               kv_blocks_explicit=self.num_kv_blocks is not None,
                               prefix_caching=self.prefix_caching)


def blocks_for(num_tokens: int, block_size: int) -> int:
    """Blocks of `block_size` positions that hold `num_tokens` (the last one may be part full)."""
    return -(-num_tokens // block_size)
