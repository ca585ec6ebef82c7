"""``veil map publish|query|regions`` and ``veil bench maps``: DP density maps of locations."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import List, Optional

import typer

from .common import (DELIMITER, EPSILON, FORCE, INPUT_FORMAT, LEDGER, SEED, SPEND_AGAIN,
                     answer, done, exact, json_mode, options_named, release_summary, say, status,
                     writes_files)

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="DP density maps of locations (publish, query).")
BENCH_NAME = "maps"


def _grid(bbox, region, bbox_from_data, grid, cell_size, *, path, lat, lon, input_format,
          delimiter):
    from ..errors import ParameterError
    from ..maps import MapGrid, data_extent, parse_bbox, parse_shape, region_bbox

    given = [o for o, v in (("--bbox", bbox), ("--region", region),
                            ("--bbox-from-data", bbox_from_data)) if v]
    if len(given) != 1:
        raise ParameterError("give exactly one of --bbox LAT_MIN,LON_MIN,LAT_MAX,LON_MAX, "
                             "--region NAME (see `veil map regions`) or --bbox-from-data (NOT "
                             f"private; warns), got {' '.join(given) or 'none'}")
    if (grid is None) == (cell_size is None):
        raise ParameterError("give exactly one of --grid ROWSxCOLS (e.g. 256x256) and "
                             "--cell-size METRES")
    if bbox:
        box = parse_bbox(bbox)
    elif region:
        box = region_bbox(region)
    else:
        box = data_extent(path, lat=lat, lon=lon, format=input_format, delimiter=delimiter)
    if grid is not None:
        rows, cols = parse_shape(grid)
        return MapGrid(*box, rows=rows, cols=cols)
    return MapGrid.from_cell_size(box, cell_size)


def _check_outputs(input: Path, outputs: list[Path]) -> None:
    from ..errors import ParameterError

    for out in outputs:
        if out.is_symlink():
            raise ParameterError(f"output {str(out)!r} is a symbolic link: veil does not write "
                                 "through links; give a plain file name")
        if not out.parent.exists():
            raise ParameterError(f"output {str(out)!r}: folder {str(out.parent)!r} does not "
                                 "exist")
        if out.exists() and input.exists() and os.path.samefile(out, input):
            raise ParameterError(f"output {str(out)!r} is the input file: refusing to overwrite "
                                 "the input")
    names = [os.path.abspath(o) for o in outputs]
    if len(set(names)) != len(names):
        raise ParameterError(f"output files must be distinct, got {[str(o) for o in outputs]}")


def _check_columns(options: dict) -> None:
    """Each column option names a column (not ''), and no two name the same one."""
    from ..errors import ParameterError
    from .common import check_column_option

    seen: dict[str, str] = {}
    for option, name in options.items():
        if name is None:
            continue
        check_column_option(name, option)
        if name in seen:
            raise ParameterError(f"{seen[name]} and {option} name the same column {name!r}: "
                                 "give each its own column")
        seen[name] = option


#: DuckDB's memory units (case-insensitive), in bytes; its limit must fit in 2**63 bytes.
_MEMORY_UNITS = {"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "k": 1e3, "m": 1e6, "g": 1e9,
                 "t": 1e12, "kib": 2.0**10, "mib": 2.0**20, "gib": 2.0**30, "tib": 2.0**40}
#: The smallest ``--memory-limit`` (DuckDB cannot even start a query below a few MB).
MIN_MEMORY_BYTES = 16e6


def _check_memory_limit(value: str) -> str:
    """``--memory-limit`` in DuckDB's syntax (``500MB``, ``2GB``, ``1.5GiB``), checked
    before anything runs, so DuckDB's parser never reports a bad one as an internal error."""
    import re

    from ..errors import ParameterError

    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]+)\s*", value)
    size = float(m.group(1)) * _MEMORY_UNITS[m.group(2).lower()] if (
        m and m.group(2).lower() in _MEMORY_UNITS) else None
    if size is None or not MIN_MEMORY_BYTES <= size < 2.0**63:
        raise ParameterError("--memory-limit must be a size of at least 16MB in DuckDB's "
                             "syntax (a number and a unit KB, MB, GB, TB, KiB, MiB, GiB or "
                             f"TiB, e.g. 500MB, 2GB, 1.5GiB), got {value!r}")
    return value.strip()


#: The library's names of the options of ``publish`` (its refusals name the option).
PUBLISH_OPTIONS = {
    "max_points": "--max-points", "scale": "--scale", "height": "--height",
    "branching": "--branching", "option height": "--height", "option branching": "--branching",
    "cell size (metres)": "--cell-size", "time window start": "--start",
    "time window end": "--end", "engine": "--engine", "workers": "--workers",
    "scheduler": "--scheduler", "memory_limit": "--memory-limit", "seed": "--seed"}


