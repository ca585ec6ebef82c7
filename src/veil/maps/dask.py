"""The same grid counts on Dask: DuckDB aggregation per partition, sums on the client.

A Parquet file is cut into partitions of whole row groups (``file_row_number`` ranges, which
DuckDB prunes to those row groups). Each Dask task runs the *same SQL* as the local path
(:mod:`veil.maps.points`) on its partition and returns at most one row per cell, so a task's
memory is bounded by its partition's row groups and the grid, and the client holds one grid.

Per-person bounding needs every point of a person, which may sit in several partitions. The
partitions are shuffled by user *on the workers*: pass 1 returns, per partition and user, the
``m + 1`` smallest sampling keys and the point count, cut into ``B`` buckets by a hash of the
user; one reduce task per bucket merges the partitions' pieces of its bucket into each user's
global ``m + 1`` smallest keys and keeps one row of scalars per user over the bound (the
threshold key, the points kept at it, whether more share it, the count); pass 2 counts each
partition with those rows, which the workers pass between them, and the points of tied users at
their threshold go to their bucket again, where they are allocated. The client never holds a
user's keys or a per-user row: it receives a grid per partition, a grid of allocated tied points
per bucket and one pair of totals per bucket, so its memory is bounded by the grid whatever the
number of users. (Until 2026-12 the client merged every partition's key lists itself: users x m
keys, 1.4-1.6 GB with 2 x 10^6 users.) The result equals the local path's for the same
salt (tested), since the keys are a function of the salt and the point.

This path is self-contained (``distributed.Client.map`` over partitions); it does not use
``veil.engine``.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np

from ..errors import DataError, ParameterError
from ..io import sql
from ..io.read import _connect
from ..random import make_rng
from ..validation import check_choice, check_int
from .grid import MapGrid
from .points import (PROTECTS, PointCounts, _points_view, check_unit, collect_counts,
                     count_sql, grid_counts, threshold_columns, tie_counts)

__all__ = ["grid_counts_dask", "partitions"]


def partitions(path, target: int) -> list[tuple[int, int]]:
    """Row ranges ``[lo, hi)`` of about ``target`` partitions, each a run of whole row groups."""
    import pyarrow.parquet as pq

    try:
        md = pq.ParquetFile(os.fspath(path)).metadata
    except Exception as exc:  # noqa: BLE001 - any reading error is a bad input
        raise DataError(f"cannot be read as Parquet (the Dask engine reads Parquet): {exc}",
                        path=str(path)) from None
    sizes = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
    total = sum(sizes)
    if total == 0:
        raise DataError("has no data rows", path=str(path))
    per = max(1, -(-total // max(1, target)))
    out, lo, acc = [], 0, 0
    for s in sizes:
        acc += s
        if acc - lo >= per:
            out.append((lo, acc))
            lo = acc
    if acc > lo:
        out.append((lo, acc))
    return out


def _part_view(spec: dict, lo: int, hi: int) -> str:
    src = (f"(SELECT * FROM {sql.read_parquet(sql.path(spec['path']), 'file_row_number=true')} "
           f"WHERE file_row_number >= {int(lo)} AND file_row_number < {int(hi)})")
    return _points_view(MapGrid.from_dict(spec["grid"]), src=src, lat=spec["lat"],
                        lon=spec["lon"], user=spec["user"], time=spec["time"],
                        start=spec["start"], end=spec["end"], salt=spec["salt"])


@contextlib.contextmanager
def _con(spec: dict):
    """A DuckDB connection for one task: the memory limit and one thread (it spills into a
    private directory, as every :func:`_connect` does; never the worker's working directory)."""
    con = _connect()
    try:
        con.execute(f"SET memory_limit = {sql.literal(spec['memory_limit'])}")
        con.execute("SET threads = 1")
        yield con
    finally:
        con.close()


def _bucket_sql(user: str, spec: dict) -> str:
    """The bucket of a user (in ``[0, spec['buckets'])``), the same on every worker."""
    return f"CAST(hash({user}) % {int(spec.get('buckets', 1))} AS INTEGER) AS __b"


def _split_buckets(table, cols: list[str], spec: dict) -> list:
    """The rows of ``table`` per bucket (column ``__b``), one table of ``cols`` per bucket."""
    import pyarrow.compute as pc

    b = table.column("__b")
    return [table.filter(pc.equal(b, i)).select(cols) for i in range(int(spec["buckets"]))]


def _part_thresholds(spec: dict, lo: int, hi: int, plan: str | None = None):
    """Pass 1 on one partition: per user, the m + 1 smallest keys, the count and the user's
    bucket (``__b``, in ``[0, spec['buckets'])``; Arrow table).

    Two plans give the same table. ``"list"`` (tried first) sorts each user's keys of the
    partition and slices them: its memory follows the partition's rows, which this module
    bounds. If DuckDB runs out of memory on it, ``"window"`` ranks the keys with a window (a
    sort that spills). Measured on 2 cores (one partition of 2.5 x 10^6 rows from 2 x 10^6
    users, m = 5): list 0.8 s, window 1.6 s, while the top-(m+1) aggregate of the local path
    ran 26 s before running out of memory; on 1.25 x 10^7 rows from 10^5 users, m = 50:
    list 3.1 s, top-(m+1) 3.5 s, window 4.3 s."""
    import duckdb

    m = int(spec["m"]) + 1  # the (m+1)-th key tells whether the threshold is tied
    b = _bucket_sql("__u", spec)
    with _con(spec) as con:
        usable = (f"SELECT __u, __k FROM ({_part_view(spec, lo, hi)}) "
                  f"WHERE NOT __bad AND __inside AND __inwin")
        if plan in (None, "list"):
            try:
                return con.sql(f"SELECT __u, list_slice(list_sort(list(__k)), 1, {m}) AS __ks, "
                               f"count(*) AS __n, {b} FROM ({usable}) GROUP BY __u"
                               ).to_arrow_table()
            except duckdb.OutOfMemoryException:
                if plan == "list":
                    raise
        return con.sql(f"SELECT __u, list(__k ORDER BY __k) AS __ks, any_value(__n) AS __n, "
                       f"{b} FROM (SELECT __u, __k, row_number() OVER (PARTITION BY __u "
                       f"ORDER BY __k) AS __rn, count(*) OVER (PARTITION BY __u) AS __n "
                       f"FROM ({usable})) WHERE __rn <= {m} GROUP BY __u").to_arrow_table()


def _part_buckets(spec: dict, lo: int, hi: int) -> list:
    """Pass 1, cut for the shuffle: the partition's rows of each bucket (a list of Arrow
    tables, one per bucket, without the bucket column). Runs on a worker; its pieces go to
    the bucket's reduce task, worker to worker."""
    return _split_buckets(_part_thresholds(spec, lo, hi), ["__u", "__ks", "__n"], spec)


def _pick(pieces: list, i: int):
    return pieces[i]


def _bucket_thresholds(spec: dict, *pieces):
    """Reduce one bucket: each user's global m + 1 smallest keys over all partitions, then one
    row of scalars per user over the bound: ``__u, __kt, __need, __tied, __n`` (the local
    path's ``__thr``). Runs on a worker; only this bucket's users are in memory."""
    import pyarrow as pa

    m = int(spec["m"])
    with _con(spec) as con:
        con.register("__p", pa.concat_tables(pieces))
        return con.sql(f"SELECT __u, {threshold_columns('__ks', m)}, __n FROM "
                       f"(SELECT __u, list_slice(list_sort(flatten(list(__ks))), 1, {m + 1}) "
                       f"AS __ks, CAST(sum(__n) AS BIGINT) AS __n FROM __p GROUP BY __u) "
                       f"WHERE __n > {m}").to_arrow_table()


def _bucket_totals(thr) -> tuple[int, int]:
    """Users over the bound in one bucket and their points (two integers for the client)."""
    return thr.num_rows, int(sum(thr.column("__n").to_pylist()))


def _part_counts(spec: dict, lo: int, hi: int, *thr):
    """Pass 2 on one partition: ``(counts, ties, bad, outside)`` as the local counting pass
    (a dense grid of int64: what the client receives from a task is bounded by the grid).
    With per-person bounding, ``thr`` are the buckets' threshold tables and ``ties`` is a list
    of one Arrow table per bucket, ``cell, tie_user, n, need``: the points of tied users at
    their threshold, with how many of them the user keeps in all."""
    import pyarrow as pa

    with _con(spec) as con:
        view = _part_view(spec, lo, hi)
        bounded = bool(thr)
        if bounded:
            con.register("__thr_arrow", pa.concat_tables(thr))
            con.execute("CREATE TEMP TABLE __thr AS SELECT * FROM __thr_arrow")
        table = con.sql(count_sql(view, bounded=bounded)).to_arrow_table()
        counts, ties, bad, outside = collect_counts(table, MapGrid.from_dict(spec["grid"]).n_cells)
        pieces = []
        if bounded:
            con.register("__ties", ties)
            ties = con.sql(f"SELECT t.*, h.__need AS need, {_bucket_sql('t.tie_user', spec)} "
                           f"FROM __ties t JOIN __thr h ON t.tie_user = h.__u").to_arrow_table()
            pieces = _split_buckets(ties, ["cell", "tie_user", "n", "need"], spec)
        return counts, pieces, bad, outside


def _part_grid(res) -> tuple:
    """What the client gathers of a pass-2 result: the grid and two totals (no tie rows)."""
    counts, _, bad, outside = res
    return counts, bad, outside


def _part_ties(res, i: int):
    return res[1][i]


def _bucket_ties(spec: dict, *pieces):
    """The kept tied points of one bucket's users, per cell (a dense grid; ``None`` if the
    bucket has no tied user): the allocation of the local path, on a worker."""
    import pyarrow as pa

    t = pa.concat_tables(pieces)
    if t.num_rows == 0:
        return None
    n_cells = MapGrid.from_dict(spec["grid"]).n_cells
    with _con(spec) as con:
        con.register("__t", t)
        return tie_counts(con, "SELECT * FROM __t", n_cells)


def grid_counts_dask(path, grid: MapGrid, *, lat: str = "lat", lon: str = "lon",
                     user: str | None = None, time: str | None = None,
                     protects: str = "user", max_points: int | None = None, start=None,
                     end=None, rng=None, workers: int = 2, scheduler: str | None = None,
                     security=None, partitions_per_worker: int = 4,
                     memory_limit: str = "1GB") -> PointCounts:
    """:func:`veil.maps.points.grid_counts` on Dask (Parquet input); same result, same salt.

    ``scheduler`` is the address of an existing Dask scheduler (``security``: its
    ``distributed.security.Security``, else the Dask configuration's TLS settings); without it
    a local cluster of ``workers`` single-threaded processes is started for the job, on
    127.0.0.1 with TLS and in-memory self-signed certificates (as ``veil.engine`` does: no
    other user of the machine can connect to it), and closed after it.
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ParameterError("engine 'dask' needs the dask extra: pip install 'veil[dask]'"
                             ) from None

    protects = check_choice(protects, "protects", PROTECTS)
    workers = check_int(workers, "workers", minimum=1)
    p = Path(os.fspath(path))
    m = check_unit(protects, user, max_points)
    if not p.is_file():
        raise DataError("no such file", path=str(p))
    con = _connect()
    try:
        from .points import point_source

        point_source(con, p, lat=lat, lon=lon, user=user, time=time, format="parquet",
                     delimiter=None, csv_header=True)
    finally:
        con.close()
    salt = int(make_rng(rng).integers(0, 2**62))
    spec = {"path": str(p.resolve()), "grid": grid.to_dict(), "lat": lat, "lon": lon,
            "user": user if protects == "user" else None, "time": time, "start": start,
            "end": end, "salt": salt, "m": m, "memory_limit": memory_limit}
    parts = partitions(p, workers * partitions_per_worker)
    cluster = None
    if scheduler:
        client = Client(scheduler, security=security, timeout=30)
    else:
        try:
            from distributed.security import Security

            sec = Security.temporary()  # in-memory self-signed certificates, this job only
        except ImportError:
            raise ParameterError("engine 'dask' needs the 'cryptography' package for its TLS "
                                 "certificates: pip install 'veil[dask]'") from None
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, security=sec, protocol="tls://",
                               host="127.0.0.1")
        client = Client(cluster, security=sec)
    thr_info = (0, 0)
    los, his = [a for a, _ in parts], [b for _, b in parts]
    try:
        thr, tied = [], []
        if m is not None:
            # the shuffle by user, on the workers: pass 1 cut into buckets, one reduce per bucket
            spec["buckets"] = len(parts)
            p1 = client.map(_part_buckets, [spec] * len(parts), los, his, pure=False)
            for i in range(spec["buckets"]):
                pieces = [client.submit(_pick, f, i, pure=False) for f in p1]
                thr.append(client.submit(_bucket_thresholds, spec, *pieces, pure=False))
            # drop the client's references: the workers free pass 1 once its reduces have run
            del p1, pieces
            totals = client.map(_bucket_totals, thr, pure=False)
        p2 = client.map(_part_counts, [spec] * len(parts), los, his,
                        *[[t] * len(parts) for t in thr], pure=False)
        del thr  # the thresholds are freed once pass 2 and the totals have read them
        if m is not None:  # the tied points go to their user's bucket, also on the workers
            for i in range(spec["buckets"]):
                pieces = [client.submit(_part_ties, f, i, pure=False) for f in p2]
                tied.append(client.submit(_bucket_ties, spec, *pieces, pure=False))
            del pieces
        results = client.gather(client.map(_part_grid, p2, pure=False))
        tie_grids = client.gather(tied)
        if m is not None:
            tot = client.gather(totals)
            thr_info = (sum(r for r, _ in tot), sum(n for _, n in tot))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    counts = np.zeros(grid.n_cells, dtype=np.int64)
    bad, outside = 0, 0
    for c, b_, o in results:
        counts += c
        bad += b_
        outside += o
    if bad:  # the local path names the first bad row
        grid_counts(p, grid, lat=lat, lon=lon, user=user, time=time, protects=protects,
                    max_points=max_points, start=start, end=end)
        raise DataError(f"{bad} rows have a missing or invalid value", path=str(p))
    for t in tie_grids:
        if t is not None:
            counts += t
    private = {"points_outside_box_or_window": int(outside), "points_counted": int(counts.sum()),
               "partitions": len(parts)}
    if m is not None:
        private.update({"users_over_bound": thr_info[0],
                        "points_removed_by_bound": thr_info[1] - m * thr_info[0]})
    source = {"file": p.name, "lat": lat, "lon": lon, "user": user, "time": time,
              "window": [start, end] if (start is not None or end is not None) else None,
              "format": "parquet",
              "outside": "points outside the box or window are not counted (their number is "
                         "not published)"}
    return PointCounts(counts.reshape(grid.shape), grid, protects, m, source, private)
