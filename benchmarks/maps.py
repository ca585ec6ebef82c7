"""Benchmark veil.maps: DPBench 2-D accuracy, the auto rule's fit, and the 10^8-point scale run.

Usage (from the project root; real data in ../shared or $VEIL_SHARED)::

    PYTHONPATH=src python benchmarks/maps.py accuracy --runs 10        # DPBench 2-D protocol
    PYTHONPATH=src python benchmarks/maps.py table a.json b.json       # merge accuracy runs
    PYTHONPATH=src python benchmarks/maps.py fit --runs 6 --json dp.json            # DPBench maps
    PYTHONPATH=src python benchmarks/maps.py fit --runs 6 --maps points --seed 12 --json pts.json
    PYTHONPATH=src python benchmarks/maps.py fit --from-json dp.json pts.json --maps all \
        --privtree-occupancy --json-rules rules.json                   # fit auto's rule
    PYTHONPATH=src python benchmarks/maps.py autoeval --rules rules.json --seed 0
    PYTHONPATH=src python benchmarks/maps.py autocheck --runs 40 --seed 21   # auto vs UG/AG
    PYTHONPATH=src python benchmarks/maps.py autocheck --runs 20 --seed 22 --target 1.15 \
        --reference identity ug ag quadtree hb2d privtree dawa2d hdmm      # auto vs the best
    PYTHONPATH=src python benchmarks/maps.py scale --points 100000000  # 10^8 points, 1024^2
    PYTHONPATH=src python benchmarks/maps.py calibrate-privtree --runs 20  # PrivTree's fraction

accuracy: every mechanism, auto and the flattened-HB baseline on the two DPBench 2-D
histograms and the maps built from the shared point files (``--datasets real``: Gowalla over
conus, Foursquare over nyc, GeoLife over Beijing's 4th ring; ``--datasets fresh``: Foursquare
over manhattan, Gowalla over the world, GeoLife over greater Beijing), eps 0.1 and 1, scales
1e4, 1e6, 1e8, 2000 random rectangles, scaled mean absolute error.
fit: auto's selection stage and its candidates (AG, PrivTree, HDMM, DAWA-2D at auto's budgets;
AG, PrivTree, HDMM, UG, DAWA-2D at the full budget for the best per setting) on the training
maps (``--maps``) at half-decade scales; the thresholds of auto's rule by grid search (fewest
settings above 1.15x of the best, then the mean log ratio, ties resolved to the middle), fitted
on every training map and leaving each dataset (DPBench only) or each data source out in turn.
autoeval: the protocol (10 runs) on all eight maps with every mechanism, auto with the shipped
rule, auto with the rule of the fold that left the map's source out (held out) and, with
``--previous-rule``, another rule on the same draws; a markdown table and its summary.
autocheck: auto against the best of ``--reference`` (default UG and AG) on all eight maps (eps
0.1 and 1, scales 1e4, 1e6, 1e8) with many runs: per setting the ratio of the mean errors, a
paired bootstrap interval (the methods share every run's map, queries and generator state), and
whether the setting is above ``--target`` at the 5 % family-wise level (Bonferroni over the
settings); the issue's "auto at most UG/AG" (target 1) and "within 1.15x of the best" (every
mechanism as reference, target 1.15) criteria, tested instead of read off a 10-run mean. With
``--rules`` (a fit's --json-rules file), auto runs held out: each map with its fold's rule.
scale: synthetic points written by a streaming DuckDB COPY to a Parquet file in /tmp (not
committed), then points -> 1024 x 1024 map locally and on Dask (2 local workers), record and
person level; wall time and peak resident memory of every process.
calibrate-privtree: PrivTree's tree_fraction and internal_share on the eight maps (eps 0.1 and
1, N 10^4-10^8): per setting the error over the best pair's, and each pair's geometric mean
over the settings (the criterion of veil.maps.privtree.TREE_FRACTION and INTERNAL_SHARE).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def _family(setting) -> str:
    return setting[0].split("/")[0]


def _source(setting) -> str:
    """The data source of a map: 'dpbench' (both DPBench maps and their quarters), else the
    point file's ('gowalla', 'foursquare', 'geolife'): the folds of the cross-validation."""
    from veil.maps.evaluation import DPBENCH_2D

    name = _family(setting)
    return "dpbench" if name in DPBENCH_2D else name.split("-")[0]


