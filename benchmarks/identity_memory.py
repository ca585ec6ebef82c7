"""The ledger's dataset identity of a large point file: time and peak memory of today's scan
against the two former ones, side by side on the same file.

- grouped (before 2026-12-06): each column grouped by its distinct values, no memory limit.
  Coordinates are nearly all distinct, so it held every one of them in memory;
- streaming, text (2026-12-06): streaming sums per column under ``IDENTITY_MEMORY_LIMIT``,
  every cell cast to text and normalized, ``md5_number_lower``;
- today: the same sums, typed columns normalized from their values (``_typed_norm``) and the
  MD5's low 64 bits read as ``md5_number(v) >> 64``.

Each run is a fresh Python process (peak resident set from ``ru_maxrss``); all must give the
same identity (checked). The file (``--users`` users, ``--rows`` rows of ``user, lat, lon,
time``) is written once by a streaming DuckDB ``COPY`` and deleted afterwards.

    PYTHONPATH=src python benchmarks/identity_memory.py --rows 2e7
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _util import run_child  # noqa: E402

CHILD = r"""
import hashlib, json, resource, sys, time
import duckdb
import veil.identity as I
from veil.io import sql


def _identity(cols, rows, sums):
    # the documented fingerprints from each column's (MD5 sum, constant flag)
    prints = []
    for c, (total, constant) in zip(cols, sums):
        s = int(total or 0) % 2**64
        d = hashlib.sha256(f"{I.IDENTITY_VERSION}|col|{rows}|{s}".encode()).hexdigest()[:32]
        prints.append(I.ColumnPrint(c, d, constant=constant))
    body = "|".join(sorted(p.fingerprint for p in prints))
    ident = hashlib.sha256(f"{I.IDENTITY_VERSION}|table|{rows}|{body}".encode()).hexdigest()[:32]
    return I.DatasetIdentity(ident, rows, tuple(prints))


def former_identity_sql(con, source, what, kind=None):
    # the scan before 2026-12-06 (kept here only to be measured): each column grouped by its
    # distinct values in one GROUPING SETS query, on the shared connection (no memory limit)
    cols = [r[0] for r in con.sql(f"DESCRIBE SELECT * FROM {source}").fetchall()]
    k = len(cols)
    raw = ", ".join(f"CAST({sql.ident(c)} AS VARCHAR) AS r{i}" for i, c in enumerate(cols))
    names = ", ".join(f"r{i}" for i in range(k))
    full = (1 << k) - 1
    gid = [full ^ (1 << (k - 1 - i)) for i in range(k)]
    aggs = ", ".join(f"sum(n * md5_number_lower({I._norm(f'r{i}')})) FILTER (WHERE gid = "
                     f"{gid[i]}), count(*) FILTER (WHERE gid = {gid[i]})" for i in range(k))
    sets = ", ".join(f"(r{i})" for i in range(k))
    got = con.sql(f"WITH raw AS (SELECT {raw} FROM {source}), g AS (SELECT {names}, "
                  f"GROUPING_ID({names}) AS gid, count(*) AS n FROM raw GROUP BY GROUPING "
                  f"SETS ({sets})) SELECT {aggs}, sum(n) FILTER (WHERE gid = {gid[0]}) "
                  f"FROM g").fetchall()[0]
    rows = int(got[-1] or 0)
    return _identity(cols, rows, [(got[2 * i], int(got[2 * i + 1] or 0) <= 1)
                                  for i in range(k)])


def text_identity_sql(con, source, what, kind=None):
    # the streaming scan of 2026-12-06 (kept here only to be measured): every cell as text
    cols = [r[0] for r in con.sql(f"DESCRIBE SELECT * FROM {source}").fetchall()]
    k = len(cols)
    raw = ", ".join(f"CAST({sql.ident(c)} AS VARCHAR) AS r{i}" for i, c in enumerate(cols))
    aggs = ", ".join(f"sum(md5_number_lower(n{i})), min(n{i}) IS NOT DISTINCT FROM max(n{i})"
                     for i in range(k))
    norms = ", ".join(f"{I._norm(f'r{i}')} AS n{i}" for i in range(k))
    got = con.sql(f"WITH raw AS (SELECT {raw} FROM {source}), nv AS (SELECT {norms} FROM "
                  f"raw) SELECT {aggs}, count(*) FROM nv").fetchall()[0]
    rows = int(got[-1] or 0)
    return _identity(cols, rows, [(got[2 * i], rows == 0 or bool(got[2 * i + 1]))
                                  for i in range(k)])


if sys.argv[2] == "grouped":
    I._identity_sql = former_identity_sql
    I._identity_connection = I.shared_connection
elif sys.argv[2] == "text":
    I._identity_sql = text_identity_sql
t0 = time.perf_counter()
ident = I.identity_of_file(sys.argv[1])
print(json.dumps({"s": time.perf_counter() - t0, "id": ident.id,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

def main(argv=None) -> int:
    import duckdb

    from veil.identity import IDENTITY_MEMORY_LIMIT as IDENTITY_LIMIT

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=float, default=2e7)
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--skip-grouped", action="store_true",
                    help="leave out the grouped scan (it needs several GB at 10^8 rows)")
    a = ap.parse_args(argv)
    n = int(a.rows)
    with tempfile.TemporaryDirectory(prefix="veil-identity-bench-") as d:
        path = os.path.join(d, "points.parquet")
        duckdb.sql(f"COPY (SELECT (i % {a.users})::VARCHAR AS user, random() AS lat, "
                   f"random() AS lon, TIMESTAMP '2012-04-03' + to_seconds(i // 7) AS time "
                   f"FROM range({n}) t(i)) TO '{path}'")
        print(f"{n:,} rows (user, lat, lon, time; {a.users:,} users), {os.cpu_count()} cores, "
              f"load average {os.getloadavg()[0]:.1f}\n")
        res = {}
        runs = ("grouped", "text", "today")
        for name in runs[1:] if a.skip_grouped else runs:
            res[name] = run_child(CHILD, path, name)
        if len({r["id"] for r in res.values()}) != 1:
            raise SystemExit("the scans gave different identities")
        t = res["today"]
        labels = {"grouped": "grouped by distinct values, no limit",
                  "text": f"streaming, every cell as text, {IDENTITY_LIMIT} limit",
                  "today": f"streaming, typed values, {IDENTITY_LIMIT} limit"}
        print("| scan | seconds | peak MB | seconds / today's |")
        print("|---|---|---|---|")
        for name, r in res.items():
            print(f"| {labels[name]} | {r['s']:.1f} | {r['peak_mb']:.0f} | "
                  f"{r['s'] / t['s']:.2f} |")
        print(f"\nsame identity {t['id']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
