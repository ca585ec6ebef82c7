"""``veil demo``: run every capability on embedded synthetic data and write the report.

Each capability contributes a module ``veil.report.sections.<name>`` (listed in
:data:`veil.report.core.SECTION_MODULES`) with ``build(ctx) -> Section``.
:func:`run_demo` runs those that exist, each with its own independent random
stream, shows progress, saves every section as ``sections/<id>.json`` plus a
``meta.json`` and writes ``index.html`` (all atomically). A section that fails
does not stop the others: it appears in the report as failed with its error,
and :func:`run_demo` raises :class:`DemoSectionError` at the end (after the
report is written), so ``veil demo`` exits with a non-zero status (1, as for an
internal error: the input was fine, the code was not).
"""

from __future__ import annotations

import datetime as _dt
import importlib
import importlib.util
import json
import time
import traceback
import warnings
from pathlib import Path
from typing import Any, Sequence

from .. import __version__
from ..errors import ParameterError
from ..random import make_rng
from . import core
from .html import render_report, section_to_dict, unique_id, write_text_atomic

__all__ = ["run_demo", "DemoSectionError", "DEMO_TITLE"]

DEMO_TITLE = "veil demo: privacy-preserving publishing on embedded data"

_INTRO = (
    "veil publishes histograms, locations, trajectories, visit profiles and tables with a "
    "stated privacy guarantee. Each part below runs one capability on synthetic data generated "
    "on this machine (a fictional city, its people and a census-like table; nothing is "
    "downloaded), states the guarantee in plain words, and shows what it costs in accuracy. "
    "The numbers behind every figure are in a table under it, and each part ends with the "
    "command that runs it on your own data."
)


class DemoSectionError(RuntimeError):
    """One or more report sections failed; the report (with the failures shown) was written.

    Attributes
    ----------
    index : pathlib.Path
        The written ``index.html``.
    failures : list of (section id, error message)
    """

    def __init__(self, index: Path, failures: list[tuple[str, str]]):
        self.index = index
        self.failures = failures
        what = "; ".join(f"{sid}: {msg}" for sid, msg in failures)
        super().__init__(f"{len(failures)} report section(s) failed ({what}); the report "
                         f"showing the failures was written to {index}")


def _console():
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _module_id(module: str) -> str:
    return module.rsplit(".", 1)[-1]


def _build_one(module: str, ctx: core.DemoContext) -> dict[str, Any]:
    """Import ``module`` and build its section; failures become a failed-section dict.

    Warnings raised while building (a ``PrivacyWarning`` for an opted-in hazard, a
    numerical warning) are recorded and shown with the section.
    """
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = _build_guarded(module, ctx)
    seen: list[str] = []
    for w in caught:
        msg = f"{w.category.__name__}: {w.message}"
        if msg not in seen:
            seen.append(msg)
    if seen:
        d["warnings"] = seen[:20]
    d["module"] = module
    d["elapsed_s"] = round(time.perf_counter() - t0, 3)
    return d


def _build_guarded(module: str, ctx: core.DemoContext) -> dict[str, Any]:
    try:
        mod = importlib.import_module(module)
        build = getattr(mod, "build", None)
        if build is None:
            raise TypeError(f"{module} has no build(ctx) function")
        section = build(ctx)
        if not isinstance(section, core.Section):
            raise TypeError(f"{module}.build returned {type(section).__name__}, not a Section")
        d = section_to_dict(section)
        d["status"] = "ok"
        # round-trip through JSON now, so a section that cannot be saved fails here, visibly
        d = json.loads(json.dumps(d, allow_nan=False))
    except Exception as exc:  # noqa: BLE001 - a failing section must not stop the demo
        d = {"id": _module_id(module), "title": _module_id(module).replace("_", " ").capitalize(),
             "guarantee": "", "status": "failed",
             "error": f"{type(exc).__name__}: {exc}",
             "traceback": traceback.format_exc(limit=8)}
    return d


