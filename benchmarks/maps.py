"""Benchmark veil.maps: DPBench 2-D accuracy, the auto rule's fit, and the 10^8-point scale run.

Usage (from the project root; real data in ../shared or $VEIL_SHARED)::

    PYTHONPATH=src python benchmarks/maps.py accuracy --runs 10        # DPBench 2-D protocol
    PYTHONPATH=src python benchmarks/maps.py fit --runs 6              # fit auto's threshold
    PYTHONPATH=src python benchmarks/maps.py scale --points 100000000  # 10^8 points, 1024^2

accuracy: every mechanism, auto and the flattened-HB baseline on the two DPBench 2-D
histograms and the held-out real maps (Gowalla, Foursquare NYC, GeoLife), eps 0.1 and 1,
scales 1e4, 1e6, 1e8, 2000 random rectangles, scaled mean absolute error.
fit: AG and HDMM (and the others, for the best per setting) on DPBench 2-D at half-decade
scales; the threshold minimising the worst auto/best ratio, fitted on both datasets and on each
one alone (leave-one-out, evaluated on the other and on the held-out maps).
scale: synthetic points written by a streaming DuckDB COPY to a Parquet file in /tmp (not
committed), then points -> 1024 x 1024 map locally and on Dask (2 local workers), record and
person level; wall time and peak resident memory of every process.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def _fit(a):
    import numpy as np

    from veil.maps.api import MECHANISMS
    from veil.maps.auto import AUTO_THRESHOLD, fit_threshold
    from veil.maps.bench import machine_note
    from veil.maps.evaluation import evaluate, load_dpbench_2d, real_shapes
    from veil.random import make_rng

    scales = [int(round(10 ** e)) for e in np.arange(3.5, 8.01, 0.5)]
    methods = [m for m in MECHANISMS if m not in a.skip]
    print(f"# fit: {methods} at scales {scales}, eps 0.1/1, {a.runs} runs; {machine_note()}")
    train = load_dpbench_2d()
    t0 = time.perf_counter()
    rows = evaluate(train, methods=methods, epsilons=(0.1, 1.0), scales=scales, runs=a.runs,
                    rng=make_rng(seed=11))
    print(f"# training evaluation took {time.perf_counter() - t0:.0f} s")
    errs: dict = {}
    for r in rows:
        errs.setdefault((r.dataset, r.epsilon, r.scale), {})[r.method] = r.error
    out = {"scales": scales, "methods": methods, "errors": {f"{k[0]}|{k[1]}|{k[2]}": v
                                                           for k, v in errs.items()}}
    t_all, rep = fit_threshold(errs, rows=256, cols=256)
    print(f"fitted on both DPBench 2-D maps: threshold {t_all:.3g} (worst ratio "
          f"{rep['worst']:.3f}); in the code: AUTO_THRESHOLD = {AUTO_THRESHOLD:g}")
    out["threshold_both"] = t_all
    for held in sorted({k[0] for k in errs}):
        tr = {k: v for k, v in errs.items() if k[0] != held}
        te = {k: v for k, v in errs.items() if k[0] == held}
        t1, _ = fit_threshold(tr, rows=256, cols=256)
        from veil.maps.auto import SCALE_FRACTION, signal

        worst = max(e["ag" if signal(rows=256, cols=256, epsilon=k[1] * (1 - SCALE_FRACTION),
                                     scale=k[2]) <= t1 else "hdmm"] / min(e.values())
                    for k, e in te.items())
        print(f"leave-one-out: fitted without {held}: threshold {t1:.3g}; on {held}: worst "
              f"rule/best {worst:.3f}")
        out[f"threshold_without_{held}"] = t1
    for k in sorted(errs, key=lambda k: (k[0], k[1] * k[2])):
        e = errs[k]
        best = min(e, key=e.get)
        print(f"  {k[0][:12]:12s} eps={k[1]:<4g} N={k[2]:<10d} best={best:9s} "
              + " ".join(f"{m}={e[m] / e[best]:.2f}" for m in ("ag", "hdmm", "privtree")
                         if m in e))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


def _accuracy(a):
    from veil.maps.bench import accuracy_table

    rows, table = accuracy_table(runs=a.runs, datasets=a.datasets,
                                 scales=tuple(int(float(s)) for s in a.scales))
    print(table)
    if a.json:
        Path(a.json).write_text(json.dumps([r.to_dict() for r in rows], indent=1))


def _scale(a):
    from veil.maps.bench import generate_points, machine_note, scale_run

    path = Path(a.path)
    if not path.exists() or a.regenerate:
        t0 = time.perf_counter()
        generate_points(path, int(a.points), users=a.users)
        print(f"# generated {int(a.points):,} points ({a.users:,} users) in "
              f"{time.perf_counter() - t0:.0f} s -> {path} ({path.stat().st_size / 2**30:.2f} GiB)")
    print(f"# scale: {machine_note()}")
    res = []
    for engine in a.engines:
        for protects in ("record", "user"):
            r = scale_run(path, engine=engine, protects=protects, max_points=a.max_points,
                          method=a.method, workers=a.workers)
            res.append(r)
            print(f"| {engine} | {protects} | {r['points_counted']:,} | {r['count_s']:.1f} | "
                  f"{r['mechanism_s']:.2f} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | "
                  f"{' + '.join(f'{w:.0f}' for w in r['workers_peak_mb']) or '-'} | "
                  f"{r['total_peak_mb']:.0f} |", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))


def main(argv=None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("accuracy")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--datasets", default="all", choices=("all", "dpbench", "real"))
    p.add_argument("--scales", nargs="*", default=["1e4", "1e6", "1e8"])
    p.add_argument("--json", default=None)
    p = sub.add_parser("fit")
    p.add_argument("--runs", type=int, default=6)
    p.add_argument("--skip", nargs="*", default=["dawa2d"])
    p.add_argument("--json", default=None)
    p = sub.add_parser("scale")
    p.add_argument("--points", type=float, default=1e8)
    p.add_argument("--users", type=int, default=100_000)
    p.add_argument("--max-points", type=int, default=50)
    p.add_argument("--path", default="/tmp/veil-maps-points.parquet")
    p.add_argument("--regenerate", action="store_true")
    p.add_argument("--engines", nargs="*", default=["local", "dask"])
    p.add_argument("--method", default="hdmm")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    {"fit": _fit, "accuracy": _accuracy, "scale": _scale}[a.cmd](a)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
