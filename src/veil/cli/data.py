"""``veil data synth``: write the embedded synthetic data sets to files, to try veil on."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import typer

from .common import FORCE, OUTPUT_FORMAT, done, options_named, output_format, writes_files

app = typer.Typer(no_args_is_help=True,
                  help="Synthetic data to try veil on (no network, nothing from ../shared).")

KINDS = ("checkins", "trajectories", "points", "census", "categories")
#: The most rows a synthetic data set may have (--rows, --users, --users x --steps): about
#: 8 GB of memory for a census; numpy refused 1e23 with "Maximum allowed dimension exceeded".
MAX_ROWS = 10_000_000


@app.command("synth")
@writes_files()
@options_named({"seed": "--seed"})
def synth(
    kind: str = typer.Argument(..., help="checkins, trajectories, points, census or categories."),
    output: Path = typer.Option(..., "--output", "-o", help="CSV, Parquet or JSON file."),
    fmt: Optional[str] = OUTPUT_FORMAT,
    users: int = typer.Option(200, "--users", help="Users (checkins, trajectories, points)."),
    rows: int = typer.Option(5000, "--rows", help="Rows (census)."),
    steps: int = typer.Option(96, "--steps", help="Time steps per user (trajectories)."),
    seed: Optional[int] = typer.Option(
        None, "--seed", help="Makes the synthetic *data* reproducible (it is not private data)."),
    force: bool = FORCE,
) -> None:
    """Generate a synthetic data set (a fictional city, its visitors, or a census)."""
    from ..datasets import synthetic as syn
    from ..errors import ParameterError
    from ..io import write_table
    from ..random import make_rng
    from ..validation import check_choice, check_int

    check_choice(kind, "KIND", KINDS)
    check_int(users, "--users", minimum=1)
    check_int(rows, "--rows", minimum=1)
    check_int(steps, "--steps", minimum=1)
    for option, n in (("--rows", rows), ("--users", users)):
        if n > MAX_ROWS:
            raise ParameterError(f"{option} must be at most {MAX_ROWS:,}, got {n}")
    if kind == "trajectories" and users * steps > MAX_ROWS:
        raise ParameterError(f"--users x --steps must be at most {MAX_ROWS:,} rows, got "
                             f"{users} x {steps} = {users * steps}")
    rng = make_rng(seed=seed)
    if kind == "census":
        cols = syn.synthetic_census(rows, rng=rng)
    elif kind == "categories":
        tree = syn.category_tree()
        names = np.asarray(tree.names, dtype=object)
        parent = np.array([names[p] if p >= 0 else "" for p in tree.parent], dtype=object)
        cols = {"name": names.astype(str), "parent": parent.astype(str)}
    else:
        city = syn.synthetic_city(rng=rng)
        if kind == "checkins":
            ci = syn.synthetic_checkins(city, n_users=users, rng=rng)
            cols = ci.columns()
        else:
            tr = syn.synthetic_trajectories(city, n_users=users, n_steps=steps, rng=rng)
            cols = tr.columns()
            if kind == "points":  # one point per user: where they are at the first step
                first = tr.step == 0
                cols = {"user": tr.user[first], "lat": tr.lat[first], "lon": tr.lon[first]}
            else:
                cols = {"user": tr.user, "t": tr.step * tr.step_seconds, "lat": tr.lat,
                        "lon": tr.lon}
    if "time" in cols:
        cols["time"] = np.asarray(cols["time"]).astype("datetime64[s]").astype(str)
    if not output.parent.exists():
        raise ParameterError(f"--output: folder {str(output.parent)!r} does not exist")
    write_table(cols, output, format=output_format(fmt, output))
    n = len(next(iter(cols.values())))
    done({"kind": kind, "rows": int(n), "output": str(output)}, f"{kind}: {n:,} rows -> {output}")
