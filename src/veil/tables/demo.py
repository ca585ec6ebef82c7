"""Data for the ``veil demo`` tables section (synthetic, generated from the demo's RNG)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

__all__ = ["demo_results", "DEMO_CONSTRAINTS", "demo_hierarchies"]

# Demo groupings for the synthetic census (written for veil): value -> group -> '*'.
_EDUCATION = {"Post-secondary": ["Bachelors", "Masters", "Doctorate", "Prof-school",
                                 "Assoc-acdm", "Assoc-voc", "Some-college"],
              "School": ["HS-grad", "12th", "11th", "10th", "9th", "7th-8th", "5th-6th",
                         "1st-4th", "Preschool"]}
_MARITAL = {"Married": ["Married-civ-spouse", "Married-spouse-absent", "Married-AF-spouse"],
            "Not married": ["Never-married", "Divorced", "Separated", "Widowed"]}


def demo_hierarchies(df) -> dict:
    """Hierarchies for the demo table: 10- and 20-year age bands; education and marital
    status in two groups; race and sex flat (kept or '*')."""
    from .hierarchy import Hierarchy

    def grouped(spec, values):
        rows, seen = [], set()
        for g, vals in spec.items():
            for v in vals:
                rows.append([v, g, "*"])
                seen.add(v)
        rows += [[v, "Other", "*"] for v in sorted(set(values) - seen)]
        return Hierarchy(rows)

    ages = [int(a) for a in df["age"]]
    return {"age": Hierarchy.intervals(range(min(ages) // 20 * 20, max(ages) + 1), [10, 20]),
            "education": grouped(_EDUCATION, df["education"]),
            "marital": grouped(_MARITAL, df["marital"])}


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
    gen = _generalization(census, k, rng)
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
        "generalization": gen,
    }


def _generalization(census, k: int, rng: np.random.Generator) -> dict[str, Any]:
    """Generalization, suppression and risk on the demo census (raw ages, hierarchies above)."""
    import pandas as pd

    from .baselines import k_anonymize
    from .data import as_columns, encode_qi
    from .generalize import global_recoding, local_recoding, mondrian_generalize
    from .metrics import utility_metrics
    from .models import DistinctLDiversity
    from .risk import reidentification_risk

    df = pd.DataFrame({"age": np.asarray(census["age"]).astype(str),
                       "education": np.asarray(census["education"]).astype(str),
                       "marital": np.asarray(census["marital-status"]).astype(str),
                       "race": np.asarray(census["race"]).astype(str),
                       "sex": np.asarray(census["sex"]).astype(str),
                       "salary": np.asarray(census["salary"]).astype(str)})
    qi = ["age", "education", "marital", "race", "sex"]
    H = demo_hierarchies(df)
    runs = {}
    for name, fn in (
            ("global (optimal node)", lambda: global_recoding(df, k=k, qi=qi, hierarchies=H,
                                                              max_suppression=0.02)),
            ("global + 2-diverse salary", lambda: global_recoding(
                df, k=k, qi=qi, hierarchies=H, max_suppression=0.02,
                models=[DistinctLDiversity("salary", 2)])),
            ("local recoding", lambda: local_recoding(df, k=k, qi=qi, hierarchies=H)),
            ("Mondrian (hierarchy)", lambda: mondrian_generalize(df, k=k, qi=qi,
                                                                 hierarchies=H)),
            ("optimal cut (suppression)", lambda: k_anonymize(df, k=k, qi=qi))):
        t = time.perf_counter()
        runs[name] = (fn(), time.perf_counter() - t)
    enc = encode_qi(as_columns(df), qi)
    hier = [H[a].encode(list(enc.values[j]), column=a) if a in H else None
            for j, a in enumerate(qi)]
    from .metrics import flat_hierarchies

    flat = flat_hierarchies(enc.values, enc.names)
    hier = [h if h is not None else f for h, f in zip(hier, flat)]
    before = reidentification_risk(df, qi)
    rows, risk_rows = [], [["input", before["classes"], before["prosecutor"]["highest"],
                            before["prosecutor"]["success_rate"],
                            before["uniqueness"]["sample_uniques"]]]
    for name, (res, t) in runs.items():
        util = res.stats.get("utility") or utility_metrics(
            enc.codes, hier, suppressed=res.suppressed, names=enc.names)
        r = reidentification_risk(res.table, qi)
        rows.append([name, round(util["granularity"], 4), round(util["nue_bits"], 1),
                     int((res.table[qi] == "*").all(axis=1).sum()), res.metrics["classes"],
                     round(t, 3)])
        risk_rows.append([name, r["classes"], r["prosecutor"]["highest"],
                          r["prosecutor"]["success_rate"], r["uniqueness"]["sample_uniques"]])
    l2 = runs["global + 2-diverse salary"][0]
    return {"qi": qi, "rows": rows,
            "columns": ["method", "granularity loss", "non-uniform entropy (bits)",
                        "suppressed rows", "classes", "runtime (s)"],
            "risk_columns": ["table", "classes", "prosecutor highest risk",
                             "prosecutor success rate", "sample uniques"],
            "risk_rows": risk_rows,
            "node": runs["global (optimal node)"][0].stats["node"],
            "l_diversity": l2.privacy[0],
            "excerpt_columns": qi + ["salary"],
            "excerpt_rows": [[str(l2.table[c].iloc[i]) for c in qi + ["salary"]]
                             for i in range(8)]}
