"""`python -m engine <command>`: the parser, and one module per command.

    python -m engine trace --prompt 法国的首都是 --max-new-tokens 8     one request, every forward pass
    python -m engine cost --prompt-len 512 --context 512               FLOPs, bytes and device floors
    python -m engine sweep --kind prefill                              one phase measured across a range
    python -m engine serve --scenario burst-16 --policy chunked        many requests on the serving engine
    python -m engine probe --endpoint URL --model NAME --scenario S    a real server, measured from the client
    python -m engine worker --token-file PATH                          the engine worker (docs/worker.md)
    python -m engine record --out assets/gallery                       the gallery set, recorded on this machine

A command is a module engine/cli/<name>.py with

    NAME = "<name>"
    def add_parser(sub) -> None        # sub.add_parser(NAME, help=...), then its arguments
    def run(args) -> int               # prints its output; returns the exit status

and one line naming it in COMMANDS below. Its module imports at the top only what builds the
parser (no torch: `--help` is instant and `probe` runs where torch is absent); `run` imports the
engine it drives. An EngineError from `run` prints one line, `error: ...`, and exits 2, as a bad
argument does (common.Parser).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from engine.cli.common import Parser
from engine.contract.errors import EngineError
from engine.contract.limits import check_text

COMMANDS = (  # engine/cli/<name>.py, in the order --help lists them
    "trace",
    "cost",
    "sweep",
    "serve",
    "probe",
    "worker",
    "record",
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m engine", description="Trace Prefill and Decode on a real model.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name in COMMANDS:
        command = importlib.import_module(f".{name}", __name__)
        command.add_parser(sub)
        sub.choices[command.NAME].set_defaults(handler=command.run)  # the chosen one runs
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        for number, text in enumerate(argv, start=1):  # bytes that are not UTF-8 arrive as lone surrogates
            check_text(f"argument {number}", text)
        args = build_parser().parse_args(argv)
        return args.handler(args)
    except EngineError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
