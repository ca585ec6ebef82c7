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
    _check_report_folder(output, force)

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
            _check_report_folder(output, force)  # again: the folder may have changed meanwhile
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


#: what ``veil demo`` writes in its folder; a folder holding anything else is not replaced
REPORT_ENTRIES = {"index.html": "file", "meta.json": "file", "sections": "folder"}


def _check_report_folder(output: Path, force: bool) -> None:
    """Refuse an ``--output`` the demo must not replace: a link or a file, a folder holding
    anything that is not part of a demo report (``veil demo -o mydocs`` deleted every file of
    an existing folder), or a report without ``--force``. A new or empty folder is fine."""
    from ..errors import ParameterError

    if output.is_symlink():
        raise ParameterError(f"--output: {str(output)!r} is a symbolic link; veil never writes "
                             "through a link")
    if not output.exists():
        return
    if not output.is_dir():
        raise ParameterError(f"--output: {str(output)!r} is not a folder")
    entries = sorted(os.scandir(output), key=lambda e: e.name)
    if not entries:
        return
    foreign = [e.name for e in entries if REPORT_ENTRIES.get(e.name) != (
        "folder" if e.is_dir(follow_symlinks=False) else
        "file" if e.is_file(follow_symlinks=False) else None)]
    sections = output / "sections"
    if not foreign and sections.is_dir() and not sections.is_symlink():
        foreign = [f"sections/{e.name}" for e in sorted(os.scandir(sections), key=lambda e: e.name)
                   if not (e.name.endswith(".json") and e.is_file(follow_symlinks=False))]
    if foreign:
        shown = ", ".join(repr(n) for n in foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        raise ParameterError(f"--output: {str(output)!r} holds {shown}, which is not part of a "
                             "veil report; nothing was changed: give a new or empty folder")
    if not force:
        raise ParameterError(f"--output: {str(output)!r} already holds a report; pass --force "
                             "to replace it")


@app.command("report")
def report(run_dir: Path = typer.Argument(..., help="Folder of a demo, bench or batch run.")) -> None:
    """Rebuild the HTML report of a run from its saved results."""
    from ..report.html import rebuild_report

    index = rebuild_report(run_dir)
    done({"report": str(index)}, f"report written to {index}")
