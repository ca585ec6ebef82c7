"""``veil location``: geo-indistinguishable obfuscation of points and optimal noise design."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Optional

import typer

from .common import (DELIMITER, EPSILON, INPUT, INPUT_FORMAT, OUTPUT, OUTPUT_FORMAT, SEED,
                     check_epsilon_option, echo_release, output_format, output_path, read_input,
                     write_output)

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Geo-indistinguishable location obfuscation and optimal noise design.")


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
        try:
            obj = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ParameterError(f"--region: {text!r} is not valid JSON: {exc}") from None
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
    proj = LocalProjection(float((verts[:, 0].min() + verts[:, 0].max()) / 2),
                           float((verts[:, 1].min() + verts[:, 1].max()) / 2))
    return Polygon(proj.points_to_plane(verts)), proj


@app.command("obfuscate")
def obfuscate(
    input: Path = INPUT,
    epsilon: float = typer.Option(..., "--epsilon", "-e",
                                  help="Privacy per METRE (> 0): two points d metres apart are "
                                       "(epsilon*d)-indistinguishable, e.g. 0.0069 = ln(4)/200."),
    output: Path = OUTPUT,
    lat: str = typer.Option("lat", "--lat", help="Latitude column (degrees)."),
    lon: str = typer.Option("lon", "--lon", help="Longitude column (degrees)."),
    grid_step: Optional[float] = typer.Option(
        None, "--grid-step", help="Snap outputs to a grid of this step (metres) over --region "
                                  "and truncate to it; the Release records the adjusted eps'."),
    region: Optional[str] = typer.Option(
        None, "--region", help="Public region for --grid-step: LAT_MIN,LON_MIN,LAT_MAX,LON_MAX "
                               "or a .json file (box, polygon or disc)."),
    fmt: Optional[str] = OUTPUT_FORMAT,
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
    seed: Optional[int] = SEED,
) -> None:
    """Report every point with planar Laplace noise (eps-geo-indistinguishability).

    Each row's (lat, lon) is replaced by a noisy location; other columns are kept.
    The noise is added in each point's own metric plane (Gamma(2, 1/eps) radius,
    uniform angle). With --grid-step and --region, outputs are grid centres inside
    the region and the guarantee is eps' (slightly above eps, recorded in the
    sidecar). Writes OUTPUT and OUTPUT.meta.json atomically.

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
    if lat == lon:
        raise ParameterError(f"--lat and --lon must be different columns, both are {lat!r}")
    reg = proj = None
    if region is not None:
        reg, proj = parse_region(region)
    table = read_input(input, columns={lat: "lat", lon: "lon"}, input_format=input_format,
                       delimiter=delimiter, keep_others=True)
    pts = np.column_stack((table.column(lat).to_numpy(), table.column(lon).to_numpy()))
    rng = make_rng(seed=seed)
    if grid_step is None:
        rel = planar_laplace(pts, epsilon=eps, rng=rng)
    else:
        rel = discretized_planar_laplace(pts, epsilon=eps, grid_step=grid_step, region=reg,
                                         projection=proj, rng=rng)
    result = table.set_column(table.column_names.index(lat), lat, pa.array(rel.value[:, 0]))
    result = result.set_column(result.column_names.index(lon), lon, pa.array(rel.value[:, 1]))
    notes = list(rel.notes)
    if seed is not None:
        notes.append("produced with a fixed --seed: for experiments only, do not publish")
    rel = dataclasses.replace(rel, value=result, notes=tuple(notes),
                              parameters={**rel.parameters, "input": str(input),
                                          "lat_column": lat, "lon_column": lon})
    data, meta = write_output(rel, out, out_fmt)
    echo_release(rel, data, meta)


@app.command("noise")
def noise(
    privacy: str = typer.Option("geo", "--privacy",
                                help="geo (eps per metre) or D-eps ((D, eps)-location privacy)."),
    epsilon: float = EPSILON,
    D: Optional[float] = typer.Option(None, "--D", help="Radius D in metres for --privacy D-eps."),
    loss: str = typer.Option("distance", "--loss",
                             help="distance, squared, power:P or threshold:DELTA (metres)."),
    region_diameter: Optional[float] = typer.Option(
        None, "--region-diameter", help="Longest displacement to protect (metres); default: "
                                        "the whole plane."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Write the result as JSON (atomically)."),
) -> None:
    """Find the optimal circular noise function for a privacy notion and a loss.

    Searches the tight family (flat core + steepest decay allowed by l); for
    geo-indistinguishability the optimum is planar Laplace. Prints JSON with the
    optimal parameters, its expected loss and the integration error bound.

    Example: veil location noise --privacy D-eps --D 200 --epsilon 1 --loss distance
    """
    from ..errors import ParameterError
    from ..geo.lprivacy import (PlanarLaplace, d_epsilon_privacy, expected_loss,
                                geo_indistinguishability, make_loss, optimal_noise)
    from ..validation import check_choice, check_positive

    kind = check_choice(privacy.lower(), "--privacy", ("geo", "d-eps"))
    eps = check_epsilon_option(epsilon)
    if kind == "geo":
        if D is not None:
            raise ParameterError("--D only applies to --privacy D-eps")
        l = geo_indistinguishability(eps)
    else:
        if D is None:
            raise ParameterError("--privacy D-eps needs --D (metres, > 0)")
        l = d_epsilon_privacy(check_positive(D, "--D"), eps)
    L = make_loss(loss)
    max_step = math.inf if region_diameter is None else check_positive(region_diameter,
                                                                        "--region-diameter")
    opt = optimal_noise(l, L, max_step=max_step)
    result = {"privacy": l.to_dict(), "loss": L.name, **opt.to_dict()}
    if kind == "geo":
        result["planar_laplace_expected_loss"] = expected_loss(PlanarLaplace(eps), L).value
    text = json.dumps(result, indent=2, sort_keys=True, default=float)
    if output is not None:
        from ..io import write_json
        write_json(result, output_path(output))
        typer.echo(f"wrote {output}", err=True)
    typer.echo(text)