def _evaluate_rule(runs, rule):
    """auto / best per setting for a given rule (the same arithmetic as fit_rule)."""
    from veil.maps.auto import fit_rule

    grid = {k: [v] for k, v in rule.items()}
    return fit_rule(runs, grid=grid, reference=("ag", "privtree", "hdmm", "ug", "dawa2d"))[1]


def _fit(a):
    from veil.maps.auto import OCCUPANCY_GRID, RULE, fit_rule
    from veil.maps.bench import auto_runs, machine_note, training_shapes

    if a.from_json:
        runs = []
        for f in a.from_json:
            runs += json.loads(Path(f).read_text())
        for r in runs:
            r["setting"] = tuple(r["setting"])
        print(f"# fit: {len(runs)} runs read from {', '.join(a.from_json)}")
        if not a.quadrants:
            runs = [r for r in runs if "/" not in r["setting"][0]]
        if a.maps == "dpbench":
            runs = [r for r in runs if _source(r["setting"]) == "dpbench"]
        elif a.maps == "points":
            runs = [r for r in runs if _source(r["setting"]) != "dpbench"]
    else:
        shapes = training_shapes(quadrants=a.quadrants) if a.maps != "points" else {}
        if a.maps in ("all", "points"):
            from veil.maps.evaluation import fresh_shapes, real_shapes

            shapes.update({**real_shapes(), **fresh_shapes()})
        scales = [int(float(v)) for v in a.scales]
        print(f"# fit: {len(shapes)} training maps ({', '.join(shapes)}), scales {scales}, "
              f"eps 0.1/1, {a.runs} runs; {machine_note()}")
        t0 = time.perf_counter()
        runs = auto_runs(shapes, scales=scales, runs=a.runs, seed=a.seed,
                         progress=lambda m: print(f"  {m}", flush=True))
        print(f"# training runs took {time.perf_counter() - t0:.0f} s")
        if a.json:
            Path(a.json).write_text(json.dumps(runs))
    t0 = time.perf_counter()
    ref = ("ag", "privtree", "hdmm", "ug", "dawa2d")
    kw = dict(reference=ref, occupancy_grid=OCCUPANCY_GRID,
              privtree_occupancy=a.privtree_occupancy)
    rule, rep = fit_rule(runs, **kw)
    print(f"# grid search took {time.perf_counter() - t0:.0f} s")
    print(f"fitted on every training map: {rule}; {rep['over_target']} of "
          f"{len(rep['ratios'])} settings above 1.15, worst {rep['worst']:.3f}; "
          f"dawa_occupancy tied over {rep['tied_occupancy']}")
    print(f"shipped RULE = {RULE}")
    fold = _family if a.maps == "dpbench" else _source
    fams = sorted({fold(r["setting"]) for r in runs})
    held_out = {}
    for held in fams:
        tr = [r for r in runs if fold(r["setting"]) != held]
        te = [r for r in runs if fold(r["setting"]) == held]
        r1, _ = fit_rule(tr, **kw)
        ev = _evaluate_rule(te, r1)
        held_out.update(ev["ratios"])
        full = {k: v for k, v in ev["ratios"].items() if "/" not in k[0]}
        print(f"leave-one-{'dataset' if a.maps == 'dpbench' else 'source'}-out: fitted without "
              f"{held}: {r1}")
        quarters = len(full) < len(ev["ratios"])
        print(f"  on {held} ({len(ev['ratios'])} settings"
              f"{', quarters included' if quarters else ''}): {ev['over_target']} above "
              f"1.15, worst {ev['worst']:.3f}" + (
                  f"; on the whole maps ({len(full)} settings): "
                  f"{sum(v > 1.15 for v in full.values())} above 1.15, worst "
                  f"{max(full.values()):.3f}" if quarters else ""))
    print(f"held out (every setting scored by the rule fitted without its fold): "
          f"{sum(v <= 1.15 for v in held_out.values())} of {len(held_out)} within 1.15, "
          f"worst {max(held_out.values()):.3f}")
    for k in sorted(held_out, key=lambda k: (k[0], k[1] * k[2])):
        if held_out[k] > 1.15:
            print(f"  held out {k[0]:26s} eps={k[1]:<4g} N={k[2]:<10d} "
                  f"auto/best={held_out[k]:.2f}")
    if a.json_rules:
        Path(a.json_rules).write_text(json.dumps({"all": rule, **{
            h: fit_rule([r for r in runs if fold(r["setting"]) != h], **kw)[0] for h in fams}},
            indent=1))
    ev = _evaluate_rule(runs, RULE)
    print(f"shipped RULE on the training runs: {ev['over_target']} of {len(ev['ratios'])} "
          f"settings above 1.15, worst {ev['worst']:.3f}")
    for k in sorted(ev["ratios"], key=lambda k: (k[0], k[1] * k[2])):
        print(f"  {k[0]:28s} eps={k[1]:<4g} N={k[2]:<10d} auto/best={ev['ratios'][k]:.2f}")


