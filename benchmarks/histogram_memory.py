"""Peak memory and time of a histogram of one column of a large file, record level with
public bins: the column read whole (``veil.io.read_columns``, then ``np.histogram``; what
``veil histogram publish`` did before 2026-12-06) against the column counted batch by batch
(``veil.io.iter_column`` and ``histogram_of`` over the batches; what it does now), side by side
on the same file, each in a fresh process (peak resident set from ``ru_maxrss``). Both must give
the same counts (checked). The privacy ledger's identity scan is not included (the same for both).

    PYTHONPATH=src python benchmarks/histogram_memory.py --rows 2e7
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
import numpy as np
from veil.histograms import histogram_of
from veil.io import iter_column, read_columns

edges = np.linspace(0.0, 1.0, 1025)
t0 = time.perf_counter()
if sys.argv[2] == "whole":
    counts, _ = histogram_of(read_columns(sys.argv[1], columns={"v": "float"})["v"], edges)
else:
    counts, _ = histogram_of(iter_column(sys.argv[1], "v"), edges)
print(json.dumps({"s": time.perf_counter() - t0, "sum": int(counts.sum()),
                  "digest": hashlib.sha256(counts.tobytes()).hexdigest(),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main(argv=None) -> int:
    import duckdb

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=float, default=2e7)
    a = ap.parse_args(argv)
    n = int(a.rows)
    with tempfile.TemporaryDirectory(prefix="veil-histogram-bench-") as d:
        path = os.path.join(d, "values.parquet")
        duckdb.sql(f"COPY (SELECT (i % 1000)::VARCHAR AS user, random() AS v "
                   f"FROM range({n}) t(i)) TO '{path}'")
        print(f"{n:,} rows (user, v), 1024 bins, {os.cpu_count()} cores, load average "
              f"{os.getloadavg()[0]:.1f}\n")
        res = {}
        for name in ("whole", "batches"):
            res[name] = run_child(CHILD, path, name)
        if res["whole"]["digest"] != res["batches"]["digest"]:
            raise SystemExit("the two reads gave different counts")
        w, b = res["whole"], res["batches"]
        print("| read | seconds | peak MB |")
        print("|---|---|---|")
        print(f"| the column whole (read_columns) | {w['s']:.1f} | {w['peak_mb']:.0f} |")
        print(f"| in batches (iter_column) | {b['s']:.1f} | {b['peak_mb']:.0f} |")
        print(f"\npeak whole / batches {w['peak_mb'] / b['peak_mb']:.2f}; time batches / whole "
              f"{b['s'] / w['s']:.2f}; same counts ({b['sum']:,} records)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
