"""What can go wrong between a page and its engine worker, and how engine errors cross the wire.

Every class here is an EngineError (a key and plain params, engine/contract/errors.py), so a page
translates it like any other engine error (its words are `err_<key>`). An engine error the
worker raises (an empty prompt, a model folder it refuses) travels as (class, key, params,
message) and is raised again on the client as the same class (`error_from_wire`).
"""

from __future__ import annotations

import math
import sys
from typing import Any

from engine.contract.errors import EngineError, KeyedError


class EngineWorkerError(EngineError):
    """Talking to the engine worker went wrong (not the run's own input)."""


class WorkerUnreachable(EngineWorkerError):
    """No worker answers at the address (it is not running, or the network is in the way).
    params: address ("HOST:PORT"), reason (the operating system's words), local (the app's own worker:
    it was started again, so the advice is to run again, not to start one)."""

    def __init__(self, address: str, reason: str, local: bool = False) -> None:
        super().__init__("engine_unreachable", f"no engine worker answers at {address}: {reason}",
                         address=address, reason=reason, local=local)


class WorkerSilent(EngineWorkerError):
    """The worker stopped answering during a call: nothing came, not even its heartbeat, for `seconds`
    (or the call ran past its longest time). params: address, seconds, local (the app's own worker,
    which was then stopped and started again)."""

    def __init__(self, address: str, seconds: float, local: bool = False) -> None:
        super().__init__("engine_silent", f"the engine worker at {address} stopped answering (nothing for "
                         f"{seconds:.0f} s)", address=address, seconds=round(seconds), local=local)


class RunStalled(EngineWorkerError):
    """The engine stood still during this run (the worker's clock jumped `seconds`, or its heartbeat
    stopped that long): a pass timed across it is not a measurement, so the run is discarded."""

    def __init__(self, seconds: float) -> None:
        super().__init__("engine_stalled", f"the engine stood still for {seconds:.1f} s during this run; it was "
                         "discarded, not drawn", seconds=round(seconds, 1))


class WorkerAuthError(EngineWorkerError):
    """The worker refused this client's token (wrong or missing), or did not prove it holds it.
    params: address."""

    def __init__(self, address: str) -> None:
        super().__init__("engine_refused", f"the engine worker at {address} refused this client's token "
                                           "(wrong or missing)", address=address)


class WorkerRestarted(EngineWorkerError):
    """The local worker had stopped (exit code `exit_code`) and a new one was started; `during_run`:
    it stopped while this call was running. Runs finished before it are not lost; this one is."""

    def __init__(self, exit_code: int | None, during_run: bool) -> None:
        super().__init__("engine_restarted", f"the engine worker stopped (exit code {exit_code}) and a new one "
                         "was started; run again", exit_code=exit_code, during_run=during_run)


class WorkerStartError(EngineWorkerError):
    """A local worker did not start (it exited, or did not say it was ready in time).
    params: reason."""

    def __init__(self, reason: str) -> None:
        super().__init__("engine_start", f"the engine worker did not start: {reason}", reason=reason)


class ProtocolError(EngineWorkerError):
    """A message that is not this protocol's (malformed JSON, an unknown type or method)."""


class ProtocolVersionError(ProtocolError):
    """The two ends speak different protocol versions (an app and a worker from different releases).
    params: ours, theirs."""

    def __init__(self, ours: int, theirs: Any) -> None:
        super().__init__("protocol_version", f"protocol version {theirs!r} refused; this side speaks version "
                         f"{ours}: run the same release on both ends", ours=ours, theirs=str(theirs))


class RunCancelled(EngineWorkerError):
    """The call was cancelled (by its client, or because its connection closed) before it finished."""

    def __init__(self) -> None:
        super().__init__("run_cancelled", "the run was cancelled")


class WorkerFailure(EngineWorkerError):
    """An unexpected error inside the worker (a bug, not the visitor's input).
    params: error (its class name), reason (its first line)."""


class WorkerSetupError(EngineWorkerError):
    """A worker or client setting that cannot work (an address that is not HOST:PORT, an unreadable
    or short token, a public address without a token)."""


# --- across the wire ----------------------------------------------------------------

def error_to_wire(err: BaseException) -> dict[str, Any]:
    """An exception as plain data. A KeyedError keeps its class, key and params; anything else
    becomes a WorkerFailure naming its class and first line."""
    if isinstance(err, KeyedError):
        cls = type(err)
        return {"class": f"{cls.__module__}.{cls.__qualname__}", "key": err.key,
                "params": {k: plain_param(v) for k, v in err.params.items()}, "message": str(err)}
    reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return {"class": f"{WorkerFailure.__module__}.{WorkerFailure.__qualname__}", "key": "engine_internal",
            "params": {"error": type(err).__name__, "reason": reason},
            "message": f"the engine worker failed: {type(err).__name__}: {reason}"}


def plain_param(value: Any) -> Any:
    """A param JSON can carry: numbers, text, booleans, None and lists of them; str() of the rest."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return [plain_param(v) for v in value]
    return str(value)


def error_from_wire(data: Any) -> KeyedError:
    """The exception the worker raised, as the same class where this side knows it (a KeyedError
    subclass from an `engine` module it has imported), else an EngineError with the same key and
    params (a page translates it by its key all the same)."""
    if not isinstance(data, dict) or not isinstance(data.get("key"), str):
        return ProtocolError("protocol_malformed", "an error message without a key", why="error")
    params = data.get("params") if isinstance(data.get("params"), dict) else {}
    message = str(data.get("message") or data["key"])
    err = KeyedError.__new__(_error_class(data.get("class")))
    KeyedError.__init__(err, data["key"], message, **params)  # the base's fields; a subclass __init__ may differ
    return err


def _error_class(name: Any) -> type[KeyedError]:
    """The KeyedError subclass `module.Qualname` names, looked up only in this package's modules that
    this process has imported already (a name from the wire never makes it import anything)."""
    if not isinstance(name, str) or not name.startswith("engine."):
        return EngineError
    module_name, _, qualname = name.rpartition(".")
    cls = getattr(sys.modules.get(module_name), qualname, None)
    return cls if isinstance(cls, type) and issubclass(cls, KeyedError) else EngineError