def _accuracy(a):
    from veil.maps.bench import accuracy_table

    rows, table = accuracy_table(runs=a.runs, datasets=a.datasets, methods=a.methods,
                                 scales=tuple(int(float(s)) for s in a.scales), seed=a.seed,
                                 side=a.side,
                                 params={"auto": {"rule": json.loads(a.auto_rule)}}
                                 if a.auto_rule else None)
    print(table)
    if a.json:
        Path(a.json).write_text(json.dumps([r.to_dict() for r in rows], indent=1))


def _table(a):
    """One table from several ``accuracy --json`` files (e.g. DAWA-2D run with fewer runs)."""
    from veil.maps.bench import format_rows
    from veil.maps.evaluation import EvalRow

    rows, methods = [], []
    for f in a.files:
        for d in json.loads(Path(f).read_text()):
            rows.append(EvalRow(d["dataset"], d["method"], d["epsilon"], d["scale"],
                                errors=[d["error"]]))
            if d["method"] not in methods:
                methods.append(d["method"])
            print(f"# {f}: {d['method']} {d['runs']} runs", file=sys.stderr)
    order = ["identity", "ug", "ag", "quadtree", "hb2d", "privtree", "dawa2d", "hdmm", "auto",
             "hb-flat"]
    print(format_rows(rows, [m for m in order if m in methods]))


