"""Where the probe sends and how: the endpoint URL read once (credentials never shown) and the probe's settings."""

from __future__ import annotations

import http.client
import math
import os
import ssl
import urllib.parse
from dataclasses import dataclass

from engine.contract.errors import InputError
from engine.contract.interop.errors import ProbeError
from engine.contract.serving.trace import SLO

APIS = ("completions", "chat")


@dataclass(frozen=True)
class Endpoint:
    scheme: str
    host: str
    port: int
    base_path: str  # ".../v1"

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        parts = urllib.parse.urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ProbeError("probe_endpoint", f"the endpoint must be an http:// or https:// URL, got {_shown(url)!r}",
                             endpoint=_shown(url))
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise ProbeError("probe_endpoint", f"the endpoint has a bad port: {_shown(url)!r}",
                             endpoint=_shown(url)) from None
        path = parts.path.rstrip("/")
        if not path.endswith("/v1"):
            path += "/v1"
        return cls(parts.scheme, parts.hostname, port, path)

    @property
    def shown(self) -> str:
        """The URL without credentials, for messages and results."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.base_path}"

    def connection(self, timeout_s: float) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout_s,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)


def _shown(url: str) -> str:
    """A URL with any user:password@ removed."""
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password:
        netloc = parts.netloc.rsplit("@", 1)[1]
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return url


@dataclass(frozen=True)
class ProbeConfig:
    endpoint: str
    model: str
    api: str = "completions"
    concurrency: int | None = None  # most requests in flight; None: no limit
    timeout_s: float = 60.0  # seconds without a byte before a request fails (its deadline: stream_limits)
    api_key_env: str | None = None  # the NAME of the environment variable holding the key
    send_ignore_eos: bool = True  # vLLM / SGLang accept ignore_eos; transformers serve refuses unknown fields
    metrics_interval_s: float = 0.25
    temperature: float = 0.0
    slo: SLO = SLO()

    def __post_init__(self) -> None:
        if self.api not in APIS:
            raise InputError("bad_probe_setting", f"--api must be one of {', '.join(APIS)}, got {self.api!r}",
                             name="api")
        if self.concurrency is not None and self.concurrency < 1:
            raise InputError("bad_probe_setting", f"--concurrency must be at least 1, got {self.concurrency}",
                             name="concurrency")
        if not (self.timeout_s > 0 and math.isfinite(self.timeout_s)):
            raise InputError("bad_probe_setting", f"--timeout must be a positive number of seconds, got "
                                                  f"{self.timeout_s}", name="timeout")
        if not self.model.strip():
            raise InputError("bad_probe_setting", "--model is empty", name="model")
        Endpoint.parse(self.endpoint)

    def api_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ProbeError("probe_api_key_env", f"the environment variable {self.api_key_env} is not set "
                                                  "(it should hold the API key)", name=self.api_key_env)
        return key
