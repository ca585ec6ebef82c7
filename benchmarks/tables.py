"""Benchmark: DIVA vs constraint-free suppression k-anonymizers on UCI Adult and synthetic tables.

Runs veil's DIVA and the baselines (optimal cut, sort-and-cut, Mondrian-style)
side by side in one process on the same inputs and prints tables with ratios
(medians of --repeats runs). Usage::

    VEIL_SHARED=/work/shared PYTHONPATH=src python benchmarks/tables.py [--quick] [--json out.json]
    VEIL_SHARED=/work/shared PYTHONPATH=src python benchmarks/tables.py --parts reasoning

Parts: ``adult``, ``ordering``, ``scaling`` (``veil.tables.experiment``);
``reasoning`` (time of Algorithm 1 against the number of constraints: linear
time is a speed claim, so it is measured here and not asserted in a unit test;
exact implication by MILP; memory of the optimal-cut DP against the former
unchunked DP); ``generalization`` (Adult, k = 5, the 8 ARX QIs and hierarchies:
global recoding by the pruned search and by exhaustive search, local recoding
without and with the 5 DIVA constraints, Mondrian on the same hierarchy, suppression-only DIVA and the optimal cut);
``risk`` (Adult: ``veil.tables.reidentification_risk`` against a direct pandas
computation from class sizes, input and outputs).

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
ALL_PARTS = EXPERIMENT_PARTS + ("reasoning", "generalization", "risk")


def _old_optimal_cut_peak(S, k):
    """Peak memory of the former DP (one (k, k, q) comparison per block), for comparison."""
    import tracemalloc

    import numpy as np

    n, q = S.shape
    tracemalloc.start()
    change = np.ones((n, q), dtype=bool)
    change[1:] = S[1:] != S[:-1]
    runstart = np.maximum.accumulate(np.where(change, np.arange(n)[:, None], 0), axis=0)
    f = np.full(n + 1, np.inf)
    f[0] = 0.0
    D = np.arange(k, 2 * k)
    for b in range(k, n + 1, k):
        J = np.arange(b, min(b + k, n + 1))
        Ic = np.maximum(J[:, None] - D[None, :], 0)
        nc = (runstart[J - 1][:, None, :] > Ic[:, :, None]).sum(axis=2)
        cost = f[Ic] + D[None, :] * nc
        f[J] = cost.min(axis=1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def bench_reasoning(repeats: int) -> dict:
    """Algorithm 1 (``implied_range``) on m single-value constraints, m = 10^3 .. 10^5;
    exact implication (MILP on compressed cells); optimal-cut memory."""
    import tracemalloc

    import numpy as np

    from veil.tables import DiversityConstraint, implied_range, implies_exact
    from veil.tables.baselines import optimal_cut_sorted
    from veil.tables.exact import ExactProgram

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
    exact = []
    for a in (10, 20, 40):
        cs = [DiversityConstraint({f"A{i}": "x", f"A{(i + 1) % a}": "y"}, 1, 5) for i in range(a)]
        probe = DiversityConstraint({"A0": "x"}, 1, 10)
        cells = len(ExactProgram.build([c.items for c in cs] + [probe.items]).cells)
        t = median_time(lambda: implies_exact(cs, probe), repeats)
        exact.append({"attributes": a, "cells": cells, "full_product_cells": 3 ** a,
                      "seconds": t})
    print("\n## Exact implication (HiGHS MILP on compressed cells): a ring of 2-attribute "
          "targets\n")
    print_table(["attributes", "compressed cells", "full product cells", "median s"],
                [[r["attributes"], r["cells"], f"{r['full_product_cells']:.3g}", r["seconds"]]
                 for r in exact])
    mem = []
    rng = np.random.default_rng(4)
    for k in (1000, 2500, 5000):
        S = np.sort(rng.integers(0, 3, (2 * k + 100, 7)), axis=0)
        tracemalloc.start()
        optimal_cut_sorted(S, k)
        new = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        old = _old_optimal_cut_peak(S, k)
        mem.append({"k": k, "rows": len(S), "new_mb": new / 2**20, "old_mb": old / 2**20,
                    "ratio": old / new})
    print("\n## Optimal-cut DP peak memory (tracemalloc), q = 7, n = 2k + 100\n")
    print_table(["k", "rows", "chunked DP MB", "former DP MB", "former / chunked"],
                [[r["k"], r["rows"], r["new_mb"], r["old_mb"], r["ratio"]] for r in mem])
    return {"implication_scaling": rows, "exact_implication": exact, "optimal_cut_memory": mem}


def _adult_hierarchies():
    from veil.datasets import shared_data_path
    from veil.tables import load_hierarchies
    from veil.tables.adult import ADULT_QI8

    return load_hierarchies(shared_data_path("adult", "hierarchies"), ADULT_QI8)


def bench_generalization(repeats: int, seed: int) -> dict:
    import time

    import numpy as np

    from veil.tables import (diva, global_recoding, k_anonymize, local_recoding,
                             mondrian_generalize, reidentification_risk)
    from veil.tables.adult import ADULT_QI8, load_adult
    from veil.tables.data import as_columns, encode_qi
    from veil.tables.experiment import generate_constraints
    from veil.tables.metrics import flat_hierarchies, utility_metrics

    df = load_adult()
    H = _adult_hierarchies()
    qi = ADULT_QI8
    k = 5
    enc = encode_qi(as_columns(df), qi)
    cs = generate_constraints(df, qi, m=5, k=k, rng=np.random.default_rng(seed))

    def timed(fn, reps):
        best = None
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            best = fn()
            times.append(time.perf_counter() - t)
        return best, sorted(times)[len(times) // 2]

    runs = []
    for ms in (0.0, 0.05):
        for search in ("flash", "exhaustive"):
            reps = repeats if search == "flash" else 1
            r, t = timed(lambda: global_recoding(df, k=k, qi=qi, hierarchies=H,
                                                 max_suppression=ms, search=search), reps)
            runs.append((f"global/{search}, suppression <= {100 * ms:g}%", r, t))
    for ms in (0.0, 0.01):
        r, t = timed(lambda: local_recoding(df, k=k, qi=qi, hierarchies=H, max_suppression=ms),
                     repeats)
        runs.append((f"local, suppression <= {100 * ms:g}%", r, t))
    r, t = timed(lambda: local_recoding(df, k=k, qi=qi, hierarchies=H, constraints=cs,
                                        seed=seed), repeats)
    runs.append((f"local, {len(cs)} constraints, suppression <= 0%", r, t))
    r, t = timed(lambda: mondrian_generalize(df, k=k, qi=qi, hierarchies=H), repeats)
    runs.append(("mondrian-hierarchy", r, t))
    r, t = timed(lambda: diva(df, k=k, qi=qi, constraints=cs, seed=seed), repeats)
    runs.append((f"DIVA (suppression only, {len(cs)} constraints)", r, t))
    r, t = timed(lambda: k_anonymize(df, k=k, qi=qi), repeats)
    runs.append(("optimal-cut (suppression only)", r, t))
    flat = flat_hierarchies(enc.values, enc.names)
    rows = []
    for name, res, t in runs:
        util = res.stats.get("utility") or utility_metrics(enc.codes, flat,
                                                           suppressed=res.suppressed,
                                                           names=enc.names)
        if "utility" not in res.stats:  # suppression outputs: hierarchy-based loss as well
            hier = [H[a].encode(list(enc.values[j]), column=a) for j, a in enumerate(qi)]
            lv = np.zeros(enc.codes.shape, dtype=np.int64)
            util = utility_metrics(enc.codes, hier, levels=lv, suppressed=res.suppressed,
                                   names=enc.names)
        risk = reidentification_risk(res.table, qi)
        met = sum(s.satisfied for s in res.constraints) if res.constraints else None
        if name.startswith("mondrian") or name.startswith("optimal") or name.startswith(
                "global") or name.startswith("local"):
            from veil.tables import count_targets

            counts = count_targets(res.table, cs)
            met = sum(c.holds(x) for c, x in zip(cs, counts))
        rows.append({"method": name, "granularity": util["granularity"],
                     "nue_bits": util["nue_bits"], "suppressed_rows":
                         int((res.table[qi] == "*").all(axis=1).sum()),
                     "suppressed_cells": int(res.suppressed.sum()),
                     "classes": res.metrics["classes"], "min_class": res.metrics["min_class_size"],
                     "prosecutor_highest": risk["prosecutor"]["highest"],
                     "prosecutor_avg": risk["prosecutor"]["success_rate"],
                     "constraints_met": met, "seconds": t,
                     "node": res.stats.get("node"), "strategy": res.stats.get("strategy"),
                     "evaluated": res.stats.get("evaluated"),
                     "monotone_checks": res.stats.get("monotone_checks")})
    print(f"\n## Generalization on Adult ({len(df)} rows, k = {k}, QIs {', '.join(qi)}; "
          f"{'median of ' + str(repeats) if repeats > 1 else 'one run'}, exhaustive once)\n")
    print_table(["method", "granularity", "NUE (bits)", "suppressed rows", "classes",
                 "prosecutor highest / avg", f"constraints met (of {len(cs)})", "s",
                 "node", "nodes evaluated (+ monotone checks)"],
                [[r["method"], f"{r['granularity']:.4f}", f"{r['nue_bits']:.0f}",
                  r["suppressed_rows"], r["classes"],
                  f"{r['prosecutor_highest']:.3f} / {r['prosecutor_avg']:.4f}",
                  r["constraints_met"], r["seconds"], r["node"] or "-",
                  "-" if r["evaluated"] is None else
                  f"{r['evaluated']} (+{r['monotone_checks'] or 0})"] for r in rows])
    by = {r["method"]: r for r in rows}
    for ms in ("0", "5"):
        f, e = by[f"global/flash, suppression <= {ms}%"], \
            by[f"global/exhaustive, suppression <= {ms}%"]
        same = abs(f["granularity"] - e["granularity"]) < 1e-12
        print(f"\nsuppression <= {ms}%: pruned search loss {f['granularity']:.6f}, exhaustive "
              f"optimum {e['granularity']:.6f} (equal: {same}); time ratio exhaustive / "
              f"pruned {e['seconds'] / f['seconds']:.1f}")
    loc, mon = by["local, suppression <= 0%"], by["mondrian-hierarchy"]
    print(f"local / Mondrian (same hierarchy): granularity "
          f"{loc['granularity'] / mon['granularity']:.3f}, NUE "
          f"{loc['nue_bits'] / mon['nue_bits']:.3f}")
    lc = by[f"local, {len(cs)} constraints, suppression <= 0%"]
    dv = by[f"DIVA (suppression only, {len(cs)} constraints)"]
    print(f"local with the {len(cs)} constraints: {lc['constraints_met']} of {len(cs)} met "
          f"(strategy {lc['strategy']}); granularity / Mondrian "
          f"{lc['granularity'] / mon['granularity']:.3f}, / DIVA "
          f"{lc['granularity'] / dv['granularity']:.3f}, / local without constraints "
          f"{lc['granularity'] / loc['granularity']:.3f}; NUE / Mondrian "
          f"{lc['nue_bits'] / mon['nue_bits']:.3f}, / DIVA {lc['nue_bits'] / dv['nue_bits']:.3f}; "
          f"time / DIVA {lc['seconds'] / dv['seconds']:.2f}")
    # global recoding with the same constraints (one run): exact per node, extra suppression
    from veil.tables.generalize import GeneralizationInfeasibleError

    t = time.perf_counter()
    try:
        g = global_recoding(df, k=k, qi=qi, hierarchies=H, constraints=cs, max_suppression=0.05)
        gc = {"feasible": True, "node": g.stats["node"], "loss": g.stats["loss"],
              "evaluated": g.stats["evaluated"]}
    except GeneralizationInfeasibleError as exc:
        gc = {"feasible": False, "proved": exc.proved, "evaluated": exc.stats.get("evaluated"),
              "pruned": exc.stats.get("pruned_by_tagging"),
              "programs": exc.stats.get("suppression_programs")}
    gc["seconds"] = time.perf_counter() - t
    print(f"global/flash with the {len(cs)} constraints, suppression <= 5%: "
          + (f"node {gc['node']}, granularity {gc['loss']:.4f}" if gc["feasible"] else
             f"no feasible node (proved: {gc['proved']}; {gc['evaluated']} nodes evaluated, "
             f"{gc['pruned']} pruned by tagging)") + f", {gc['seconds']:.1f} s (one run)")
    return {"generalization": rows, "constraints": [c.to_text() for c in cs],
            "global_with_constraints": gc}


def bench_risk() -> dict:
    import time

    from veil.tables import global_recoding, reidentification_risk
    from veil.tables.adult import ADULT_QI8, load_adult

    df = load_adult()
    qi = ADULT_QI8
    out = global_recoding(df, k=5, qi=qi, hierarchies=_adult_hierarchies(),
                          max_suppression=0.05).table
    rows = []
    for name, t in (("input", df), ("global recoding, k = 5", out)):
        t0 = time.perf_counter()
        r = reidentification_risk(t, qi)
        dt = time.perf_counter() - t0
        keep = ~(t[qi].astype(str) == "*").all(axis=1)
        g = t[keep].astype(str).groupby(qi).size()
        direct = (1 / g.min(), len(g) / g.sum(), float((g[g < 5].sum()) / g.sum()))
        rows.append({"table": name, "highest": r["prosecutor"]["highest"],
                     "success": r["prosecutor"]["success_rate"],
                     "at_risk": r["prosecutor"]["records_at_risk"],
                     "direct_highest": direct[0], "direct_success": direct[1],
                     "direct_at_risk": direct[2], "sample_uniques":
                         r["uniqueness"]["sample_uniques"], "seconds": dt})
    print("\n## Re-identification risk on Adult (8 QIs), veil against a direct pandas "
          "computation from class sizes (threshold 0.2)\n")
    print_table(["table", "prosecutor highest (veil / direct)",
                 "success rate (veil / direct)", "records at risk (veil / direct)",
                 "sample uniques", "veil s"],
                [[r["table"], f"{r['highest']:.4f} / {r['direct_highest']:.4f}",
                  f"{r['success']:.6f} / {r['direct_success']:.6f}",
                  f"{r['at_risk']:.6f} / {r['direct_at_risk']:.6f}",
                  f"{100 * r['sample_uniques']:.2f}%", r["seconds"]] for r in rows])
    return {"risk": rows}


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
    if "generalization" in parts:
        res.update(bench_generalization(args.repeats, args.seed))
    if "risk" in parts:
        res.update(bench_risk())
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=2, default=float)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
