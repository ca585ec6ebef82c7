"""Benchmark: DIVA vs constraint-free suppression k-anonymizers on UCI Adult and synthetic tables.

Runs veil's DIVA and the baselines (optimal cut, sort-and-cut, Mondrian-style)
side by side in one process on the same inputs and prints tables with ratios
(medians of --repeats runs). Usage::

    VEIL_SHARED=/work/shared PYTHONPATH=src python benchmarks/tables.py [--quick] [--json out.json]
    VEIL_SHARED=/work/shared PYTHONPATH=src python benchmarks/tables.py --parts reasoning

Parts: ``adult``, ``ordering``, ``scaling`` (``veil.tables.experiment``) and
``reasoning`` (time of Algorithm 1 against the number of constraints: linear
time is a speed claim, so it is measured here and not asserted in a unit test).

The machine is shared (2 cores, several users): compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import machine_note, median_time, print_table  # noqa: E402

EXPERIMENT_PARTS = ("adult", "ordering", "scaling")
ALL_PARTS = EXPERIMENT_PARTS + ("reasoning",)


def bench_reasoning(repeats: int) -> dict:
    """Algorithm 1 (``implied_range``) on m single-value constraints, m = 10^3 .. 10^5."""
    from veil.tables import DiversityConstraint, implied_range

    rows = []
    for m in (1_000, 10_000, 100_000):
        sigma = [DiversityConstraint({"A": f"v{i}"}, 1, 10) for i in range(m)]
        t = median_time(lambda: implied_range(sigma, {"A": "v0"}), repeats)
        rows.append({"constraints": m, "seconds": t})
    for a, b in zip(rows, rows[1:]):
        b["ratio_to_previous"] = b["seconds"] / a["seconds"]
    print("\n## Implication by the axioms (Algorithm 1): time against |Sigma|\n")
    print_table(["|Sigma|", "median s", "ratio to previous (10x constraints)"],
                [[r["constraints"], r["seconds"], r.get("ratio_to_previous", "-")]
                 for r in rows])
    return {"implication_scaling": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="write raw results here")
    ap.add_argument("--parts", default="adult,ordering,scaling",
                    help="comma-separated subset of " + ",".join(ALL_PARTS))
    args = ap.parse_args(argv)
    parts = tuple(p.strip() for p in args.parts.split(",") if p.strip())
    unknown = sorted(set(parts) - set(ALL_PARTS))
    if unknown:
        ap.error(f"unknown parts {unknown}; choose from {', '.join(ALL_PARTS)}")
    print(machine_note())
    res: dict = {}
    exp_parts = tuple(p for p in parts if p in EXPERIMENT_PARTS)
    if exp_parts:
        from veil.tables.experiment import format_results, run_experiment

        res = run_experiment(quick=args.quick, repeats=args.repeats, seed=args.seed,
                             parts=exp_parts,
                             progress=lambda s: print(s, file=sys.stderr, flush=True))
        print(format_results(res))
    if "reasoning" in parts:
        res.update(bench_reasoning(args.repeats))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=2, default=float)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