def _autoeval(a):
    """auto with the shipped rule, each fold's rule (held out) and a previous rule, on the
    protocol's draws of all eight maps, beside every mechanism; a table and its summary."""
    from veil.maps.api import MECHANISMS
    from veil.maps.auto import RULE
    from veil.maps.bench import accuracy_table

    rules = json.loads(Path(a.rules).read_text())
    if rules.get("all") != RULE:
        raise SystemExit(f"{a.rules}: its 'all' rule {rules.get('all')} is not the shipped "
                         f"RULE {RULE}; refit or ship it first")
    prev = json.loads(a.previous_rule) if a.previous_rule else None
    err, chosen = {}, {}
    for group in ("all", "fresh"):
        rows, _ = accuracy_table(runs=a.runs, datasets=group, seed=a.seed, side=a.side)
        for r in rows:
            err[(r.dataset, r.epsilon, r.scale, r.method)] = r.error
            if r.method == "auto":
                chosen[(r.dataset, r.epsilon, r.scale)] = dict(_counts(r.chosen))
        variants = {f"fold:{k}": v for k, v in rules.items() if k != "all"}
        if prev:
            variants["previous"] = prev
        for name, rule in variants.items():
            rows, _ = accuracy_table(runs=a.runs, datasets=group, seed=a.seed,
                                     methods=["auto"], params={"auto": {"rule": rule}},
                                     side=a.side, log=lambda m: None)
            for r in rows:
                err[(r.dataset, r.epsilon, r.scale, name)] = r.error
    mech = list(MECHANISMS)
    keys = sorted({k[:3] for k in err}, key=lambda k: (_source(k), k[0], k[2], k[1]))
    head = ["map", "eps", "scale", *mech, "auto", "hb-flat", "best", "auto / best",
            "held-out auto / best", *(["previous auto / best"] if prev else []),
            "best / min(UG, AG)", "auto / min(UG, AG)", "held-out auto / min(UG, AG)",
            "best / hb-flat", "auto chose (of runs)"]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    stats = {}
    for k in keys:
        e = {m: err[(*k, m)] for m in mech}
        best = min(e, key=e.get)
        ug = min(e["ug"], e["ag"])
        auto, ho = err[(*k, "auto")], err[(*k, f"fold:{_source(k)}")]
        cells = [k[0], f"{k[1]:g}", f"{k[2]:.0e}", *(f"{e[m]:.3g}" for m in mech),
                 f"{auto:.3g}", f"{err[(*k, 'hb-flat')]:.3g}", best,
                 f"{auto / e[best]:.2f}", f"{ho / e[best]:.2f}"]
        if prev:
            cells.append(f"{err[(*k, 'previous')] / e[best]:.2f}")
        cells += [f"{e[best] / ug:.2f}", f"{auto / ug:.2f}", f"{ho / ug:.2f}",
                  f"{e[best] / err[(*k, 'hb-flat')]:.2f}",
                  ", ".join(f"{m} {c}" for m, c in chosen[k].items())]
        print("| " + " | ".join(cells) + " |")
        for name, v in (("auto", auto), ("held-out auto", ho),
                        *((("previous auto", err[(*k, "previous")]),) if prev else ())):
            st = stats.setdefault(name, {"within": 0, "n": 0, "worst": 0.0, "ugag": 0.0,
                                         "flat": 0.0})
            st["within"] += v / e[best] <= 1.15
            st["n"] += 1
            st["worst"] = max(st["worst"], v / e[best])
            st["ugag"] = max(st["ugag"], v / ug)
            st["flat"] = max(st["flat"], v / err[(*k, "hb-flat")])
        bst = stats.setdefault("best", {"ugag": 0.0, "flat": 0.0})
        bst["ugag"] = max(bst["ugag"], e[best] / ug)
        bst["flat"] = max(bst["flat"], e[best] / err[(*k, "hb-flat")])
    print()
    for name, st in stats.items():
        if name == "best":
            print(f"- best mechanism: at most {st['ugag']:.2f}x min(UG, AG) and "
                  f"{st['flat']:.2f}x hb-flat in every row")
            continue
        print(f"- {name}: within 1.15x of the best in {st['within']} of {st['n']} rows, "
              f"worst {st['worst']:.2f}; at most {st['ugag']:.2f}x min(UG, AG) and "
              f"{st['flat']:.2f}x hb-flat")
    if a.json:
        Path(a.json).write_text(json.dumps({"|".join(map(str, k)): v for k, v in err.items()},
                                           indent=1))


def _counts(items):
    from collections import Counter

    return Counter(items).most_common()


