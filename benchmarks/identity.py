"""Cost of a dataset's content identity (veil.identity), side by side with baselines.

    python benchmarks/identity.py                 # 10^5 and 10^6 rows
    python benchmarks/identity.py --rows 5000000  # add a size

The input: check-ins with a user (10^5 distinct), a category (4), an integer (91 distinct)
and a float column (all distinct), as CSV and Parquet. Columns, side by side on the same
file:

- scan: DuckDB reading every cell as text and counting rows (the floor: one pass);
- veil: the identity (one DuckDB pass, MD5 of each distinct value weighted by its count);
- md5 per cell: the same fingerprints with one MD5 per cell (no grouping);
- pandas + hashlib: read with pandas, hash each row's text in Python (the naive way).

Ratios are against the scan and the naive way. Timings are medians of 3 runs.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import machine_note, median_time, print_table  # noqa: E402

import duckdb  # noqa: E402

from veil.identity import _norm, identity_of_file  # noqa: E402


def make(folder: Path, rows: int) -> tuple[Path, Path]:
    csv, pq = folder / f"c{rows}.csv", folder / f"c{rows}.parquet"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT 'u' || (hash(i) % 100000) AS user, "
                f"['Cafe','Bar','Gym','Park'][1 + (hash(i + 1) % 4)::INT] AS category, "
                f"(hash(i + 2) % 91)::INT AS age, (hash(i + 3) % 1000000007) / 1e9 AS x "
                f"FROM range({rows}) t(i)) TO '{csv}' (HEADER)")
    con.execute(f"COPY (SELECT * FROM read_csv('{csv}')) TO '{pq}' (FORMAT parquet)")
    return csv, pq


def src(path: Path) -> str:
    return (f"read_csv('{path}', all_varchar=true)" if path.suffix == ".csv"
            else f"read_parquet('{path}')")


def scan(path: Path) -> None:
    duckdb.sql(f"SELECT count(*) FROM {src(path)}").fetchall()


def md5_per_cell(path: Path) -> None:
    cols = [r[0] for r in duckdb.sql(f"DESCRIBE SELECT * FROM {src(path)}").fetchall()]
    aggs = ", ".join(f"sum(md5_number_lower({_norm(f'CAST({c} AS VARCHAR)')}))" for c in cols)
    duckdb.sql(f"SELECT count(*), {aggs} FROM {src(path)}").fetchall()


def pandas_hashlib(path: Path) -> None:
    import pandas as pd

    df = pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path)
    acc = 0
    for row in df.astype(str).itertuples(index=False):
        acc = (acc + int.from_bytes(hashlib.md5("|".join(row).encode()).digest()[:8],
                                    "little")) % (1 << 64)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, action="append", default=None)
    args = ap.parse_args()
    sizes = args.rows or [100_000, 1_000_000]
    print(machine_note())
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            csv, pq = make(Path(d), n)
            assert identity_of_file(csv).id == identity_of_file(pq).id
            for f in (csv, pq):
                t_scan = median_time(lambda: scan(f), 3)
                t_veil = median_time(lambda: identity_of_file(f), 3)
                t_md5 = median_time(lambda: md5_per_cell(f), 3)
                t_pd = median_time(lambda: pandas_hashlib(f), 1 if n > 200_000 else 3)
                rows.append([f"{n:,}", f.suffix[1:], t_scan, t_veil, t_md5, t_pd,
                             t_veil / t_scan, t_pd / t_veil, n / t_veil])
    print_table(["rows", "format", "scan s", "veil identity s", "md5 per cell s",
                 "pandas + hashlib s", "veil / scan", "pandas / veil", "veil rows/s"], rows)


if __name__ == "__main__":
    main()
