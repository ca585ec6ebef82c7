"""``veil location``: geo-indistinguishable obfuscation of points and optimal noise design."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Optional

import typer

from .common import (DELIMITER, EPSILON, FORCE, INPUT, INPUT_FORMAT, LEDGER, OUTPUT,
                     OUTPUT_FORMAT, SEED, SPEND_AGAIN, check_epsilon_option, echo_release,
                     number_list_option, options_named,
                     answer, done, json_mode, output_format, output_path, read_input, say,
                     status, write_output, writes_files)

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Geo-indistinguishable location obfuscation and optimal noise design.")

#: The Earth's circumference (metres): the longest meaningful length option (a lattice,
#: grid step or radius); a larger one overflows the arithmetic (1e308 did).
EARTH_CIRCUMFERENCE_M = 4.0075e7


def check_length_bound(value: Optional[float], option: str) -> None:
    """Refuse a length option longer than the Earth's circumference (metres)."""
    from ..errors import ParameterError

    if value is not None and float(value) > EARTH_CIRCUMFERENCE_M:
        raise ParameterError(f"{option} must be at most {EARTH_CIRCUMFERENCE_M:g} metres (the "
                             f"Earth's circumference), got {value!r}")


def parse_region(spec: str):
    """``--region``: ``LAT_MIN,LON_MIN,LAT_MAX,LON_MAX`` or a JSON file.

    The JSON file holds ``{"type": "polygon", "vertices": [[lat, lon], ...]}``,
    ``{"type": "disc", "center": [lat, lon], "radius_m": R}`` or
    ``{"type": "box", "bounds": [lat_min, lon_min, lat_max, lon_max]}``.
    Returns ``(region in metres, LocalProjection)``; the projection is centred on
    the region's bounding box (public information only).
    """
    import numpy as np

    from ..errors import ParameterError
    from ..geo.geometry import Disc, LocalProjection, Polygon, check_latlon

    text = spec.strip()
    p = Path(text)
    if p.suffix.lower() == ".json" or p.exists():
        if not p.exists():
            raise ParameterError(f"--region: file {text!r} does not exist")
        from ..errors import DataError
        from ..io.read import read_json

        try:
            obj = read_json(p, what="the --region file")
        except DataError as exc:
            raise ParameterError(f"--region: {exc}") from None
    else:
        parts = text.split(",")
        if len(parts) != 4:
            raise ParameterError(f"--region: expected LAT_MIN,LON_MIN,LAT_MAX,LON_MAX or a .json "
                                 f"file, got {spec!r}")
        try:
            vals = [float(x) for x in parts]
        except ValueError:
            raise ParameterError(f"--region: not numbers: {spec!r}") from None
        obj = {"type": "box", "bounds": vals}
    if not isinstance(obj, dict):
        raise ParameterError("--region: the JSON must be an object with a 'type'")
    kind = obj.get("type")
    try:
        if kind == "box":
            la0, lo0, la1, lo1 = (float(v) for v in obj["bounds"])
            check_latlon([la0, la1], [lo0, lo1], name="--region")
            if not (la1 > la0 and lo1 > lo0):
                raise ParameterError(f"--region: empty box (need lat_max > lat_min and "
                                     f"lon_max > lon_min), got {obj['bounds']}")
            verts = np.array([[la0, lo0], [la0, lo1], [la1, lo1], [la1, lo0]])
        elif kind == "polygon":
            verts = np.asarray(obj["vertices"], dtype=np.float64)
            if verts.ndim != 2 or verts.shape[1] != 2:
                raise ParameterError("--region: polygon vertices must be [[lat, lon], ...]")
            check_latlon(verts[:, 0], verts[:, 1], name="--region")
        elif kind == "disc":
            c = np.asarray(obj["center"], dtype=np.float64)
            check_latlon(c[:1], c[1:2], name="--region")
            proj = LocalProjection(float(c[0]), float(c[1]))
            return Disc((0.0, 0.0), float(obj["radius_m"])), proj
        else:
            raise ParameterError(f"--region: unknown type {kind!r} (box, polygon or disc)")
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ParameterError):
            raise
        raise ParameterError(f"--region: malformed {kind} ({exc})") from None
    proj = LocalProjection.centred_on(verts)  # a polygon may cross the antimeridian
    return Polygon(proj.points_to_plane(verts)), proj


