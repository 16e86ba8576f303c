"""A small stdlib HTTP server that speaks the OpenAI completions API and misbehaves on purpose,
by the prompt it is sent (cut streams, non-JSON chunks, HTTP errors, a server that never
answers, an error inside the stream), for the probe's error cases and the serving lab's probe panel."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HANG_S = 10.0  # "hang" and "hangmid" go silent this long: far past any probe timeout a test sets
METRICS_TEXT = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="m"}} {running}
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{engine="0",model_name="m"}} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{engine="0",model_name="m"}} {usage}
vllm:prompt_tokens_total{{engine="0",model_name="m"}} 1234.0
"""


class Misbehaving(BaseHTTPRequestHandler):
    """Answers by the prompt: ok, slow, cut, nonjson, http500, hang, hangmid, streamerror, echo-auth."""

    protocol_version = "HTTP/1.1"
    seen_auth: list[str] = []  # Authorization headers received (all servers)
    seen_prompts: list = []

    def log_message(self, *args):  # quiet
        pass

    def _json(self, status: int, data) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self):
        if self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": "toy", "object": "model"}]})
        elif self.path == "/metrics" and self.server.with_metrics:
            with self.server.lock:
                n = self.server.running  # streams open on this server now
            raw = METRICS_TEXT.format(running=float(n), usage=n / 10).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        else:
            self._json(404, {"detail": "Not Found"})

    def _event(self, data: str) -> None:
        self.wfile.write(f"data: {data}\n\n".encode())
        self.wfile.flush()

    def _chunk(self, text: str | None = None, finish: str | None = None) -> str:
        choice = ({"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish} if self.chat
                  else {"index": 0, "text": text or "", "finish_reason": finish})
        return json.dumps({"id": "x", "object": "chunk", "choices": [choice]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Misbehaving.seen_auth.append(self.headers.get("Authorization", ""))
        Misbehaving.seen_prompts.append(body.get("prompt"))
        self.chat = self.path.endswith("/chat/completions")
        prompt = body["messages"][0]["content"] if self.chat else body["prompt"]
        if prompt == "http500":
            return self._json(500, {"error": {"message": "the engine died", "type": "InternalServerError"}})
        if prompt == "wrong-model":
            return self._json(404, {"error": {"message": f"The model `{body['model']}` does not exist."}})
        if prompt == "echo-auth":
            return self._json(401, {"error": {"message": f"bad key {self.headers.get('Authorization')}"}})
        if prompt == "hang":
            time.sleep(HANG_S)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        with self.server.lock:
            self.server.running += 1
        counted = True
        try:
            if self.chat:
                self._event(json.dumps({"id": "x", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}))
            pieces = ["巴", "黎", "。"] if prompt != "slow" else ["a", "b", "c", "d", "e"]
            for i, piece in enumerate(pieces):
                if prompt == "nonjson" and i == 1:
                    self._event("<html>oops</html>")
                if prompt == "streamerror" and i == 1:
                    self._event(json.dumps({"error": {"message": "out of memory", "code": 500}}))
                    return
                if prompt == "streamerror-text" and i == 1:  # transformers serve's shape: {"error": "text"}
                    self._event(json.dumps({"error": "CUDA error: device-side assert"}))
                    return
                if prompt == "hangmid" and i == 1:
                    time.sleep(HANG_S)
                    return
                if prompt == "cut" and i == 2:
                    return  # the connection closes with no finish_reason and no [DONE]
                self._event(self._chunk(piece))
                time.sleep(0.15 if prompt == "slow" else 0.01)
            with self.server.lock:  # done on the server before its last events go out, as an engine frees a
                self.server.running -= 1  # finished request before its final output reaches the client
                counted = False
            self._event(self._chunk(finish="length"))
            self._event(json.dumps({"id": "x", "choices": [], "usage": {"prompt_tokens": 4,
                                                                          "completion_tokens": len(pieces)}}))
            self._event("[DONE]")
        finally:
            if counted:
                with self.server.lock:
                    self.server.running -= 1


@contextlib.contextmanager
def misbehaving(with_metrics: bool = False):
    """The base URL of a fresh `Misbehaving` server on a free local port; shut down on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Misbehaving)
    server.daemon_threads = True
    server.with_metrics = with_metrics
    server.running, server.lock = 0, threading.Lock()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


