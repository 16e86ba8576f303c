"""A serving run's prefix-cache records checked against the requests they describe (no torch).

A record (RequestRecord.prefix, and each pass's `lookups`) counts tokens of one request: it looked up
that request's prompt (its prompt and output so far, when re-admitted after a preemption), named at most
one hash per full block of them, and read whole blocks, never the block holding the last position
(engine/contract/serving/prefix.py: usable_blocks). A recorded file that claims more (1,000,000 tokens
for a 12-token prompt, 40 hashes for 12 tokens) would draw a computed count below zero and a hit rate
in the millions: it is refused in words (MeaningError) before anything is drawn.
"""

from __future__ import annotations

from engine.contract.meaning import MeaningError
from engine.contract.serving.prefix import usable_blocks
from engine.contract.serving.trace import PrefixLookup, RequestRecord, ServingRun


def check_prefix_records(run: ServingRun) -> None:
    """Every prefix record of `run` against its request and the run's block size; MeaningError if not."""
    size = run.settings.block_size
    requests = {r.request_id: r for r in run.requests}
    for request in run.requests:
        if request.prefix is not None:
            check_lookup(request.prefix, request, size)
    for iteration in run.iterations:
        for lookup in iteration.lookups:
            if lookup.request_id not in requests:
                raise MeaningError(f"a prefix look-up of request {lookup.request_id[:40]!r}, which the run lacks")
            check_lookup(lookup, requests[lookup.request_id], size)


def check_lookup(lookup: PrefixLookup, request: RequestRecord, block_size: int) -> None:
    """One look-up's counts within its request's tokens and whole blocks."""
    where = f"request {request.request_id[:40]!r}'s prefix record"
    if lookup.request_id != request.request_id:
        raise MeaningError(f"{where} names request {lookup.request_id[:40]!r}")
    prompt, most = request.prompt_len, request.prompt_len + request.num_output_tokens
    if not prompt <= lookup.num_tokens <= most:
        raise MeaningError(f"{where} looked up {lookup.num_tokens:,} tokens of a {prompt:,}-token prompt "
                           f"({most:,} with its answer)")
    full = lookup.num_tokens // block_size
    if len(lookup.block_hashes) > full:
        raise MeaningError(f"{where} names {len(lookup.block_hashes):,} block hashes for {full:,} full blocks")
    usable = usable_blocks(lookup.num_tokens, block_size) * block_size
    if lookup.num_cached_tokens % block_size or lookup.num_cached_tokens > usable:
        raise MeaningError(f"{where} read {lookup.num_cached_tokens:,} cached tokens: whole blocks of "
                           f"{block_size}, at most {usable:,} of {lookup.num_tokens:,}")
