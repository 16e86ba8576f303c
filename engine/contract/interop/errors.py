"""The probe's one error, why a connection failed, and a server's error text as one short line.

ProbeError is an EngineError with a key for the app's translation (err_<key> in lesson/text);
`params["request_id"]` names the request it hit, so the other requests' results are kept.
"""

from __future__ import annotations

import errno
import http.client
import json
import socket
import ssl

from engine.contract.errors import EngineError
from engine.contract.limits import load_json

MAX_DETAIL_CHARS = 300  # of a server's error text, in a message
MAX_SHOWN_CHARS = 80  # of a server's value (a chunk, a field), in a message


class ProbeError(EngineError):
    """One request (or the whole probe) could not be measured; `params["request_id"]` names it."""


CONNECTION_CAUSES = ("refused", "no_host", "reset", "tls", "protocol", "other")


def connection_cause(err: BaseException) -> str:
    """Why a connection failed, as one of CONNECTION_CAUSES (a page words it; the OS text stays detail)."""
    if isinstance(err, ConnectionRefusedError) or getattr(err, "errno", None) == errno.ECONNREFUSED:
        return "refused"
    if isinstance(err, socket.gaierror):
        return "no_host"
    if isinstance(err, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
        return "reset"
    if isinstance(err, ssl.SSLError):
        return "tls"
    if isinstance(err, http.client.HTTPException):
        return "protocol"
    return "other"


def error_detail(raw: bytes, mask) -> str:
    """A server's error body as one short line: its JSON message when it has one."""
    text = raw.decode("utf-8", "replace")
    try:
        data = load_json(text)
        if isinstance(data, dict):
            err = data.get("error", data.get("detail", data.get("message", text)))
            text = err.get("message", json.dumps(err)) if isinstance(err, dict) else str(err)
        elif isinstance(data, str):  # {"error": "text"} as transformers serve streams it
            text = data
    except ValueError:  # not JSON, or JSON over a limit (LimitError): the text as it came
        pass
    text = " ".join(mask(str(text)).split())
    return text[:MAX_DETAIL_CHARS] + ("…" if len(text) > MAX_DETAIL_CHARS else "")
