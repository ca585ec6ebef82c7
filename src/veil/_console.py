"""The ``veil`` console script's entry point.

It is kept apart from :mod:`veil.cli` so that a Ctrl-C that arrives while the command is
still importing (numpy, DuckDB, typer: a few hundred milliseconds) ends like one that
arrives later: ``veil: interrupted`` and exit status 130, not a Python traceback and death by
SIGINT. Importing this module imports nothing heavy (``veil/__init__`` is lazy).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Import the command line and run it; see :func:`veil.cli.main` for the exit codes."""
    try:
        from veil.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("veil: interrupted\n")
        raise SystemExit(130) from None
    cli_main(argv)
