"""``veil trajectory``: learn a Markov mobility model; release a trajectory by PIM or LM."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from .common import EPSILON, SEED

app = typer.Typer(no_args_is_help=True, help="Release locations under temporal correlations.")

BENCH_NAME = "temporal"


@app.command("model")
def model_cmd(
    inputs: List[Path] = typer.Argument(..., help="GeoLife .plt files or folders (searched "
                                        "recursively), or CSV files with time,lat,lon."),
    grid: str = typer.Option("beijing", "--grid", help="'beijing[:N]' (Beijing 4th ring, N x N, "
                             "default 50) or 'lon_min,lat_min,lon_max,lat_max,nx,ny'."),
    output: Path = typer.Option(..., "--output", "-o", help="Model file (.npz)."),
    empty_rows: str = typer.Option("self", "--empty-rows", help="Cells never left in the data: "
                                   "'self' (stay) or 'uniform'."),
    smoothing: float = typer.Option(0.0, "--smoothing", help="Pseudo-count added to every "
                                    "self-transition."),
) -> None:
    """Learn a first-order Markov model (consecutive fixes' cell transitions).

    The model is public in the PIM framework: learn it from data you may publish (many
    users' past trajectories), not from the trajectory you will release.
    """
    from ..errors import DataError
    from ..geo.temporal import MarkovModel, TemporalGrid, to_cells
    from ..geo.temporal.geolife import iter_geolife
    from ..geo.temporal.io import read_track

    g = TemporalGrid.parse(grid)
    if not output.parent.exists():
        raise DataError(f"--output: folder {str(output.parent)!r} does not exist")
    seqs = []
    for p in inputs:
        if p.is_dir():
            seqs.extend(to_cells(tr, g) for tr in iter_geolife(p))
        else:
            tr = read_track(p)
            seqs.append(g.cell_of(tr.lon, tr.lat))
    m = MarkovModel.from_trajectories(seqs, grid=g, empty_rows=empty_rows, smoothing=smoothing,
                                      meta={"n_sequences": len(seqs)})
    m.save(output)
    typer.echo(f"model: {g.nx}x{g.ny} grid, {len(seqs)} sequences, "
               f"{int(m.meta['n_transitions'])} transitions, {m.meta['n_empty_rows']} empty rows "
               f"-> {output}")


@app.command("release")
def release_cmd(
    input: Path = typer.Argument(..., help="A CSV with time,lat,lon (sorted by time) or a "
                                 "GeoLife .plt file."),
    epsilon: float = EPSILON,
    delta: float = typer.Option(..., "--delta", "-d", help="delta-location set: cells holding "
                                "1 - delta of the prior mass are protected (0 < delta < 1)."),
    mechanism: str = typer.Option("pim", "--mechanism", "-m", help="pim (Planar Isotropic) "
                                  "or lm (Laplace, L1 sensitivity)."),
    model: Path = typer.Option(..., "--model", help="Model from `veil trajectory model`."),
    grid: Optional[str] = typer.Option(None, "--grid", help="Expected grid; must equal the "
                                       "model's (a check)."),
    output: Path = typer.Option(..., "--output", "-o", help="Released points (written "
                                "atomically), with an OUTPUT.meta.json sidecar."),
    fmt: str = typer.Option("csv", "--format", "-f", help="csv or json."),
    on_invalid: str = typer.Option("error", "--on-invalid", help="NaN or out-of-region points: "
                                   "'error' (default) or 'drop' (counted in the sidecar)."),
    initial_lonlat: Optional[str] = typer.Option(
        None, "--initial-lonlat", help="LON,LAT of a PUBLIC starting point (the first prior "
        "is its cell). Default: uniform over the grid. Only pass a start the adversary may "
        "know: it is not protected."),
    seed: Optional[int] = SEED,
) -> None:
    """Release one noisy location per fix: epsilon-DP per timestamp within the delta-set."""
    from ..errors import ParameterError
    from ..geo.temporal import MarkovModel, TemporalGrid, release_trajectory
    from ..geo.temporal.io import clean_track, read_track, released_table, sidecar, write_atomic
    from ..random import make_rng
    from ..release import to_jsonable
    from ..validation import check_choice, check_delta, check_epsilon

    check_epsilon(epsilon)
    check_delta(delta)
    check_choice(mechanism, "--mechanism", ("pim", "lm"))
    fmt = check_choice(fmt, "--format", ("csv", "json"))
    check_choice(on_invalid, "--on-invalid", ("error", "drop"))
    if not output.parent.exists():
        raise ParameterError(f"--output: folder {str(output.parent)!r} does not exist")
    m = MarkovModel.load(model)
    if grid is not None:
        m.check_grid(TemporalGrid.parse(grid))
    track = read_track(input)
    t, cells, dropped = clean_track(track, m.grid, on_invalid=on_invalid)
    p0 = None
    if initial_lonlat is not None:
        import numpy as np

        try:
            lon0, lat0 = (float(v) for v in initial_lonlat.split(","))
        except ValueError:
            raise ParameterError(f"--initial-lonlat must be LON,LAT, got {initial_lonlat!r}"
                                 ) from None
        c0 = int(m.grid.cell_of([lon0], [lat0])[0])
        if c0 < 0:
            raise ParameterError(f"--initial-lonlat {initial_lonlat!r} is outside the grid")
        p0 = np.zeros(m.grid.n_cells)
        p0[c0] = 1.0
    if dropped:
        typer.echo(f"dropped {dropped} invalid point(s) (NaN or outside the grid)", err=True)
    r = release_trajectory(cells, model=m, epsilon=epsilon, delta=delta, mechanism=mechanism,
                           initial=p0, rng=make_rng(seed=seed) if seed is not None else None)
    meta = r.release.metadata()
    meta["input"] = {"path": str(input), "n_points": int(track.t.size),
                     "n_dropped_invalid": dropped}
    meta["seeded"] = seed is not None
    write_atomic(output, released_table(t, r.released_lonlat, r.set_sizes, fmt))
    write_atomic(output.with_name(output.name + ".json"), sidecar(to_jsonable(meta)))
    typer.echo(f"released {t.size} points with {mechanism} (epsilon={epsilon} per step, "
               f"delta={delta}) -> {output}")


def bench(
    epsilons: str = typer.Option("1", "--epsilons", help="Comma-separated eps values."),
    deltas: str = typer.Option("0.01", "--deltas", help="Comma-separated delta values."),
    steps: int = typer.Option(500, "--steps", help="Timestamps per trajectory."),
    reps: int = typer.Option(3, "--reps", help="Repetitions per trajectory."),
    max_traj: int = typer.Option(40, "--max-trajectories", help="Trajectories used."),
    model_kind: str = typer.Option("popular", "--model-kind", help="popular or personal."),
    seed: Optional[int] = SEED,
) -> None:
    """PIM vs LM on GeoLife (Beijing 4th ring, 50 x 50): error, drift, kNN precision/recall."""
    from ..geo.temporal.experiment import format_table, run_geolife_experiment

    rows = run_geolife_experiment(
        epsilons=[float(e) for e in epsilons.split(",")],
        deltas=[float(d) for d in deltas.split(",")], steps=steps, reps=reps,
        max_trajectories=max_traj, model_kind=model_kind, seed=seed)
    typer.echo(format_table(rows))
