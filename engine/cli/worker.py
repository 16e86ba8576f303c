"""`python -m engine worker`: the engine worker, the process that holds the models and measures.

    python -m engine worker --token-file ~/.prefill-decode-token               127.0.0.1:8600
    python -m engine worker --host 0.0.0.0 --token-file ~/.prefill-decode-token a GPU box for remote pages

The app starts one of its own (engine/contract/worker/local.py, `--stdin-key`); start one by hand to
measure on another machine, and point the app at it with PREFILL_DECODE_ENGINE=HOST:PORT and the
same token (PREFILL_DECODE_ENGINE_TOKEN_FILE). A worker always needs a token: a file
(--token-file) or PREFILL_DECODE_ENGINE_TOKEN; it is never printed or written. docs/worker.md.
"""

from __future__ import annotations

import argparse
import logging
import sys

from engine.cli.common import add_device_arguments
from engine.contract.worker.errors import WorkerSetupError
from engine.contract.worker.local import announce_ready, exit_when_stdin_closes, read_stdin_key
from engine.contract.worker.protocol import MIN_TOKEN_CHARS, ModelRef, is_loopback, read_token

NAME = "worker"
DEFAULT_PORT = 8600


def add_parser(sub) -> None:
    add_arguments(sub.add_parser(NAME, help="start an engine worker: the process that holds the models and "
                                            "runs every measured forward pass (docs/worker.md)"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every network)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0: any "
                                                                        "free port)")
    parser.add_argument("--token-file", default=None, metavar="PATH",
                        help=f"the shared token: the file's first line, at least {MIN_TOKEN_CHARS} characters "
                             "(else PREFILL_DECODE_ENGINE_TOKEN)")
    parser.add_argument("--stdin-key", action="store_true",
                        help="read the key from stdin's first line and exit when stdin closes (the app's own "
                             "local worker)")
    parser.add_argument("--preload", action="append", default=None, metavar="CHOICE",
                        help="load and warm this model before the first call (repeatable; default: default; "
                             "'none': none)")
    add_device_arguments(parser)


def run(args: argparse.Namespace) -> int:
    authkey = read_stdin_key() if args.stdin_key else read_token(args.token_file)
    if authkey is None:  # checked before torch loads: a missing token is said within a second
        where = "this machine" if is_loopback(args.host) else args.host
        raise WorkerSetupError("engine_no_token", f"a worker on {where} needs a token: --token-file PATH or "
                               "PREFILL_DECODE_ENGINE_TOKEN", host=args.host)
    if args.stdin_key:
        exit_when_stdin_closes()
    from engine.runtime.worker.server import serve_worker  # torch and transformers load here, not with the parser

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="engine worker %(levelname)s: %(message)s")
    choices = ["default"] if args.preload is None else [c for c in args.preload if c != "none"]
    preload = tuple(ModelRef(choice, args.device, args.dtype) for choice in choices)
    serve_worker(args.host, args.port, authkey, preload=preload, on_ready=announce_ready if args.stdin_key else None)
    return 0