@app.command("obfuscate")
@writes_files("input", "key_file", "region", "remap_prior")
@options_named({"grid_step": "--grid-step", "cell_m": "--cell", "window_s": "--consistent-window",
                "resolution": "--resolution", "seed": "--seed"})
def obfuscate(
    input: Path = INPUT,
    epsilon: float = typer.Option(..., "--epsilon", "-e",
                                  help="Privacy per METRE (> 0): two points d metres apart are "
                                       "(epsilon*d)-indistinguishable, e.g. 0.0069 = ln(4)/200."),
    output: Path = OUTPUT,
    lat: str = typer.Option("lat", "--lat-column", help="Latitude column (degrees)."),
    lon: str = typer.Option("lon", "--lon-column", help="Longitude column (degrees)."),
    grid_step: Optional[float] = typer.Option(
        None, "--grid-step", help="Snap outputs to a grid of this step (metres) over --region "
                                  "and truncate to it; the Release records the adjusted eps'."),
    region: Optional[str] = typer.Option(
        None, "--region", help="Public region for --grid-step: LAT_MIN,LON_MIN,LAT_MAX,LON_MAX "
                               "or a .json file (box, polygon or disc)."),
    window_s: Optional[float] = typer.Option(
        None, "--consistent-window",
        help="Averaging defence: the same point within the same window of this many seconds "
             "always gets the same report (needs --time-column and --key-file)."),
    time_column: Optional[str] = typer.Option(
        None, "--time-column", help="Column of times in seconds (for --consistent-window)."),
    key_file: Optional[Path] = typer.Option(
        None, "--key-file", help="Secret key for --consistent-window (created with 32 random "
                                 "bytes if missing; keep it private, reuse it across runs)."),
    user_column: Optional[str] = typer.Option(
        None, "--user-column", help="User column for --consistent-window (each user gets her "
                                    "own reports; default: every row is the same user)."),
    cell: float = typer.Option(
        100.0, "--cell", help="Side in metres of the public cells of --consistent-window: "
                              "reports from one cell and window are identical."),
    resolution: float = typer.Option(
        1.0, "--resolution", help="Public output lattice in metres (float-safe outputs; the "
                                  "sidecar states the float64 correction). 0 = raw float "
                                  "output, which leaks through its low-order bits."),
    remap_prior: Optional[Path] = typer.Option(
        None, "--remap-prior", help="Optimal remapping (free post-processing): a PUBLIC prior "
        "file with lat, lon and optional weight columns (e.g. a DP density map, or public "
        "places); each report is replaced by the point minimizing the expected distance to "
        "the truth under it."),
    fmt: Optional[str] = OUTPUT_FORMAT,
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
    seed: Optional[int] = SEED,
    force: bool = FORCE,
    spend_again: bool = SPEND_AGAIN,
    ledger: Optional[Path] = LEDGER,
) -> None:
    """Report every point with planar Laplace noise (eps-geo-indistinguishability).

    Each row's (lat, lon) is replaced by a noisy location; other columns are kept.
    The noise is added in each point's own metric plane (Gamma(2, 1/eps) radius,
    uniform angle) and the output snapped to a public 1 m lattice (--resolution). With
    --grid-step and --region, outputs are grid centres inside the region and the
    guarantee is eps' (slightly above eps, recorded in the sidecar). --remap-prior
    remaps each report optimally under a public prior (no privacy cost). Writes OUTPUT
    and OUTPUT.meta.json atomically.

    Example: veil location obfuscate points.csv --epsilon 0.01 -o noisy.csv
    """
    import numpy as np
    import pyarrow as pa

    from ..errors import ParameterError
    from ..geo.geoind import discretized_planar_laplace, planar_laplace
    from ..random import make_rng

    eps = check_epsilon_option(epsilon)
    out = output_path(output)
    out_fmt = output_format(fmt, out)
    if (grid_step is None) != (region is None):
        raise ParameterError("--grid-step and --region go together: the grid and the truncation "
                             "region must be public, never derived from the points")
    from .common import check_column_option

    check_column_option(lat, "--lat")
    check_column_option(lon, "--lon")
    if lat == lon:
        raise ParameterError(f"--lat-column and --lon-column must be different columns, both are {lat!r}")
    reg = proj = None
    if region is not None:
        reg, proj = parse_region(region)
    consistent = window_s is not None
    if consistent and (time_column is None or key_file is None):
        raise ParameterError("--consistent-window needs --time-column and --key-file")
    if not consistent and (time_column is not None or key_file is not None):
        raise ParameterError("--time-column and --key-file only apply with --consistent-window")
    if consistent and grid_step is not None:
        raise ParameterError("--consistent-window cannot be combined with --grid-step")
    if consistent:  # the public cells and window, before the input is read
        from ..geo.geoind import PublicCells
        from ..validation import check_positive

        check_positive(window_s, "--consistent-window")
        PublicCells(cell)  # "cell_m must be > 0" is worded "--cell must be > 0"
    if user_column is not None and not consistent:
        raise ParameterError("--user-column only applies with --consistent-window")
    if remap_prior is not None and grid_step is not None:
        raise ParameterError("--remap-prior applies to the continuous mechanism, not to "
                             "--grid-step outputs")
    from ..geo.snapping import check_resolution
    res = check_resolution(resolution, "--resolution")
    check_length_bound(res, "--resolution")
    check_length_bound(grid_step, "--grid-step")
    prior = None
    if remap_prior is not None:
        prior = _read_prior(remap_prior)
    from .common import stages

    # progress on a terminal (5 x 10^6 points took 25 s with nothing shown)
    with stages() as show:
        cols = {lat: "lat", lon: "lon"}
        show(f"{Path(input).name}: reading the points")
        table = read_input(input, columns=cols, input_format=input_format,
                           delimiter=delimiter, keep_others=True)
        extra = None
        if consistent:  # read apart: the published table keeps these columns as they were
            # (declared in the same read they were written back as floats: two timestamps in
            # nanoseconds became one, 100 became 100.0)
            extra = {time_column: "float"}
            if user_column is not None:
                extra[user_column] = "str"
            keyed = read_input(input, columns=extra, input_format=input_format,
                               delimiter=delimiter)
            cols.update(extra)
        pts = np.column_stack((table.column(lat).to_numpy(), table.column(lon).to_numpy()))
        from ..io import sidecar_path
        from ..ledger import charge

        repeat = None
        new_key = False
        if consistent:
            import hashlib

            new_key = not Path(key_file).exists()
            key = _new_key(key_file) if new_key else _load_or_create_key(key_file)
            # keyed noise: the same key, data and parameters publish the same points again
            repeat = "repeat:" + hashlib.sha256(
                b"veil-consistent|" + key + f"|{eps!r}|{window_s!r}|{cell!r}|{res!r}".encode()
            ).hexdigest()
        from ..geo.geoind import obfuscation_epsilon

        if consistent:  # its parameters (--cell) are checked before anything is charged
            from ..geo.geoind import ConsistentObfuscator

            ob = ConsistentObfuscator(epsilon=eps, window_s=window_s, cell_m=cell,
                                      key=key, resolution=res)
            ob.windows(keyed.column(time_column).to_numpy())

        # what the release spends: epsilon plus the snapping correction, or eps' on a grid (the
        # ledger recorded epsilon alone and a release could pass a declared total)
        spend = obfuscation_epsilon(eps, resolution=res, grid_step=grid_step, region=reg)
        show(f"{Path(input).name}: content identity for the privacy ledger (one pass)")
        charge(input, budget="epsilon_per_metre", amount=spend, unit="record", read=list(cols),
               outputs=[out, sidecar_path(out)], format=input_format, delimiter=delimiter,
               job=repeat)
        if new_key:  # only once the release is accepted: a refused run leaves no key behind
            _load_or_create_key(key_file, key)
        show("noise on every point")
        rng = make_rng(seed=seed)
        if consistent:
            users = (None if user_column is None
                     else keyed.column(user_column).to_numpy(zero_copy_only=False))
            rel = ob.obfuscate(pts, t=keyed.column(time_column).to_numpy(), user=users)
        elif grid_step is None:
            rel = planar_laplace(pts, epsilon=eps, rng=rng, resolution=res)
        else:
            rel = discretized_planar_laplace(pts, epsilon=eps, grid_step=grid_step, region=reg,
                                             projection=proj, rng=rng)
        if prior is not None:
            from ..geo.remap import optimal_remap
            from ..geo.snapping import snap_latlon

            rel = optimal_remap(rel, prior_points=prior[0], prior_weights=prior[1])
            rel = dataclasses.replace(rel, value=snap_latlon(rel.value, res),
                                      parameters={**rel.parameters,
                                                  "remap_prior": str(remap_prior)})
        if not rel.epsilon <= spend * (1 + 1e-12):  # the ledger holds what the release states
            raise RuntimeError(f"the release spends {rel.epsilon!r} per metre, the ledger reserved "
                               f"{spend!r}")
        result = table.set_column(table.column_names.index(lat), lat, pa.array(rel.value[:, 0]))
        result = result.set_column(result.column_names.index(lon), lon, pa.array(rel.value[:, 1]))
        notes = list(rel.notes)
        if seed is not None:
            notes.append("produced with a fixed --seed: for experiments only, do not publish")
        rel = dataclasses.replace(rel, value=result, notes=tuple(notes),
                                  parameters={**rel.parameters, "input": str(input),
                                              "lat_column": lat, "lon_column": lon})
        show(f"writing {out.name}")
        data, meta = write_output(rel, out, out_fmt)
    echo_release(rel, data, meta)


