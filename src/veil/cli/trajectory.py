"""``veil trajectory``: learn a Markov mobility model; release a trajectory by PIM or LM."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from .common import (DELIMITER, EPSILON, FORCE, INPUT_FORMAT, LEDGER, SEED, SPEND_AGAIN, answer,
                     check_epsilon_option, done, exact, input_options, number_list_option,
                     options_named, status, writes_files)

app = typer.Typer(no_args_is_help=True, help="Release locations under temporal correlations.")

BENCH_NAME = "temporal"


TIME_HELP = ("Time column (default: 't', or its alias 'time'); seconds or ISO timestamps.")

#: The fields of ``--grid lat_min,lon_min,lat_max,lon_max,nx,ny``, as the grid names them
#: ("nx must be >= 1" is worded "--grid nx must be >= 1").
GRID_FIELDS = {name: f"--grid {name}"
               for name in ("lat_min", "lon_min", "lat_max", "lon_max", "nx", "ny")}


def _read_track(path, **options):
    """``read_track`` plus a check of every latitude (a data error that names its row).

    The grid refuses a latitude beyond 90 degrees as a call with (lon, lat) swapped, in a
    message that cannot name the file; in a file it is bad data. (A longitude out of range
    is simply outside the grid: an invalid point, dropped with ``--on-invalid drop``.)
    """
    import numpy as np

    from ..errors import DataError
    from ..geo.temporal.io import read_track

    tr = read_track(path, **options)
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(np.abs(tr.lat) > 90.0)
    if bad.size:
        i = int(bad[0])
        raise DataError(f"latitude {float(tr.lat[i])!r} is outside [-90, 90]", path=str(path),
                        row=i + 1, column="lat")
    return tr


def _sequences(inputs, grid, time_column, user_column, **read_opts):
    """Per-user (per-file for GeoLife) cell sequences of every input, in time order."""
    import numpy as np

    from ..errors import DataError
    from ..geo.temporal import to_cells
    from ..geo.temporal.geolife import iter_geolife
    from ..geo.temporal.io import no_point_in_grid_message, split_users

    seqs, n_points, n_inside, tracks = [], 0, 0, []
    for p in inputs:
        if p.is_dir():
            for tr in iter_geolife(p):
                c = to_cells(tr, grid)
                seqs.append(c)
                n_points += c.size
                n_inside += int((c >= 0).sum())
            continue
        tr = _read_track(p, time_column=time_column, user_column=user_column,
                         **input_options(p, read_opts.get("input_format"),
                                       read_opts.get("delimiter")))
        tracks.append(tr)
        cells = grid.cell_of(tr.lat, tr.lon)
        for user, rows in split_users(tr):
            order = rows[np.argsort(tr.t_key[rows], kind="stable")]   # exact times
            seqs.append(cells[order])
        n_points += cells.size
        n_inside += int((cells >= 0).sum())
    if n_points and n_inside == 0:
        if tracks:
            from ..geo.temporal.io import PointTrack
            allt = PointTrack(np.concatenate([t.t for t in tracks]),
                              np.concatenate([t.lat for t in tracks]),
                              np.concatenate([t.lon for t in tracks]), "")
            raise DataError(no_point_in_grid_message(allt, grid),
                            path=", ".join(t.path for t in tracks))
        import json

        raise DataError(f"no point of the inputs falls inside the grid "
                        f"{json.dumps(grid.to_dict())}; pass a public --grid that covers them")
    return seqs, n_points, n_inside


@app.command("model")
@writes_files("inputs")
@options_named({**GRID_FIELDS, "empty_rows": "--empty-rows", "smoothing": "--smoothing",
                "prior_weight": "--prior-weight", "prior_scale_m": "--prior-scale",
                "scale_m": "--prior-scale"})
def model_cmd(
    inputs: List[Path] = typer.Argument(..., help="GeoLife .plt files or folders (searched "
                                        "recursively), or CSV/Parquet files with user,t,lat,"
                                        "lon (as `veil data synth trajectories` writes)."),
    grid: str = typer.Option("beijing", "--grid", help="'beijing[:N]' (Beijing 4th ring, N x N, "
                             "default 50) or 'lat_min,lon_min,lat_max,lon_max,nx,ny'."),
    output: Path = typer.Option(..., "--output", "-o", help="Model file (.npz)."),
    empty_rows: str = typer.Option("self", "--empty-rows", help="Cells never left in the data: "
                                   "'self' (stay) or 'uniform'."),
    smoothing: float = typer.Option(0.0, "--smoothing", help="Pseudo-count added to every "
                                    "self-transition."),
    prior_weight: float = typer.Option(
        0.0, "--prior-weight", help="Weight in [0, 1) of a public distance-decay prior mixed "
        "into every row (a model that generalizes to unseen users: moves the training users "
        "never made keep some probability, no cell is absorbing). 0 = off; 0.1-0.3 typical."),
    prior_scale: Optional[float] = typer.Option(
        None, "--prior-scale", help="Length scale of the prior in metres (default: one cell)."),
    time_column: Optional[str] = typer.Option(None, "--time-column", help=TIME_HELP),
    user_column: str = typer.Option("user", "--user-column",
                                    help="User column (one sequence per user)."),
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
    force: bool = FORCE,
) -> None:
    """Learn a first-order Markov model (consecutive fixes' cell transitions, per user).

    The model is public in the PIM framework: learn it from data you may publish (many
    users' past trajectories), not from the trajectory you will release. Each user's fixes
    (sorted by time) form one sequence; no transition is counted across users or files.
    """
    from ..errors import DataError
    from ..geo.temporal import MarkovModel, TemporalGrid

    g = TemporalGrid.parse(grid)
    if not output.parent.exists():
        raise DataError(f"--output: folder {str(output.parent)!r} does not exist")
    seqs, n_points, n_inside = _sequences(inputs, g, time_column, user_column,
                                          input_format=input_format, delimiter=delimiter)
    m = MarkovModel.from_trajectories(seqs, grid=g, empty_rows=empty_rows, smoothing=smoothing,
                                      prior_weight=prior_weight, prior_scale_m=prior_scale,
                                      meta={"n_sequences": len(seqs), "n_points": n_points,
                                            "n_points_in_grid": n_inside})
    if m.meta["n_transitions"] == 0:
        where = str(inputs[0]) if len(inputs) == 1 else f"{len(inputs)} input files"
        if n_points == 0:
            raise DataError("no points to learn a model from", path=where)
        raise DataError(f"no transition inside the grid: {n_inside} of {n_points} points fall "
                        f"in it but no two consecutive fixes of one user do", path=where)
    from ..io import atomic_path

    try:
        with atomic_path(output) as tmp:  # never over an input or through a link; --force
            m.save(tmp)
    except OSError as exc:  # a full disk or a read-only folder: say which file
        raise OSError(exc.errno, f"cannot write {str(output)!r}: {exc.strerror}") from None
    done({"output": str(output), "grid": g.to_dict(), "sequences": len(seqs),
          "transitions": int(m.meta["n_transitions"]), "points": int(n_points),
          "points_in_grid": int(n_inside), "cells_never_left": int(m.meta["n_unseen_cells"]),
          "prior_weight": float(prior_weight)},
         f"model: {g.nx}x{g.ny} grid, {len(seqs)} sequences, "
         f"{int(m.meta['n_transitions'])} transitions ({n_inside} of {n_points} points "
         f"in the grid), {m.meta['n_unseen_cells']} cells never left"
         + (f" (smoothed: prior weight {exact(prior_weight)})" if prior_weight else "")
         + f" -> {output}")


def _parse_latlon(text: str, option: str):
    from ..errors import ParameterError

    try:
        a, b = (float(v) for v in text.split(","))
    except ValueError:
        raise ParameterError(f"{option} must be LAT,LON, got {text!r}") from None
    return a, b


@app.command("release")
@writes_files("input", "model")
@options_named({**GRID_FIELDS, "epsilon": "--epsilon", "delta": "--delta",
                "resolution": "--resolution", "seed": "--seed"})
def release_cmd(
    input: Path = typer.Argument(..., help="A CSV/Parquet with \\[user,]t,lat,lon (time-sorted "
                                 "per user) or a GeoLife .plt file."),
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
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="csv or json. Default: from "
                                      "the output's extension, else csv."),
    on_invalid: str = typer.Option("error", "--on-invalid", help="NaN or out-of-region points: "
                                   "'error' (default) or 'drop' (not released; their number "
                                   "is printed on stderr for you, never in the published "
                                   "files: where a person was is what the release protects)."),
    initial_latlon: Optional[str] = typer.Option(
        None, "--initial-latlon", help="LAT,LON of a PUBLIC starting point (the first prior "
        "is its cell). Default: uniform over the grid. Only pass a start the adversary may "
        "know: it is not protected."),
    initial_lonlat: Optional[str] = typer.Option(
        None, "--initial-lonlat", hidden=True, help="Deprecated: LON,LAT (use --initial-latlon)."),
    remap: bool = typer.Option(
        False, "--remap", help="Optimal remapping (free post-processing): publish, instead of "
        "each noisy point, the point that minimizes the expected distance to the truth under "
        "the public model's posterior."),
    resolution: float = typer.Option(1.0, "--resolution", help="Public output lattice in "
                                     "metres (float-safe); 0 = raw float output. CSV lat/lon "
                                     "keep the digits the lattice needs (every digit for 0)."),
    time_column: Optional[str] = typer.Option(None, "--time-column", help=TIME_HELP),
    user_column: str = typer.Option("user", "--user-column",
                                    help="User column: each user's trajectory is released "
                                         "separately (epsilon per timestamp per user)."),
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
    seed: Optional[int] = SEED,
    force: bool = FORCE,
    spend_again: bool = SPEND_AGAIN,
    ledger: Optional[Path] = LEDGER,
) -> None:
    """Release one noisy location per fix: epsilon-DP per timestamp within the delta-set."""
    import numpy as np

    from ..errors import ParameterError
    from ..geo.temporal import MarkovModel, TemporalGrid, release_trajectory
    from ..geo.temporal.io import (clean_track, released_table, sidecar,
                                   split_users)
    from ..random import make_rng, spawn
    from ..release import to_jsonable
    from ..validation import check_choice, check_delta, check_epsilon

    check_epsilon(epsilon, "--epsilon")
    check_delta(delta, "--delta")
    check_choice(mechanism, "--mechanism", ("pim", "lm"))
    from .common import output_format

    fmt = check_choice(output_format(fmt, output), "--format", ("csv", "json"))
    check_choice(on_invalid, "--on-invalid", ("error", "drop"))
    from ..geo.snapping import check_resolution
    from .location import check_length_bound

    check_length_bound(check_resolution(resolution, "--resolution"), "--resolution")
    if not output.parent.exists():
        raise ParameterError(f"--output: folder {str(output.parent)!r} does not exist")
    if output.resolve() == Path(input).resolve() or output.resolve() == Path(model).resolve():
        raise ParameterError(f"--output {str(output)!r} would overwrite an input")
    if initial_latlon is not None and initial_lonlat is not None:
        raise ParameterError("give --initial-latlon only (--initial-lonlat is deprecated)")
    m = MarkovModel.load(model)
    if grid is not None:
        m.check_grid(TemporalGrid.parse(grid))
    track = _read_track(input, time_column=time_column, user_column=user_column,
                        **input_options(input, input_format, delimiter))
    keep, cells_kept, dropped = clean_track(track, m.grid, on_invalid=on_invalid)
    p0 = None
    start = None
    if initial_latlon is not None:
        start_option, order, start_text = "--initial-latlon", "LAT,LON", initial_latlon
        start = _parse_latlon(initial_latlon, "--initial-latlon")
    elif initial_lonlat is not None:
        start_option, order, start_text = "--initial-lonlat", "LON,LAT", initial_lonlat
        lon0, lat0 = _parse_latlon(initial_lonlat, "--initial-lonlat")
        start = (lat0, lon0)
        typer.echo("veil: warning: --initial-lonlat is deprecated (veil uses LAT,LON "
                   "everywhere): use --initial-latlon", err=True)
    if start is not None:
        gr = m.grid
        if not bool(gr.contains([start[0]], [start[1]])[0]):  # also NaN and |lat| > 90
            raise ParameterError(
                f"{start_option} must be a valid {order} inside the model's grid (lat "
                f"{gr.lat_min:g} to {gr.lat_max:g}, lon {gr.lon_min:g} to {gr.lon_max:g}), "
                f"got {start_text!r} (outside the grid)")
        c0 = int(gr.cell_of([start[0]], [start[1]])[0])
        p0 = np.zeros(m.grid.n_cells)
        p0[c0] = 1.0
    if dropped:
        status(f"dropped {dropped} invalid point(s) (NaN or outside the grid)")
    cells = np.full(track.t.size, -1, dtype=np.int64)
    cells[keep] = cells_kept
    groups = [(u, rows[keep[rows]]) for u, rows in split_users(track)]
    groups = [(u, rows) for u, rows in groups if rows.size]
    from ..identity import identity_of_table
    from ..ledger import charge

    from ..geo.temporal.release import trajectory_budget_bound

    # a trajectory is one person's: T released timestamps at epsilon each (plus the public
    # bound of the float64 snapping correction), T of the longest
    charge(input, amount=trajectory_budget_bound(
               m.grid, epsilon=epsilon, n_steps=max((rows.size for _, rows in groups), default=0),
               mechanism=mechanism, resolution_m=resolution),
           unit="user", outputs=[output, output.with_name(output.name + ".meta.json")],
           identity=identity_of_table({"user": np.asarray(track.user).astype(str),
                                       "time": track.t, "lat": track.lat, "lon": track.lon},
                                      label=str(input)))
    root = make_rng(seed=seed) if seed is not None else make_rng()
    streams = spawn(root, len(groups))
    n = int(keep.sum())
    # times and user ids are published as read (the release changes neither)
    out_t, out_ll, out_size = (np.empty(n, dtype=object), np.empty((n, 2)),
                               np.empty(n, dtype=np.int64))
    out_user = np.empty(n, dtype=object)
    pos, budgets, results = 0, [], []
    for (user, rows), g in zip(groups, streams):
        r = release_trajectory(cells[rows], model=m, epsilon=epsilon, delta=delta,
                               mechanism=mechanism, initial=p0, rng=g, resolution_m=resolution,
                               keep_posteriors=remap)
        pts = r.released_latlon
        if remap:
            from ..geo.remap import remap_trajectory
            pts = remap_trajectory(r, m.grid).value
        k = rows.size
        out_t[pos:pos + k], out_ll[pos:pos + k], out_size[pos:pos + k] = (
            track.t_raw[rows], pts, r.set_sizes)
        out_user[pos:pos + k] = user
        pos += k
        budgets.append(r.release.epsilon)
        results.append(r)
    has_users = bool(track.has_user)
    first = results[0].release
    meta = first.metadata()
    meta["budget"] = {"kind": "pure-dp", "epsilon": float(max(budgets)),
                      "per": "user (each user's trajectory is released separately; the "
                             "largest user total is shown)"}
    meta["parameters"]["n_steps"] = n
    meta["parameters"]["n_users"] = len(groups)
    # summaries over every user's release (functions of the published points)
    meta["parameters"]["median_set_size"] = float(np.median(out_size))
    meta["parameters"]["n_degenerate"] = int(sum(r.release.parameters["n_degenerate"]
                                                 for r in results))
    meta["noise_scale"] = float(np.median(np.concatenate([r.noise_scales_m for r in results])))
    meta["parameters"]["remap"] = bool(remap)
    meta["budget_split"] = {"each timestamp": float(epsilon),
                            "users": len(groups),
                            "total of the longest trajectory": float(max(budgets))}
    # the released points only: the number of points dropped as invalid (NaN or outside the
    # grid) said that a person was outside the region at some time, unprotected
    meta["input"] = {"path": str(input), "n_points": n}
    meta["seeded"] = seed is not None
    sidecar_path = output.with_name(output.name + ".meta.json")
    from ..io import atomic_paths

    table_text = released_table(out_t, out_ll, out_size, fmt,
                                user=out_user if has_users else None, resolution_m=resolution)
    side_text = sidecar(to_jsonable(meta))
    try:  # both files or neither (no data file without its sidecar)
        with atomic_paths(output, sidecar_path) as (tmp_data, tmp_meta):
            tmp_data.write_text(table_text, encoding="utf-8")
            tmp_meta.write_text(side_text, encoding="utf-8")
    except OSError as exc:  # a full disk or a read-only folder: say which file
        raise OSError(exc.errno, f"cannot write {str(output)!r}: {exc.strerror}") from None
    done({"output": str(output), "sidecar": str(sidecar_path),
          **{k: meta.get(k) for k in ("mechanism", "budget", "budget_split", "noise_scale",
                                      "protects")}},
         f"released {n} points of {len(groups)} user(s) with {mechanism} "
         f"(epsilon={epsilon} per step, delta={delta}"
         + (", optimally remapped" if remap else "") + f") -> {output} and "
         f"{sidecar_path.name}")


@app.command("risk")
@writes_files("original", "released")
@options_named({**GRID_FIELDS, "k": "--k", "n_knowledge": "--tries", "tolerance": "--tolerance",
                "attack": "--attack", "seed": "--seed"})
def risk_cmd(
    original: Path = typer.Argument(..., help="The true trajectories (user,t,lat,lon): where "
                                    "the adversary's background knowledge comes from."),
    released: Optional[Path] = typer.Argument(
        None, help="The released trajectories (user,t,lat,lon, e.g. from `veil trajectory "
                   "release`); omit for the risk of publishing the original as is."),
    grid: str = typer.Option(..., "--grid", help="Public grid the points are compared on: "
                             "'beijing[:N]' or 'lat_min,lon_min,lat_max,lon_max,nx,ny'."),
    attack: str = typer.Option("location", "--attack",
                               help="location, sequence or frequency (or all)."),
    k: int = typer.Option(2, "--k", help="Points of background knowledge per attack."),
    n_knowledge: int = typer.Option(20, "--tries", help="Random pieces of knowledge tried "
                                    "per user (the risk is the largest)."),
    tolerance: float = typer.Option(0.1, "--tolerance",
                                    help="Relative tolerance of the frequency attack."),
    time_column: Optional[str] = typer.Option(None, "--time-column", help=TIME_HELP),
    user_column: str = typer.Option("user", "--user-column", help="User column."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Write the JSON result (atomically) instead "
                                               "of printing it."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the attack's random "
                                       "choices (reproducible assessment; no privacy role)."),
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
    force: bool = FORCE,
) -> None:
    """Re-identification risk of a trajectory set before and after release.

    The adversary knows k points of a user's true trajectory (cells she visited, visits in
    order, or visit counts) and re-identifies her with probability 1/|matches| among the
    published users compatible with that knowledge. Prints JSON: mean risk, share of users
    unique, before (the original set) and after (the released set), per attack.
    """
    from ..errors import DataError
    from ..geo.risk import ATTACKS, risk_before_after, cell_sequences
    from ..geo.temporal import TemporalGrid
    from ..random import make_rng
    from ..validation import check_choice

    g = TemporalGrid.parse(grid)
    kinds = ATTACKS if attack == "all" else (check_choice(attack, "--attack", ATTACKS),)

    def seqs(path):
        tr = _read_track(path, time_column=time_column, user_column=user_column,
                         **input_options(path, input_format, delimiter))
        return cell_sequences(tr.user, tr.t, g.cell_of(tr.lat, tr.lon))

    orig = seqs(original)
    if not any(s.size for s in orig.values()):
        raise DataError("no point of the original trajectories falls inside the grid",
                        path=str(original))
    rel = seqs(released) if released is not None else orig
    rng = make_rng(seed=seed) if seed is not None else make_rng()
    result = {"grid": g.to_dict(), "original": str(original),
              "released": None if released is None else str(released), "attacks": {}}
    for a in kinds:
        before, after = risk_before_after(orig, rel, attack=a, k=k, n_knowledge=n_knowledge,
                                          tolerance=tolerance, n_cells=g.n_cells, rng=rng)
        result["attacks"][a] = {"before": before.summary(), "after": after.summary()}
    if output is None:
        answer(result)
        return
    from ..io import write_json

    write_json(result, output)
    done({"output": str(output), **result}, f"wrote {output}")


@options_named({"seed": "--seed"})
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
    from ..geo.temporal.experiment import MODEL_KINDS, format_table, run_geolife_experiment
    from ..validation import check_choice, check_delta, check_int

    eps_list = number_list_option(epsilons, "--epsilons", check_epsilon_option)
    delta_list = number_list_option(deltas, "--deltas", check_delta)
    for value, option in ((steps, "--steps"), (reps, "--reps"), (max_traj, "--max-trajectories")):
        check_int(value, option, minimum=1)
    check_choice(model_kind, "--model-kind", MODEL_KINDS)
    rows = run_geolife_experiment(
        epsilons=eps_list, deltas=delta_list, steps=steps, reps=reps,
        max_trajectories=max_traj, model_kind=model_kind, seed=seed)
    answer({"rows": rows}, format_table(rows))
