"""Reading trajectories for the CLI (CSV ``time,lat,lon`` or GeoLife ``.plt``) with
explicit handling of invalid points, and atomic writing of released points."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DataError, ParameterError
from ...validation import check_choice
from .geolife import read_plt
from .grid import TemporalGrid

__all__ = ["PointTrack", "read_track", "clean_track", "write_atomic"]

ON_INVALID = ("error", "drop")


@dataclass
class PointTrack:
    """A trajectory as arrays: time (seconds or any increasing number), lat, lon."""

    t: np.ndarray
    lat: np.ndarray
    lon: np.ndarray
    path: str = ""


def read_track(path: str | Path) -> PointTrack:
    """Read a ``.plt`` file or a CSV with a header containing ``time``, ``lat``, ``lon``."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise DataError(f"input file {path} does not exist", path=str(path))
    if path.suffix.lower() == ".plt":
        tr = read_plt(path)
        return PointTrack(tr.t, tr.lat, tr.lon, str(path))
    try:
        df = pd.read_csv(path)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot parse: {exc}", path=str(path)) from None
    cols = {c.strip().lower(): c for c in df.columns}
    missing = [c for c in ("time", "lat", "lon") if c not in cols]
    if missing:
        raise DataError(f"missing column(s) {missing}; need a header with time, lat, "
                        f"lon (got {list(df.columns)})", path=str(path), column=missing[0])
    out = {}
    for c in ("time", "lat", "lon"):
        v = pd.to_numeric(df[cols[c]], errors="coerce")
        bad = v.isna() & df[cols[c]].notna()
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"column {c!r} row {row + 1} is not a number: "
                            f"{df[cols[c]].iloc[row]!r}", path=str(path), row=row + 1, column=c)
        out[c] = v.to_numpy(dtype=np.float64)
    return PointTrack(out["time"], out["lat"], out["lon"], str(path))


def clean_track(track: PointTrack, grid: TemporalGrid, *, on_invalid: str = "error"
                ) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate a track against the public grid; returns (times, cells, n_dropped).

    NaN coordinates and points outside the grid are an error (``on_invalid="error"``)
    or dropped and counted (``"drop"``). Missing or unsorted timestamps are always an
    error (re-sorting silently could hide a corrupted file).
    """
    on_invalid = check_choice(on_invalid, "on_invalid", ON_INVALID)
    n = track.t.size
    if n == 0:
        raise DataError("no points", path=track.path)
    if np.isnan(track.t).any():
        row = int(np.flatnonzero(np.isnan(track.t))[0])
        raise DataError(f"missing time at row {row + 1}", path=track.path,
                        row=row + 1, column="time")
    dec = np.flatnonzero(np.diff(track.t) < 0)
    if dec.size:
        raise DataError(f"timestamps are not sorted (row {dec[0] + 2} is earlier "
                        f"than row {dec[0] + 1}); sort the file by time", path=track.path,
                        row=int(dec[0] + 2), column="time")
    cells = grid.cell_of(track.lon, track.lat)
    bad = cells < 0
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        what = ("NaN coordinate" if np.isnan(track.lat[row]) or np.isnan(track.lon[row])
                else "a point outside the grid region")
        if on_invalid == "error":
            raise DataError(f"{int(bad.sum())} invalid point(s), first at row "
                            f"{row + 1} ({what}: lat={track.lat[row]}, lon={track.lon[row]}); "
                            f"use --on-invalid drop to drop them", path=track.path, row=row + 1)
    keep = ~bad
    if not keep.any():
        raise DataError(f"every point is invalid (NaN or outside the grid "
                        f"{grid.to_dict()})", path=track.path)
    return track.t[keep], cells[keep], int(bad.sum())


def write_atomic(path: str | Path, text: str) -> Path:
    """Write text to ``path`` through a temporary file and a rename."""
    path = Path(path)
    if not path.parent.exists():
        raise ParameterError(f"output folder {str(path.parent)!r} does not exist")
    tmp = path.with_name(f".veil-tmp-{path.name}.{os.getpid()}")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def released_table(t: np.ndarray, lonlat: np.ndarray, set_sizes: np.ndarray, fmt: str) -> str:
    """The published file: time, released lon/lat, and the (public) delta-set size."""
    import pandas as pd

    df = pd.DataFrame({"time": np.round(t, 3), "lon": lonlat[:, 0], "lat": lonlat[:, 1],
                       "set_size": set_sizes})
    if fmt == "csv":
        return df.to_csv(index=False, float_format="%.7f")
    return json.dumps(df.to_dict(orient="records"))


def sidecar(meta: dict[str, Any]) -> str:
    return json.dumps(meta, indent=2, sort_keys=True)
