"""A hostile OpenAI-compatible server for the probe's tests: it misbehaves by the prompt it is sent.

Local only (127.0.0.1, a free port the OS picks), and it stops by itself after `lifetime_s` even
when a test (or the code under test) never lets go of it: every endless answer checks the stop
flag between writes, so no handler outlives the server. One behaviour per prompt (PROMPTS), the
models list and /metrics by the server's own setting (MODELS, METRICS):

    ok              3 pieces (巴 黎 。), finish "length", usage {prompt 4, completion 3}, [DONE]
    endless         a piece every 5 ms, never a finish
    trickle         one byte every 0.2 s of a data line that never ends: never silent for a 0.5 s timeout
    trickle-head    the status line and headers one byte every 0.2 s
    huge-line       one data line of 200 MB, never a newline
    huge-body       data chunks of 64 KB of text each, fast: 200 MB in all
    keepalive       ": keep-alive" comments of 64 KB, fast, for ever
    text-int        {"text": 123} (chat: {"delta": {"content": 123}})
    choices-str     "choices": "abc";  choice-int: "choices": [7];  delta-list (chat): "delta": []
    finish-int      "finish_reason": 7
    usage-list      the last usage chunk "usage": [4, 3];  usage-str: "prompt_tokens": "four"
    usage-float     "prompt_tokens": 5e7 (a float);  usage-huge: "prompt_tokens": 50000000 (over the limit)
    usage-big       "prompt_tokens": 1000000 (within it: a count, kept as one)
    deep            a chunk nested 1000 deep;  longnum: a 5000-digit number;  nan: NaN
    echo-key        the API key streamed whole, split over three pieces, in usage and in finish_reason
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROMPTS = ("ok", "endless", "trickle", "trickle-head", "huge-line", "huge-body", "keepalive", "text-int",
           "choices-str", "choice-int", "delta-list", "finish-int", "usage-list", "usage-str", "usage-float",
           "usage-huge", "usage-big", "deep", "longnum", "nan", "echo-key")
MODELS = ("ok", "hang", "trickle", "huge", "id-int", "echo-key")
METRICS = ("none", "ok", "hang", "trickle", "huge")
PIECES = ("巴", "黎", "。")
MB = 1 << 20


class Stopped(Exception):
    """The server is stopping: an endless answer ends here."""


class Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen_auth: list[str] = []

    def log_message(self, *args):  # quiet
        pass

    # --- writing, with the stop flag checked at every write ---
    def _write(self, raw: bytes) -> None:
        if self.server.stopping.is_set():
            raise Stopped
        self.wfile.write(raw)
        self.wfile.flush()

    def _event(self, data) -> None:
        self._write(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode())

    def _slowly(self, raw: bytes, every_s: float = 0.2) -> None:
        for i in range(len(raw)):
            self._write(raw[i:i + 1])
            time.sleep(every_s)

    def _json(self, status: int, data) -> None:
        raw = json.dumps(data).encode()
        self.close_connection = True
        self._write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(raw)}\r\n"
                    "Connection: close\r\n\r\n".encode() + raw)

    def _sse_headers(self) -> None:
        self._write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        self.close_connection = True

    def _key(self) -> str:
        return self.headers.get("Authorization", "").removeprefix("Bearer ")

    def _chunk(self, text=None, finish=None, **extra) -> dict:
        choice = ({"index": 0, "delta": {} if text is None else {"content": text}, "finish_reason": finish}
                  if self.chat else {"index": 0, "text": "" if text is None else text, "finish_reason": finish})
        return {"id": "x", "object": "chunk", "choices": [choice], **extra}

    def _finish(self, usage=None) -> None:
        self._event(self._chunk(finish="length"))
        usage = {"prompt_tokens": 4, "completion_tokens": 3} if usage is None else usage
        self._event({"id": "x", "choices": [], "usage": usage})
        self._event("[DONE]")

    # --- GET: the models list and /metrics ---
    def do_GET(self):
        with contextlib.suppress(Stopped, OSError):
            if self.path == "/v1/models":
                self._models(self.server.models)
            elif self.path == "/metrics" and self.server.metrics != "none":
                self._metrics(self.server.metrics)
            else:
                self._json(404, {"detail": "Not Found"})

    def _models(self, mode: str) -> None:
        if mode == "hang":
            self._write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
            while True:
                self._write(b"")
                time.sleep(0.05)
        if mode == "trickle":
            self._write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n"
                        b"Connection: close\r\n\r\n")
            self._slowly(b" " * 100000, 0.1)
        ids = {"ok": ["toy"], "huge": ["toy"] + ["m" * 1000] * 2000, "id-int": ["toy", 123],
               "echo-key": ["toy", f"listed {self._key()}"]}[mode]
        self._json(200, {"object": "list", "data": [{"id": i, "object": "model"} for i in ids]})

    def _metrics(self, mode: str) -> None:
        text = "vllm:num_requests_running 1.0\nvllm:num_requests_waiting 0.0\nvllm:kv_cache_usage_perc 0.1\n"
        if mode in ("hang", "trickle"):
            self._write(f"HTTP/1.1 200 OK\r\nContent-Length: {10 * MB}\r\nConnection: close\r\n\r\n".encode())
            while True:
                self._write(b"#" if mode == "trickle" else b"")
                time.sleep(0.2)
        if mode == "huge":
            text += "# " + "x" * (8 * MB) + "\n"
        raw = text.encode()
        self._write(f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {len(raw)}\r\n\r\n".encode()
                    + raw)

    # --- POST: one completion, misbehaving by its prompt ---
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Hostile.seen_auth.append(self.headers.get("Authorization", ""))
        self.chat = self.path.endswith("/chat/completions")
        prompt = body["messages"][0]["content"] if self.chat else body["prompt"]
        self.close_connection = True
        with contextlib.suppress(Stopped, OSError):
            if prompt == "trickle-head":
                return self._slowly(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" * 1000)
            self._sse_headers()
            self._answer(prompt)

    def _answer(self, prompt: str) -> None:
        if prompt in ANSWERS:
            return ANSWERS[prompt](self)
        if prompt in BAD_USAGE:  # the last usage chunk, as a server sends it: nothing corrects it later
            return self._ok(BAD_USAGE[prompt])
        bad = BAD_CHUNKS[prompt](self)
        self._event(self._chunk(PIECES[0]))
        self._event(bad if isinstance(bad, str) else json.dumps(bad))
        self._event(self._chunk(PIECES[1]))
        self._finish()

    def _ok(self, usage=None) -> None:
        for piece in PIECES:
            self._event(self._chunk(piece))
            time.sleep(0.01)
        self._finish(usage)

    def _endless(self) -> None:
        while True:
            self._event(self._chunk("x"))
            time.sleep(0.005)

    def _trickle(self) -> None:
        self._event(self._chunk(PIECES[0]))
        self._slowly(b'data: {"choices": [{"text": "' + b"x" * 100_000)  # one line, never its newline

    def _huge_line(self) -> None:
        self._write(b'data: {"choices": [{"text": "')
        for _ in range(200):
            self._write(b"x" * MB)

    def _huge_body(self) -> None:
        for _ in range(200 * 16):
            self._event(self._chunk("x" * (64 << 10)))
        self._finish()

    def _keepalive(self) -> None:
        while True:
            self._write(b": " + b"k" * (64 << 10) + b"\n")

    def _echo_key(self) -> None:
        key = self._key()
        third = max(1, len(key) // 3)
        for piece in (f"key {key} ", key[:third], key[third:2 * third], key[2 * third:], " end"):
            self._event(self._chunk(piece, note=key))
        self._event(self._chunk(finish=f"length {key}"))
        self._event({"id": key, "choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 5, "echo": key}})
        self._event("[DONE]")


ANSWERS = {"ok": Hostile._ok, "endless": Hostile._endless, "trickle": Hostile._trickle,
           "huge-line": Hostile._huge_line, "huge-body": Hostile._huge_body, "keepalive": Hostile._keepalive,
           "echo-key": Hostile._echo_key}
# a bad chunk between two good ones: a dict (sent as JSON) or raw text
BAD_CHUNKS = {
    "text-int": lambda h: h._chunk(123),
    "choices-str": lambda h: {"id": "x", "choices": "abc"},
    "choice-int": lambda h: {"id": "x", "choices": [7]},
    "delta-list": lambda h: {"id": "x", "choices": [{"index": 0, "delta": [], "text": []}]},
    "finish-int": lambda h: h._chunk("a", finish=7),
    "deep": lambda h: "[" * 1000 + "]" * 1000,
    "longnum": lambda h: '{"choices": [], "usage": {"prompt_tokens": ' + "9" * 5000 + "}}",
    "nan": lambda h: '{"choices": [], "usage": {"prompt_tokens": NaN}}',
}
BAD_USAGE = {"usage-list": [4, 3], "usage-str": {"prompt_tokens": "four", "completion_tokens": 3},
             "usage-float": {"prompt_tokens": 5e7, "completion_tokens": 3},
             "usage-huge": {"prompt_tokens": 50_000_000, "completion_tokens": 3},
             "usage-big": {"prompt_tokens": 1_000_000, "completion_tokens": 3}}


@contextlib.contextmanager
def hostile(models: str = "ok", metrics: str = "none", lifetime_s: float = 60.0):
    """The base URL of a fresh `Hostile` server on a free local port. It stops on exit, or by itself
    after `lifetime_s` (every endless answer ends then too)."""
    assert models in MODELS and metrics in METRICS
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    server.daemon_threads = True
    server.models, server.metrics, server.stopping = models, metrics, threading.Event()

    def stop() -> None:
        server.stopping.set()
        server.shutdown()

    timer = threading.Timer(lifetime_s, stop)
    timer.daemon = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    timer.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        timer.cancel()
        if not server.stopping.is_set():
            stop()
        server.server_close()
