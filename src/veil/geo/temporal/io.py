"""Reading trajectories for the CLI (CSV/Parquet ``user,t,lat,lon`` or GeoLife ``.plt``) with
explicit handling of invalid points, and atomic writing of released points.

Column convention (the same as ``veil data synth trajectories`` and ``veil batch
trajectories``): ``t`` is the time column (seconds, or ISO timestamps), ``lat`` and ``lon``
are degrees, ``user`` (optional) identifies the person, one sequence per user. ``time`` is
accepted as an alias of ``t`` (files written by veil before 0.3 used it); ``--time-column``
names any other column.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DataError, ParameterError
from ...validation import check_choice
from .geolife import read_plt
from .grid import TemporalGrid

__all__ = ["PointTrack", "read_track", "clean_track", "write_atomic", "TIME_COLUMN",
           "TIME_ALIASES"]

ON_INVALID = ("error", "drop")

#: The time column of trajectory files, and the accepted alias.
TIME_COLUMN = "t"
TIME_ALIASES = ("t", "time")


@dataclass
class PointTrack:
    """Trajectory points as arrays: time (seconds), lat, lon, and the user of each point
    (``""`` for a file without a user column), in file order."""

    t: np.ndarray
    lat: np.ndarray
    lon: np.ndarray
    path: str = ""
    user: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))

    def __post_init__(self) -> None:
        if self.user.size == 0 and self.t.size:
            self.user = np.full(self.t.size, "", dtype=object)


def _times(col, name: str, path: str) -> np.ndarray:
    import pandas as pd

    v = pd.to_numeric(col, errors="coerce")
    bad = v.isna() & col.notna()
    if bad.any():   # not numbers: ISO timestamps?
        try:
            ts = pd.to_datetime(col, errors="raise", utc=True)
        except (ValueError, TypeError):
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"column {name!r} row {row + 1} is neither a number of seconds "
                            f"nor a timestamp: {col.iloc[row]!r}", path=path, row=row + 1,
                            column=name) from None
        return (ts - pd.Timestamp("1970-01-01", tz="UTC")).dt.total_seconds().to_numpy(
            dtype=np.float64)
    return v.to_numpy(dtype=np.float64)


def read_track(path: str | Path, *, time_column: str | None = None,
               user_column: str | None = "user", format: str | None = None,
               delimiter: str | None = None) -> PointTrack:
    """Read a ``.plt`` file, or a CSV/Parquet/JSON file with ``t`` (or ``time``), ``lat``,
    ``lon`` and optionally ``user`` columns (names are case-insensitive).

    ``time_column`` names the time column explicitly; ``user_column=None`` ignores users.
    ``format`` (csv, parquet or json) overrides the extension; ``delimiter`` is the CSV field
    delimiter (default ``,``, a tab for ``.tsv``).
    """
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise DataError(f"input file {path} does not exist", path=str(path))
    if path.suffix.lower() == ".plt" and format is None:
        tr = read_plt(path)
        return PointTrack(tr.t, tr.lat, tr.lon, str(path),
                          np.full(tr.t.size, tr.user or path.stem, dtype=object))
    kind = format or ("parquet" if path.suffix.lower() in (".parquet", ".pq") else
                      "json" if path.suffix.lower() in (".json", ".jsonl", ".ndjson") else "csv")
    sep = delimiter if delimiter is not None else ("\t" if path.suffix.lower() == ".tsv"
                                                   else ",")
    try:
        if kind == "parquet":
            df = pd.read_parquet(path)
        elif kind == "json":
            df = pd.read_json(path, lines=path.suffix.lower() in (".jsonl", ".ndjson"))
        else:
            df = pd.read_csv(path, sep=sep)
    except (ValueError, OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot parse: {exc}".splitlines()[0], path=str(path)) from None
    cols = {str(c).strip().lower(): c for c in df.columns}
    if len(df.columns) == 1 and kind == "csv":
        for other in (";", "\t", "|", ",", " "):
            if other != sep and other in str(df.columns[0]):
                raise DataError(f"one column {str(df.columns[0])!r}: the header looks "
                                f"{other!r}-delimited: pass delimiter={other!r} (--delimiter "
                                "on the command line)", path=str(path))
    if time_column is not None:
        if time_column.strip().lower() not in cols:
            raise DataError(f"time column {time_column!r} not found (columns: "
                            f"{list(df.columns)})", path=str(path), column=time_column)
        tcol = time_column.strip().lower()
    else:
        found = [c for c in TIME_ALIASES if c in cols]
        if not found:
            raise DataError(f"missing time column: need 't' (or its alias 'time', or "
                            f"--time-column NAME) with lat, lon (got {list(df.columns)})",
                            path=str(path), column="t")
        tcol = found[0]
    missing = [c for c in ("lat", "lon") if c not in cols]
    if missing:
        raise DataError(f"missing column(s) {missing}; need t, lat, lon (and optionally "
                        f"user), got {list(df.columns)}", path=str(path), column=missing[0])
    out = {}
    for c in ("lat", "lon"):
        v = pd.to_numeric(df[cols[c]], errors="coerce")
        bad = v.isna() & df[cols[c]].notna()
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"column {c!r} row {row + 1} is not a number: "
                            f"{df[cols[c]].iloc[row]!r}", path=str(path), row=row + 1, column=c)
        out[c] = v.to_numpy(dtype=np.float64)
    t = _times(df[cols[tcol]], tcol, str(path))
    if user_column is not None and user_column.strip().lower() in cols:
        user = df[cols[user_column.strip().lower()]].astype(str).to_numpy(dtype=object)
    else:
        user = np.full(t.size, "", dtype=object)
    return PointTrack(t, out["lat"], out["lon"], str(path), user)


def split_users(track: PointTrack) -> list[tuple[str, np.ndarray]]:
    """``(user, row indices)`` per user, users in order of first appearance, rows in file
    order (the rows of one user need not be adjacent)."""
    users = track.user
    if users.size == 0:
        return []
    _, first, inv = np.unique(users.astype(str), return_index=True, return_inverse=True)
    inv = inv.ravel()
    order = np.argsort(first, kind="stable")
    out = []
    for k in order:
        out.append((str(users[first[k]]), np.flatnonzero(inv == k)))
    return out


def clean_track(track: PointTrack, grid: TemporalGrid, *, on_invalid: str = "error"
                ) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate a track against the public grid; returns ``(keep, cells, n_dropped)``: the
    boolean mask of the kept points (file order), their cells, and the number dropped.

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
    for user, rows in split_users(track):
        dec = np.flatnonzero(np.diff(track.t[rows]) < 0)
        if dec.size:
            who = f" of user {user!r}" if user else ""
            raise DataError(f"timestamps{who} are not sorted (row {rows[dec[0] + 1] + 1} is "
                            f"earlier than row {rows[dec[0]] + 1}); sort the file by user "
                            f"and time", path=track.path, row=int(rows[dec[0] + 1] + 1),
                            column="t")
    cells = grid.cell_of(track.lat, track.lon)
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
        raise DataError(no_point_in_grid_message(track, grid), path=track.path)
    return keep, cells[keep], int(bad.sum())


def no_point_in_grid_message(track: PointTrack, grid: TemporalGrid) -> str:
    """The error when no point of a file falls in the public grid (with both boxes)."""
    ok = np.isfinite(track.lat) & np.isfinite(track.lon)
    if not ok.any():
        return "every point has a NaN coordinate"
    la, lo = track.lat[ok], track.lon[ok]
    return (f"no point falls inside the grid (lat {grid.lat_min:g}..{grid.lat_max:g}, lon "
            f"{grid.lon_min:g}..{grid.lon_max:g}); the data span lat {la.min():.6g}.."
            f"{la.max():.6g}, lon {lo.min():.6g}..{lo.max():.6g}: pass a public --grid "
            f"LAT_MIN,LON_MIN,LAT_MAX,LON_MAX,NX,NY that covers them")


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


def released_table(t: np.ndarray, latlon: np.ndarray, set_sizes: np.ndarray, fmt: str,
                   user: np.ndarray | None = None) -> str:
    """The published file: [user,] t, released lat/lon, and the (public) delta-set size."""
    import pandas as pd

    cols: dict[str, Any] = {} if user is None else {"user": user}
    cols.update({"t": np.round(t, 3), "lat": latlon[:, 0], "lon": latlon[:, 1],
                 "set_size": set_sizes})
    df = pd.DataFrame(cols)
    if fmt == "csv":
        return df.to_csv(index=False, float_format="%.7f")
    return json.dumps(df.to_dict(orient="records"))


def sidecar(meta: dict[str, Any]) -> str:
    return json.dumps(meta, indent=2, sort_keys=True)
