"""Per-person bounding of a point file: the counting pass joined on one threshold key per user
(today's ``count_sql``) against the former join on the list of a user's ``m`` smallest keys,
side by side on the same file, view and threshold table.

The former pass evaluated ``list_max`` of an ``m``-key list for every point, so its cost grew
with ``--max-points``; the scalar join does not. Both passes must give the same rows (checked).

The points are written once by a streaming DuckDB ``COPY`` (``--users`` users with
``--per-user`` points each, uniform over a 1 x 2 degree box; not committed). Prints a markdown
table: m, seconds of each pass (best of ``--repeat``), ratio former / today.

    PYTHONPATH=src python benchmarks/maps_bound.py --users 1000 --per-user 20000
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import duckdb

from veil.io import sql
from veil.maps import MapGrid
from veil.maps.points import _points_view, count_sql, threshold_sql


def former_count_sql(view: str) -> str:
    """The counting pass before the fix (a baseline kept here only to be measured)."""
    return (f"SELECT CASE WHEN __bad THEN -2 WHEN __inside AND __inwin THEN __cell ELSE -1 "
            f"END AS cell, CASE WHEN __k = list_max(thr.__ks) AND NOT __bad AND __inside "
            f"AND __inwin THEN v.__u END AS tie_user, count(*) AS n "
            f"FROM ({view}) v LEFT JOIN __thr thr ON v.__u = thr.__u "
            f"WHERE v.__bad OR NOT (v.__inside AND v.__inwin) OR thr.__ks IS NULL "
            f"OR v.__k <= list_max(thr.__ks) GROUP BY ALL")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--per-user", type=int, default=20000)
    ap.add_argument("--m", type=int, nargs="+", default=[50, 500, 5000])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--grid", type=int, default=1024)
    ap.add_argument("--former-timeout", type=float, default=900.0,
                    help="skip the former pass at larger m once one run took longer than this")
    a = ap.parse_args(argv)
    n = a.users * a.per_user
    with tempfile.TemporaryDirectory(prefix="veil-bound-") as d:
        path = os.path.join(d, "points.parquet")
        t0 = time.perf_counter()
        duckdb.sql(f"COPY (SELECT (i % {a.users})::VARCHAR AS user, random() AS lat, "
                   f"2 * random() AS lon FROM range({n}) t(i)) TO {sql.literal(path)}")
        print(f"{n:,} points, {a.users:,} users x {a.per_user:,}, written in "
              f"{time.perf_counter() - t0:.1f} s; grid {a.grid} x {a.grid}; "
              f"DuckDB {duckdb.__version__}, {os.cpu_count()} cores\n")
        grid = MapGrid(0.0, 0.0, 1.0, 2.0, rows=a.grid, cols=a.grid)
        src = f"read_parquet({sql.literal(path)})"
        view = _points_view(grid, src=src, lat="lat", lon="lon", user="user", time=None,
                            start=None, end=None, salt=12345)
        print("| m (points kept per person) | today: scalar threshold (s) | former: list of m "
              "keys (s) | former / today |")
        print("|---|---|---|---|")
        skip_former = False
        for m in a.m:
            con = duckdb.connect()
            con.execute(f"CREATE TEMP TABLE __thr AS {threshold_sql(view, m)}")
            times, rows = {}, {}
            for name, q in (("today", count_sql(view, bounded=True)),
                            ("former", former_count_sql(view))):
                if name == "former" and skip_former:
                    continue
                best = float("inf")
                for _ in range(a.repeat if name == "today" else 1):
                    t0 = time.perf_counter()
                    rows[name] = sorted(con.sql(q).fetchall(), key=repr)
                    best = min(best, time.perf_counter() - t0)
                times[name] = best
                if name == "former" and best > a.former_timeout:
                    skip_former = True
            con.close()
            if "former" in rows and rows["former"] != rows["today"]:
                raise SystemExit(f"m = {m}: the two passes differ")
            f, today = times.get("former"), times["today"]
            print(f"| {m:,} | {today:.2f} | "
                  f"{'skipped' if f is None else f'{f:.2f}'} | "
                  f"{'-' if f is None else f'{f / today:.1f}'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