@app.command("publish")
@writes_files("input")
@options_named(PUBLISH_OPTIONS)
def publish_cmd(
    input: Path = typer.Argument(..., help="Points: .csv/.tsv, .parquet or .json (read with "
                                 "DuckDB, streamed)."),
    epsilon: float = EPSILON,
    output: Path = typer.Option(..., "--output", "-o", help="Map table (.parquet, .csv or "
                                ".json: one row per cell), written atomically with "
                                "OUTPUT.meta.json."),
    bbox: Optional[str] = typer.Option(None, "--bbox", help="Public box LAT_MIN,LON_MIN,"
                                       "LAT_MAX,LON_MAX (degrees)."),
    region: Optional[str] = typer.Option(None, "--region", help="A named public region "
                                         "(`veil map regions`), e.g. nyc."),
    bbox_from_data: bool = typer.Option(False, "--bbox-from-data", help="Take the box from "
                                        "the data's extent (NOT private; warns)."),
    grid: Optional[str] = typer.Option(None, "--grid", help="Cells ROWSxCOLS, e.g. 256x256."),
    cell_size: Optional[float] = typer.Option(None, "--cell-size", help="About square cells "
                                              "of this many metres (instead of --grid)."),
    lat: str = typer.Option("lat", "--lat-column", help="Latitude column (degrees)."),
    lon: str = typer.Option("lon", "--lon-column", help="Longitude column (degrees)."),
    user: Optional[str] = typer.Option(None, "--user-column", help="Column identifying the person "
                                       "(protects one person; needs --max-points)."),
    max_points: Optional[int] = typer.Option(None, "--max-points", help="Public bound on the "
                                             "points kept per person (sampled uniformly)."),
    protects: Optional[str] = typer.Option(None, "--protects", help="user (default with "
                                           "--user-column) or record (one point)."),
    time: Optional[str] = typer.Option(None, "--time-column", help="Time column (for --start/--end)."),
    start: Optional[str] = typer.Option(None, "--start", help="Public time window start "
                                        "(number or ISO date/time, inclusive)."),
    end: Optional[str] = typer.Option(None, "--end", help="Public time window end (exclusive)."),
    method: str = typer.Option("auto", "--method", "-m", help="identity, ug, ag, quadtree, "
                               "hb2d, privtree, dawa2d, hdmm or auto."),
    scale: Optional[float] = typer.Option(None, "--scale", help="A PUBLIC number of points "
                                          "(e.g. a census count) for the grid-size rules; "
                                          "default: a noisy count (5% of epsilon)."),
    height: Optional[int] = typer.Option(None, "--height", help="Quadtree height (levels "
                                         "below the root)."),
    branching: Optional[int] = typer.Option(None, "--branching", help="HB2D branching per "
                                            "axis."),
    geojson: Optional[Path] = typer.Option(None, "--geojson", help="Also write the cells as "
                                           "GeoJSON."),
    png: Optional[Path] = typer.Option(None, "--png", help="Also write a PNG heat map."),
    geotiff: Optional[Path] = typer.Option(None, "--geotiff", help="Also write a GeoTIFF "
                                           "(needs veil\\[geotiff])."),
    engine: str = typer.Option("local", "--engine", help="local (DuckDB) or dask (Parquet "
                               "input, DuckDB per partition)."),
    workers: int = typer.Option(2, "--workers", help="Dask workers (a local cluster)."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Address of an existing "
                                            "Dask scheduler."),
    memory_limit: str = typer.Option("1GB", "--memory-limit", help="DuckDB memory limit."),
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
    seed: Optional[int] = SEED,
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="Output format: csv, "
                                      "parquet or json; must agree with the output's "
                                      "extension (which decides)."),
    force: bool = FORCE,
    spend_again: bool = SPEND_AGAIN,
    ledger: Optional[Path] = LEDGER,
) -> None:
    """Publish an epsilon-DP map of points: per-person bounding, grid counts in DuckDB, noise.

    Example: veil map publish pings.csv --user-column user --max-points 20 --region port-veil
    --grid 64x64 --epsilon 1 -o map.parquet --png map.png
    """
    from ..errors import ParameterError
    from ..maps import METHODS, publish_points, write_map
    from ..random import make_rng
    from ..validation import check_choice, check_epsilon

    check_epsilon(epsilon, "--epsilon")
    memory_limit = _check_memory_limit(memory_limit)
    check_choice(method, "--method", METHODS)
    if protects is None:
        if user is None:
            raise ParameterError("say what the map protects: --user-column COL --max-points M (one "
                                 "person, recommended) or --protects record (one point)")
        protects = "user"
    check_choice(protects, "--protects", ("user", "record"))
    _check_columns({"--lat": lat, "--lon": lon, "--user": user, "--time": time})
    outputs = [output, Path(str(output) + ".meta.json"),
               *(p for p in (geojson, png, geotiff) if p is not None)]
    _check_outputs(input, outputs)
    if fmt is not None:  # the extension decides the map table's format; --format confirms it
        from .common import output_format

        output_format(fmt, output)
    g = _grid(bbox, region, bbox_from_data, grid, cell_size, path=input, lat=lat, lon=lon,
              input_format=input_format, delimiter=delimiter)
    params = {k: v for k, v in (("height", height), ("branching", branching)) if v is not None}
    from ..maps.points import _time_filter

    _time_filter(time, start, end)  # a bad or empty window before anything is charged
    from ..ledger import charge
    from .common import stages

    with stages() as show:
        # one map at epsilon per person (per point with --protects record), charged to the
        # input's content identity before anything is computed, committed once written
        show(f"{input.name}: content identity for the privacy ledger (one pass)")
        charge(input, amount=float(epsilon), unit=protects, outputs=outputs,
               read=[c for c in (lat, lon, user if protects == "user" else None, time) if c],
               format=input_format, delimiter=delimiter)
        rng = make_rng(seed=seed) if seed is not None else make_rng()
        show(f"{input.name}: points per cell"
             + (f" (at most {max_points} per person)" if protects == "user" else "")
             + f", then {method} on the {g.rows}x{g.cols} grid")
        rel = publish_points(input, g, epsilon=epsilon, method=method, lat=lat, lon=lon,
                             user=user if protects == "user" else None, time=time,
                             protects=protects, max_points=max_points, start=start, end=end,
                             scale=scale, engine=engine, workers=workers, scheduler=scheduler,
                             rng=rng, format=input_format, delimiter=delimiter,
                             memory_limit=memory_limit, **params)
        notes = list(rel.notes)
        if seed is not None:
            notes.append("produced with a fixed --seed: for experiments only, not private")
        if bbox_from_data:
            notes.append("the box was taken from the data's extent (--bbox-from-data): NOT "
                         "private")
        rel = dataclasses.replace(rel, notes=tuple(notes), parameters={
            **rel.parameters, "bbox_from_data": bool(bbox_from_data)})
        show(f"writing {output.name}")
        written = write_map(rel, output, geojson=geojson, png=png, geotiff=geotiff)
    side = next((p for p in written if str(p).endswith(".meta.json")), None)
    done(release_summary(rel, output, side, files=[str(p) for p in written],
                         grid=[int(g.rows), int(g.cols)],
                         chosen=rel.parameters.get("chosen", rel.mechanism)),
         f"{rel.parameters.get('chosen', rel.mechanism)}: {g.rows}x{g.cols} map, "
         f"epsilon={exact(epsilon)} (split {json.dumps(rel.metadata()['budget_split'])}), "
         f"protects one {rel.parameters['protects']} -> " + ", ".join(str(p) for p in written))


