"""Options shared by every ``veil`` command, so they read the same everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

EPSILON = typer.Option(..., "--epsilon", "-e", help="Privacy budget epsilon (> 0).")
SEED = typer.Option(
    None, "--seed",
    help="FOR EXPERIMENTS ONLY: a fixed random seed makes the noise reproducible; "
         "never publish output produced with a known seed. Default: OS entropy.")
OUTPUT = typer.Option(..., "--output", "-o", help="Output file (written atomically).")
FORMAT = typer.Option("csv", "--format", "-f", help="Output format: csv, parquet or json.")




def output_path(path: Path) -> Path:
    """Resolve an output path (the parent folder must exist)."""
    from ..errors import ParameterError

    p = Path(path)
    if not p.parent.exists():
        raise ParameterError(f"--output: folder {str(p.parent)!r} does not exist")
    return p