def _autocheck(a):
    """auto / the best of ``--reference`` per setting, with a paired bootstrap interval."""
    import numpy as np

    from veil._bootstrap import ratio_bootstrap
    from veil.maps.api import MECHANISMS
    from veil.maps.bench import accuracy_table
    from veil.random import make_rng

    ref = list(a.reference)
    bad = [m for m in ref if m not in MECHANISMS]
    problems = ([f"--reference: {bad} are not mechanisms (choose from {list(MECHANISMS)})"]
                if bad else [])
    problems += [f"{flag} must be at least {lo:g} (got {v:g})" for flag, v, lo in
                 (("--runs", a.runs, 2), ("--target", a.target, 1.0),
                  ("--resamples", a.resamples, 1000)) if not v >= lo]
    folds = None
    if a.rules:
        try:
            folds = {k: v for k, v in json.loads(Path(a.rules).read_text()).items()
                     if k != "all"}
        except (OSError, ValueError, AttributeError) as exc:
            problems.append(f"--rules {a.rules}: not a fit --json-rules file ({exc})")
        else:
            if not folds:
                problems.append(f"--rules {a.rules}: no fold rules in it")
    if problems:
        raise SystemExit("autocheck: " + "; ".join(problems))
    quiet = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    name = "min(" + ", ".join(m.upper() if m in ("ug", "ag") else m for m in ref) + ")"
    err, chosen = {}, {}
    for group in ("all", "fresh"):
        rows, _ = accuracy_table(runs=a.runs, datasets=group, seed=a.seed,
                                 methods=[*ref, "auto"] if folds is None else ref, log=quiet)
        # held out (--rules): auto with the rule of the fold that left the map's source out;
        # the same seed gives the same draws whichever methods run
        for fold, rule in (folds or {}).items():
            more, _ = accuracy_table(runs=a.runs, datasets=group, seed=a.seed,
                                     methods=["auto"], params={"auto": {"rule": rule}},
                                     log=quiet)
            rows += [r for r in more if _source((r.dataset,)) == fold]
        for r in rows:
            err[(r.dataset, r.epsilon, r.scale, r.method)] = np.asarray(r.errors)
            if r.method == "auto":
                chosen[(r.dataset, r.epsilon, r.scale)] = _counts(r.chosen)
    missing = sorted({k[0] for k in err} - {k[0] for k in chosen})
    if missing:
        raise SystemExit(f"autocheck: --rules {a.rules} has no fold for the maps {missing}")
    keys = sorted({k[:3] for k in err}, key=lambda k: (_source(k), k[0], k[2], k[1]))
    g = make_rng(seed=a.seed + 1)
    B, t = a.resamples, a.target
    # two-sided 95 % per setting; one-sided 5 % family-wise (Bonferroni) for "above the target"
    q_fw = 0.05 / len(keys)
    print(f"| map | eps | scale | best of the reference | auto | auto / {name} | 95 % interval "
          f"| lower bound at 5 % family-wise ({len(keys)} settings) | auto chose |")
    print("|---|---|---|---|---|---|---|---|---|")
    out, above, above_fw, n_one, above_one = {}, 0, 0, 0, 0
    for k in keys:
        e = np.array([err[(*k, m)] for m in ref])
        au = err[(*k, "auto")]
        n = au.size
        best = ref[int(np.argmin(e.mean(1)))]
        ratio, bs = ratio_bootstrap(au, e, resamples=B, rng=g)
        lo, hi = np.quantile(bs, [0.025, 0.975])
        lo_fw = float(np.quantile(bs, q_fw))
        above += ratio > t
        above_fw += lo_fw > t
        # auto ran the setting's best reference method in every run: the same mechanism with
        # the rest of the budget after its selection
        one = [m for m, _ in chosen[k]] == [best]
        n_one += one
        above_one += one and ratio > t
        ch = ", ".join(f"{m} {c}" for m, c in chosen[k])
        print(f"| {k[0]} | {k[1]:g} | {k[2]:.0e} | {best} {e.mean(1).min():.3g} | "
              f"{au.mean():.3g} | {ratio:.3f} | {lo:.3f}-{hi:.3f} | {lo_fw:.3f} | {ch} |")
        out["|".join(map(str, k))] = {"best": best, "best_error": float(e.mean(1).min()),
                                      "auto": float(au.mean()), "ratio": float(ratio),
                                      "lo": float(lo), "hi": float(hi), "lo_fw": lo_fw,
                                      "chosen": dict(chosen[k]), "runs": int(n)}
    print(f"\n{len(keys)} settings, {a.runs} runs each, "
          f"{'held-out auto (each fold rule on its source), ' if folds else ''}"
          f"reference {name}, target {t:g}: "
          f"auto's mean above {t:g} x the reference in {above}; above it at the 5 % "
          f"family-wise level in {above_fw}; auto ran the setting's best reference method in "
          f"every run of {n_one} settings, {above_one} of them with a mean above {t:g} x")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


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


def _calibrate_privtree(a):
    from veil.maps.bench import privtree_fraction_calibration
    from veil.maps.evaluation import fresh_shapes, load_dpbench_2d, real_shapes

    shapes = {**load_dpbench_2d(), **real_shapes(), **fresh_shapes()}
    out = privtree_fraction_calibration(
        shapes, fractions=tuple(float(f) for f in a.fractions),
        shares=tuple(float(h) for h in a.shares),
        scales=tuple(int(float(s)) for s in a.scales), runs=a.runs, seed=a.seed,
        log=lambda m: print(m, file=sys.stderr if m.startswith(tuple(shapes)) else sys.stdout,
                            flush=True))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


