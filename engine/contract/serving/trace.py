"""The record of one serving run: many requests, one engine, plain frozen values.

This is the contract between the serving engine and everything that draws or
measures it (the Gantt, the batch composition, the KV block table, the metric
table, the app's serving lab). Like `engine/contract/trace.py` it holds no tensors and
imports no torch: a run saves as JSON, loads on a machine without a model, and
is drawn by `lesson/`. Changes are additive only (new fields get defaults).

Shape of a run (all times are milliseconds since the run's clock started, i.e.
when the engine began honouring arrivals; all are measured, none simulated):

    ServingRun
      schema_version, kind="serving_run", scenario (name or workload file name)
      settings: ServingSettings      policy, token_budget, block_size, num_kv_blocks,
                                     on_kv_full ("wait" | "preempt"), threads, worker cores, prefix_caching
      model: ModelInfo               engine.contract.trace.ModelInfo (kv_bytes_per_token etc.)
      requests: (RequestRecord, ...) per request, in arrival order:
          request_id, prompt (text, "" if ids were given), prompt_ids, prompt_pieces,
          output_ids, output_pieces, output_text, max_new_tokens, ignore_eos,
          arrival_ms, first_scheduled_ms (its first pass started), first_token_ms,
          finish_ms, token_times_ms (when each output token was known on the host),
          itl_ms (gaps between consecutive tokens), stop_reason ("eos" | "length"),
          num_preemptions, prompt_count / output_count (observed runs: the token counts, ids empty;
          older files wrote one -1 per token in the ids instead, and still read),
          prefix: PrefixLookup | None   its first prefix-cache look-up: num_tokens, num_cached_tokens,
              block_hashes (the chain, short), miss ("" or one of prefix.MISS_REASONS) with its
              details (miss_block, diverged_at and both tokens, other_request, evicted_at_ms), lookup_ms
          derived: ttft_ms, tpot_ms, e2el_ms, queue_ms, prompt_len, num_output_tokens
      iterations: (Iteration, ...)   one per forward pass, in start order:
          index, worker ("engine" | "prefill" | "decode": disaggregated runs have two),
          start_ms, end_ms, token_budget (None: no budget),
          entries: (BatchEntry, ...)  per request in the pass:
              request_id, phase ("prefill" | "prefill_chunk" | "decode"),
              start, end (positions computed: start <= p < end), output_id (None when a
              chunk yields no token), recompute (positions recomputed after a preemption)
          waiting: request ids that had arrived but got no positions in this pass
          preempted: request ids preempted (blocks freed) when this pass was scheduled
          attention_kernel: the SDPA kernel(s) the pass ran ("flash", "math", ...; "" unknown)
          stalled: of `waiting`, those admitted (holding blocks) that got no positions: stalled Decodes
          blocks: BlockSnapshot after the pass (that worker's block manager):
              block_size, num_blocks, num_free_blocks, num_cached_free_blocks (idle cached ones),
              tables: (BlockTable(request_id, block_ids, tokens_per_block), ...)  a block shared
              through the prefix cache is in several tables, its tokens counted once
          lookups: (PrefixLookup, ...) the look-ups of requests admitted to this pass (cache on)
          evictions: (Eviction(block_id, block_hash, by_request, at_ms), ...) idle cached blocks reused
          derived: num_prefill_tokens, num_decode_tokens, num_tokens, duration_ms
      handoffs: (Handoff, ...)       disaggregated only, per request:
          request_id, num_tokens, num_bytes (K and V of every layer, measured from the
          tensors), send_start_ms, received_ms, copy_ms (pack + transfer + unpack into
          the decode worker's blocks, measured), link_estimates: (LinkEstimate(name,
          bytes_per_s, ms), ...) = num_bytes / assumed bandwidth
      links: (LinkSpec(name, label, bytes_per_s), ...)   the assumed bandwidths
      metrics: ServingMetrics        vLLM's definitions (engine/contract/serving/metrics.py):
          num_requests, num_completed, duration_ms, total_input_tokens, total_output_tokens,
          request_throughput_per_s, output_throughput_tok_s, total_token_throughput_tok_s,
          ttft / tpot / itl / e2el: Distribution(mean, p50, p90, p99, max, count) in ms,
          slo: SLO(ttft_ms, tpot_ms, e2el_ms; None = not set), num_good, goodput_req_per_s
      memory: KVMemory               paged vs contiguous pre-allocation at the peak:
          block_size, kv_bytes_per_token, peak_used_blocks, peak_used_tokens,
          peak_paged_reserved_tokens, peak_contiguous_reserved_tokens, paged_utilization,
          contiguous_utilization (tokens held / tokens reserved), and over the whole run
          mean_paged_utilization, mean_contiguous_utilization (sum held / sum reserved over passes)
      wall_ms (the whole run), notes (plain sentences: e.g. "workers pinned to cores 0 and 1")
      provenance: engine.contract.trace.Provenance | None   where and when it was measured (cpu, num_cores,
          device, gpu, torch_version, transformers_version, recorded_at); None in older runs and
          in runs observed from a client (engine/contract/interop/)

`ServingRun.to_json()` / `ServingRun.from_json(text)` round-trip exactly (engine.contract.codec); derived
values are properties, never stored twice (to_dict adds them under "derived" keys
for readers of the JSON, and the codec ignores them on the way back).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.contract import codec
from engine.contract.limits import check_magnitudes
from engine.contract.serving.prefix import MISS_REASONS
from engine.contract.trace import CachedShare, ModelInfo, Provenance, TraceFormatError

SERVING_SCHEMA_VERSION = 1
POLICIES = ("one-at-a-time", "prefill-first", "chunked", "disaggregated")
SERVING_PHASES = ("prefill", "prefill_chunk", "decode")
WORKERS = ("engine", "prefill", "decode")
ON_KV_FULL = ("wait", "preempt")
# A run measured from outside a server (engine/contract/interop/): its scheduling is not
# observable, so its settings name no engine policy. Accepted by ServingSettings, never by `engine serve`.
OBSERVED_POLICY = "observed"


@dataclass(frozen=True)
class ServingSettings:
    """How the engine was configured for this run."""

    policy: str  # one of POLICIES, or OBSERVED_POLICY (measured from a client)
    block_size: int  # tokens per KV block
    num_kv_blocks: int  # blocks in each worker's KV store (the KV budget)
    token_budget: int | None = None  # chunked: max new positions per pass (decodes first); else None
    on_kv_full: str = "preempt"  # "wait": admit no new request; "preempt": free the newest and recompute later
    max_num_seqs: int = 256  # most requests running at once
    num_threads: int = 1  # torch threads per model instance
    worker_cores: tuple[tuple[str, tuple[int, ...]], ...] = ()  # (worker, cores it was pinned to); () unpinned
    kv_blocks_explicit: bool = False  # True when the user set the KV budget
    prefix_caching: bool = False  # full prompt blocks already computed are read from the cache, not recomputed

    def __post_init__(self) -> None:
        if self.policy not in POLICIES and self.policy != OBSERVED_POLICY:
            raise TraceFormatError(f"unknown policy {self.policy!r}; expected one of {POLICIES}")
        if self.on_kv_full not in ON_KV_FULL:
            raise TraceFormatError(f"unknown on_kv_full {self.on_kv_full!r}; expected one of {ON_KV_FULL}")


@dataclass(frozen=True)
class PrefixLookup(CachedShare):
    """One request's look-up in the prefix cache when it was admitted: how many of its tokens were read
    from cached blocks, and for the rest why not (engine/contract/serving/prefix.py: MISS_REASONS)."""

    request_id: str
    num_tokens: int  # tokens looked up: the prompt (prompt + output when re-admitted after a preemption)
    num_cached_tokens: int  # read from the cache: whole blocks, never the last position
    block_hashes: tuple[str, ...] = ()  # short hashes of its full blocks, in order (the hash chain)
    miss: str = ""  # "" every usable block was cached; else one of MISS_REASONS, for the first block not served
    miss_block: int | None = None  # index of that block
    diverged_at: int | None = None  # diverged: the first token position where it differs from the cached block
    token_id: int | None = None  # diverged: its own token there
    cached_token_id: int | None = None  # diverged: the cached block's token there
    token_piece: str = ""
    cached_piece: str = ""
    other_request: str = ""  # diverged: whose block; evicted: who evicted it; in_flight: who is computing it
    evicted_at_ms: float | None = None  # evicted: when (that pass's scheduling), ms
    lookup_ms: float = 0.0  # measured time of the look-up (hashing + the hash table), ms
    start_ms: float = 0.0  # when the look-up began (the pass's scheduling), ms

    def __post_init__(self) -> None:
        if self.num_cached_tokens < 0 or self.num_cached_tokens >= max(1, self.num_tokens):
            raise TraceFormatError(f"request {self.request_id!r}: {self.num_cached_tokens} cached tokens of "
                                   f"{self.num_tokens} (the last one is always computed)")
        if self.miss and self.miss not in MISS_REASONS:
            raise TraceFormatError(f"unknown prefix-cache miss {self.miss!r}; expected one of {MISS_REASONS}")


@dataclass(frozen=True)
class Eviction:
    """A cached block nobody held, given to another request because no block was free."""

    block_id: int
    block_hash: str  # short hash of the block's tokens and prefix
    by_request: str  # the request that needed the block
    at_ms: float  # the scheduling of the pass that needed it


@dataclass(frozen=True)
class RequestRecord:
    """One request from arrival to its last token."""

    request_id: str
    prompt: str  # the text, "" when the workload gave ids
    prompt_ids: tuple[int, ...]
    prompt_pieces: tuple[str, ...]
    output_ids: tuple[int, ...]
    output_pieces: tuple[str, ...]
    output_text: str
    max_new_tokens: int
    ignore_eos: bool
    arrival_ms: float
    first_scheduled_ms: float  # its first forward pass started (the queueing wait ends)
    first_token_ms: float
    finish_ms: float  # its last token was known
    token_times_ms: tuple[float, ...]  # when each output token was known on the host
    itl_ms: tuple[float, ...]  # token_times_ms[i+1] - token_times_ms[i]
    stop_reason: str  # "eos" or "length"
    num_preemptions: int = 0
    # A run observed from a client knows how many tokens, not which: its prompt_ids / output_ids are ()
    # and these hold the counts (a length, never a tuple of that many placeholders). None: count the ids.
    prompt_count: int | None = None
    output_count: int | None = None
    prefix: PrefixLookup | None = None  # its first look-up in the prefix cache; None in older runs

    def __post_init__(self) -> None:
        for name, ids in (("prompt_count", self.prompt_ids), ("output_count", self.output_ids)):
            count = getattr(self, name)
            if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 0 or ids):
                raise TraceFormatError(f"request {self.request_id!r}: {name} must be a whole number >= 0 "
                                       "beside empty ids")

    @property
    def prompt_len(self) -> int:
        return len(self.prompt_ids) if self.prompt_count is None else self.prompt_count

    @property
    def num_output_tokens(self) -> int:
        return len(self.output_ids) if self.output_count is None else self.output_count

    @property
    def ttft_ms(self) -> float:
        """Time to first token, from arrival (vLLM: the request was sent)."""
        return self.first_token_ms - self.arrival_ms

    @property
    def e2el_ms(self) -> float:
        return self.finish_ms - self.arrival_ms

    @property
    def tpot_ms(self) -> float | None:
        """(E2EL - TTFT) / (output tokens - 1); None for a one-token answer."""
        n = self.num_output_tokens
        return (self.finish_ms - self.first_token_ms) / (n - 1) if n > 1 else None

    @property
    def queue_ms(self) -> float:
        return self.first_scheduled_ms - self.arrival_ms


@dataclass(frozen=True)
class BatchEntry:
    """One request's share of one forward pass: the positions start..end-1 were computed."""

    request_id: str
    phase: str  # "prefill" (the whole prompt in this pass), "prefill_chunk" (part of it), "decode" (one position)
    start: int
    end: int
    output_id: int | None  # the token chosen at the last position; None when a chunk ends mid-prompt
    recompute: bool = False  # these positions were computed before, then freed by a preemption

    def __post_init__(self) -> None:
        if self.phase not in SERVING_PHASES:
            raise TraceFormatError(f"unknown phase {self.phase!r}; expected one of {SERVING_PHASES}")
        if not 0 <= self.start < self.end:
            raise TraceFormatError(f"positions {self.start}..{self.end} are empty or negative")
        if self.phase == "decode" and self.end - self.start != 1:
            raise TraceFormatError("a decode entry computes exactly one position")

    @property
    def num_tokens(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class BlockTable:
    """A request's KV blocks, in position order, and how many tokens each holds."""

    request_id: str
    block_ids: tuple[int, ...]
    tokens_per_block: tuple[int, ...]  # same length as block_ids; the last may be partly empty

    @property
    def num_tokens(self) -> int:
        return sum(self.tokens_per_block)


@dataclass(frozen=True)
class BlockSnapshot:
    """A block manager's state after one pass."""

    block_size: int
    num_blocks: int
    num_free_blocks: int
    tables: tuple[BlockTable, ...] = ()
    num_cached_free_blocks: int = 0  # of the free blocks: cached ones nobody holds (evicted only when needed)

    @property
    def num_used_blocks(self) -> int:
        return self.num_blocks - self.num_free_blocks

    def held_tokens(self) -> dict[int, int]:
        """Block id -> tokens it holds, each block once however many requests share it."""
        held: dict[int, int] = {}
        for t in self.tables:
            for block, n in zip(t.block_ids, t.tokens_per_block):
                held[block] = max(held.get(block, 0), n)
        return held

    def ref_counts(self) -> dict[int, int]:
        """Block id -> how many requests' tables hold it (above 1: shared through the prefix cache)."""
        counts: dict[int, int] = {}
        for t in self.tables:
            for block in t.block_ids:
                counts[block] = counts.get(block, 0) + 1
        return counts

    @property
    def num_used_tokens(self) -> int:
        """Tokens held, a shared block counted once (its K/V bytes exist once)."""
        return sum(self.held_tokens().values())

    @property
    def wasted_slots(self) -> int:
        """Reserved token slots that hold nothing (internal fragmentation of the last blocks)."""
        return len(self.held_tokens()) * self.block_size - self.num_used_tokens


@dataclass(frozen=True)
class Iteration:
    """One forward pass of one worker: which requests, which positions, when."""

    index: int
    worker: str  # "engine", or "prefill" / "decode" in a disaggregated run
    start_ms: float
    end_ms: float  # every token chosen in this pass was known on the host
    entries: tuple[BatchEntry, ...]
    blocks: BlockSnapshot
    token_budget: int | None = None
    waiting: tuple[str, ...] = ()  # arrived, not finished, given no positions in this pass
    preempted: tuple[str, ...] = ()  # blocks freed when this pass was scheduled
    attention_kernel: str = ""  # the SDPA kernel(s) the pass ran (engine/runtime/attention.py), "" if not recorded
    stalled: tuple[str, ...] = ()  # of `waiting`: admitted (holding KV blocks) yet given no positions, e.g.
    #                                Decodes held back while prefill-first runs a new request's Prefill
    lookups: tuple[PrefixLookup, ...] = ()  # prefix caching on: the look-ups of the requests admitted to this pass
    evictions: tuple[Eviction, ...] = ()  # cached blocks evicted to make room while this pass was scheduled

    def __post_init__(self) -> None:
        if self.worker not in WORKERS:
            raise TraceFormatError(f"unknown worker {self.worker!r}; expected one of {WORKERS}")

    @property
    def duration_ms(self) -> float:
        return self.end_ms - self.start_ms

    @property
    def num_tokens(self) -> int:
        return sum(e.num_tokens for e in self.entries)

    @property
    def num_prefill_tokens(self) -> int:
        return sum(e.num_tokens for e in self.entries if e.phase != "decode")

    @property
    def num_decode_tokens(self) -> int:
        return sum(e.num_tokens for e in self.entries if e.phase == "decode")


@dataclass(frozen=True)
class LinkSpec:
    """An assumed link between a Prefill and a Decode device."""

    name: str  # "nvlink", "400gbps", "100gbps"
    label: str  # what the figure says
    bytes_per_s: float


@dataclass(frozen=True)
class LinkEstimate:
    name: str
    bytes_per_s: float
    ms: float  # num_bytes / bytes_per_s: bandwidth only, no latency or protocol overhead


@dataclass(frozen=True)
class Handoff:
    """The KV cache of one request, moved from the Prefill worker to the Decode worker."""

    request_id: str
    num_tokens: int
    num_bytes: int  # K and V of every layer for num_tokens positions, measured from the tensors
    send_start_ms: float  # the prefill worker began packing
    received_ms: float  # the decode worker had it in its blocks
    copy_ms: float  # pack + transfer between processes + unpack into blocks (measured)
    link_estimates: tuple[LinkEstimate, ...] = ()


@dataclass(frozen=True)
class Distribution:
    """Summary of one latency metric over requests (or over all gaps, for ITL), in ms."""

    count: int
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class SLO:
    """Service-level objectives in ms; None = not set. A request is good when it meets all that are set."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2el_ms: float | None = None


@dataclass(frozen=True)
class ServingMetrics:
    """vLLM's serving-benchmark metrics for one run (see engine/contract/serving/metrics.py)."""

    num_requests: int
    num_completed: int
    duration_ms: float  # first arrival to last finish
    total_input_tokens: int
    total_output_tokens: int
    request_throughput_per_s: float
    output_throughput_tok_s: float
    total_token_throughput_tok_s: float  # (input + output tokens) / duration
    ttft: Distribution
    tpot: Distribution
    itl: Distribution
    e2el: Distribution
    slo: SLO = SLO()
    num_good: int = 0  # requests meeting every set SLO (all of them when none is set)
    goodput_req_per_s: float = 0.0


@dataclass(frozen=True)
class KVMemory:
    """Paged KV memory against reserving each running request's maximum length up front."""

    block_size: int
    kv_bytes_per_token: int
    peak_used_blocks: int
    peak_used_tokens: int  # tokens held at that moment
    peak_paged_reserved_tokens: int  # blocks x block_size at the peak
    peak_contiguous_reserved_tokens: int  # sum of (prompt + max_new_tokens) of the requests running then
    paged_utilization: float  # tokens held / tokens reserved, paged
    contiguous_utilization: float  # the same with contiguous pre-allocation
    # Over the whole run (every pass's snapshot counts once): of all token slots reserved, the share
    # holding a token. Contiguous reserves a request's maximum from its admission on; paged grows.
    mean_paged_utilization: float = 0.0
    mean_contiguous_utilization: float = 0.0


@dataclass(frozen=True)
class ServingRun:
    """Everything one serving run did. Built by engine.runtime.serving.engine.run_workload."""

    scenario: str
    settings: ServingSettings
    model: ModelInfo
    requests: tuple[RequestRecord, ...]
    iterations: tuple[Iteration, ...]
    metrics: ServingMetrics
    memory: KVMemory
    handoffs: tuple[Handoff, ...] = ()
    links: tuple[LinkSpec, ...] = ()
    wall_ms: float = 0.0
    notes: tuple[str, ...] = ()
    kind: str = "serving_run"
    schema_version: int = field(default=SERVING_SCHEMA_VERSION)
    provenance: Provenance | None = None  # where and when it was measured (engine/runtime/provenance.py)

    def request(self, request_id: str) -> RequestRecord:
        return next(r for r in self.requests if r.request_id == request_id)

    @property
    def prefix_caching(self) -> bool:
        return self.settings.prefix_caching

    # --- JSON in and out (engine.contract.codec) ---
    def to_dict(self) -> dict[str, Any]:
        data = codec.to_plain(self)
        for record, plain in zip(self.requests, data["requests"]):
            plain[codec.DERIVED] = {"ttft_ms": record.ttft_ms, "tpot_ms": record.tpot_ms, "e2el_ms": record.e2el_ms,
                                "queue_ms": record.queue_ms}
            if record.prefix is not None:
                plain["prefix"][codec.DERIVED] = {"num_computed_tokens": record.prefix.num_computed_tokens,
                                              "hit_rate": record.prefix.hit_rate}
        for it, plain in zip(self.iterations, data["iterations"]):
            plain[codec.DERIVED] = {"num_prefill_tokens": it.num_prefill_tokens,
                                    "num_decode_tokens": it.num_decode_tokens, "duration_ms": it.duration_ms,
                                    "wasted_slots": it.blocks.wasted_slots}
        return data

    def to_json(self, indent: int | None = 2) -> str:
        """The run as JSON; a number that is not finite is refused (LimitError), never written as NaN."""
        return codec.encode(self, indent)

    @staticmethod
    def upgrade(data: Any) -> Any:
        """A run's parsed JSON before it is built (engine.contract.codec): a serving run of this schema version,
        every number finite and within MAX_MAGNITUDE (LimitError naming where) before any record is built."""
        if not isinstance(data, dict) or data.get("kind") != "serving_run":
            raise TraceFormatError("not a serving run (kind must be 'serving_run')")
        if data.get("schema_version") != SERVING_SCHEMA_VERSION or isinstance(data.get("schema_version"), bool):
            raise TraceFormatError(f"serving run schema_version {data.get('schema_version')!r}; "
                                   f"this build reads {SERVING_SCHEMA_VERSION}")
        check_magnitudes(data)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServingRun:
        return codec.convert(data, cls)

    @classmethod
    def from_json(cls, text: str) -> ServingRun:
        """Read a run, bounded (engine.contract.limits): nesting, number lengths, NaN / Infinity and numbers beyond
        MAX_MAGNITUDE are refused (LimitError) before any record is built."""
        return codec.decode(text, cls)
