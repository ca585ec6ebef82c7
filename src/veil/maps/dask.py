"""The same grid counts on Dask: DuckDB aggregation per partition, sums on the client.

A Parquet file is cut into partitions of whole row groups (``file_row_number`` ranges, which
DuckDB prunes to those row groups). Each Dask task runs the *same SQL* as the local path
(:mod:`veil.maps.points`) on its partition and returns at most one row per cell, so a task's
memory is bounded by its partition's row groups and the grid, and the client holds one grid.

Per-person bounding needs every point of a person, which may sit in several partitions: pass 1
returns, per partition and user, the ``m`` smallest sampling keys and the point count; the
client merges them into each user's global ``m`` smallest (the same thresholds as the local
path, since the keys are a function of the salt and the point); pass 2 counts each partition
with those thresholds (scattered to the workers once). Memory: users x m keys, never the
points. The result equals the local path's for the same salt (tested).

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
from .points import (PROTECTS, PointCounts, _allocate_ties, _points_view, check_unit,
                     collect_counts, count_sql, grid_counts, threshold_columns)

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
    src = (f"(SELECT * FROM read_parquet({sql.path(spec['path'])}, file_row_number=true) "
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


def _part_thresholds(spec: dict, lo: int, hi: int):
    """Pass 1 on one partition: per user, the m smallest keys and the count (Arrow table).

    The top-m aggregate first; if DuckDB runs out of memory on it (it reserves m slots per
    user), the same lists from a window ranking, whose memory follows the partition's rows."""
    import duckdb

    m = int(spec["m"])
    with _con(spec) as con:
        usable = (f"SELECT __u, __k FROM ({_part_view(spec, lo, hi)}) "
                  f"WHERE NOT __bad AND __inside AND __inwin")
        try:
            return con.sql(f"SELECT __u, min(__k, {m}) AS __ks, count(*) AS __n "
                           f"FROM ({usable}) GROUP BY __u").to_arrow_table()
        except duckdb.OutOfMemoryException:
            return con.sql(f"SELECT __u, list(__k ORDER BY __k) AS __ks, any_value(__n) AS __n "
                           f"FROM (SELECT __u, __k, row_number() OVER (PARTITION BY __u "
                           f"ORDER BY __k) AS __rn, count(*) OVER (PARTITION BY __u) AS __n "
                           f"FROM ({usable})) WHERE __rn <= {m} GROUP BY __u").to_arrow_table()


def _part_counts(spec: dict, lo: int, hi: int, thr):
    """Pass 2 on one partition: ``(counts, ties, bad, outside)`` as the local counting pass
    (a dense grid of int64: what a task returns is bounded by the grid)."""
    with _con(spec) as con:
        view = _part_view(spec, lo, hi)
        bounded = thr is not None
        if bounded:
            con.register("__thr_arrow", thr)
            con.execute("CREATE TEMP TABLE __thr AS SELECT * FROM __thr_arrow")
        table = con.sql(count_sql(view, bounded=bounded)).to_arrow_table()
        return collect_counts(table, MapGrid.from_dict(spec["grid"]).n_cells)


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
    import duckdb

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
    need: dict[str, int] = {}
    thr_info = (0, 0)
    try:
        thr = None
        if m is not None:
            import pyarrow as pa
            from distributed import as_completed

            futs = client.map(_part_thresholds, [spec] * len(parts), [a for a, _ in parts],
                              [b for _, b in parts], pure=False)
            merge = (f"SELECT __u, list_slice(list_sort(flatten(list(__ks))), 1, {m}) AS __ks, "
                     f"CAST(sum(__n) AS BIGINT) AS __n FROM __p GROUP BY __u")
            acc = None
            mcon = _connect()
            try:
                # merge the partitions' keys as they arrive: at most 2 x users x m keys held
                for fut in as_completed(futs):
                    part = fut.result()
                    both = part if acc is None else pa.concat_tables([acc, part])
                    mcon.register("__p", both)
                    acc = mcon.sql(merge).to_arrow_table()
                    mcon.unregister("__p")
                    del part, both
                mcon.register("__p", acc)
                # one row of scalars per user over the bound: the key lists are dropped
                thr = mcon.sql(f"SELECT __u, {threshold_columns('__ks', m)}, __n FROM __p "
                               f"WHERE __n > {m}").to_arrow_table()
                del acc
            finally:
                mcon.close()
            need = dict(zip(thr.column("__u").to_pylist(), thr.column("__need").to_pylist()))
            thr_info = (thr.num_rows, int(sum(thr.column("__n").to_pylist())))
            # pass 2 needs only each user's threshold key (the largest kept), not the m keys
            thr_f = client.scatter(thr.select(["__u", "__kt"]), broadcast=True)
        else:
            thr_f = None
        futs = client.map(_part_counts, [spec] * len(parts), [a for a, _ in parts],
                          [b for _, b in parts], [thr_f] * len(parts), pure=False)
        results = client.gather(futs)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    counts = np.zeros(grid.n_cells, dtype=np.int64)
    ties, bad, outside = [], 0, 0
    for c, t, b_, o in results:
        counts += c
        ties.extend(t)
        bad += b_
        outside += o
    if bad:  # the local path names the first bad row
        grid_counts(p, grid, lat=lat, lon=lon, user=user, time=time, protects=protects,
                    max_points=max_points, start=start, end=end)
        raise DataError(f"{bad} rows have a missing or invalid value", path=str(p))
    if ties:
        counts += _allocate_ties(ties, need, grid.n_cells)
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
