"""``veil demo`` and ``veil report``: registered on the root app."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app
from .common import FORCE, SEED, done, options_named, quiet


@app.command("demo")
@options_named({"seed": "--seed"})
def demo(
    output: Path = typer.Option(Path("report"), "--output", "-o",
                                help="Folder for report/index.html and its data."),
    seed: Optional[int] = SEED,
    quick: bool = typer.Option(False, "--quick", help="Smaller sizes (for tests)."),
    force: bool = FORCE,
) -> None:
    """Run every capability on embedded synthetic data and write an HTML report."""
    from ..errors import ParameterError
    from ..report.demo import run_demo

    if output.is_symlink():
        raise ParameterError(f"--output: {str(output)!r} is a symbolic link; veil never writes "
                             "through a link")
    if not output.parent.is_dir():  # like every command: the output's folder must exist
        raise ParameterError(f"--output: folder {str(output.parent)!r} does not exist")
    if (output / "index.html").exists() and not force:
        raise ParameterError(f"--output: {str(output)!r} already holds a report; pass --force "
                             "to replace it")

    index = run_demo(output, seed=seed, quick=quick, progress=not quiet())
    done({"report": str(index)}, f"report written to {index}")


@app.command("report")
def report(run_dir: Path = typer.Argument(..., help="Folder of a demo, bench or batch run.")) -> None:
    """Rebuild the HTML report of a run from its saved results."""
    from ..report.html import rebuild_report

    index = rebuild_report(run_dir)
    done({"report": str(index)}, f"report written to {index}")
