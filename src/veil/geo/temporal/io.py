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
import re
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
    (``""`` for a file without a user column), in file order.

    ``user`` holds the user ids exactly as read: text for CSV (``"007"`` and ``"7"`` are two
    users), the column's own values for Parquet and JSON. ``t_raw`` holds the time column as
    read (text for CSV, the column's values otherwise; ``t`` by default): a release writes it
    back unchanged. ``t_key`` orders the points exactly (integers stay integers, timestamps
    are compared in their own unit; ``t`` by default), where float seconds could tie or
    round. ``has_user``: the input had a user column (default: some user id is not ``""``).
    """

    t: np.ndarray
    lat: np.ndarray
    lon: np.ndarray
    path: str = ""
    user: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    t_raw: np.ndarray | None = None
    t_key: np.ndarray | None = None
    has_user: bool | None = None

    def __post_init__(self) -> None:
        if self.user.size == 0 and self.t.size:
            self.user = np.full(self.t.size, "", dtype=object)
        if self.t_raw is None:
            self.t_raw = self.t
        if self.t_key is None:
            self.t_key = self.t
        if self.has_user is None:
            self.has_user = any(not (isinstance(u, str) and u == "") for u in self.user)


#: Cells pandas reads as missing by default (used for every column but the user column,
#: whose ids are read as text exactly: "NA" or "nan" can be someone's id)
try:
    from pandas._libs.parsers import STR_NA_VALUES as _NA_TOKENS
except ImportError:  # pragma: no cover - a pandas that moved it
    _NA_TOKENS = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                  "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                  "nan", "null"}


def _iso_times(text, fmt: str | None = None):
    """``text`` (strings) parsed as UTC timestamps, ``NaT`` where a value does not parse:
    ISO 8601 in any of its forms (``T`` or space, with or without an offset) by default, or
    the explicit ``fmt``. Never warns."""
    import warnings

    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return pd.to_datetime(text, format=fmt or "ISO8601", errors="coerce", utc=True)
        except (ValueError, TypeError, OverflowError):
            return pd.Series(pd.NaT, index=text.index, dtype="datetime64[ns, UTC]")


def _seconds(ts) -> tuple[np.ndarray, np.ndarray]:
    """UTC timestamps (a Series) -> (float seconds since 1970, exact order key)."""
    import pandas as pd

    secs = (ts - pd.Timestamp("1970-01-01", tz="UTC")).dt.total_seconds().to_numpy(
        dtype=np.float64)
    if ts.isna().any():
        return secs, secs
    key = ts.dt.tz_convert(None).to_numpy()
    return secs, key.view(np.int64)


def _times(col, name: str, path: str) -> tuple[np.ndarray, np.ndarray]:
    """The time column as ``(seconds, exact order key)``: numbers of seconds, or timestamps
    (ISO 8601, in any mix of its forms; else one format that pandas infers from the first
    timestamp). Mixing numbers and timestamps is an error naming the first row whose kind
    differs from the first row's; a value that is neither is an error naming its row."""
    import pandas as pd

    if pd.api.types.is_datetime64_any_dtype(col.dtype):   # a typed column (Parquet)
        ts = col.dt.tz_localize("UTC") if col.dt.tz is None else col.dt.tz_convert("UTC")
        return _seconds(ts)
    num = pd.to_numeric(col, errors="coerce")
    present = col.notna().to_numpy()
    is_num = num.notna().to_numpy()
    rows = np.flatnonzero(present)
    if rows.size == 0 or is_num[rows].all():
        key = num.to_numpy()
        if key.dtype.kind not in "iu":
            key = key.astype(np.float64)
        return num.to_numpy(dtype=np.float64), key
    first = int(rows[0])

    def fail(row: int, why: str) -> DataError:
        return DataError(f"column {name!r} row {row + 1} {why}", path=path, row=row + 1,
                         column=name)

    def neither(row: int) -> DataError:
        return fail(row, f"is neither a number of seconds nor a timestamp: "
                         f"{col.iloc[row]!r}")

    if is_num[first]:   # numbers of seconds: the first row that is not one
        row = int(np.flatnonzero(present & ~is_num)[0])
        if _iso_times(col.iloc[[row]].astype(str)).notna().all():
            raise fail(row, f"is a timestamp ({col.iloc[row]!r}) but row {first + 1} is a "
                            f"number of seconds ({col.iloc[first]!r}): use one kind of time "
                            f"in a column")
        raise neither(row)
    # timestamps: the first row that is a number, or that does not parse
    pos = np.flatnonzero(present & ~is_num)
    text = col.iloc[pos].astype(str).reset_index(drop=True)
    ts = _iso_times(text)
    if pd.isna(ts.iloc[0]):
        # the first timestamp is not ISO 8601: one format inferred from it (as veil read
        # such files before), else it is not a timestamp at all
        from pandas.tseries.api import guess_datetime_format

        fmt = guess_datetime_format(text.iloc[0])
        if fmt is None:
            raise neither(first)
        ts = _iso_times(text, fmt)
        if ts.isna().any():
            row = int(pos[ts.isna().to_numpy()][0])
            raise fail(row, f"is not a timestamp of the form of row {first + 1} "
                            f"({col.iloc[first]!r}, format {fmt!r}): {col.iloc[row]!r}")
    bad = pos[ts.isna().to_numpy()]
    numbers = np.flatnonzero(present & is_num)
    if numbers.size and (bad.size == 0 or numbers[0] < bad[0]):
        row = int(numbers[0])
        raise fail(row, f"is a number ({col.iloc[row]!r}) but row {first + 1} is a "
                        f"timestamp ({col.iloc[first]!r}): use one kind of time in a column")
    if bad.size:
        raise neither(int(bad[0]))
    full = pd.Series(pd.NaT, index=range(len(col)), dtype=ts.dtype)
    full.iloc[pos] = ts.to_numpy()
    return _seconds(full)


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
        # times as seconds since 1899-12-30 (the file's fractional days), to the
        # millisecond: the days column has 10 decimals (below 0.1 ms)
        return PointTrack(tr.t, tr.lat, tr.lon, str(path),
                          np.full(tr.t.size, tr.user or path.stem, dtype=object),
                          t_raw=np.round(tr.t, 3), has_user=True)
    kind = format or ("parquet" if path.suffix.lower() in (".parquet", ".pq") else
                      "json" if path.suffix.lower() in (".json", ".jsonl", ".ndjson") else "csv")
    sep = delimiter if delimiter is not None else ("\t" if path.suffix.lower() == ".tsv"
                                                   else ",")
    try:
        if kind == "parquet":
            df = pd.read_parquet(path)
        elif kind == "json":   # values as they are in the file: "007" stays text
            df = pd.read_json(path, lines=path.suffix.lower() in (".jsonl", ".ndjson"),
                              dtype=False, precise_float=True)
        else:   # the header first: the user and time columns are then read as text
            df = pd.read_csv(path, sep=sep, nrows=0)
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
    ucol = (cols.get(user_column.strip().lower()) if user_column is not None else None)
    if kind == "csv":
        # user ids and times as the text of the file ("007" is not "7", 0.0001 is not
        # 0.0002, epoch nanoseconds keep every digit); user ids are never "missing"
        text = [c for c in (ucol, cols[tcol]) if c is not None]
        try:
            df = pd.read_csv(path, sep=sep, dtype={c: str for c in text},
                             keep_default_na=False,
                             na_values={c: sorted(_NA_TOKENS) for c in df.columns
                                        if c != ucol})
        except (ValueError, OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot parse: {exc}".splitlines()[0], path=str(path)) from None
    out = {}
    for c in ("lat", "lon"):
        v = pd.to_numeric(df[cols[c]], errors="coerce")
        bad = v.isna() & df[cols[c]].notna()
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"column {c!r} row {row + 1} is not a number: "
                            f"{df[cols[c]].iloc[row]!r}", path=str(path), row=row + 1, column=c)
        out[c] = v.to_numpy(dtype=np.float64)
    tc = df[cols[tcol]]
    t, key = _times(tc, tcol, str(path))
    if ucol is not None:
        user = df[ucol].to_numpy(dtype=object)
    else:
        user = np.full(t.size, "", dtype=object)
    return PointTrack(t, out["lat"], out["lon"], str(path), user,
                      t_raw=tc.to_numpy(dtype=object), t_key=key, has_user=ucol is not None)


def split_users(track: PointTrack) -> list[tuple[Any, np.ndarray]]:
    """``(user, row indices)`` per user, users in order of first appearance, rows in file
    order (the rows of one user need not be adjacent). Users are told apart by their value
    as read (``"007"`` and ``"7"`` are two users); ``user`` is that value."""
    import pandas as pd

    users = np.asarray(track.user, dtype=object)
    if users.size == 0:
        return []
    codes, _ = pd.factorize(users, sort=False, use_na_sentinel=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    return [(users[rows[0]], rows) for rows in np.split(order, bounds)]


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
    key = track.t if track.t_key is None else track.t_key
    for user, rows in split_users(track):
        dec = np.flatnonzero(key[rows][1:] < key[rows][:-1])
        if dec.size:
            who = f" of user {user!r}" if track.has_user else ""
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


def _plain(v: Any) -> Any:
    """A value of a user or time column as a plain Python value (``None`` if missing)."""
    import datetime

    import pandas as pd

    if isinstance(v, np.datetime64):
        v = pd.Timestamp(v) if not np.isnat(v) else None
    elif isinstance(v, np.generic):
        v = v.item()
    if v is None or v is pd.NaT or v is pd.NA or (isinstance(v, float) and v != v):
        return None
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    return v


def _text(v: Any) -> str:
    """The CSV text of a user id or a time: text as it is, numbers at full precision."""
    v = _plain(v)
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v)


#: A JSON number literal (RFC 8259): time text of this form is written as that number
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _json(v: Any, *, number_text: bool = False) -> str:
    """A user id or a time as JSON: numbers as numbers, text as strings; with
    ``number_text``, text that is a JSON number literal is written as that very literal
    (a time ``"1600000000123456789"`` or ``"0.0001"`` read from a CSV keeps every digit)."""
    v = _plain(v)
    if isinstance(v, str) and number_text and _JSON_NUMBER.fullmatch(v):
        return v
    if isinstance(v, float) and not np.isfinite(v):
        return json.dumps(repr(v))
    return json.dumps(v)


def latlon_float_format(resolution_m: float) -> str | None:
    """The CSV ``float_format`` of released lat/lon on a lattice of ``resolution_m`` metres:
    enough decimals that the rounding moves a point by at most 2 % of the lattice step
    (at least 7, about 1 cm, as before), or ``None`` (shortest round-trip repr, every bit
    of the float) for ``resolution_m = 0`` (raw float output) or a lattice finer than
    fixed decimals can show.

    Examples
    --------
    >>> latlon_float_format(1.0), latlon_float_format(0.001), latlon_float_format(0.0)
    ('%.7f', '%.10f', None)
    """
    import math

    from ..snapping import latlon_step_deg

    if not resolution_m > 0:
        return None
    # 0.5 * 10**-d <= step / 50
    d = max(7, math.ceil(math.log10(25.0 / latlon_step_deg(resolution_m))))
    return None if d >= 14 else f"%.{d}f"


def released_table(t: np.ndarray, latlon: np.ndarray, set_sizes: np.ndarray, fmt: str,
                   user: np.ndarray | None = None, *, resolution_m: float = 1.0) -> str:
    """The published file: [user,] t, released lat/lon, and the (public) delta-set size.

    ``user`` and ``t`` are written back as read (``PointTrack.user`` and ``t_raw``: the
    release does not change them); lat/lon in CSV with the digits of the lattice
    ``resolution_m`` (:func:`latlon_float_format`; raw floats for 0), in JSON as raw floats.
    """
    import pandas as pd

    t = np.asarray(t, dtype=object) if np.asarray(t).dtype.kind not in "fiu" else np.asarray(t)
    lat = np.asarray(latlon[:, 0], dtype=np.float64)
    lon = np.asarray(latlon[:, 1], dtype=np.float64)
    sizes = np.asarray(set_sizes, dtype=np.int64)
    if fmt == "csv":
        cols: dict[str, Any] = {} if user is None else {
            "user": pd.Series([_text(u) for u in user], dtype=object)}
        cols.update({"t": pd.Series([_text(v) for v in t], dtype=object), "lat": lat,
                     "lon": lon, "set_size": sizes})
        return pd.DataFrame(cols).to_csv(index=False,
                                         float_format=latlon_float_format(resolution_m))
    names = ([] if user is None else ["user"]) + ["t", "lat", "lon", "set_size"]
    columns = ([] if user is None else [[_json(u) for u in user]]) + [
        [_json(v, number_text=True) for v in t], [json.dumps(float(x)) for x in lat],
        [json.dumps(float(x)) for x in lon], [str(int(k)) for k in sizes]]
    keys = [json.dumps(n) + ": " for n in names]
    rows = ("{" + ", ".join(k + v for k, v in zip(keys, vals)) + "}"
            for vals in zip(*columns))
    return "[" + ", ".join(rows) + "]"


def sidecar(meta: dict[str, Any]) -> str:
    return json.dumps(meta, indent=2, sort_keys=True)
