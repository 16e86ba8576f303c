"""Several engine workers behind one client: each call goes to the worker with the shortest queue.

`PREFILL_DECODE_ENGINE=HOST:PORT,HOST:PORT` names a pool (one worker per GPU, each measuring one job
at a time). Before each call, EngineClient asks `WorkerPool.choose()` for an address: every worker is
asked its queue with a light call (`ping`; its `queue_length`, the measured calls waiting or running
there, when the worker reports one), and the call goes to the shortest queue; ties (and workers that
report no length) take turns. A worker that does not answer is passed over while another answers; when
none does, the call goes to the next in turn and fails there with the usual WorkerUnreachable.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from engine.contract.worker.errors import WorkerSetupError
from engine.contract.worker.protocol import parse_address

Address = tuple[str, int]
MAX_POOL_WORKERS = 64


def parse_addresses(text: str) -> tuple[Address, ...]:
    """`HOST:PORT[,HOST:PORT...]` -> the addresses, in order, each once. Raises WorkerSetupError."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise WorkerSetupError("engine_address", f"an engine address is HOST:PORT, got {text!r}", value=text[:200])
    if len(parts) > MAX_POOL_WORKERS:
        raise WorkerSetupError("engine_address", f"at most {MAX_POOL_WORKERS} engine workers, got {len(parts)}",
                               value=text[:200])
    return tuple(dict.fromkeys(parse_address(p) for p in parts))


class WorkerPool:
    """The workers' addresses and the rule that picks one per call (thread-safe).

    `queue_length(address)`: that worker's queue now (measured calls waiting or running), 0 when it
    reports none, or None when it does not answer."""

    def __init__(self, addresses: Sequence[Address], queue_length: Callable[[Address], int | None]) -> None:
        if not addresses:
            raise ValueError("a pool needs at least one worker")
        self.addresses = tuple(addresses)
        self.queue_length = queue_length
        self._turn = 0
        self._lock = threading.Lock()

    def choose(self) -> Address:
        """The address of the worker with the shortest queue, ties taken in turn."""
        if len(self.addresses) == 1:
            return self.addresses[0]
        with self._lock:
            start = self._turn
            self._turn = (self._turn + 1) % len(self.addresses)
        order = self.addresses[start:] + self.addresses[:start]  # in turn: the first of equals differs per call
        lengths = [(self.queue_length(a), i) for i, a in enumerate(order)]
        answered = [(n, i) for n, i in lengths if n is not None]
        if not answered:
            return order[0]
        return order[min(answered)[1]]
