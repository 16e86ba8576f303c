"""One request inside the serving engine: its tokens, how many of their positions
have K/V in the cache, and where it is in its life.

    WAITING  -> arrived (or preempted), no positions computed
    RUNNING  -> holds blocks; some or all positions computed
    FINISHED -> stopped (EOS or max_new_tokens); blocks freed

A request's tokens are its prompt then its output. Each pass computes positions
`num_computed .. num_computed + n - 1`; when that reaches the last token, the pass
also chooses the next token. So a whole Prefill, a Prefill chunk, a Decode step
and a recompute after preemption are the same operation with different n.

With prefix caching, admission may start a request at `num_computed = num_cached > 0`:
its first blocks are other requests' (or its own, before a preemption) cached blocks,
and its Prefill computes only the positions after them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from engine.contract.serving.prefix import block_hashes
from engine.contract.serving.trace import PrefixLookup


class Status(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(eq=False)  # identity: two requests are never the same request
class Sequence:
    request_id: str
    prompt: str
    prompt_ids: list[int]
    max_new_tokens: int
    ignore_eos: bool
    arrival_ms: float
    output_ids: list[int] = field(default_factory=list)
    token_times_ms: list[float] = field(default_factory=list)
    num_computed: int = 0  # positions whose K and V are in this request's blocks
    recompute_until: int = 0  # positions below this were computed once, then freed by a preemption
    num_preemptions: int = 0
    first_scheduled_ms: float | None = None
    stop_reason: str | None = None
    status: Status = Status.WAITING
    num_cached: int = 0  # of the positions computed since its (last) admission: read from the prefix cache
    prefix: PrefixLookup | None = None  # its first look-up in the prefix cache (the one its TTFT depends on)
    hashes: list[str] = field(default_factory=list)  # chained hashes of its full blocks so far (see block_hashes)
    hashes_block_size: int = 0

    def block_hashes(self, block_size: int) -> list[str]:
        """The chained hash of every full block of its tokens (prompt then output), computed once each."""
        if self.hashes_block_size != block_size:
            self.hashes, self.hashes_block_size = [], block_size
        self.hashes = block_hashes(self.tokens, block_size, self.hashes)
        return self.hashes

    @property
    def tokens(self) -> list[int]:
        return self.prompt_ids + self.output_ids

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_ids) + len(self.output_ids)

    @property
    def num_uncomputed(self) -> int:
        return self.num_tokens - self.num_computed

    @property
    def is_decoding(self) -> bool:
        """Everything but the newest token is cached: the next pass is one Decode step."""
        return bool(self.output_ids) and self.num_uncomputed == 1 and self.num_computed >= self.recompute_until

    @property
    def max_num_tokens(self) -> int:
        """Positions it may ever need in the cache: the last output token is never fed back."""
        return len(self.prompt_ids) + self.max_new_tokens - 1

    def phase_of(self, num_new: int) -> str:
        """What a pass computing the next `num_new` positions is called."""
        if self.is_decoding:
            return "decode"
        # whole: every position not read from the prefix cache, in this one pass
        whole = self.num_computed == self.num_cached and self.num_computed + num_new == self.num_tokens
        return "prefill" if whole else "prefill_chunk"

    def preempt(self) -> None:
        """Lose every cached position; recompute them later (vLLM's recompute preemption)."""
        self.recompute_until = max(self.recompute_until, self.num_computed)
        self.num_computed = 0
        self.num_cached = 0
        self.num_preemptions += 1
        self.status = Status.WAITING

    def append_token(self, token: int, now_ms: float, eos_ids: frozenset[int]) -> None:
        self.output_ids.append(token)
        self.token_times_ms.append(now_ms)
        if token in eos_ids and not self.ignore_eos:
            self.stop_reason = "eos"
        elif len(self.output_ids) >= self.max_new_tokens:
            self.stop_reason = "length"
        if self.stop_reason:
            self.status = Status.FINISHED