@app.command("query")
def query_cmd(
    published: Path = typer.Argument(..., help="A map table written by `veil map publish` "
                                     "(its .meta.json must be next to it)."),
    bbox: List[str] = typer.Option(..., "--bbox", help="Query box LAT_MIN,LON_MIN,LAT_MAX,"
                                   "LON_MAX; repeat for several."),
) -> None:
    """Estimated number of points in rectangles, from a published map (no privacy cost).

    Prints one JSON object per box: the estimate and the share of the box inside the map.
    """
    import numpy as np

    from ..maps import parse_bbox, query_boxes, read_map

    pm = read_map(published)
    boxes = np.array([parse_bbox(b, name=f"--bbox {b!r}") for b in bbox])
    res = query_boxes(pm.values, pm.grid, boxes)
    found = [{"bbox": [float(v) for v in b], "estimate": float(est),
              "fraction_inside": float(frac), "mechanism": pm.meta.get("mechanism"),
              "epsilon": pm.meta.get("budget", {}).get("epsilon")}
             for b, est, frac in zip(boxes, res["estimate"], res["fraction_inside"])]
    # one JSON object per box (JSON lines); with --json one object holding them all
    answer({"published": str(published), "boxes": found},
           "\n".join(json.dumps(f) for f in found))


@app.command("regions")
def regions_cmd() -> None:
    """List the named public regions (boxes) that --region accepts."""
    from ..maps import REGIONS

    answer({"regions": {name: {"bbox": [float(v) for v in box], "description": desc}
                        for name, (box, desc) in REGIONS.items()}},
           "\n".join(f"{name:18} {','.join(f'{v:.6g}' for v in box)}  {desc}"
                     for name, (box, desc) in REGIONS.items()))


@writes_files()
def bench(
    quick: bool = typer.Option(False, "--quick", help="2 runs, one scale (a first look)."),
    runs: int = typer.Option(10, "--runs", help="Runs per setting."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the rows as "
                                          "JSON."),
    force: bool = FORCE,
) -> None:
    """DP maps: the DPBench 2-D protocol on the shared 2-D data and held-out real maps."""
    from ..maps.bench import accuracy_table
    from ..validation import check_int

    check_int(runs, "--runs", minimum=1)  # also with --quick (which runs 2)
    if output is not None:  # refuse a bad output before minutes of benchmarking
        from ..io import check_output_target

        check_output_target(output)
    rows, text = accuracy_table(runs=2 if quick else runs,
                                scales=(10**4,) if quick else (10**4, 10**6, 10**8),
                                log=say)
    say(text)
    if output is not None:
        from ..io import write_json

        write_json([r.to_dict() for r in rows], output)
        status(f"wrote {output}")
    if json_mode():
        answer({"rows": [r.to_dict() for r in rows],
                "output": None if output is None else str(output)})
