"""Benchmark veil.histograms: kernels and mechanisms side by side, and DPBench accuracy.

Usage (from the project root)::

    VEIL_SHARED=/work/shared PYTHONPATH=src python benchmarks/histograms.py            # all
    VEIL_SHARED=/work/shared PYTHONPATH=src python benchmarks/histograms.py --speed    # speed only
    VEIL_SHARED=/work/shared PYTHONPATH=src python benchmarks/histograms.py --accuracy --trials 2

Speed: the compiled V-optimal kernel against the straightforward numpy version
of the same recurrence (and a per-layer vectorized numpy version), StructureFirst
at n = 4096, k = 410, NoiseFirst over every k at n = 1024 and 4096, peak memory.
Accuracy: scaled range-query error on the 18 DPBench 1-D histograms at scales
1e3, 1e5, 1e7 and eps 0.1, 1 (geometric mean over datasets per method).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv=None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from veil.histograms.bench import accuracy_benchmark, speed_benchmark
    from veil.histograms.evaluation import load_dpbench

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--speed", action="store_true", help="speed benchmark only")
    ap.add_argument("--accuracy", action="store_true", help="accuracy benchmark only")
    ap.add_argument("--trials", type=int, default=2, help="trials per setting (accuracy)")
    ap.add_argument("--repeats", type=int, default=3, help="timing repeats (median)")
    ap.add_argument("--datasets", nargs="*", default=None, help="subset of DPBench names")
    ap.add_argument("--json", type=Path, default=None, help="write all rows as JSON here")
    a = ap.parse_args(argv)
    both = not (a.speed or a.accuracy)
    out: dict = {}
    if a.speed or both:
        shape = load_dpbench(["HEPTH.n4096"])["HEPTH.n4096"]
        out["speed"] = speed_benchmark(shape=shape, repeats=a.repeats)
    if a.accuracy or both:
        rows, tables = accuracy_benchmark(trials=a.trials, datasets=a.datasets)
        out["accuracy"] = [r.to_dict() for r in rows]
        out["tables"] = tables
        if a.json:
            from veil.histograms.bench import plot_accuracy

            plot_accuracy(rows, a.json.with_suffix(".png"))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
