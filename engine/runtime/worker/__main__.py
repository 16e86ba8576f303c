"""`python -m engine.runtime.worker`: the same as `python -m engine worker` (engine/cli/worker.py)."""

from __future__ import annotations

import sys

from engine.cli import worker as command
from engine.cli.common import Parser
from engine.contract.errors import EngineError


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m engine.runtime.worker", description="The engine worker (docs/worker.md).")
    command.add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return command.run(args)
    except EngineError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # not when multiprocessing's spawn imports this module as __mp_main__
    sys.exit(main())