def main(argv=None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("accuracy")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--datasets", default="all", choices=("all", "dpbench", "real", "fresh"))
    p.add_argument("--scales", nargs="*", default=["1e4", "1e6", "1e8"])
    p.add_argument("--methods", nargs="*", default=None,
                   help="a subset of the methods (default: all, auto and hb-flat)")
    p.add_argument("--seed", type=int, default=0, help="the experiment's seed (tables: 0)")
    p.add_argument("--side", type=int, default=256, help="grid side of the maps (protocol: 256)")
    p.add_argument("--auto-rule", default=None,
                   help="auto's thresholds as JSON (default: the shipped RULE); a rule without "
                        "dawa_occupancy is auto before its DAWA-2D branch")
    p.add_argument("--json", default=None)
    p = sub.add_parser("table")
    p.add_argument("files", nargs="+", help="accuracy --json outputs to merge")
    p = sub.add_parser("fit")
    p.add_argument("--runs", type=int, default=6)
    p.add_argument("--scales", nargs="*",
                   default=["1e4", "3.16e4", "1e5", "3.16e5", "1e6", "3.16e6", "1e7", "1e8"])
    p.add_argument("--quadrants", action="store_true",
                   help="also train on the 128 x 128 quarters of the DPBench maps")
    p.add_argument("--json", default=None, help="write the per-run measurements here")
    p.add_argument("--from-json", nargs="+", default=None,
                   help="refit from measurements written before (several files: merged)")
    p.add_argument("--maps", default="dpbench", choices=("dpbench", "points", "all"),
                   help="training maps: the DPBench maps (folds: each map), the six maps "
                        "built from the shared point files, or both (folds: each source)")
    p.add_argument("--seed", type=int, default=11,
                   help="the experiment's seed for the training runs (shipped fit: 11 for the "
                        "DPBench maps, 12 for the point-file maps)")
    p.add_argument("--privtree-occupancy", action="store_true",
                   help="fit the high-signal PrivTree branch (privtree_occupancy)")
    p.add_argument("--json-rules", default=None,
                   help="write the rule fitted on all maps and each fold's rule here")
    p = sub.add_parser("autoeval")
    p.add_argument("--rules", required=True,
                   help="fit --json-rules output: the rule fitted on all maps (must be the "
                        "shipped RULE) and each fold's rule")
    p.add_argument("--previous-rule", default=None, help="another rule as JSON, side by side")
    p.add_argument("--side", type=int, default=256,
                   help="grid side of the maps (the rule was fitted at 256)")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    p = sub.add_parser("autocheck")
    p.add_argument("--runs", type=int, default=40)
    p.add_argument("--seed", type=int, default=21, help="the experiment's seed")
    p.add_argument("--resamples", type=int, default=20000, help="bootstrap resamples")
    p.add_argument("--reference", nargs="+", default=["ug", "ag"],
                   help="auto is compared with the best of these per setting (default UG, AG)")
    p.add_argument("--rules", default=None,
                   help="fit --json-rules output: run auto held out, each map with the rule of "
                        "the fold that left its source out (default: the shipped RULE)")
    p.add_argument("--target", type=float, default=1.0,
                   help="the ratio auto must not exceed (1.0 for UG/AG, 1.15 for the best)")
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
    p = sub.add_parser("calibrate-privtree")
    p.add_argument("--fractions", nargs="*", default=["0.2", "0.25", "0.3", "0.35", "0.4"])
    p.add_argument("--shares", nargs="*", default=["0.3", "0.5", "0.7"],
                   help="internal_share values (0: the leaves alone, the paper's measurement)")
    p.add_argument("--scales", nargs="*", default=["1e4", "1e5", "1e6", "1e7", "1e8"])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--seed", type=int, default=21, help="the experiment's seed (shipped: 21)")
    p.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    {"calibrate-privtree": _calibrate_privtree, "fit": _fit, "accuracy": _accuracy, "table": _table, "scale": _scale,
     "autoeval": _autoeval, "autocheck": _autocheck}[a.cmd](a)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
