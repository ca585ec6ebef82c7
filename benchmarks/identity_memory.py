"""The ledger's dataset identity of a large point file: time and peak memory of today's scan
(streaming sums per column, under ``IDENTITY_MEMORY_LIMIT``) against the former scan (each
column grouped by its distinct values, no memory limit), side by side.

Coordinates are nearly all distinct, so the former scan held every one of them in memory. Each run is a fresh Python
process (peak resident set from ``ru_maxrss``); both must give the same identity (checked).
The file (``--users`` users, ``--rows`` rows of ``user, lat, lon``) is written once by a
streaming DuckDB ``COPY`` and deleted afterwards.

    PYTHONPATH=src python benchmarks/identity_memory.py --rows 2e7
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import hashlib, json, resource, sys, time
import duckdb
import veil.identity as I
from veil.io import sql


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
    prints = []
    for i, c in enumerate(cols):
        s = int(got[2 * i] or 0) % 2**64
        d = hashlib.sha256(f"{I.IDENTITY_VERSION}|col|{rows}|{s}".encode()).hexdigest()[:32]
        prints.append(I.ColumnPrint(c, d, constant=int(got[2 * i + 1] or 0) <= 1))
    body = "|".join(sorted(p.fingerprint for p in prints))
    ident = hashlib.sha256(f"{I.IDENTITY_VERSION}|table|{rows}|{body}".encode()).hexdigest()[:32]
    return I.DatasetIdentity(ident, rows, tuple(prints))


if sys.argv[2] == "former":
    I._identity_sql = former_identity_sql
    I._identity_connection = I.shared_connection
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
    a = ap.parse_args(argv)
    n = int(a.rows)
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
    with tempfile.TemporaryDirectory(prefix="veil-identity-bench-") as d:
        path = os.path.join(d, "points.parquet")
        duckdb.sql(f"COPY (SELECT (i % {a.users})::VARCHAR AS user, random() AS lat, "
                   f"random() AS lon FROM range({n}) t(i)) TO '{path}'")
        print(f"{n:,} rows (user, lat, lon; {a.users:,} users), {os.cpu_count()} cores, "
              f"load average {os.getloadavg()[0]:.1f}\n")
        res = {}
        for name, limit in (("former", "former"), ("today", "today")):
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", CHILD, path, limit], env=env,
                                 capture_output=True, text=True, check=True)
            res[name] = json.loads(out.stdout.strip().splitlines()[-1])
            res[name]["wall"] = time.perf_counter() - t0
        if res["former"]["id"] != res["today"]["id"]:
            raise SystemExit("the two scans gave different identities")
        f, t = res["former"], res["today"]
        print("| scan | seconds | peak MB |")
        print("|---|---|---|")
        print(f"| former: grouped by distinct values, no limit | {f['s']:.1f} | "
              f"{f['peak_mb']:.0f} |")
        print(f"| today: streaming sums, {IDENTITY_LIMIT} limit | {t['s']:.1f} | "
              f"{t['peak_mb']:.0f} |")
        print(f"\ntime today / former {t['s'] / f['s']:.2f}; peak memory former / today "
              f"{f['peak_mb'] / t['peak_mb']:.2f}; same identity {t['id']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