def run_demo(output_dir: str | Path, *, seed: int | None = None, quick: bool = False,
             modules: Sequence[str] | None = None, progress: bool = True,
             raise_on_failure: bool = True) -> Path:
    """Run every available report section and write ``output_dir/index.html``.

    Parameters
    ----------
    output_dir : path
        Created if needed. Receives ``index.html``, ``meta.json`` and
        ``sections/<id>.json``.
    seed : int, optional
        **For experiments only**: makes every draw reproducible, which removes
        the privacy of the outputs shown (the report says so). By default the
        randomness comes from the operating system.
    quick : bool
        Small sizes (tests, a first look).
    modules : sequence of str, optional
        Section modules to run, in order; default
        :data:`veil.report.core.SECTION_MODULES`. Modules that do not exist are
        skipped.
    progress : bool
        Show a progress display (step name and elapsed time) on stderr.
    raise_on_failure : bool
        Raise :class:`DemoSectionError` after writing the report when a section
        failed (the CLI then exits non-zero).

    Returns
    -------
    pathlib.Path
        The path of ``index.html``.

    Notes
    -----
    Each section receives its own child generator, spawned in module order
    from the demo's generator, so with a seed a section's output does not
    depend on which other sections exist.

    Examples
    --------
    >>> run_demo("report", quick=True)  # doctest: +SKIP
    PosixPath('report/index.html')
    """
    import matplotlib

    matplotlib.use("Agg")
    out = Path(output_dir)
    if out.exists() and not out.is_dir():
        raise ParameterError(f"output {str(out)!r} exists and is not a folder")
    (out / "sections").mkdir(parents=True, exist_ok=True)
    mods = list(core.SECTION_MODULES if modules is None else modules)
    rng = make_rng(seed=seed)
    children = rng.spawn(len(mods))
    present = []
    for m, child in zip(mods, children):
        try:
            found = importlib.util.find_spec(m) is not None
        except (ImportError, ValueError):  # parent package missing
            found = False
        if found:
            present.append((m, child))

    console = _console() if progress else None
    t_start = time.perf_counter()
    sections: list[dict[str, Any]] = []
    used_ids: set[str] = set()
    if console is not None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                       console=console, transient=True)
    else:
        bar = None

    def run_all() -> None:
        for i, (m, child) in enumerate(present, 1):
            name = _module_id(m)
            label = f"[{i}/{len(present)}] {name}"
            task = bar.add_task(label) if bar is not None else None

            def report_step(msg: str, _task=task, _label=label) -> None:
                if bar is not None:
                    bar.update(_task, description=f"{_label}: {msg}")

            ctx = core.DemoContext(rng=child, quick=quick, outdir=out, progress=report_step)
            d = _build_one(m, ctx)
            # two sections with one id must not overwrite each other's file
            sid = d["id"] = unique_id(str(d.get("id") or name), used_ids)
            sections.append(d)
            write_text_atomic(out / "sections" / f"{sid}.json", json.dumps(d, indent=1))
            if bar is not None:
                bar.remove_task(task)
            if console is not None:
                mark = "[green]ok[/]" if d["status"] == "ok" else "[red]FAILED[/]"
                extra = "" if d["status"] == "ok" else f"  {d['error']}"
                console.print(f"{mark} {name:<12} {d['elapsed_s']:6.2f} s{extra}",
                              markup=True, highlight=False)

    if bar is not None:
        with bar:
            run_all()
    else:
        run_all()

    meta = {
        "title": DEMO_TITLE,
        "kind": "demo",
        "veil_version": __version__,
        "seed": seed,
        "quick": bool(quick),
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "elapsed_s": round(time.perf_counter() - t_start, 2),
        "intro": _INTRO,
        "data": "synthetic, generated on this machine (veil.datasets.synthetic)",
        "sections": [{"id": d["id"], "module": d["module"], "status": d["status"],
                      "elapsed_s": d["elapsed_s"]} for d in sections],
        "skipped_modules": [m for m in mods if m not in {p for p, _ in present}],
    }
    write_text_atomic(out / "meta.json", json.dumps(meta, indent=1))
    index = write_text_atomic(out / "index.html", render_report(sections, DEMO_TITLE, meta))
    if console is not None:
        console.print(f"{len(sections)} section(s) in {meta['elapsed_s']:.1f} s", highlight=False)
    failures = [(d["id"], d["error"]) for d in sections if d["status"] == "failed"]
    if failures and raise_on_failure:
        raise DemoSectionError(index, failures)
    return index
