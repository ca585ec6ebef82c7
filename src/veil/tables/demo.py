"""Data for the ``veil demo`` tables section (synthetic, generated from the demo's RNG)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

__all__ = ["demo_results", "DEMO_CONSTRAINTS"]

DEMO_CONSTRAINTS = """\
sex=Female: {f_lo}..{f_hi}
race=Black, sex=Female: {rf_lo}..inf
education=Bachelors: 0..{e_hi}
"""


def demo_results(rng: np.random.Generator, *, quick: bool = False) -> dict[str, Any]:
    """Anonymize a synthetic Adult-like table with DIVA and the baselines.

    Returns plain data: parameters, per-method metrics, constraint status rows,
    an excerpt of the anonymized table, and the numbers behind the figure.
    """
    from .baselines import k_anonymize
    from .constraints import parse_constraints
    from .diverse import diva
    import pandas as pd

    from ..datasets.synthetic import synthetic_census
    from .validate import check_constraints

    n = 600 if quick else 3000
    k = 5
    census = synthetic_census(n, rng=rng)
    decade = (np.asarray(census["age"]) // 10) * 10
    df = pd.DataFrame({
        "age": [f"{d}-{d + 9}" for d in decade],  # public bands: readable and less suppression
        "education": np.asarray(census["education"]).astype(str),
        "marital": np.asarray(census["marital-status"]).astype(str),
        "race": np.asarray(census["race"]).astype(str),
        "sex": np.asarray(census["sex"]).astype(str),
        "payload": np.asarray(census["salary"]).astype(str),
    })
    qi = ["age", "education", "marital", "race", "sex"]
    nf = int((df["sex"] == "Female").sum())
    nrf = int(((df["sex"] == "Female") & (df["race"] == "Black")).sum())
    ne = int((df["education"] == "Bachelors").sum())
    text = DEMO_CONSTRAINTS.format(f_lo=int(0.8 * nf), f_hi=int(0.9 * nf),
                                   rf_lo=max(k, int(0.7 * nrf)), e_hi=int(0.8 * ne))
    cs = parse_constraints(text, table=df, k=k)
    results = {}
    t = time.perf_counter()
    results["DIVA"] = diva(df, k=k, qi=qi, constraints=cs, rng=rng)
    times = {"DIVA": time.perf_counter() - t}
    for name, meth in (("optimal cut", "optimal-cut"), ("sort-and-cut", "sort-cut"),
                       ("Mondrian", "mondrian")):
        t = time.perf_counter()
        results[name] = k_anonymize(df, k=k, qi=qi, method=meth, constraints=cs)
        times[name] = time.perf_counter() - t
    inp = check_constraints(df, cs)
    status_rows = []
    for j, c in enumerate(cs):
        row = [c.to_text(), inp[j].count]
        for name in ("DIVA", "optimal cut", "Mondrian"):
            s = results[name].constraints[j]
            row.append(f"{s.count} {'ok' if s.satisfied else 'VIOLATED'}")
        status_rows.append(row)
    out_tbl = results["DIVA"].table
    cols = qi + ["payload"]
    excerpt = [[str(out_tbl[c].iloc[i]) for c in cols] for i in range(12)]
    methods = list(results)
    return {
        "n": n, "k": k, "qi": qi, "constraints": [c.to_text() for c in cs],
        "methods": methods,
        "suppressed_share": {m: results[m].metrics["suppressed_share"] for m in methods},
        "satisfied": {m: results[m].constraints_satisfied for m in methods},
        "classes": {m: results[m].metrics["classes"] for m in methods},
        "discernibility": {m: results[m].metrics["discernibility"] for m in methods},
        "runtime_s": times,
        "status_columns": ["constraint", "input count", "DIVA", "optimal cut", "Mondrian"],
        "status_rows": status_rows,
        "excerpt_columns": cols,
        "excerpt_rows": excerpt,
        "min_class_size": {m: results[m].metrics["min_class_size"] for m in methods},
    }
