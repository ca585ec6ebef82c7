"""Diversity-constrained k-anonymization of a census table (DIVA) against a baseline.

Shows :func:`veil.tables.diverse.diva` on a synthetic Adult-like census
(:func:`veil.datasets.synthetic.synthetic_census`): the table is made
k-anonymous on its quasi-identifiers by suppressing cells (``*``), while
diversity constraints keep enough women, women of a minority race, and older
people visible in the output. The constraint-free baseline
(:func:`veil.tables.baselines.k_anonymize`, optimal cut) suppresses as little
as it can but may violate the constraints. k-anonymity is not differential
privacy (see docs/tables.md).

Run::

    PYTHONPATH=src python examples/05_tables_diva.py [--k 5] [--rows 1000] [--seed N]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

import veil
from veil.datasets.synthetic import synthetic_census
from veil.tables.baselines import k_anonymize
from veil.tables.constraints import parse_constraints
from veil.tables.diverse import diva

QI = ["age-band", "education", "marital-status", "race", "sex"]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=5, help="minimum equivalence-class size")
    ap.add_argument("--rows", type=int, default=1000, help="census rows to generate")
    ap.add_argument("--seed", type=int, default=None,
                    help="seed for experiments only (makes the synthetic data reproducible)")
    args = ap.parse_args(argv)
    rng = veil.make_rng(seed=args.seed)
    k = args.k

    census = synthetic_census(args.rows, rng=rng)
    df = pd.DataFrame({c: census[c] for c in ("age", "education", "marital-status", "race",
                                              "sex", "salary")})
    # a public generalization of age into decades (not learned from the data)
    band = np.clip(df["age"].to_numpy() // 10 * 10, 10, 70)
    df.insert(0, "age-band", [f"{b}-{b + 9}" if b < 70 else "70+" for b in band])
    df = df.drop(columns="age")

    n_f = int((df["sex"] == "Female").sum())
    n_fb = int(((df["sex"] == "Female") & (df["race"] == "Black")).sum())
    n_old = int((df["age-band"] == "60-69").sum())
    text = "\n".join([
        f"sex=Female: {int(0.95 * n_f)}..{n_f}",
        f"race=Black, sex=Female: {max(k, int(0.9 * n_fb))}..inf",
        f"age-band=60-69: {max(k, int(0.9 * n_old))}..inf",
    ])
    constraints = parse_constraints(text, table=df, k=k)
    print(f"census: {len(df)} rows, quasi-identifiers {', '.join(QI)}; k = {k}")
    print("constraints (visible rows in the output):")
    for c in constraints:
        print(f"  {c.to_text()}")

    results = {"DIVA": diva(df, k=k, qi=QI, constraints=constraints, rng=rng),
               "baseline (optimal cut)": k_anonymize(df, k=k, qi=QI, method="optimal-cut",
                                                     constraints=constraints)}
    print(f"\n{'method':24s} {'suppressed QI cells':>20s} {'classes':>8s} "
          f"{'min class':>9s}  constraints")
    for name, r in results.items():
        met = sum(s.satisfied for s in r.constraints)
        print(f"{name:24s} {100 * r.metrics['suppressed_share']:19.1f}% "
              f"{r.metrics['classes']:8d} {r.metrics['min_class_size']:9d}  "
              f"{met}/{len(r.constraints)} met")
    for name, r in results.items():
        for c, st in zip(constraints, r.constraints):
            if not st.satisfied:
                print(f"  {name} violates {c.to_text()} (count {st.count})")
    print("\nfirst rows of the DIVA output ('*' = suppressed):")
    print(results["DIVA"].table.head(6).to_string(index=False))
    print("\nok: DIVA and baseline done")


if __name__ == "__main__":
    main()