def _read_prior(path: Path):
    """``(points [lat, lon], weights)`` of a public prior file (lat, lon and an optional
    weight column; without it every row weighs the same, e.g. a list of public places)."""
    import numpy as np

    from ..errors import DataError
    from ..io import read_columns

    try:
        cols = read_columns(path, columns={"lat": "lat", "lon": "lon", "weight": "float"})
    except DataError as exc:
        if "weight" not in str(exc):
            raise
        cols = read_columns(path, columns={"lat": "lat", "lon": "lon"})   # uniform weights
        cols["weight"] = np.ones(len(cols["lat"]))
    w = np.asarray(cols["weight"], dtype=np.float64)
    if not np.isfinite(w).all() or (w < 0).any() or not w.max(initial=0.0) > 0:
        raise DataError("weights must be finite, >= 0, with a positive sum", path=str(path),
                        column="weight")
    # only proportions matter: scaled by the largest, the sum cannot overflow (two weights
    # of 1e308 said "prior must sum to 1, sums to 0.0")
    return np.column_stack((cols["lat"], cols["lon"])), w / w.max()


def _new_key(path: Path) -> bytes:
    """32 random bytes for a key file that does not exist yet (its folder must exist)."""
    import os

    from ..errors import ParameterError

    if not Path(path).parent.exists():
        raise ParameterError(f"--key-file: folder {str(Path(path).parent)!r} does not exist")
    return os.urandom(32)


