"""Publish a differentially private histogram of census ages.

Shows :func:`veil.histograms.publish` on a synthetic Adult-like census
(:func:`veil.datasets.synthetic.synthetic_census`): the ages are binned into
fixed, public 1-year bins (17..90), published with three mechanisms
(``identity``, ``hb`` and ``auto``), and each release is compared with the true
histogram on 1,000 random range queries. The :class:`veil.release.Release`
metadata records the mechanism, the budget and how it was split.

Run::

    PYTHONPATH=src python examples/01_dp_histogram.py [--epsilon 0.5] [--seed N]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import veil
from veil.datasets.synthetic import synthetic_census
from veil.histograms import publish
from veil.histograms.workload import answer, random_range_workload
from veil.release import to_jsonable

AGE_MIN, AGE_MAX = 17, 90  # public bins, fixed in advance (never taken from the data)


def _round(v):
    """Round floats for display (4 significant digits)."""
    if isinstance(v, float):
        return float(f"{v:.4g}")
    if isinstance(v, dict):
        return {k: _round(x) for k, x in v.items()}
    return v


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=0.5, help="privacy budget per release")
    ap.add_argument("--rows", type=int, default=20_000, help="census rows to generate")
    ap.add_argument("--seed", type=int, default=None,
                    help="seed for experiments only (a seeded release gives no privacy)")
    args = ap.parse_args(argv)
    rng = veil.make_rng(seed=args.seed)

    census = synthetic_census(args.rows, rng=rng)
    edges = np.arange(AGE_MIN, AGE_MAX + 2)  # one bin per year, public
    true = np.histogram(census["age"], bins=edges)[0].astype(np.int64)
    queries = random_range_workload(true.size, size=1000, rng=rng)
    true_answers = answer(queries, true)
    print(f"census: {true.sum():,} people, {true.size} age bins ({AGE_MIN}..{AGE_MAX}), "
          f"epsilon = {args.epsilon}")

    for method in ("identity", "dawa", "auto"):
        rel = publish(true, epsilon=args.epsilon, method=method, rng=rng,
                      records_bound=float(args.rows))  # the row count is public here
        err = np.abs(answer(queries, rel.value) - true_answers)
        meta = to_jsonable(rel.metadata())
        print(f"\n[{method}] released by mechanism {rel.mechanism!r}")
        for key in ("budget", "budget_split", "noise_scale", "expected_error"):
            print(f"  {key:15s} {json.dumps(_round(meta.get(key)))}")
        for note in meta.get("notes") or []:
            print(f"  note            {note}")
        print(f"  range-query error: mean {err.mean():.1f}, median {np.median(err):.1f}, "
              f"max {err.max():.1f} records (1,000 random ranges)")
    print("\nok: published 3 DP histograms")


if __name__ == "__main__":
    main()
