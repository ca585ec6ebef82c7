"""From a point file to the true cell counts of a public grid, in DuckDB, with per-person bounds.

:func:`grid_counts` reads a CSV, Parquet or JSON file of points (``lat``, ``lon``, optionally a
``user`` and a ``time`` column) with DuckDB and counts the points of every cell by SQL
aggregation (``GROUP BY`` cell): the file is streamed, and memory is bounded by the grid (at most
one row per cell), not by the number of points.

**Per-person contribution bounding** (``protects="user"``). A map that protects one *person*
must bound how many points a person adds: each user keeps at most ``max_points`` of their points
(inside the box and time window), chosen uniformly at random, so one person changes the count
grid by at most ``max_points`` in L1 norm -- the sensitivity the mechanisms are calibrated to.
The sampling runs inside DuckDB in two streaming passes: (1) every point gets a key
``hash(salt, user, lat, lon, time)`` with a secret random 64-bit ``salt``, and a ``GROUP BY
user`` keeps, for users with more than ``max_points`` points, the ``max_points + 1`` smallest
keys (``min(key, m + 1)``: memory ``users x (m + 1)`` keys at most, never the points) and from
them one row of scalars per user (the threshold key, how many points at it are kept, whether
more share it); (2) the counting pass keeps a user's points whose key is below their
threshold, and the points tied at the threshold (identical points share a key) are allocated
exactly, in DuckDB, so that no user exceeds ``max_points``.
A user's kept points depend only on the salt and that user's own points, so the bounded data
of neighbouring inputs differ in one user's points only (the coupling the privacy argument
needs); with a random salt every subset of ``max_points`` distinct points is equally likely up
to the hash's quality (tested statistically, ``tests/maps/test_points.py``).

``protects="record"`` protects one point (row) instead: no bounding, sensitivity 1.

Nothing this module returns is private-safe to publish except through a mechanism: the counts
are the true counts. The diagnostics (:attr:`PointCounts.private`) are for the data owner only.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError, ParameterError
from ..io import sql
from ..io.read import (_check_file, _connect, _duck_error, _exact_names, _internal,
                       _missing_column_error, _nested_type, _source_sql, detect_format,
                       read_errors)
from ..random import make_rng
from ..validation import check_choice, check_int
from .grid import MapGrid

__all__ = ["PointCounts", "grid_counts", "read_geolife_plt", "PROTECTS", "point_source",
           "count_sql", "threshold_sql", "check_unit", "data_extent"]

PROTECTS = ("user", "record")


@dataclass(frozen=True)
class PointCounts:
    """The true counts of a grid and how they were bounded.

    Attributes
    ----------
    counts : ndarray (rows, cols) int64
        TRUE counts (private): publish them only through a mechanism.
    grid : MapGrid
    protects : {'user', 'record'}
    max_points : int or None
        The per-user bound (``protects='user'``).
    source : dict
        Public description of the input (file name, columns, time window).
    private : dict
        Diagnostics for the data owner (points read, outside the box, users, points removed by
        the bound). Never written to a published file.
    """

    counts: np.ndarray
    grid: MapGrid
    protects: str
    max_points: int | None
    source: dict[str, Any] = field(default_factory=dict)
    private: dict[str, Any] = field(default_factory=dict)

    @property
    def sensitivity(self) -> int:
        """How many points one protected unit can change (``max_points``, or 1 per record)."""
        return int(self.max_points) if self.protects == "user" else 1


_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?\Z")


def _time_filter(tcol: str | None, start, end) -> tuple[str, str]:
    """(SQL expression of the parsed time, condition of the public window on ``__t``)."""
    if tcol is None:
        if start is not None or end is not None:
            raise ParameterError("a time window (start/end) needs a time column (--time-column)")
        return "CAST(NULL AS DOUBLE)", "TRUE"
    if start is None and end is None:
        return sql.ident(tcol), "TRUE"

    def _num(v):
        try:
            return float(v)
        except (TypeError, ValueError):
            return None

    bounds = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    if all(_num(v) is not None for v in bounds.values()):
        t = f"TRY_CAST({sql.ident(tcol)} AS DOUBLE)"
        values = {k: float(v) for k, v in bounds.items()}
        for k, x in values.items():  # nan was pasted into the SQL ("column nan not found")
            if not math.isfinite(x):
                raise ParameterError(f"time window {k} must be a finite number, got {x!r}")
        lit = {k: f"CAST({sql.literal(repr(x))} AS DOUBLE)" for k, x in values.items()}
    else:
        import datetime as dt

        t = f"TRY_CAST(CAST({sql.ident(tcol)} AS VARCHAR) AS TIMESTAMP)"
        lit, values = {}, {}
        for k, v in bounds.items():
            # the forms DuckDB's TIMESTAMP reads as written (Python also takes week dates,
            # which DuckDB refused as an unreadable file; DuckDB drops a UTC offset silently)
            if not _DATETIME.match(str(v)):
                raise ParameterError(f"time window {k} {v!r} is neither a number nor a date/time "
                                     "such as 2012-04-01 or 2012-04-01T08:00 (no UTC offset)")
            try:
                values[k] = dt.datetime.fromisoformat(str(v))
            except ValueError as exc:
                raise ParameterError(f"time window {k} {v!r}: {exc}") from None
            lit[k] = f"CAST({sql.literal(str(v))} AS TIMESTAMP)"
    if "start" in values and "end" in values and not values["start"] < values["end"]:
        # an empty window was accepted: epsilon spent on a map of pure noise
        raise ParameterError(f"the time window is empty: start {start!r} must be before end "
                             f"{end!r} (the end is excluded)")
    conds = []
    if "start" in lit:
        conds.append(f"__t >= {lit['start']}")
    if "end" in lit:
        conds.append(f"__t < {lit['end']}")
    return t, " AND ".join(conds)


#: The names under which :func:`point_source`'s FROM clause holds the columns asked for.
SOURCE_NAMES = {"lat": "__in_lat", "lon": "__in_lon", "user": "__in_user", "time": "__in_time"}


def point_source(con, path, *, lat: str, lon: str, user: str | None, time: str | None,
                 format: str | None, delimiter: str | None, csv_header: bool) -> tuple[str, str]:
    """Check the file and its columns; return ``(FROM-clause SQL, format)``.

    The FROM clause holds the columns asked for under the names of :data:`SOURCE_NAMES`.
    The file's columns are read by position, as :func:`veil.io.read_table` reads them: a
    name from the file never reaches SQL, names are matched exactly as written (DuckDB
    trims, renames blank and case-twin names), and a file naming two columns alike is
    refused.
    """
    import duckdb

    p = Path(os.fspath(path))
    fmt = detect_format(p, format)
    if delimiter is None:
        delimiter = "\t" if p.suffix.lower() in (".tsv", ".tab") else ","
    _check_file(p)
    raw = _source_sql(p, fmt, delimiter=delimiter, header=csv_header, all_varchar=False)
    try:
        described = con.sql(f"DESCRIBE SELECT * FROM {raw}").fetchall()
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None
    except read_errors() as exc:
        raise _duck_error(exc, p, fmt, delimiter, csv_header) from None
    types = [str(r[1]) for r in described]
    have = _exact_names(con, p, fmt, [r[0] for r in described], delimiter=delimiter,
                        header=csv_header, names=None, types=types)
    index = {name: i for i, name in enumerate(have)}
    picks = []
    for role, col in (("lat", lat), ("lon", lon), ("user", user), ("time", time)):
        if col is None:
            continue
        if col not in index:
            raise _missing_column_error(str(p), col, have)
        if _nested_type(types[index[col]]):
            raise DataError(f"holds nested values of type {types[index[col]]} (lists or "
                            f"structs), expected one value per cell", path=str(p), column=col)
        picks.append(f"{sql.ident(_internal(index[col]))} AS {SOURCE_NAMES[role]}")
    positional = ", ".join(sql.ident(_internal(i)) for i in range(len(have)))
    return f"(SELECT {', '.join(picks)} FROM {raw} AS __src({positional}))", fmt


def _points_view(grid: MapGrid, *, src: str, lat: str, lon: str, user: str | None,
                 time: str | None, start, end, salt: int) -> str:
    """SQL of the typed points: cell, validity, box and window flags, sampling key."""
    la = f"TRY_CAST({sql.ident(lat)} AS DOUBLE)"
    lo = f"TRY_CAST({sql.ident(lon)} AS DOUBLE)"
    t, window = _time_filter(time, start, end)
    u = f"CAST({sql.ident(user)} AS VARCHAR)" if user is not None else "CAST(NULL AS VARCHAR)"
    inside, row, col = grid.cell_sql("__lat", "__lon")
    bad = ("(__lat IS NULL OR __lon IS NULL OR isnan(__lat) OR isnan(__lon) OR "
           "isinf(__lat) OR isinf(__lon) OR __lat < -90 OR __lat > 90 OR __lon < -180 OR "
           "__lon > 180" + (" OR __u IS NULL" if user is not None else "") + ")")
    bad_t = "(__t IS NULL)" if window != "TRUE" else "FALSE"
    return (f"SELECT *, {bad} OR {bad_t} AS __bad, {inside} AS __inside, "
            f"({window}) AS __inwin, "
            f"CASE WHEN {inside} THEN {row} * {grid.cols} + {col} ELSE -1 END AS __cell, "
            f"hash({int(salt)}, __u, __lat, __lon, __t) AS __k "
            f"FROM (SELECT {la} AS __lat, {lo} AS __lon, {u} AS __u, {t} AS __t, "
            f"CAST({sql.ident(lat)} AS VARCHAR) AS __lat_text, "
            f"CAST({sql.ident(lon)} AS VARCHAR) AS __lon_text FROM {src})")


def threshold_columns(ks: str, m: int) -> str:
    """From ``ks``, a user's ``m + 1`` smallest keys (the user has more than ``m`` points):
    ``__kt``, the largest kept key (the m-th smallest); ``__need``, how many of the points
    whose key equals ``__kt`` are kept (``m`` minus the keys below it; duplicate points share a
    key); ``__tied``, whether more points share ``__kt`` than are kept (the (m+1)-th key equals
    it). Only a tied user's points at ``__kt`` need an allocation; for every other user the
    points with a key up to ``__kt`` are exactly ``m``. Scalars: the key lists are not kept."""
    srt = f"list_sort({ks})"
    return (f"{srt}[{int(m)}] AS __kt, "
            f"{int(m) + 1} - list_position({srt}, {srt}[{int(m)}]) AS __need, "
            f"{srt}[{int(m) + 1}] = {srt}[{int(m)}] AS __tied")


#: DuckDB's ``min(x, n)`` aggregate takes ``n`` below this; a larger bound uses the window plan
#: (``--max-points 1000000`` failed with "Invalid input for MIN/MAX", reported as an unreadable
#: file)
TOP_K_LIMIT = 1_000_000


def threshold_sql(view: str, m: int, *, window: bool = False) -> str:
    """Per user with more than ``m`` usable points: the threshold key, the number of points
    kept at it, whether more points share it, and the user's count of usable points (one row
    of scalars per user; :func:`threshold_columns`).

    Two plans give the same rows. The default keeps the ``m + 1`` smallest keys of every user
    in a top-k aggregate: fast, but DuckDB reserves ``m + 1`` slots per user in memory, so
    many users with a large ``m`` exceed the memory limit. ``window=True`` ranks each user's
    keys with a window (a sort that DuckDB spills to disk): slower on small bounds (13.5 s
    against 7.7 s for 10^8 points, m = 50), but its memory does not grow with users x m.
    """
    usable = f"SELECT __u, __k FROM ({view}) WHERE NOT __bad AND __inside AND __inwin"
    if window or int(m) + 1 >= TOP_K_LIMIT:  # the aggregate takes fewer keys
        return (f"SELECT __u, __k AS __kt, {int(m) + 1} - __rk AS __need, "
                f"__next = __k AS __tied, __n FROM "
                f"(SELECT __u, __k, row_number() OVER __w AS __rn, rank() OVER __w AS __rk, "
                f"lead(__k) OVER __w AS __next, "
                f"count(*) OVER (PARTITION BY __u) AS __n FROM ({usable}) "
                f"WINDOW __w AS (PARTITION BY __u ORDER BY __k)) "
                f"WHERE __rn = {int(m)} AND __n > {int(m)}")
    return (f"SELECT __u, {threshold_columns('__ks', m)}, __n FROM (SELECT __u, "
            f"min(__k, {int(m) + 1}) AS __ks, count(*) AS __n FROM ({usable}) "
            f"GROUP BY __u HAVING count(*) > {int(m)})")


def create_thresholds(con, view: str, m: int) -> str:
    """Create the temp table ``__thr`` of :func:`threshold_sql`; returns the plan used.

    The top-k aggregate first; if DuckDB runs out of memory on it (many users, large
    ``m``), the window plan, which spills. Both give the same table. From ``m + 1 >=``
    :data:`TOP_K_LIMIT` the window plan directly.
    """
    import duckdb

    if int(m) + 1 >= TOP_K_LIMIT:  # the aggregate cannot keep that many keys per user
        con.execute(f"CREATE TEMP TABLE __thr AS {threshold_sql(view, m, window=True)}")
        return "window"
    try:
        con.execute(f"CREATE TEMP TABLE __thr AS {threshold_sql(view, m)}")
        return "top-m"
    except duckdb.OutOfMemoryException:
        con.execute("DROP TABLE IF EXISTS __thr")
        con.execute(f"CREATE TEMP TABLE __thr AS {threshold_sql(view, m, window=True)}")
        return "window"


def count_sql(view: str, *, bounded: bool) -> str:
    """Counts per cell (bad rows -> cell -2, outside -> -1); tie rows grouped per user too.

    With ``bounded``, a table ``__thr`` holds each user over the bound with ``__kt``, the
    largest of their ``m`` smallest keys, and ``__tied``: one row of scalars per user, so the
    join costs the same for any ``m`` (comparing every point with a list of ``m`` keys made
    ``--max-points 5000`` over 100x slower than 50). Only the points at the threshold of a
    *tied* user (duplicate points straddling the bound) come out as tie rows, with their user.
    """
    if not bounded:
        return (f"SELECT CASE WHEN __bad THEN -2 WHEN __inside AND __inwin THEN __cell ELSE -1 "
                f"END AS cell, CAST(NULL AS VARCHAR) AS tie_user, count(*) AS n "
                f"FROM ({view}) GROUP BY ALL")
    return (f"SELECT CASE WHEN __bad THEN -2 WHEN __inside AND __inwin THEN __cell ELSE -1 "
            f"END AS cell, CASE WHEN thr.__tied AND __k = thr.__kt AND NOT __bad AND __inside "
            f"AND __inwin THEN v.__u END AS tie_user, count(*) AS n "
            f"FROM ({view}) v LEFT JOIN (SELECT __u, __kt, __tied FROM __thr) thr "
            f"ON v.__u = thr.__u "
            f"WHERE v.__bad OR NOT (v.__inside AND v.__inwin) OR thr.__kt IS NULL "
            f"OR v.__k <= thr.__kt GROUP BY ALL")


def collect_counts(table, n_cells: int):
    """Turn the rows of :func:`count_sql` (an Arrow table) into ``(counts, ties, bad,
    outside)``; ``ties`` is the Arrow table ``cell, tie_user, n`` of the tie rows.

    Vectorized: one ``bincount`` over the cells (the table has at most one row per cell, plus
    the rows of points tied at a person's threshold), so no Python loop over cells or users.
    """
    import pyarrow.compute as pc

    cell = np.asarray(table.column("cell").to_numpy(zero_copy_only=False), dtype=np.int64)
    n = np.asarray(table.column("n").to_numpy(zero_copy_only=False), dtype=np.int64)
    tie_col = table.column("tie_user")
    tie = ~np.asarray(tie_col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    bad = int(n[cell == -2].sum())
    outside = int(n[cell == -1].sum())
    ok = (cell >= 0) & ~tie
    counts = np.bincount(cell[ok], weights=n[ok], minlength=n_cells).astype(np.int64)
    ties = table.filter(pc.is_valid(tie_col)).select(["cell", "tie_user", "n"])
    return counts, ties, bad, outside


def tie_counts(con, ties: str, n_cells: int) -> np.ndarray:
    """The kept points of the tie rows ``ties`` (a relation ``cell, tie_user, n, need``), per
    cell: each tied user keeps ``need`` of them in total, lowest cell first (all of a user's
    tied points are copies of one point, so in one cell, unless their 64-bit keys collide).
    In DuckDB: nothing per user reaches Python."""
    rows = con.sql(
        f"SELECT cell, CAST(sum(greatest(0, least(n, need - (cum - n)))) AS BIGINT) AS n FROM "
        f"(SELECT cell, n, need, sum(n) OVER (PARTITION BY tie_user ORDER BY cell ROWS "
        f"BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum FROM "
        f"(SELECT cell, tie_user, sum(n) AS n, any_value(need) AS need FROM ({ties}) "
        f"GROUP BY cell, tie_user)) GROUP BY cell").to_arrow_table()
    cell = np.asarray(rows.column("cell").to_numpy(zero_copy_only=False), dtype=np.int64)
    n = np.asarray(rows.column("n").to_numpy(zero_copy_only=False), dtype=np.int64)
    return np.bincount(cell, weights=n, minlength=n_cells).astype(np.int64)


def _first_bad_row(con, view: str, src_desc: str, lat: str, lon: str, user, time) -> DataError:
    """On the error path: name the first bad row (1-based data row) and what is wrong."""
    rows = con.sql(f"SELECT __row, __lat, __lon, __u, __t, __lat_text, __lon_text FROM "
                   f"(SELECT row_number() OVER () AS __row, * FROM ({view})) WHERE __bad "
                   f"ORDER BY __row LIMIT 1").fetchall()
    r, la, lo, u, t, la_text, lo_text = rows[0]
    if la is None or not np.isfinite(la) or not -90 <= la <= 90:
        what = (f"latitude {la_text!r} is not a number or outside [-90, 90]"
                if la_text is not None else "latitude is missing")
        col = lat
    elif lo is None or not np.isfinite(lo) or not -180 <= lo <= 180:
        what = (f"longitude {lo_text!r} is not a number or outside [-180, 180]"
                if lo_text is not None else "longitude is missing")
        col = lon
    elif user is not None and u is None:
        what, col = "missing user (every point needs one to bound a person's points)", user
    else:
        what, col = "missing or unparseable time (a time window is set)", time
    return DataError(what, path=src_desc, row=int(r), column=col)


def grid_counts(path, grid: MapGrid, *, lat: str = "lat", lon: str = "lon",
                user: str | None = None, time: str | None = None, protects: str = "user",
                max_points: int | None = None, start=None, end=None,
                format: str | None = None, delimiter: str | None = None,
                csv_header: bool = True, rng=None, memory_limit: str = "1GB",
                threads: int | None = None, source_sql: str | None = None) -> PointCounts:
    """True counts of the grid's cells from a point file, bounded per person (see the module).

    Parameters
    ----------
    path : path
        CSV/TSV, Parquet or JSON file of points (read through DuckDB, streamed).
    grid : MapGrid
        The public grid; points outside its box are not counted (their number is not published).
    lat, lon : str
        Column names (degrees).
    user : str, optional
        Column identifying the person (required for ``protects='user'``).
    time : str, optional
        Time column, used for the public window ``[start, end)`` and in the sampling key.
    protects : {'user', 'record'}
        The protected unit: one person (with ``max_points``) or one point.
    max_points : int, optional
        Public bound on the points kept per person (``protects='user'``): never derive it from
        the data.
    start, end : str or float, optional
        Public time window (numbers, or ISO dates/times).
    format, delimiter, csv_header
        Input format options (default: from the extension; ``,``; a header line).
    rng : numpy.random.Generator, optional
        Draws the secret sampling salt (OS entropy by default).
    memory_limit : str
        DuckDB's memory limit (it spills to a temporary folder beyond).
    threads : int, optional
        DuckDB threads (default: DuckDB's).
    source_sql : str, optional
        Internal: a ready FROM-clause instead of ``path`` (e.g. a set of GeoLife files).

    Returns
    -------
    PointCounts

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
    >>> _ = f.write_text("user,lat,lon\\na,0.5,0.5\\na,0.6,0.6\\na,0.7,1.5\\nb,1.5,0.5\\n")
    >>> pc = grid_counts(f, MapGrid(0, 0, 2, 2, rows=2, cols=2), user="user", max_points=2)
    >>> int(pc.counts.sum()), pc.counts[1, 0], pc.sensitivity
    (3, np.int64(1), 2)
    """
    protects = check_choice(protects, "protects", PROTECTS)
    if not isinstance(grid, MapGrid):
        raise ParameterError(f"grid must be a MapGrid, got {type(grid).__name__}")
    m = check_unit(protects, user, max_points)
    cols = [c for c in (lat, lon, user, time) if c is not None]
    if len(set(cols)) != len(cols):
        raise ParameterError(f"lat, lon, user and time must be different columns, got {cols}")
    return _grid_counts(path, grid, lat=lat, lon=lon, user=user, time=time, protects=protects,
                        m=m, start=start, end=end, format=format, delimiter=delimiter,
                        csv_header=csv_header, rng=rng, memory_limit=memory_limit,
                        threads=threads, source_sql=source_sql)


def check_unit(protects: str, user: str | None, max_points) -> int | None:
    """Validate the protected unit; returns the per-person bound (``None`` per record)."""
    protects = check_choice(protects, "protects", PROTECTS)
    if protects == "user":
        if user is None:
            raise ParameterError("protects='user' needs the user column (--user-column) to bound each "
                                 "person's points; or protect single points with "
                                 "protects='record' (--protects record)")
        if max_points is None:
            raise ParameterError("protects='user' needs max_points (--max-points): a public "
                                 "bound on the points kept per person, e.g. 20 (never derived "
                                 "from the data)")
        return check_int(max_points, "max_points", minimum=1)
    if max_points is not None:
        raise ParameterError("max_points bounds a person's points: it needs "
                             "protects='user' (with a user column)")
    return None


def _grid_counts(path, grid, *, lat, lon, user, time, protects, m, start, end, format,
                 delimiter, csv_header, rng, memory_limit, threads, source_sql) -> PointCounts:
    g = make_rng(rng)
    salt = int(g.integers(0, 2**62))
    con = _connect()  # spills into a private directory, removed on close
    try:
        con.execute(f"SET memory_limit = {sql.literal(memory_limit)}")
        if threads is not None:
            con.execute(f"SET threads = {check_int(threads, 'threads', minimum=1)}")
        if source_sql is None:
            src, fmt = point_source(con, path, lat=lat, lon=lon, user=user, time=time,
                                    format=format, delimiter=delimiter, csv_header=csv_header)
            desc = str(path)
            inner = {r: SOURCE_NAMES[r] if c is not None else None
                     for r, c in (("lat", lat), ("lon", lon), ("user", user), ("time", time))}
        else:
            src, fmt, desc = source_sql, "files", str(path)
            inner = {"lat": lat, "lon": lon, "user": user, "time": time}
        view = _points_view(grid, src=src, lat=inner["lat"], lon=inner["lon"],
                            user=inner["user"] if protects == "user" else None,
                            time=inner["time"], start=start, end=end, salt=salt)
        try:
            if m is not None:
                plan = create_thresholds(con, view, m)
            table = con.sql(count_sql(view, bounded=m is not None)).to_arrow_table()
        except read_errors() as exc:
            if source_sql is not None:
                raise
            delim = "\t" if delimiter is None and Path(os.fspath(path)).suffix.lower() in (
                ".tsv", ".tab") else (delimiter or ",")
            raise _duck_error(exc, Path(os.fspath(path)), fmt, delim, csv_header) from None
        counts, ties, bad, outside = collect_counts(table, grid.n_cells)
        if bad:
            raise _first_bad_row(con, view, desc, lat, lon,
                                 user if protects == "user" else None, time)
        if table.num_rows == 0:
            raise DataError("has no data rows (only a header?)", path=desc)
        if ties.num_rows:
            con.register("__ties", ties)
            counts += tie_counts(con, "SELECT t.*, h.__need AS need FROM __ties t "
                                 "JOIN __thr h ON t.tie_user = h.__u", grid.n_cells)
        total_in = int(counts.sum())
        private = {"points_outside_box_or_window": int(outside), "points_counted": total_in}
        if m is not None:
            users_over = con.sql("SELECT count(*), coalesce(sum(__n), 0) FROM __thr").fetchall()[0]
            private.update({"threshold_plan": plan, "users_over_bound": int(users_over[0]),
                            "points_removed_by_bound": int(users_over[1]) - m * int(users_over[0])})
    finally:
        con.close()
    source = {"file": os.path.basename(str(path)), "lat": lat, "lon": lon, "user": user,
              "time": time, "window": [start, end] if (start is not None or end is not None)
              else None, "format": fmt,
              "outside": "points outside the box or window are not counted (their number is "
                         "not published)"}
    return PointCounts(counts.reshape(grid.shape), grid, protects, m, source, private)


def read_geolife_plt(folder, grid: MapGrid) -> np.ndarray:
    """True counts (record level) of the GeoLife ``.plt`` points under ``folder``.

    The files are ``<user>/Trajectory/*.plt`` with six header lines, then ``lat,lon,0,alt,days,
    date,time``; read through DuckDB as one glob of the (escaped) folder.
    """
    base = sql.glob_escape(os.path.abspath(os.fspath(folder)))
    pattern = sql.glob(base + "/*/Trajectory/*.plt")
    src = (f"read_csv({pattern}, skip=6, header=false, "
           f"columns={{'lat': 'DOUBLE', 'lon': 'DOUBLE', 'zero': 'VARCHAR', 'alt': 'DOUBLE', "
           f"'days': 'DOUBLE', 'date': 'VARCHAR', 'clock': 'VARCHAR'}})")
    return grid_counts(folder, grid, lat="lat", lon="lon", protects="record",
                       source_sql=src).counts


def data_extent(path, *, lat: str = "lat", lon: str = "lon", format: str | None = None,
                delimiter: str | None = None, csv_header: bool = True
                ) -> tuple[float, float, float, float]:
    """The data's own box ``(south, west, north, east)`` -- NOT private (opt-in only).

    Raises a :class:`veil.errors.PrivacyWarning`: the extreme points can reveal individuals.
    Used only when the caller opts in (``bbox='data'``, ``--bbox-from-data``).
    """
    from .grid import _check_box, data_extent_warning

    con = _connect()
    try:
        src, _ = point_source(con, path, lat=lat, lon=lon, user=None, time=None,
                              format=format, delimiter=delimiter, csv_header=csv_header)
        la = f"TRY_CAST({sql.ident(SOURCE_NAMES['lat'])} AS DOUBLE)"
        lo = f"TRY_CAST({sql.ident(SOURCE_NAMES['lon'])} AS DOUBLE)"
        ok = (f"{la} BETWEEN -90 AND 90 AND {lo} BETWEEN -180 AND 180")
        s, w, n, e = con.sql(f"SELECT min({la}), min({lo}), max({la}), max({lo}) FROM {src} "
                             f"WHERE {ok}").fetchall()[0]
    finally:
        con.close()
    if s is None:
        raise DataError("no valid point to take an extent from", path=str(path))
    data_extent_warning()
    if n == s:
        n = min(90.0, s + 1e-6)
    if e == w:
        e = min(180.0, w + 1e-6)
    return _check_box(s, w, n, e, name="data extent")
