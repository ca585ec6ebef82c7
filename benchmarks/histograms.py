"""Benchmark veil.histograms: speed of every method, HDMM's closed form, the DPBench table.

Usage (from the project root; BLAS runs single-threaded, see below)::

    VEIL_SHARED=/work/shared python benchmarks/histograms.py --speed
    VEIL_SHARED=/work/shared python benchmarks/histograms.py --hdmm
    VEIL_SHARED=/work/shared python benchmarks/histograms.py --accuracy --trials 10 \\
        --json acc.json                              # 18 datasets, n = 4096, the full grid
    VEIL_SHARED=/work/shared python benchmarks/histograms.py --accuracy --n 1024 \\
        --datasets classic --trials 20 --json classic.json   # the 7 classic at n = 1024
    VEIL_SHARED=/work/shared python benchmarks/histograms.py --fit-auto acc.json

Speed: every method at n = 4096 (HDMM cold and with its strategy cached), the
compiled V-optimal kernel against the straightforward numpy recurrence.
HDMM: exact expected RMSE per query of HDMM, HB and Identity, and HDMM's RMSE
measured over releases against its closed form. Accuracy: the DPBench protocol
(multinomial re-sampling to the scale, scaled mean absolute error, geometric
mean over datasets) for every method at eps {0.01, 0.1, 1, 10} x scale {10^3,
10^5, 10^7} on prefix ranges and 2000 random ranges, with a plot of error
against scale (``--json X.json`` also writes ``X.png``). ``--fit-auto`` fits
the public ``auto`` rule on the rows of a run and prints its held-out (3-fold
by dataset) ratios to the best method and to Identity.

OpenBLAS is limited to one thread (``OPENBLAS_NUM_THREADS=1``, set below before
numpy is imported): on the shared 2-core machine its threads spin against the
other users' processes and made HDMM's optimizer 20x slower.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv=None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from veil.histograms.bench import run

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--speed", action="store_true", help="speed of every method at n = 4096")
    ap.add_argument("--hdmm", action="store_true", help="HDMM closed form vs HB and measured")
    ap.add_argument("--accuracy", action="store_true", help="the DPBench table")
    ap.add_argument("--fit-auto", type=Path, default=None, metavar="ROWS.json",
                    help="fit the auto rule on a --json file of an accuracy run")
    ap.add_argument("--trials", type=int, default=10, help="trials per setting (accuracy)")
    ap.add_argument("--repeats", type=int, default=3, help="timing repeats (median)")
    ap.add_argument("--n", type=int, default=None, help="coarsen the datasets to n bins")
    ap.add_argument("--datasets", nargs="*", default=None,
                    help="DPBench names, or 'classic' for the seven classic ones")
    ap.add_argument("--methods", nargs="*", default=None, help="subset of methods")
    ap.add_argument("--epsilons", nargs="*", type=float, default=None)
    ap.add_argument("--scales", nargs="*", type=float, default=None)
    ap.add_argument("--seed", type=int, default=0, help="seed of the experiment (data, noise)")
    ap.add_argument("--json", type=Path, default=None, help="write all rows as JSON here")
    a = ap.parse_args(argv)
    run(speed=a.speed, hdmm=a.hdmm, accuracy=a.accuracy, fit_auto=a.fit_auto,
        trials=a.trials, repeats=a.repeats, n=a.n, datasets=a.datasets, methods=a.methods,
        epsilons=a.epsilons, scales=a.scales, output=a.json, seed=a.seed, log=print)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
