"""Bounded HTTP: what one reply may cost, and a watchdog that holds a whole exchange to its deadline.

The bounds are engine/contract/limits.py's PROBE_*: a socket timeout bounds one silence; the
Watchdog bounds the whole exchange however slowly a server trickles, by shutting the socket down
so a blocked read returns. `bounded_get` reads at most a byte cap of body within its deadline.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from dataclasses import dataclass

from engine.contract.interop.endpoint import Endpoint
from engine.contract.limits import (PROBE_BYTES_PER_CHUNK, PROBE_CHUNK_SLACK, PROBE_CHUNKS_PER_TOKEN,
                                    PROBE_MAX_LINE_BYTES, PROBE_MAX_STREAM_BYTES, PROBE_SECONDS_PER_TOKEN)


@dataclass(frozen=True)
class StreamLimits:
    """What one request's stream may cost: seconds in all, data chunks, bytes in all and per line."""

    deadline_s: float
    max_chunks: int
    max_bytes: int
    max_line: int


def stream_limits(max_tokens: int, timeout_s: float) -> StreamLimits:
    """The bounds of a request for `max_tokens` tokens (engine/contract/limits.py's PROBE_*): `timeout_s` plus
    PROBE_SECONDS_PER_TOKEN per token in all; PROBE_CHUNKS_PER_TOKEN chunks per token plus
    PROBE_CHUNK_SLACK; PROBE_BYTES_PER_CHUNK bytes per allowed chunk, at most PROBE_MAX_STREAM_BYTES."""
    chunks = PROBE_CHUNKS_PER_TOKEN * max_tokens + PROBE_CHUNK_SLACK
    return StreamLimits(deadline_s=timeout_s + PROBE_SECONDS_PER_TOKEN * max_tokens, max_chunks=chunks,
                        max_bytes=min(PROBE_MAX_STREAM_BYTES, PROBE_BYTES_PER_CHUNK * chunks),
                        max_line=PROBE_MAX_LINE_BYTES)


class Watchdog:
    """Shuts a connection's socket down once `seconds` have passed, so a read blocked on a server that
    trickles (each byte within the silence timeout) returns; `passed` then says the deadline is why.

    The socket timeout bounds one silence; this bounds the whole exchange. Only the socket is shut
    down (both ways), never closed under the reading thread: its read ends with an EOF or an error.
    `connect()` opens the connection and keeps its socket: http.client lets go of its own reference
    once a reply says "Connection: close", while the reply's reads still use it."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float) -> None:
        self.conn, self.seconds = conn, seconds
        self.end = time.monotonic() + seconds
        self._fired = False
        self._sock: socket.socket | None = None
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()

    @property
    def passed(self) -> bool:
        return self._fired or time.monotonic() >= self.end

    def connect(self) -> None:
        self.conn.connect()  # within the socket timeout, which is never longer than the deadline
        self._sock = self.conn.sock
        if self._fired:  # the deadline passed while connecting
            self._cut()

    def _cut(self) -> None:
        self._fired = True
        sock = self._sock or self.conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # socket.socket's own shutdown: an SSL socket keeps its state
                socket.socket.shutdown(sock, socket.SHUT_RDWR)


def bounded_get(ep: Endpoint, path: str, headers: dict[str, str], deadline_s: float,
                max_bytes: int) -> tuple[int, bytes | None]:
    """GET `path` within `deadline_s` in all (a trickle included), reading at most `max_bytes` of body:
    (status, body), the body None when it is longer. Raises TimeoutError past the deadline (or after
    `deadline_s` of silence), OSError or http.client.HTTPException when the connection fails."""
    conn = ep.connection(deadline_s)
    with Watchdog(conn, deadline_s) as dog:
        try:
            dog.connect()
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            raw = resp.read(max_bytes + 1)
        except (OSError, http.client.HTTPException):
            if dog.passed:
                raise TimeoutError(f"no answer within {deadline_s:g} s") from None
            raise
        finally:
            conn.close()
        if dog.passed:  # the cut ended the read early: what came is not the whole body
            raise TimeoutError(f"no answer within {deadline_s:g} s")
    return resp.status, raw if len(raw) <= max_bytes else None
