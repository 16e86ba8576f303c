"""`python -m engine <command>`: see engine/cli/ (the parser and one module per command)."""

import sys

from engine.cli import main

if __name__ == "__main__":
    sys.exit(main())