def _load_or_create_key(path: Path, new: bytes | None = None) -> bytes:
    """Read a secret key file, or create one (mode 0600) holding ``new`` or 32 random bytes."""
    import os

    from ..errors import ParameterError

    p = Path(path)
    if p.exists():
        key = p.read_bytes()
        if len(key) < 16:
            raise ParameterError(f"--key-file {str(p)!r} holds {len(key)} bytes; need >= 16")
        return key
    if not p.parent.exists():
        raise ParameterError(f"--key-file: folder {str(p.parent)!r} does not exist")
    key = os.urandom(32) if new is None else new
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key)
    status(f"created a new secret key in {p} (keep it private; reuse it)")
    return key


#: ``--loss`` is parsed by the library, which names the loss and the P of ``power:P`` and the
#: DELTA of ``threshold:DELTA`` by its parameters ("p must be > 0")
LOSS_OPTIONS = {"loss": "--loss", "p": "--loss power:P", "delta": "--loss threshold:DELTA"}


@app.command("noise")
@writes_files()
@options_named(LOSS_OPTIONS)
def noise(
    privacy: str = typer.Option("geo", "--privacy",
                                help="geo (eps per metre) or D-eps ((D, eps)-location privacy)."),
    epsilon: float = EPSILON,
    D: Optional[float] = typer.Option(None, "--radius", help="Radius D in metres for --privacy D-eps."),
    loss: str = typer.Option("distance", "--loss",
                             help="distance, squared, power:P or threshold:DELTA (metres)."),
    region_diameter: Optional[float] = typer.Option(
        None, "--region-diameter", help="Longest displacement to protect (metres); default: "
                                        "the whole plane."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Write the result as JSON (atomically)."),
    force: bool = FORCE,
) -> None:
    """Find the optimal circular noise function for a privacy notion and a loss.

    Searches the tight family (flat core + steepest decay allowed by l); for
    geo-indistinguishability the optimum is planar Laplace. Prints JSON with the
    optimal parameters, its expected loss and the integration error bound.

    Example: veil location noise --privacy D-eps --radius 200 --epsilon 1 --loss distance
    """
    from ..errors import ParameterError
    from ..geo.lprivacy import (PlanarLaplace, d_epsilon_privacy, expected_loss,
                                geo_indistinguishability, make_loss, optimal_noise)
    from ..validation import check_choice, check_positive

    kind = check_choice(privacy.lower(), "--privacy", ("geo", "d-eps"))
    eps = check_epsilon_option(epsilon)
    if kind == "geo":
        if D is not None:
            raise ParameterError("--radius only applies to --privacy D-eps")
        l = geo_indistinguishability(eps)
    else:
        if D is None:
            raise ParameterError("--privacy D-eps needs --radius (metres, > 0)")
        check_length_bound(D, "--radius")
        l = d_epsilon_privacy(check_positive(D, "--radius"), eps)
    L = make_loss(loss)
    max_step = math.inf if region_diameter is None else check_positive(region_diameter,
                                                                        "--region-diameter")
    check_length_bound(region_diameter, "--region-diameter")  # 1e308 was accepted
    opt = optimal_noise(l, L, max_step=max_step)
    result = {"privacy": l.to_dict(), "loss": L.name, **opt.to_dict()}
    if kind == "geo":
        result["planar_laplace_expected_loss"] = expected_loss(PlanarLaplace(eps), L).value
    _result_or_file(result, output)


def _result_or_file(result: dict, output: Optional[Path]) -> None:
    """The result on stdout, or, with --output, in the file (stdout then stays empty unless
    --json asks for the summary)."""
    if output is None:
        answer(result)
        return
    from ..io import write_json

    write_json(result, output_path(output))
    done({"output": str(output), **result}, f"wrote {output}")


MAX_RISK_CELLS = 5000


@app.command("risk")
@writes_files("prior", "region")
@options_named({"step": "--cell"})  # the grid of --region is built with step=--cell
def risk(
    epsilon: float = typer.Option(..., "--epsilon", "-e", help="Privacy per METRE of the "
                                  "planar Laplace reports (> 0)."),
    prior: Optional[Path] = typer.Option(
        None, "--prior", help="The adversary's PUBLIC prior: a file with lat, lon, weight "
                              "columns on a grid of --cell metres (e.g. a DP density map)."),
    region: Optional[str] = typer.Option(
        None, "--region", help="Instead of --prior: a public region LAT_MIN,LON_MIN,LAT_MAX,"
                               "LON_MAX or .json file, with a uniform prior on its cells."),
    cell: float = typer.Option(200.0, "--cell", help="Cell side in metres of the prior's grid."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Also write the result as JSON (atomically)."),
    force: bool = FORCE,
) -> None:
    """The Bayesian adversary's expected error against planar Laplace reports.

    The adversary knows the prior and the mechanism and remaps every report to the guess
    that minimizes her expected distance to the truth (Shokri et al.'s remapping attack).
    Prints JSON: her expected error, the error of the best guess without any report (the
    prior alone), and the user's expected distance to the report (2/eps). Locations and
    guesses are the prior's cell centres, so the numbers are at the cell's resolution.

    Example: veil location risk --epsilon 0.005 --region 39.85,116.3,39.95,116.45 --cell 250
    """
    import numpy as np

    from ..errors import ParameterError
    from ..geo.geometry import Grid, LocalProjection
    from ..geo.metrics import adversary_error, planar_laplace_channel
    from ..validation import check_positive

    from ..geo.geoind import geo_epsilon

    # an epsilon per metre below the minimum gave NaN errors (1e-300), as in `obfuscate`
    eps = geo_epsilon(check_epsilon_option(epsilon), "--epsilon")
    cell_m = check_positive(cell, "--cell")
    if (prior is None) == (region is None):
        raise ParameterError("give exactly one of --prior FILE or --region (uniform prior)")
    if prior is not None:
        pts, w = _read_prior(prior)
        # centred across the antimeridian if shorter (two points 222 m apart on either side
        # of it were 20,000 km apart around longitude 0)
        proj = LocalProjection.centred_on(pts)
        X = proj.points_to_plane(pts)
        source = str(prior)
    else:
        reg, proj = parse_region(region)
        xmin, ymin, xmax, ymax = reg.bounds
        grid = Grid.from_step(xmin, ymin, xmax, ymax, cell_m)
        if grid.n_cells > MAX_RISK_CELLS:
            raise ParameterError(f"--cell {cell_m:g} m gives {grid.n_cells} cells over the "
                                 f"region (max {MAX_RISK_CELLS}); use a larger --cell")
        X = grid.centers[reg.contains(grid.centers)]
        if len(X) == 0:
            raise ParameterError("--region: no cell centre lies inside the region; use a "
                                 "smaller --cell")
        w = np.ones(len(X))
        source = f"uniform over {len(X)} cells of --region"
    if len(X) > MAX_RISK_CELLS:
        raise ParameterError(f"--prior has {len(X)} cells (max {MAX_RISK_CELLS})")
    keep = w > 0
    X, w = X[keep], w[keep] / w[keep].sum()
    K = planar_laplace_channel(X, X, cell_m ** 2, eps)
    adv = adversary_error(K, w, X)
    result = {"epsilon_per_metre": eps, "prior": source, "cells": int(len(X)),
              "cell_m": cell_m, "adversary_expected_error_m": adv["adversary_error"],
              "prior_only_error_m": adv["prior_only_error"],
              "user_expected_distance_m": 2.0 / eps,
              "reports_help_the_adversary_by_m": adv["prior_only_error"] - adv["adversary_error"]}
    _result_or_file(result, output)


# The public region of the experiment: a fixed box over Manhattan (never derived from the data).
NYC_BOX = (40.70, -74.02, 40.82, -73.93)


@writes_files()
@options_named({"seed": "--seed"})
def bench(
    epsilons: str = typer.Option("0.0005,0.001,0.002,0.005", "--epsilons",
                                 help="Comma-separated eps per metre."),
    cells: int = typer.Option(8, "--cells", help="Grid cells per side for the LP (k x k)."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write a PNG of the comparison."),
    seed: Optional[int] = SEED,
    force: bool = FORCE,
) -> None:
    """Real data: planar Laplace vs the LP optimum on a grid (Foursquare NYC check-ins).

    The paper's argument: the LP (Bordenabe et al.) only handles a coarse grid, so a user is
    first snapped to her cell centre and the report is tailored to it; continuous planar
    Laplace needs no grid. For each eps, the table gives the expected distance between the
    REAL check-in location and the report (LP: exact expectation over its channel, prior =
    check-in density per cell; planar Laplace: 2/eps and the empirical mean), and the LP size
    and solve time (greedy spanner, dilation 1.1).
    """
    import time as _time

    import numpy as np

    from ..datasets import shared_data_path
    from ..errors import ParameterError
    from ..geo.geoind import planar_laplace
    from ..geo.geometry import Grid, LocalProjection
    from ..geo.lp import optimal_mechanism_lp
    from ..geo.metrics import distance_errors
    from ..io import read_points
    from ..random import make_rng

    eps_list = number_list_option(epsilons, "--epsilons", check_epsilon_option)
    if cells < 2 or cells > 12:
        raise ParameterError(f"--cells must be in [2, 12] (the LP grows like cells^6), got {cells}")
    rng = make_rng(seed=seed)
    pts = read_points(shared_data_path("foursquare-nyc", "foursquare_nyc.csv"))
    la0, lo0, la1, lo1 = NYC_BOX
    inside = (pts[:, 0] >= la0) & (pts[:, 0] <= la1) & (pts[:, 1] >= lo0) & (pts[:, 1] <= lo1)
    pts = pts[inside]
    proj = LocalProjection((la0 + la1) / 2, (lo0 + lo1) / 2)
    corners = proj.points_to_plane(np.array([[la0, lo0], [la1, lo1], [la0, lo1], [la1, lo0]]))
    xmin, ymin = corners.min(axis=0)
    xmax, ymax = corners.max(axis=0)
    grid = Grid(xmin, ymin, xmax, ymax, cells, cells)
    xy = proj.points_to_plane(pts)
    cell = np.clip(grid.cell_of(xy), 0, grid.n_cells - 1)
    prior = np.bincount(cell, minlength=grid.n_cells) + 1e-9
    prior = prior / prior.sum()
    C = grid.centers
    sx, sy = grid.step
    say(f"Foursquare NYC: {len(pts):,} check-ins inside the public box {NYC_BOX}; "
               f"LP grid {cells}x{cells} cells of {sx:.0f} x {sy:.0f} m "
               f"(machine shared and loaded: times are indicative)")
    say("| eps (1/m) | planar Laplace 2/eps (m) | planar Laplace empirical (m) | "
               "LP optimum, real position (m) | LP, from cell centre (m) | LP constraints | "
               "LP solve s |")
    say("|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    table: list[dict] = []
    for eps in eps_list:
        rel = planar_laplace(pts, epsilon=eps, rng=rng)
        emp = float(distance_errors(pts, rel.value).mean())
        t = _time.perf_counter()
        m = optimal_mechanism_lp(C, epsilon=eps, prior=prior, spanner_dilation=1.1)
        took = _time.perf_counter() - t
        d_real = np.hypot(xy[:, None, 0] - C[None, :, 0], xy[:, None, 1] - C[None, :, 1])
        lp_real = float(np.mean(np.sum(m.channel[cell] * d_real, axis=1)))
        rows.append((eps, 2 / eps, emp, lp_real, m.expected_loss))
        table.append({"epsilon_per_metre": eps, "planar_laplace_expected_m": 2 / eps,
                      "planar_laplace_empirical_m": emp, "lp_real_position_m": lp_real,
                      "lp_from_cell_centre_m": float(m.expected_loss),
                      "lp_constraints": int(m.n_constraints), "lp_solve_s": round(took, 3)})
        say(f"| {eps:g} | {2 / eps:.0f} | {emp:.0f} | {lp_real:.0f} | "
                   f"{m.expected_loss:.0f} | {m.n_constraints:,} | {took:.1f} |")
    if plot is not None:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        a = np.array(rows)
        fig, ax = plt.subplots(figsize=(6.5, 3.6))
        ax.loglog(a[:, 0], a[:, 1], "o-", label="planar Laplace (continuous)")
        ax.loglog(a[:, 0], a[:, 3], "s-", label=f"LP optimum on {cells}x{cells} grid, real position")
        ax.loglog(a[:, 0], a[:, 4], "^:", label="LP optimum, measured from cell centre")
        ax.set_xlabel("epsilon (per metre)")
        ax.set_ylabel("expected distance (m)")
        ax.legend(frameon=False, fontsize=8)
        from ..io import atomic_path

        with atomic_path(output_path(plot)) as tmp:
            fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
        plt.close(fig)
        status(f"wrote {plot}")
    if json_mode():
        answer({"checkins": int(len(pts)), "cells": cells, "rows": table,
                "plot": None if plot is None else str(plot)})
