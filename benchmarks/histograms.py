"""Benchmark veil.histograms: speed of every method, HDMM's closed form, the DPBench table.

Usage (from the project root; BLAS runs single-threaded, see below)::

    VEIL_SHARED=/work/shared python benchmarks/histograms.py --speed
    VEIL_SHARED=/work/shared python benchmarks/histograms.py --hdmm
    VEIL_SHARED=/work/shared python benchmarks/histograms.py --accuracy --trials 10 \\
        --json acc.json                              # 18 datasets, n = 4096, the full grid
    VEIL_SHARED=/work/shared python benchmarks/histograms.py --accuracy --n 1024 \\
        --datasets classic --trials 20 --json classic.json   # the 7 classic at n = 1024
    VEIL_SHARED=/work/shared python benchmarks/histograms.py --fit-auto acc.json
    VEIL_SHARED=/work/shared python benchmarks/histograms.py --calibrate-dawa --n 1024
    VEIL_SHARED=/work/shared python benchmarks/histograms.py --calibrate-dawa --n 1024 \
        --seed 8 --penalties 1 1.5 2 2.5 3 4 5 6 8 --json cal.json   # and see docs/benchmarks.md
    python benchmarks/histograms.py --fit-dawa-penalty cal.json low.json  # PENALTY_SCHEDULE
    VEIL_SHARED=/work/shared python benchmarks/histograms.py --calibrate-coarse --n 1024 \
        --trials 3 --json coarse_cal.json                # coarse's BUCKET_RULE
    VEIL_SHARED=/work/shared python benchmarks/histograms.py --calibrate-privtree --n 1024 \
        --trials 10 --json privtree_cal.json             # privtree's tree_fraction
    VEIL_SHARED=/work/shared python benchmarks/histograms.py --baseline --src ../main/src \
        --n 1024 --datasets classic --methods dawa ahp structurefirst --json base.json

Speed: every method at n = 4096 (HDMM cold and with its strategy cached), the
compiled V-optimal kernel against the straightforward numpy recurrence.
HDMM: exact expected RMSE per query of HDMM, HB and Identity, and HDMM's RMSE
measured over releases against its closed form. Accuracy: the DPBench protocol
(multinomial re-sampling to the scale, scaled mean absolute error, geometric
mean over datasets) for every method at eps {0.01, 0.1, 1, 10} x scale {10^3,
10^5, 10^7} on prefix ranges and 2000 random ranges, with a plot of error
against scale (``--json X.json`` also writes ``X.png``). ``--fit-auto`` fits
the public ``auto`` rule on the rows of a run and prints its held-out (3-fold
by dataset) ratios to the best method and to Identity. ``--baseline --src DIR``
runs another checkout's implementation (e.g. the previous release) on the same
inputs, for side-by-side ratios.

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


def baseline(a) -> int:
    """Accuracy rows of another checkout of veil (``--src``), using only ``publish`` and the
    workload helpers every version has, with the same random streams as ``--accuracy``: the
    re-sampled histograms and the random ranges are the same as this checkout's for the same
    seed and dataset list, so the two runs compare on the same inputs."""
    import numpy as np
    from veil.histograms import publish
    from veil.histograms.workload import (prefix_workload, random_range_workload,
                                          resample_to_scale, scaled_error)
    from veil.random import make_rng

    names = a.datasets or None
    if names == ["classic"]:
        names = ["ADULTFRANK.n4096", "HEPTH.n4096", "INCOME.n4096", "MEDCOST.n4096",
                 "NETTRACE.n4096", "PATENT.n4096", "SEARCHLOGS.n4096"]
    data = Path(os.environ.get("VEIL_SHARED", "../shared")) / "data" / "dpbench-1d"
    g = make_rng(seed=a.seed)  # experiments only
    eps_list = tuple(a.epsilons or (0.01, 0.1, 1, 10))
    scales = tuple(int(s) for s in (a.scales or (1e3, 1e5, 1e7)))
    rows = {}
    for name in names:
        shape = np.rint(np.load(data / f"{name}.npy")).astype(np.int64)
        if a.n:
            shape = shape.reshape(a.n, -1).sum(axis=1)
        n = shape.size
        wl = {"prefix": prefix_workload(n),
              "random": random_range_workload(n, size=2000, rng=np.random.default_rng(n))}
        for scale in scales:
            for t in range(a.trials):
                x = resample_to_scale(shape, scale, rng=g)
                for eps in eps_list:
                    for m in a.methods:
                        kw = ({"k": -(-n // 10), "count_bound": float(scale)}
                              if m == "structurefirst" else
                              {"k": -(-n // 10), "count_bound": float(scale),
                               "records_bound": float(scale)}
                              if m == "optimized-structurefirst" else {})
                        targets = ([(w, [w]) for w in wl] if m in ("dawa",)
                                   else [(None, list(wl))])
                        for target, evaluated in targets:
                            (child,) = g.spawn(1)
                            extra = {} if target is None else {
                                "workload": wl[target]}
                            v = publish(x, epsilon=eps, method=m, rng=child, **kw, **extra).value
                            for w in evaluated:
                                key = (name, m, float(eps), scale, w)
                                rows.setdefault(key, []).append(scaled_error(wl[w], x, v))
                print(f"  {name} scale={scale}", flush=True)
    out = [{"dataset": k[0], "method": k[1], "epsilon": k[2], "scale": k[3], "workload": k[4],
            "n": a.n or 4096, "error": float(np.mean(v)), "errors": v, "trials": len(v)}
           for k, v in rows.items()]
    if a.json:
        a.json.write_text(json.dumps({"accuracy": out}, default=float))
    print(f"{len(out)} rows")
    return 0


def main(argv=None) -> int:
    ap0 = argparse.ArgumentParser(add_help=False)
    ap0.add_argument("--src", type=Path, default=None)
    known, _ = ap0.parse_known_args(argv)
    src = known.src or Path(__file__).resolve().parents[1] / "src"
    sys.path.insert(0, str(src))

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--speed", action="store_true", help="speed of every method at n = 4096")
    ap.add_argument("--hdmm", action="store_true", help="HDMM closed form vs HB and measured")
    ap.add_argument("--hdmm-start", action="store_true",
                    help="HDMM's optimizer: the paper's random start vs the warm start")
    ap.add_argument("--hdmm-sizes", action="store_true",
                    help="HDMM between and above the shipped sizes (restricted vs optimized; HB)")
    ap.add_argument("--accuracy", action="store_true", help="the DPBench table")
    ap.add_argument("--fit-auto", type=Path, nargs="+", default=None, metavar="ROWS.json",
                    help="fit the auto rule on --json files of accuracy runs (merged); print "
                         "the tables and ratios")
    ap.add_argument("--calibrate-coarse", action="store_true",
                    help="coarse's error per number of buckets on the 18 histograms, and the "
                    "fitted bucket rule (BUCKET_RULE); --trials, --n, --seed, --datasets, --json")
    ap.add_argument("--fit-target", type=float, default=None, metavar="RATIO",
                    help="with --fit-auto: fit by the share of cells above RATIO times the best "
                    "(e.g. 1.15, the issue's criterion) instead of the mean log ratio")
    ap.add_argument("--calibrate-privtree", action="store_true",
                    help="privtree's error per tree fraction on the 18 histograms (how its "
                    "default was chosen); --trials, --n, --seed, --datasets, --json")
    ap.add_argument("--calibrate-dawa", action="store_true",
                    help="DAWA's error for selection penalties 0-4 (how 2.5 was chosen); "
                         "--penalties for others, --json for the per-dataset errors")
    ap.add_argument("--fit-dawa-penalty", type=Path, nargs="+", default=None,
                    metavar="CAL.json", help="fit DAWA's penalty schedule on --calibrate-dawa "
                    "--json files; print it and its held-out ratios")
    ap.add_argument("--check-dawa-schedule", type=Path, nargs="+", default=None,
                    metavar="CAL.json", help="the penalty schedule at the sizes of these "
                    "--calibrate-dawa --json files, against the constant")
    ap.add_argument("--dawa-maps", action="store_true",
                    help="the penalty schedule on Hilbert-ordered maps (n = 65536)")
    ap.add_argument("--dawa2d-penalties", type=int, default=None, metavar="PART",
                    help="DAWA-2D's error for penalties 1-3 on the eight maps, half PART (0 or "
                    "1) of them; --json for the rows")
    ap.add_argument("--dawa2d-table", type=Path, nargs="+", default=None, metavar="ROWS.json",
                    help="the table of --dawa2d-penalties runs (both halves)")
    ap.add_argument("--penalties", nargs="*", type=float, default=None,
                    help="selection penalties for --calibrate-dawa")
    ap.add_argument("--sf-k", type=Path, default=None, metavar="BASELINE.json",
                    help="StructureFirst's error for several k against the reference issue 19 "
                         "implies from a --baseline run of main")
    ap.add_argument("--sf-authors-tree", action="store_true",
                    help="StructureFirst with veil's bucket trees against the authors' tree "
                         "(internal nodes unnoised), on the same structures")
    ap.add_argument("--ahp-steps", action="store_true",
                    help="veil's AHP against the same steps with the DPBench implementation's "
                         "choices (continuous Laplace, a deterministic sort); --trials 30")
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
    ap.add_argument("--src", type=Path, default=None,
                    help="import veil from this src folder (another checkout) instead")
    ap.add_argument("--baseline", action="store_true",
                    help="accuracy rows with the APIs every veil version has (use with --src)")
    a = ap.parse_args(argv)
    if a.baseline:
        return baseline(a)
    if a.sf_k:
        from veil.histograms.bench import structurefirst_k_check

        structurefirst_k_check(a.sf_k)
        return 0
    if a.sf_authors_tree:
        from veil.histograms.bench import structurefirst_authors_tree_check

        structurefirst_authors_tree_check(trials=a.trials, seed=a.seed)
        return 0
    if a.ahp_steps:
        from veil.histograms.bench import ahp_reference_check

        ahp_reference_check(trials=a.trials, seed=a.seed)
        return 0
    from veil.histograms.bench import run
    run(speed=a.speed, hdmm=a.hdmm, accuracy=a.accuracy, fit_auto=a.fit_auto,
        fit_target=a.fit_target,
        calibrate_dawa=a.calibrate_dawa, calibrate_coarse=a.calibrate_coarse,
        calibrate_privtree=a.calibrate_privtree,
        hdmm_start=a.hdmm_start,
        hdmm_sizes=a.hdmm_sizes, penalties=a.penalties,
        fit_dawa_penalty_files=a.fit_dawa_penalty,
        dawa_schedule_files=a.check_dawa_schedule, dawa_maps=a.dawa_maps,
        dawa2d_penalties=({"from": a.dawa2d_table} if a.dawa2d_table else
                          {"part": a.dawa2d_penalties} if a.dawa2d_penalties is not None
                          else None),
        trials=a.trials, repeats=a.repeats, n=a.n, datasets=a.datasets, methods=a.methods,
        epsilons=a.epsilons, scales=a.scales, output=a.json, seed=a.seed, log=print)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
