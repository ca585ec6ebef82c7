"""The ``veil bench tables`` experiment: DIVA against constraint-free baselines.

Runs, in one process on the same inputs:

1. UCI Adult (30,162 rows without ``?``; QIs age, education, marital-status,
   occupation, race, sex, native-country): for k in {5, 10, 20} and 5, 10, 20
   random satisfiable, minimal constraints, the suppressed-cell share and the
   constraints met by DIVA and by the baselines (optimal cut, sort-and-cut,
   Mondrian), with median runtimes;
2. the ordering strategies (min-choice, max-fanout) against the naive random
   order, searching only the precomputed colours as in the paper, on
   constraint sets with overlapping targets;
3. runtime growth on synthetic tables of 10^3 .. 10^5 rows.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Callable

import numpy as np

from .baselines import k_anonymize
from .constraints import DiversityConstraint
from .diverse import DivaInfeasibleError, diva
from .reasoning import is_minimal, is_satisfiable

__all__ = ["generate_constraints", "synthetic_table", "run_experiment", "format_results"]

BASELINE_METHODS = ("optimal-cut", "sort-cut", "mondrian")


def generate_constraints(df, qi, *, m: int, k: int, rng: np.random.Generator,
                         min_support: int | None = None, max_attrs: int = 2,
                         overlapping: bool = False, upper_share: float = 0.5,
                         lo_range: tuple[float, float] = (0.5, 0.9)
                         ) -> list[DiversityConstraint]:
    """``m`` random constraints that are satisfiable, minimal and feasible on ``df``.

    Targets are the values of 1..``max_attrs`` QI attributes of a random row
    with at least ``min_support`` (default 3k) matching rows; ``lo`` is 50-90%
    (``lo_range``)
    of the target count (at least k); with probability ``upper_share`` ``hi``
    is 90-100% of the count (and >= lo), else unbounded. ``overlapping``
    draws every target from rows that share the most frequent value of the
    QI with the fewest values (constraints then form a dense graph).
    """
    min_support = 3 * k if min_support is None else min_support
    cols = {a: df[a].astype(str).to_numpy() for a in qi}
    n = len(df)
    out: list[DiversityConstraint] = []
    seen = set()
    anchor = None
    tries = 0
    while len(out) < m:
        tries += 1
        if tries > 200 * m:
            raise RuntimeError(f"could only generate {len(out)} of {m} constraints")
        if overlapping and anchor is None:
            # anchor on the most frequent value of a low-cardinality attribute
            a = min(qi, key=lambda c: len(np.unique(cols[c])))
            vals, cnts = np.unique(cols[a], return_counts=True)
            anchor = (a, str(vals[int(np.argmax(cnts))]))
        r = int(rng.integers(n))
        if overlapping and cols[anchor[0]][r] != anchor[1]:
            continue
        na = int(rng.integers(1, max_attrs + 1))
        attrs = [qi[i] for i in sorted(rng.choice(len(qi), size=na, replace=False))]
        if overlapping and rng.random() < 0.5 and anchor[0] not in attrs:
            attrs = sorted(set(attrs) | {anchor[0]})
        tgt = tuple((a, cols[a][r]) for a in attrs)
        if tgt in seen:
            continue
        cnt = int(np.logical_and.reduce([cols[a] == v for a, v in tgt]).sum())
        if cnt < min_support:
            continue
        lo = max(k, int(math.ceil(rng.uniform(*lo_range) * cnt)))
        hi = float("inf") if rng.random() >= upper_share else \
            max(lo, int(round(rng.uniform(0.9, 1.0) * cnt)))
        c = DiversityConstraint(tgt, lo, hi)
        trial = out + [c]
        if not is_satisfiable(trial) or not is_minimal(trial):
            continue
        out.append(c)
        seen.add(tgt)
    return out


def synthetic_table(n: int, rng: np.random.Generator):
    """An Adult-like table: 7 categorical QIs with skewed value frequencies, 1 payload column."""
    import pandas as pd

    sizes = {"age": 70, "education": 16, "marital": 7, "occupation": 14, "race": 5, "sex": 2,
             "country": 40}
    data = {}
    for name, d in sizes.items():
        w = 1.0 / np.arange(1, d + 1) ** 1.1
        data[name] = rng.choice(d, size=n, p=w / w.sum()).astype(str)
    data["payload"] = rng.integers(0, 100, n)
    return pd.DataFrame(data)


def _median_time(fn: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    times, res = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t)
    return res, statistics.median(times)


def run_experiment(*, quick: bool = False, repeats: int = 3, seed: int = 0,
                   progress: Callable[[str], None] = lambda s: None,
                   adult=None, parts: tuple[str, ...] = ("adult", "ordering", "scaling")
                   ) -> dict[str, Any]:
    """Run the parts ("adult", "ordering", "scaling"); a JSON-friendly dict (see
    :func:`format_results`)."""
    from .adult import ADULT_QI, load_adult

    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"quick": quick, "repeats": repeats, "seed": seed,
                           "note": "wall-clock times on a shared, loaded 2-core machine"}
    df = load_adult() if adult is None else adult
    qi = ADULT_QI
    ks = (5,) if quick else (5, 10, 20)
    ms = (5,) if quick else (5, 10, 20)
    reps = 1 if quick else repeats
    from .anonymity import visible_counts
    from .data import as_columns, encode_qi

    enc = encode_qi(as_columns(df), qi)
    rows = []
    for k in ks if "adult" in parts else ():
        base = {}
        for meth in BASELINE_METHODS:
            res, t = _median_time(lambda: k_anonymize(df, k=k, qi=qi, method=meth), reps)
            base[meth] = (res, t)
            progress(f"adult k={k} {meth}: {100 * res.metrics['suppressed_share']:.2f}% "
                     f"in {t:.2f}s")
        best = min(BASELINE_METHODS, key=lambda mm: base[mm][0].metrics["suppressed_share"])
        for m in ms:
            cs = generate_constraints(df, qi, m=m, k=k, rng=rng)
            row = {"k": k, "constraints": m, "best_baseline": best,
                   "constraint_text": [c.to_text() for c in cs]}
            for meth in BASELINE_METHODS:
                bres = base[meth][0]
                cnt = visible_counts(enc, np.where(bres.suppressed, -1, enc.codes), cs)
                row[meth] = {"suppressed_share": bres.metrics["suppressed_share"],
                             "satisfied": int(sum(c.holds(int(x)) for c, x in zip(cs, cnt))),
                             "runtime_s": base[meth][1]}
            try:
                dres, t = _median_time(lambda: diva(df, k=k, qi=qi, constraints=cs, seed=seed),
                                       reps)
                row["diva"] = {"suppressed_share": dres.metrics["suppressed_share"],
                               "satisfied": dres.constraints_satisfied, "runtime_s": t,
                               "search_steps": dres.stats["search_steps"],
                               "backtracks": dres.stats["backtracks"]}
                row["ratio_to_best"] = (dres.metrics["suppressed_share"]
                                        / base[best][0].metrics["suppressed_share"])
            except DivaInfeasibleError as exc:
                row["diva"] = {"error": str(exc), "satisfied": 0}
                row["ratio_to_best"] = None
            rows.append(row)
            d = row["diva"]
            progress(f"adult k={k} m={m}: DIVA {100 * d.get('suppressed_share', float('nan')):.2f}%"
                     f" ({d['satisfied']}/{m} met) in {d.get('runtime_s', float('nan')):.2f}s; "
                     f"{best} {100 * row[best]['suppressed_share']:.2f}% "
                     f"({row[best]['satisfied']}/{m} met)")
    out["adult"] = rows

    # --- ordering strategies, with precomputed colours only (as in the paper) and with
    # the dynamic colours; an own generator so this part is reproducible on its own
    orng = np.random.default_rng(seed + 7)
    order_rows = []
    k = 10 if not quick else 5
    nsets = 2 if quick else 5
    nrand = 2 if quick else 5
    for s in range(nsets if "ordering" in parts else 0):
        cs = generate_constraints(df, qi, m=5 if quick else 10, k=k, rng=orng, overlapping=True,
                                  max_attrs=2)
        entry = {"set": s, "constraints": [c.to_text() for c in cs]}
        for dynamic in (False, True):
            for strategy in ("min-choice", "max-fanout", "random"):
                runs = []
                for r in range(1 if strategy != "random" else nrand):
                    t = time.perf_counter()
                    try:
                        res = diva(df, k=k, qi=qi, constraints=cs, strategy=strategy,
                                   dynamic=dynamic, seed=seed + 100 * s + r, max_steps=1000)
                        st = res.stats
                        ok = True
                    except DivaInfeasibleError as exc:
                        st = exc.stats
                        ok = False
                    runs.append({"ok": ok, "total_s": time.perf_counter() - t,
                                 "search_s": st.get("search_s", float("nan")),
                                 "steps": st.get("search_steps", 0),
                                 "backtracks": st.get("backtracks", 0),
                                 "checks": st.get("consistency_checks", 0)})
                entry[strategy + ("+dyn" if dynamic else "")] = {
                    "solved": sum(r["ok"] for r in runs), "runs": len(runs),
                    "search_s": statistics.median(r["search_s"] for r in runs),
                    "total_s": statistics.median(r["total_s"] for r in runs),
                    "steps": statistics.median(r["steps"] for r in runs),
                    "backtracks": statistics.median(r["backtracks"] for r in runs),
                    "checks": statistics.median(r["checks"] for r in runs)}
        order_rows.append(entry)
        progress(f"ordering set {s}: steps min-choice {entry['min-choice']['steps']}, "
                 f"max-fanout {entry['max-fanout']['steps']}, random {entry['random']['steps']}"
                 f"; with dynamic colours {entry['min-choice+dyn']['steps']}, "
                 f"{entry['max-fanout+dyn']['steps']}, {entry['random+dyn']['steps']}")
    out["ordering"] = order_rows

    # --- scaling on synthetic tables
    sizes = (1_000, 3_000, 10_000) if quick else (1_000, 3_000, 10_000, 30_000, 100_000)
    scale_rows = []
    for n in sizes if "scaling" in parts else ():
        tbl = synthetic_table(n, np.random.default_rng(seed + n))
        names = list(tbl.columns[:7])
        cs = generate_constraints(tbl, names, m=10, k=10, rng=np.random.default_rng(seed + 1),
                                  lo_range=(0.3, 0.6))
        b, tb = _median_time(lambda: k_anonymize(tbl, k=10, qi=names), reps)
        try:
            dres, td = _median_time(
                lambda: diva(tbl, k=10, qi=names, constraints=cs, seed=seed), reps)
        except DivaInfeasibleError:
            progress(f"synthetic n={n}: DIVA found no solution")
            continue
        scale_rows.append({"rows": n, "diva_s": td, "baseline_s": tb,
                           "diva_share": dres.metrics["suppressed_share"],
                           "baseline_share": b.metrics["suppressed_share"],
                           "satisfied": dres.constraints_satisfied})
        progress(f"synthetic n={n}: DIVA {td:.2f}s, optimal-cut {tb:.2f}s")
    if len(scale_rows) >= 2:
        x = np.log([r["rows"] for r in scale_rows])
        out["scaling_exponent_diva"] = float(np.polyfit(x, np.log([r["diva_s"] for r in
                                                                   scale_rows]), 1)[0])
        out["scaling_exponent_baseline"] = float(np.polyfit(
            x, np.log([r["baseline_s"] for r in scale_rows]), 1)[0])
    out["scaling"] = scale_rows
    return out


def format_results(res: dict[str, Any]) -> str:
    """Plain-text tables of :func:`run_experiment` results."""
    res = {"adult": [], "ordering": [], "scaling": [], **res}
    L = [f"# veil bench tables ({res['note']}; medians of {res['repeats']} runs"
         f"{', quick' if res['quick'] else ''})", "",
         "## Adult: suppressed QI cells (share) and constraints met", "",
         "| k | #constraints | DIVA | met | optimal-cut | met | sort-cut | met | mondrian | met "
         "| DIVA / best baseline | DIVA time (s) | optimal-cut time (s) |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["adult"]:
        d = r["diva"]
        ds = f"{100 * d['suppressed_share']:.2f}%" if "suppressed_share" in d else "failed"
        ratio = f"{r['ratio_to_best']:.3f}" if r["ratio_to_best"] else "-"
        L.append(f"| {r['k']} | {r['constraints']} | {ds} | {d['satisfied']}/{r['constraints']} | "
                 + " | ".join(f"{100 * r[m]['suppressed_share']:.2f}% | "
                              f"{r[m]['satisfied']}/{r['constraints']}" for m in BASELINE_METHODS)
                 + f" | {ratio} | {d.get('runtime_s', float('nan')):.2f} | "
                   f"{r['optimal-cut']['runtime_s']:.2f} |")
    for suffix, title in (("", "precomputed colours only, as in the paper"),
                          ("+dyn", "with dynamic colours (the default)")):
        L += ["", f"## Ordering strategies ({title}; max_steps = 1000)", "",
              "| set | min-choice steps | max-fanout steps | random steps (median) | "
              "min-choice search s | max-fanout search s | random search s (median) | "
              "solved (mc / mf / random runs) |",
              "|---|---|---|---|---|---|---|---|"]
        for e in res["ordering"]:
            mc, mf, rd = (e[s + suffix] for s in ("min-choice", "max-fanout", "random"))
            L.append(f"| {e['set']} | {mc['steps']} | {mf['steps']} | {rd['steps']} | "
                     f"{mc['search_s']:.3f} | {mf['search_s']:.3f} | {rd['search_s']:.3f} | "
                     f"{mc['solved']}/{mc['runs']} / {mf['solved']}/{mf['runs']} / "
                     f"{rd['solved']}/{rd['runs']} |")
        if res["ordering"]:
            def tot(s, key):
                return sum(e[s + suffix][key] for e in res["ordering"])

            for s in ("min-choice", "max-fanout"):
                rs, rt = tot("random", "search_s"), tot("random", "total_s")
                L.append(f"\n{s}: search time {tot(s, 'search_s'):.3f}s vs random {rs:.3f}s "
                         f"(saving {100 * (1 - tot(s, 'search_s') / max(rs, 1e-12)):.0f}%); "
                         f"total time saving "
                         f"{100 * (1 - tot(s, 'total_s') / max(rt, 1e-12)):.0f}%; steps "
                         f"{tot(s, 'steps'):.0f} vs {tot('random', 'steps'):.0f}")
    L += ["", "## Runtime growth on synthetic tables (k = 10, 10 constraints)", "",
          "| rows | DIVA (s) | optimal-cut (s) | DIVA share | optimal-cut share | met |",
          "|---|---|---|---|---|---|"]
    for r in res["scaling"]:
        L.append(f"| {r['rows']} | {r['diva_s']:.3f} | {r['baseline_s']:.3f} | "
                 f"{100 * r['diva_share']:.2f}% | {100 * r['baseline_share']:.2f}% | "
                 f"{r['satisfied']}/10 |")
    if "scaling_exponent_diva" in res:
        L.append(f"\nfitted runtime ~ n^{res['scaling_exponent_diva']:.2f} (DIVA), "
                 f"n^{res['scaling_exponent_baseline']:.2f} (optimal-cut)")
    return "\n".join(L) + "\n"
