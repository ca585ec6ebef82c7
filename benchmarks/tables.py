"""Benchmark: DIVA vs constraint-free suppression k-anonymizers on UCI Adult and synthetic tables.

Runs veil's DIVA and the baselines (optimal cut, sort-and-cut, Mondrian-style)
side by side in one process on the same inputs and prints tables with ratios
(medians of --repeats runs). Usage::

    VEIL_SHARED=/work/shared PYTHONPATH=src python benchmarks/tables.py [--quick] [--json out.json]

The machine is shared (2 cores, several users): compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="write raw results here")
    ap.add_argument("--parts", default="adult,ordering,scaling",
                    help="comma-separated subset of adult,ordering,scaling")
    args = ap.parse_args(argv)
    from veil.tables.experiment import format_results, run_experiment

    res = run_experiment(quick=args.quick, repeats=args.repeats, seed=args.seed,
                         parts=tuple(p.strip() for p in args.parts.split(",")),
                         progress=lambda s: print(s, file=sys.stderr, flush=True))
    print(format_results(res))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=2, default=float)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
