"""``veil demo`` and ``veil report``: registered on the root app."""

from __future__ import annotations

import os
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

    # built in a hidden folder beside the output and moved into place when complete: an
    # interrupted demo left sections/*.json without index.html, which `veil report` then
    # turned into a normal-looking report of the sections that had finished
    import shutil
    import tempfile

    from ..report.demo import DemoSectionError

    tmp = Path(tempfile.mkdtemp(prefix=f".veil-tmp-{output.name}.", dir=output.parent))
    failed = None
    try:
        try:
            run_demo(tmp, seed=seed, quick=quick, progress=not quiet())
        except DemoSectionError as exc:  # the report shows the failures: publish it, then fail
            failed = exc
        if output.exists() or output.is_symlink():
            if output.is_symlink() or not output.is_dir():
                raise ParameterError(f"--output: {str(output)!r} is not a folder")
            old = Path(tempfile.mkdtemp(prefix=f".veil-tmp-{output.name}.old.",
                                        dir=output.parent))
            os.rename(output, old / "report")
            os.rename(tmp, output)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    index = output / "index.html"
    if failed is not None:
        raise DemoSectionError(index, failed.failures) from None
    done({"report": str(index)}, f"report written to {index}")


@app.command("report")
def report(run_dir: Path = typer.Argument(..., help="Folder of a demo, bench or batch run.")) -> None:
    """Rebuild the HTML report of a run from its saved results."""
    from ..report.html import rebuild_report

    index = rebuild_report(run_dir)
    done({"report": str(index)}, f"report written to {index}")
