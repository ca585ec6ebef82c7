"""Speed and accuracy benchmarks (used by ``benchmarks/histograms.py`` and ``veil bench histograms``).

Everything runs in one process on the same inputs: the compiled V-optimal
kernel against the straightforward numpy implementation of the same
recurrence, StructureFirst at the published size (n = 4096, k = 410),
NoiseFirst over every k, and the DPBench accuracy table.
"""

from __future__ import annotations

import math
import os
import resource
import time
import tracemalloc

import numpy as np

from .._bootstrap import ratio_bootstrap
from ..random import make_rng, spawn
from .api import METHODS
from .partition import HAVE_NUMBA, voptimal, voptimal_reference
from .workload import resample_to_scale

__all__ = ["time_median", "speed_benchmark", "accuracy_benchmark", "hdmm_benchmark",
           "hdmm_start_benchmark",
           "plot_error_vs_scale", "machine_note"]


def machine_note() -> str:
    """One line about the machine's load (the shared machines are noisy)."""
    try:
        la = os.getloadavg()
        load = f"load average {la[0]:.1f}/{la[1]:.1f}/{la[2]:.1f}"
    except OSError:  # pragma: no cover
        load = "load average unknown"
    return f"{os.cpu_count()} cores, {load} (shared, loaded machine: compare ratios)"


def time_median(fn, repeats: int = 3) -> tuple[float, object]:
    """Median wall time of ``repeats`` calls and the last result."""
    ts, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), out


def _peak_mb(fn) -> tuple[float, object]:
    tracemalloc.start()
    try:
        out = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20, out


def speed_benchmark(*, shape: np.ndarray, repeats: int = 3, reference_4096: bool = True,
                    seed: int = 0, log=print) -> list[dict]:
    """Time the kernels and mechanisms; returns rows (also printed through ``log``).

    ``shape`` is a 4096-bin histogram whose shape the inputs are re-sampled
    from (scale 10^5). The straightforward numpy reference at n = 4096 runs
    once (it takes seconds); everything else is the median of ``repeats``.
    """
    from .api import publish

    g = make_rng(seed=seed)  # experiments only
    x4096 = resample_to_scale(shape, 10**5, rng=g)
    x1024 = x4096.reshape(1024, 4).sum(axis=1)
    rows: list[dict] = []

    def row(**kw):
        rows.append(kw)
        log("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                      for k, v in kw.items()))

    log(f"# histograms speed benchmark; numba={'yes' if HAVE_NUMBA else 'no'}; {machine_note()}")
    voptimal(x1024[:64], 4)  # compile outside the timings
    voptimal(x1024[:64], 4, engine="numpy")
    for n, x, k in ((1024, x1024, 50), (4096, x4096, 50)):
        t_fast, (_, c_fast) = time_median(lambda: voptimal(x, k), repeats)
        if n == 4096 and not reference_4096:  # quick mode: the numpy kernels take seconds
            row(kernel="voptimal", n=n, k=k, fast_s=t_fast)
            continue
        t_vec, (_, c_vec) = time_median(lambda: voptimal(x, k, engine="numpy"),
                                        1 if n == 4096 else repeats)
        t_ref, (_, c_ref) = time_median(lambda: voptimal_reference(x, k),
                                        1 if n == 4096 else repeats)
        assert abs(c_fast - c_ref) <= 1e-6 * max(1.0, c_ref), (c_fast, c_ref)
        row(kernel="voptimal", n=n, k=k, fast_s=t_fast, numpy_vectorized_s=t_vec,
            numpy_reference_s=t_ref, speedup_vs_reference=t_ref / t_fast,
            same_cost=bool(abs(c_fast - c_vec) <= 1e-6 * max(1.0, c_ref)))
    # adversarial inputs for the pruning (smooth ramp, random walk), same recurrence
    for name, x in (("ramp", np.arange(4096.0)),
                    ("random-walk", np.cumsum(g.normal(0, 10, 4096)))):
        t_fast, _ = time_median(lambda: voptimal(x, 410), repeats)
        row(kernel="voptimal", input=name, n=4096, k=410, fast_s=t_fast)
    # StructureFirst at the published setting, both variants
    for variant in ("boost", "mean"):
        t, _ = time_median(lambda: publish(x4096, epsilon=1.0, method="structurefirst", k=410,
                                           count_bound=1e5, variant=variant, rng=g), repeats)
        row(mechanism="structurefirst", variant=variant, n=4096, k=410, seconds=t,
            target_s=5.0)
    # NoiseFirst over every k (exact pruning only)
    for n, x in ((1024, x1024), (4096, x4096)):
        for eps in (0.1, 1.0):
            t, rel = time_median(lambda: publish(x, epsilon=eps, method="noisefirst", rng=g),
                                 repeats if n == 1024 else 1)
            row(mechanism="noisefirst", n=n, epsilon=eps, seconds=t,
                k_chosen=rel.parameters["k"], target_s=5.0 if n == 1024 else float("nan"))
    # every method at n = 4096 (issue 19: each under 1 s); HDMM cold = strategy optimization
    from .hdmm import clear_strategy_cache

    for m in METHODS:
        if m in ("auto", "noisefirst", "structurefirst"):
            continue  # noisefirst/structurefirst timed above; auto is the method it picks
        extra = {"count_bound": 1e5, "k": 410} if "structure" in m else {}
        if m == "hdmm":
            clear_strategy_cache()
            t0 = time.perf_counter()
            publish(x4096, epsilon=1.0, method=m, rng=g)
            row(mechanism=m, n=4096, phase="cold (optimize the strategy once)",
                seconds=time.perf_counter() - t0, target_s=1.0)
        t, _ = time_median(lambda: publish(x4096, epsilon=1.0, method=m, rng=g, **extra),
                           repeats)
        row(mechanism=m, n=4096, phase="warm" if m == "hdmm" else "", seconds=t, target_s=1.0)
    # peak memory of the heaviest calls (tracemalloc sees numpy buffers)
    for label, fn in (("noisefirst n=4096 every k",
                       lambda: publish(x4096, epsilon=1.0, method="noisefirst", rng=g)),
                      ("structurefirst n=4096 k=410",
                       lambda: publish(x4096, epsilon=1.0, method="structurefirst", k=410,
                                       count_bound=1e5, rng=g))):
        mb, _ = _peak_mb(fn)
        row(memory=label, peak_traced_mb=mb)
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    row(memory="process max RSS", peak_mb=maxrss, limit_mb=1024.0)
    return rows


def accuracy_benchmark(*, trials: int = 10, epsilons=(0.01, 0.1, 1.0, 10.0),
                       scales=(10**3, 10**5, 10**7), datasets=None, methods=None, n=None,
                       workloads=("prefix", "random"), seed: int = 0, reference=None,
                       log=print):
    """DPBench accuracy on the 1-D datasets; returns (rows, markdown tables per workload).

    ``n`` coarsens the 4096-bin datasets (DPBench's domain sizes); ``reference``
    maps ``(scale, eps)`` to published figures printed beside veil's.
    """
    from .evaluation import evaluate, format_table, load_dpbench

    shapes = load_dpbench(datasets, n=n)
    log(f"# histograms accuracy: {len(shapes)} datasets at n = {next(iter(shapes.values())).size}"
        f", scales {list(scales)}, eps {list(epsilons)}, {trials} trial(s) each; "
        f"{machine_note()}")
    t0 = time.perf_counter()
    rows = evaluate(shapes, methods=methods, epsilons=epsilons, scales=scales,
                    workloads=workloads, trials=trials, rng=make_rng(seed=seed),
                    progress=lambda m: log(f"  {m}"))
    log(f"# accuracy evaluation took {time.perf_counter() - t0:.0f} s")
    tables = {w: format_table(rows, workload=w, reference=(reference or {}).get(w))
              for w in workloads}
    for w, tab in tables.items():
        log(f"\n## scaled error, {w} workload (geometric mean over datasets)\n{tab}")
    return rows, tables


def hdmm_benchmark(*, ns=(256, 1024), runs: int = 200, epsilon: float = 1.0, seed: int = 0,
                   log=print) -> list[dict]:
    """HDMM's exact expected error beside HB's and Identity's, and measured against it.

    For each workload (prefix, all ranges, 2000 random ranges) and domain size:
    the closed-form expected RMSE per query of HDMM, HB (Qardaji's branching,
    eps/L per level, least squares) and Identity, and HDMM's RMSE measured over
    ``runs`` releases (same histogram) with its ratio to the closed form.
    """
    from .hdmm import linear_strategy_error, optimize_strategy
    from .tree import qardaji_branching, tree_strategy_matrix
    from .workload import RangeWorkload, random_range_workload

    g = make_rng(seed=seed)  # experiments only
    out = []
    for n in ns:
        x = g.poisson(50, n)
        for label, spec in (("prefix", "prefix"), ("all-range", "all-range"),
                            ("2000 random ranges", random_range_workload(
                                n, size=2000, rng=np.random.default_rng(n)))):
            w = RangeWorkload.from_spec(spec, n)
            if n > 1024 and w.kind != "prefix":  # dense HB closed form: prefix only above 1024
                continue
            t0 = time.perf_counter()
            s = optimize_strategy(w)
            t_opt = time.perf_counter() - t0
            b = qardaji_branching(n)
            A, L = tree_strategy_matrix(n, b)
            hb = math.sqrt(linear_strategy_error(A, w, noise_variances=2.0 * L * L
                                                 / epsilon ** 2) / w.size)
            ident = math.sqrt(2.0 * float(w.gram_diag().sum()) / epsilon ** 2 / w.size)
            hd = s.expected_rmse(epsilon)
            if w.queries is not None:
                Q = w.queries
                P = np.concatenate(([0.0], np.cumsum(x)))
                truth = P[Q[:, 1]] - P[Q[:, 0]]
                sq = []
                for _ in range(runs):
                    est = s.estimate(s.measure(x, epsilon, g))
                    E = np.concatenate(([0.0], np.cumsum(est)))
                    sq.append(np.mean((E[Q[:, 1]] - E[Q[:, 0]] - truth) ** 2))
                measured = math.sqrt(float(np.mean(sq)))
            else:  # all ranges: the mean squared error over all ranges via the Gram matrix
                sq = []
                for _ in range(runs):
                    e = s.estimate(s.measure(x, epsilon, g)) - x
                    sq.append(float(e @ w.gram_rows(e[None, :])[0]) / w.size)
                measured = math.sqrt(float(np.mean(sq)))
            r = dict(n=n, workload=label, p=s.p, optimize_s=t_opt, hdmm_rmse=hd,
                     hb_rmse=hb, hb_branching=b, identity_rmse=ident, hdmm_over_hb=hd / hb,
                     measured_rmse=measured, measured_over_closed_form=measured / hd,
                     runs=runs)
            out.append(r)
            log("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                          for k, v in r.items()))
    return out


def hdmm_sizes_benchmark(*, log=print, hb_releases: int = 40) -> list[dict]:
    """HDMM between and above the shipped sizes: what ``optimize_strategy`` returns by default.

    Part 1 (built-in workloads, sizes between shipped ones): the default strategy (the next
    shipped strategy restricted to the first ``n`` bins, no optimizer) against a strategy
    optimized at ``n`` (``p = default_p(n)``, warm start), by exact expected RMSE per query
    at eps = 1 and seconds. Part 2 (prefix, 4096 and 8192 bins): HDMM (shipped; optimized
    with ``p = 64`` at 8192) against HB, measured as the prefix RMSE of ``hb_releases``
    releases of an empty histogram (HB's error does not depend on the data), which is what
    ``auto`` runs above 4096 bins instead of optimizing a strategy.
    """
    from .api import publish
    from .hdmm import default_p, optimize_strategy

    log(f"# HDMM at sizes that are not shipped; {machine_note()}")
    out = []
    for kind in ("prefix", "all-range"):
        for n in (100, 300, 700, 1000, 1500, 2100, 3000, 4000):
            t0 = time.perf_counter()
            r = optimize_strategy(kind, n, cache=False)
            t_r = time.perf_counter() - t0
            t0 = time.perf_counter()
            o = optimize_strategy(kind, n, p=default_p(n), cache=False)
            t_o = time.perf_counter() - t0
            row = dict(part="between", workload=kind, n=n, default_source=r.source,
                       default_p=r.p, default_rmse=r.expected_rmse(1.0), default_s=t_r,
                       optimized_p=o.p, optimized_rmse=o.expected_rmse(1.0), optimized_s=t_o,
                       default_over_optimized=r.expected_rmse(1.0) / o.expected_rmse(1.0))
            out.append(row)
            log("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                          for k, v in row.items()))
    g = np.random.default_rng(12)
    for n in (4096, 8192):
        t0 = time.perf_counter()
        s = optimize_strategy("prefix", n, p=None if n <= 4096 else 64, cache=False)
        t_s = time.perf_counter() - t0
        x = np.zeros(n, dtype=np.int64)
        sq = [float(np.mean(np.cumsum(publish(x, epsilon=1.0, method="hb", rng=g).value) ** 2))
              for _ in range(hb_releases)]
        hb = math.sqrt(float(np.mean(sq)))
        hb_se = float(np.std(sq, ddof=1)) / math.sqrt(len(sq)) / (2 * hb)
        row = dict(part="above", workload="prefix", n=n, hdmm_source=s.source, hdmm_p=s.p,
                   hdmm_s=t_s, hdmm_rmse=s.expected_rmse(1.0), hb_measured_rmse=hb,
                   hb_rmse_se=hb_se, hb_over_hdmm=hb / s.expected_rmse(1.0))
        out.append(row)
        log("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                      for k, v in row.items()))
    return out


def hdmm_start_benchmark(*, log=print) -> list[dict]:
    """HDMM's optimizer from the paper's random start against veil's warm start.

    For sizes and range sets without a shipped strategy: the objective, L-BFGS-B steps and
    seconds of ``optimize_strategy(..., start='random')`` and of the default
    ``start='auto'`` (the nearest shipped strategy, resampled, plus jitter), run one after
    the other in this process (one BLAS thread each, as the optimizer sets it).
    """
    from .hdmm import default_p, optimize_strategy
    from .workload import random_range_workload

    cases = [("prefix", 1000, "prefix"), ("prefix", 3000, "prefix"),
             ("all ranges", 1000, "all-range"),
             ("2000 random ranges", 1024,
              random_range_workload(1024, size=2000, rng=np.random.default_rng(5))),
             ("200 random ranges", 300,
              random_range_workload(300, size=200, rng=np.random.default_rng(6))),
             ("40 random ranges", 64,
              random_range_workload(64, size=40, rng=np.random.default_rng(10))),
             ("168 ranges of 8 bins", 512,
              np.array([[i, i + 8] for i in range(0, 504, 3)]))]
    log(f"# HDMM optimizer start: random (the paper) vs warm (shipped, resampled); "
        f"{machine_note()}")
    out = []
    for label, n, spec in cases:
        res = {}
        for start in ("random", "auto"):
            t0 = time.perf_counter()
            # p given: built-in workloads between shipped sizes would otherwise get the
            # restricted shipped strategy (see hdmm_sizes_benchmark), not the warm start
            s = optimize_strategy(spec, n, start=start, cache=False, p=default_p(n))
            res[start] = (s.objective, s.iterations, time.perf_counter() - t0, s.source)
        r = dict(workload=label, n=n, random_objective=res["random"][0],
                 random_steps=res["random"][1], random_s=res["random"][2],
                 warm_over_random=res["auto"][0] / res["random"][0],
                 warm_steps=res["auto"][1], warm_s=res["auto"][2], warm_source=res["auto"][3])
        out.append(r)
        log("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                      for k, v in r.items()))
    return out


def plot_error_vs_scale(rows, path, *, methods=None) -> None:
    """Geometric-mean scaled error against scale, one panel per (workload, epsilon) (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .evaluation import geomean

    wls = sorted({r.workload for r in rows})
    epss = sorted({r.epsilon for r in rows})
    methods = sorted({r.method for r in rows}) if methods is None else list(methods)
    fig, axes = plt.subplots(len(wls), len(epss), figsize=(3.4 * len(epss), 3.0 * len(wls)),
                             squeeze=False)
    colors = plt.cm.tab20(np.linspace(0, 1, max(len(methods), 2)))  # one colour per method
    for a, w in enumerate(wls):
        for b, e in enumerate(epss):
            ax = axes[a, b]
            for ci, m in enumerate(methods):
                sub = [r for r in rows if r.workload == w and r.epsilon == e and r.method == m]
                scales = sorted({r.scale for r in sub})
                if not scales:
                    continue
                # floored at one record per query: near-exact releases (discrete noise at
                # large epsilon) would otherwise dominate a log axis with 1e-100s
                ys = [geomean(max(r.error, 1.0 / sc) for r in sub if r.scale == sc)
                      for sc in scales]
                ax.loglog(scales, ys, marker="o", ms=3, label=m, color=colors[ci],
                          ls="--" if m == "auto" else "-")
            ax.set_title(f"{w}, eps = {e:g}", fontsize=9)
            ax.set_xlabel("scale (records)", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(True, alpha=0.3)
        axes[a, 0].set_ylabel("scaled error (geo. mean)", fontsize=8)
    axes[0, -1].legend(fontsize=6, loc="lower left")
    fig.suptitle("DP histograms: scaled range-query error against scale (DPBench protocol; "
                 "errors floored at one record per query)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_accuracy(rows, path, *, scale: int = 10**5, workload: str = "prefix") -> None:
    """Error against epsilon per dataset (one panel each) and method, at one scale (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sub = [r for r in rows if r.scale == scale and r.workload == workload]
    datasets = sorted({r.dataset for r in sub})
    methods = sorted({r.method for r in sub})
    cols = 6
    nrows = max(1, -(-len(datasets) // cols))
    fig, axes = plt.subplots(nrows, cols, figsize=(3.0 * cols, 2.6 * nrows), squeeze=False)
    for ax, d in zip(axes.ravel(), datasets):
        for m in methods:
            pts = sorted((r.epsilon, r.error) for r in sub if r.dataset == d and r.method == m)
            if pts:
                ax.loglog(*zip(*pts), marker="o", ms=3, label=m)
        ax.set_title(d[:28], fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[len(datasets):]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=6)
    fig.suptitle(f"scaled {workload} error vs epsilon, scale {scale:.0e}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def auto_report(rows, *, folds: int = 3, candidates=None, target: float | None = None,
                log=print) -> dict:
    """Fit the ``auto`` rule on all rows and cross-validate it by dataset; log a summary and
    which held-out misses are beyond trial noise (:func:`miss_significance`, ``misses``).

    ``candidates`` defaults to every method evaluated in the rows (except ``auto``);
    ``target`` is :func:`veil.histograms.autofit.fit_rule`'s (None: the mean log ratio).
    """
    from .autofit import cross_validate, evaluate_rule, fit_rule

    if candidates is None:
        present = {r.method for r in rows}
        candidates = tuple(m for m in METHODS if m in present and m != "auto")
    rule = fit_rule(rows, candidates=candidates, target=target)
    rules, held = cross_validate(rows, folds=folds, candidates=candidates, target=target)
    log(f"# auto candidates: {', '.join(candidates)}"
        + ("" if target is None else f"; fitted by the share of cells above {target:g}x the best"))
    full = evaluate_rule(rows, rule)
    log(f"# auto rule fitted on all datasets: {rule}")
    for r in rules:
        log(f"#   fold {r['fold']} (held out: {', '.join(r['held_out'])}): {r['rule']}")
    summary = {}
    for cls in sorted({h["class"] for h in held}):
        sub = [h for h in held if h["class"] == cls]
        ob = np.array([h["over_best"] for h in sub])
        oi = np.array([h["over_identity"] for h in sub])
        summary[cls] = {"cells": int(ob.size), "median_over_best": float(np.median(ob)),
                        "max_over_best": float(ob.max()),
                        "share_within_1.15": float(np.mean(ob <= 1.15)),
                        "max_over_identity": float(oi.max()),
                        "share_not_worse_than_identity": float(np.mean(oi <= 1.0))}
        log(f"# held out, {cls}: " + ", ".join(f"{k} {v:.3g}" for k, v in summary[cls].items()))
    misses = miss_significance(rows, held, candidates=candidates,
                               target=1.15 if target is None else target, log=log)

    def js(rl):  # JSON-friendly rule
        return {k: (v if isinstance(v, float) else [[u, m] for u, m in v]) for k, v in rl.items()}

    return {"rule": js(rule), "folds": [{**r, "rule": js(r["rule"])} for r in rules],
            "held_out": held, "in_sample": full, "summary": summary, "misses": misses}


def miss_significance(rows, held, *, candidates, target: float = 1.15, resamples: int = 100000,
                      alpha: float = 0.05, seed: int = 41, log=print) -> list[dict]:
    """Which held-out cells above ``target`` times the best are above it beyond trial noise.

    A cell's ratio is a ratio of means over a few trials, so some cells are above the target by
    chance. The trials of a cell share their re-sampled histogram across methods (one draw per
    trial, whatever the methods run), so a paired bootstrap over the trials gives the ratio's
    sampling distribution (``scipy.stats.bootstrap``, paired; cells with fewer than 2 trials, or
    trials that differ between methods, are reported untested): ``auto``'s method's mean over the smallest candidate mean, both
    floored at one record per query (the fit's ``_ratio``). A cell is a *firm* miss when the
    bootstrap's ``alpha / cells`` quantile (one-sided, Bonferroni over every held-out cell) is
    above ``target``. The bootstrap re-selects the best candidate in each resample, as the
    table does. Seeded: an analysis of benchmark rows, not a release.

    Examples
    --------
    >>> from veil.histograms.evaluation import EvalRow
    >>> rows = [EvalRow("d", m, 0.1, 1000, "prefix", n=16, errors=e) for m, e in
    ...         (("hb", [0.2, 0.21, 0.19, 0.2]), ("dawa", [0.1, 0.11, 0.1, 0.09]))]
    >>> held = [{"dataset": "d", "class": "prefix", "epsilon": 0.1, "scale": 1000,
    ...          "chosen": "hb", "best": "dawa", "over_best": 2.0}]
    >>> miss_significance(rows, held, candidates=("hb", "dawa"), log=lambda m: None
    ...                   )[0]["firm"]
    True
    """
    from .autofit import CLASS_OF_WORKLOAD

    errs = {}
    for r in rows:
        if r.workload in CLASS_OF_WORKLOAD:
            errs[(r.dataset, CLASS_OF_WORKLOAD[r.workload], r.epsilon, r.scale,
                  r.method)] = np.asarray(r.errors, dtype=np.float64)
    g = make_rng(seed=seed)
    q = alpha / max(len(held), 1)
    out = []
    for h in held:
        if not h["over_best"] > target:
            continue
        k = (h["dataset"], h["class"], h["epsilon"], h["scale"])
        cand = [m for m in candidates if (*k, m) in errs]
        mine = errs[(*k, h["chosen"])]
        n = mine.size
        base = {k2: h[k2] for k2 in ("dataset", "class", "epsilon", "scale", "chosen", "best",
                                     "over_best")}
        if n < 2 or any(errs[(*k, m)].size != n for m in cand):  # cannot be paired
            out.append({**base, "lower_bound": float("nan"), "firm": False, "tested": False})
            continue
        _, dist = ratio_bootstrap(mine, [errs[(*k, m)] for m in cand], resamples=resamples,
                                  rng=g, floor=1.0 / h["scale"])
        lo = float(np.quantile(dist, q))
        out.append({**base, "lower_bound": lo, "firm": bool(lo > target), "tested": True})
    firm = [o for o in out if o["firm"]]
    untested = sum(not o["tested"] for o in out)
    pairs: dict = {}
    for o in firm:
        pairs[(o["chosen"], o["best"])] = pairs.get((o["chosen"], o["best"]), 0) + 1
    log(f"# held-out cells above {target:g}x the best: {len(out)} of {len(held)}; above it "
        f"beyond trial noise (paired bootstrap over the trials, one-sided, {alpha:g} "
        f"family-wise over the {len(held)} cells): {len(firm)}"
        + ("" if not firm else " (" + ", ".join(f"{c} chosen where {b} is best: {v}"
                                                for (c, b), v in sorted(pairs.items())) + ")")
        + ("" if not untested else f"; {untested} not tested (fewer than 2 trials, or "
           "trials that differ between methods)"))
    return out


def run(*, speed=False, hdmm=False, accuracy=False, fit_auto=None, fit_target=None,
        calibrate_dawa=False,
        calibrate_coarse=False, calibrate_privtree=False,
        hdmm_start=False, hdmm_sizes=False, trials=10, repeats=3, penalties=None, fit_dawa_penalty_files=None,
        dawa_schedule_files=None, dawa_maps=False, dawa2d_penalties=None,
        n=None, datasets=None, methods=None, epsilons=None, scales=None, output=None,
        quick=False, seed=0, log=print) -> dict:
    """Driver behind ``benchmarks/histograms.py`` and ``veil bench histograms``."""
    import json
    from pathlib import Path

    from .evaluation import DPBENCH_CLASSIC, load_dpbench

    if hdmm_start:
        return {"hdmm_start": hdmm_start_benchmark(log=log)}
    if hdmm_sizes:
        return {"hdmm_sizes": hdmm_sizes_benchmark(log=log)}
    for wanted, calibrate, key, default_seed in (
            (calibrate_coarse, coarse_bucket_calibration, "coarse_buckets", 13),
            (calibrate_privtree, privtree_fraction_calibration, "privtree_fractions", 15)):
        if wanted:
            res = calibrate(n=n or 1024, trials=trials, datasets=datasets,
                            seed=default_seed if seed == 0 else seed, log=log)
            if output:
                Path(output).write_text(json.dumps(res, default=float))
            return {key: res}
    if not (speed or hdmm or accuracy or fit_auto or calibrate_dawa or fit_dawa_penalty_files
            or dawa_schedule_files or dawa_maps or dawa2d_penalties is not None):
        speed = hdmm = accuracy = True
    if fit_dawa_penalty_files:
        return {"dawa_schedule": fit_dawa_penalty(fit_dawa_penalty_files, log=log)}
    if dawa_schedule_files:
        return {"dawa_schedule_check": dawa_schedule_check(dawa_schedule_files, log=log)}
    if dawa_maps:
        return {"dawa_maps": dawa_penalty_on_maps(log=log)}
    if dawa2d_penalties is not None:
        import json
        from pathlib import Path

        if dawa2d_penalties.get("from"):
            rows = [r for f in dawa2d_penalties["from"] for r in json.loads(Path(f).read_text())]
        else:
            rows = dawa2d_penalty_calibration(part=dawa2d_penalties.get("part", 0), log=log)
            if output:
                Path(output).write_text(json.dumps(rows))
        return {"dawa2d_penalties": dawa2d_penalty_table(rows, log=log)}
    if calibrate_dawa:
        kw = {} if penalties is None else {"penalties": tuple(penalties)}
        if epsilons:
            kw["epsilons"] = tuple(epsilons)
        if scales:
            kw["scales"] = tuple(int(v) for v in scales)
        res = dawa_penalty_calibration(n=n or 1024, trials=3, datasets=datasets,
                                       seed=7 if seed == 0 else seed, log=log, **kw)
        if output:
            Path(output).write_text(json.dumps(res["errors"]))
        return {"dawa_penalty": res}
    if datasets == ["classic"]:
        datasets = list(DPBENCH_CLASSIC)
    out: dict = {}
    if speed:
        shape = load_dpbench(["HEPTH.n4096"])["HEPTH.n4096"]
        out["speed"] = speed_benchmark(shape=shape, repeats=1 if quick else repeats,
                                       reference_4096=not quick, log=log)
    if hdmm:
        out["hdmm"] = hdmm_benchmark(ns=(64,) if quick else (256, 1024, 4096),
                                     runs=50 if quick else 200, log=log)
    rows = None
    if accuracy:
        kw = {}
        if quick:
            datasets = datasets or ["HEPTH.n4096", "INCOME.n4096", "NETTRACE.n4096"]
            kw = dict(epsilons=(0.1, 1.0), scales=(10**3, 10**5))
            trials = 1
            n = n or 256
        if epsilons:
            kw["epsilons"] = tuple(epsilons)
        if scales:
            kw["scales"] = tuple(int(s) for s in scales)
        rows, tables = accuracy_benchmark(trials=trials, datasets=datasets, methods=methods,
                                          n=n, seed=seed, log=log, **kw)
        out["accuracy"] = [r.to_dict() for r in rows]
        out["tables"] = tables
        if output is not None:
            plot_error_vs_scale(rows, Path(output).with_suffix(".png"))
    if fit_auto is not None:
        paths = fit_auto if isinstance(fit_auto, (list, tuple)) else [fit_auto]
        rows = load_rows(paths)
        out["auto"] = auto_report(rows, target=fit_target, log=log)
        from .evaluation import format_table

        if output is not None:
            plot_error_vs_scale(rows, Path(output).with_suffix(".png"))
        for w in sorted({r.workload for r in rows}):
            log(f"\n## scaled error, {w} workload (geometric mean over datasets)\n"
                + format_table(rows, workload=w))
            log(ratio_table(rows, [("optimized-structurefirst / structurefirst",
                                    "optimized-structurefirst", "structurefirst"),
                                   ("hdmm / hb", "hdmm", "hb"), ("dawa / hb", "dawa", "hb"),
                                   ("coarse / dawa", "coarse", "dawa"),
                                   ("privtree / dawa", "privtree", "dawa"),
                                   ("privtree / coarse", "privtree", "coarse"),
                                   ("auto / identity", "auto", "identity"),
                                   ("mwem / identity", "mwem", "identity")], workload=w))
    if output is not None:
        Path(output).write_text(json.dumps(out, indent=1, default=float))
    return out


def ratio_table(rows, pairs, *, workload: str = "prefix") -> str:
    """Markdown rows ``label | geomean over datasets of err(num)/err(den)`` per (scale, eps).

    ``pairs`` is a list of ``(label, numerator method, denominator method)``; the ratio is
    taken per dataset (same inputs) and summarised by the geometric mean and the maximum.
    Errors below one record per query (``1/scale``) count as exact (equal).
    """
    from .evaluation import geomean

    keys = sorted({(r.scale, r.epsilon) for r in rows if r.workload == workload})
    idx = {(r.dataset, r.method, r.scale, r.epsilon): r.error for r in rows
           if r.workload == workload}
    ds = sorted({r.dataset for r in rows})
    head = "| ratio (geo. mean; max over datasets) | " + " | ".join(
        f"{s:.0e} / {e:g}" for s, e in keys) + " |"
    lines = [head, "|---|" + "---|" * len(keys)]
    for label, num, den in pairs:
        cells = []
        for s, e in keys:
            f = 1.0 / s  # errors below one record per query count as exact
            v = [max(idx[(d, num, s, e)], f) / max(idx[(d, den, s, e)], f) for d in ds
                 if (d, num, s, e) in idx and (d, den, s, e) in idx]
            cells.append(f"{geomean(v):.2f}; {max(v):.2f}" if v else "-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def load_rows(paths) -> list:
    """Evaluation rows from one or more ``--json`` files, merged (later files win per cell)."""
    import json
    from pathlib import Path

    from .evaluation import EvalRow

    from ..errors import DataError

    rows: dict = {}
    for p in paths:  # a later file's row replaces an earlier one for the same cell
        try:
            found = json.loads(Path(p).read_text(encoding="utf-8"))["accuracy"]
            parsed = [EvalRow.from_dict(d) for d in found]
        except FileNotFoundError:
            raise DataError("not found", path=str(p)) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot be read ({exc.__class__.__name__}: {exc})",
                            path=str(p)) from None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DataError("is not the JSON of an accuracy run (`veil bench histograms "
                            f"--accuracy -o FILE.json`): {exc.__class__.__name__}: {exc}",
                            path=str(p)) from None
        for r in parsed:
            rows[(r.dataset, r.method, r.epsilon, r.scale, r.workload, r.n)] = r
    return list(rows.values())


def _calibration_inputs(datasets, n: int, seed: int):
    """``(shapes, rng, workloads)`` of the calibrations: the DPBench shapes at ``n`` bins, a
    seeded generator (experiments only) and the prefix and 2000-random-range workloads."""
    from .evaluation import load_dpbench
    from .workload import prefix_workload, random_range_workload

    wl = {"prefix": prefix_workload(n),
          "random": random_range_workload(n, size=2000, rng=np.random.default_rng(n))}
    return load_dpbench(datasets, n=n), make_rng(seed=seed), wl


def dawa_penalty_calibration(*, penalties=(0.0, 1.0, 2.0, 2.5, 3.0, 4.0), n: int = 1024,
                             trials: int = 3, epsilons=(0.01, 0.1, 1.0, 10.0),
                             scales=(10**3, 10**5, 10**7), datasets=None, seed: int = 7,
                             log=print) -> dict:
    """DAWA's error for several selection penalties (units of the partition noise scale).

    For each workload and (scale, eps): the geometric mean over datasets of DAWA's
    scaled error with each penalty, divided by the best penalty's; the summary row is
    the geometric mean of those ratios over the settings (what
    :data:`veil.histograms.dawa.SELECTION_PENALTY` was chosen by).
    """
    from .dawa import PARTITION_NOISE, dawa
    from .evaluation import geomean
    from .workload import scaled_error

    shapes, g, wl = _calibration_inputs(datasets, n, seed)
    err: dict = {}
    for name, shape in shapes.items():
        for scale in scales:
            for _ in range(trials):
                x = resample_to_scale(shape, int(scale), rng=g)
                for eps in epsilons:
                    e1, e2 = 0.25 * eps, 0.75 * eps
                    for k in penalties:
                        for w, q in wl.items():
                            r = dawa(x, epsilon=eps, workload="prefix" if w == "prefix" else q,
                                     bucket_cost=1.0 / e2 + k * PARTITION_NOISE / e1, rng=g)
                            err.setdefault((w, scale, eps, k, name), []).append(
                                scaled_error(q, x, r.value))
        log(f"  {name}")
    tables = {}
    for w in wl:
        head = "| eps x scale (scale / eps) | " + " | ".join(f"{k:g}" for k in penalties) + " |"
        lines = [head, "|---|" + "---|" * len(penalties)]
        logs = {k: [] for k in penalties}
        for scale, eps in sorted({(s, e) for s in scales for e in epsilons},
                                 key=lambda t: (t[0] * t[1], t[0])):
            geo = {k: geomean(np.mean(err[(w, scale, eps, k, d)]) for d in shapes)
                   for k in penalties}
            best = min(geo.values())
            for k in penalties:
                logs[k].append(math.log(geo[k] / best))
            lines.append(f"| {eps * scale:g} ({scale:.0e} / {eps:g}) | " + " | ".join(
                f"{geo[k] / best:.2f}" for k in penalties) + " |")
        lines.append("| geometric mean over settings | " + " | ".join(
            f"{math.exp(np.mean(logs[k])):.2f}" for k in penalties) + " |")
        tables[w] = "\n".join(lines)
        log(f"\n## DAWA: error / best penalty's, {w} workload ({len(shapes)} datasets, n = {n}, "
            f"{trials} trials)\n" + tables[w])
    rows = [{"workload": k[0], "scale": k[1], "epsilon": k[2], "penalty": k[3], "dataset": k[4],
             "n": n, "errors": v} for k, v in err.items()]
    return {"tables": tables, "errors": rows}


def _parameter_sweep(release, values, *, n: int, trials: int, settings, datasets, seed: int,
                     log) -> tuple[dict, dict, dict]:
    """Run ``release(x, eps, value, rng, workload)`` for every value of one parameter on the
    same re-sampled histograms (per dataset, (scale, eps) setting and trial) and both
    workloads; returns ``(shapes, workloads, {(workload, scale, eps, value, dataset): [scaled
    errors]})``. The calibrations of coarse's bucket rule and privtree's tree fraction."""
    from .workload import scaled_error

    shapes, g, wl = _calibration_inputs(datasets, n, seed)
    err: dict = {}
    for name, shape in shapes.items():
        for scale, eps in settings:
            for _ in range(trials):
                x = resample_to_scale(shape, int(scale), rng=g)
                for w, q in wl.items():
                    for v in values:
                        r = release(x, eps, v, g, "prefix" if w == "prefix" else q)
                        err.setdefault((w, scale, eps, v, name), []).append(
                            scaled_error(q, x, r.value))
        log(f"  {name}")
    return shapes, wl, err


#: the (scale, epsilon) settings of the coarse bucket calibration: eps * N from 10 to 10^5
COARSE_SETTINGS = ((10**3, 0.01), (10**3, 0.0316), (10**3, 0.1), (10**3, 0.316), (10**3, 1.0),
                   (10**5, 0.01), (10**4, 0.316), (10**5, 0.1), (10**7, 0.01))


def coarse_bucket_calibration(*, buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
                              n: int = 1024, trials: int = 3, settings=COARSE_SETTINGS,
                              datasets=None, seed: int = 13, log=print) -> dict:
    """coarse's error for every number of buckets (a power of two), per setting and workload;
    the least-squares line of log2(best count) against log10(eps N) is the bucket rule
    (:data:`veil.histograms.coarse.BUCKET_RULE`).

    For each workload and (scale, eps): the geometric mean over datasets of the scaled error
    with each bucket count, divided by the best count's; the best count per row; then the
    fitted line through the best counts of every row below the one where ``n`` buckets
    (no coarsening) wins.
    """
    from .coarse import coarse
    from .evaluation import geomean

    buckets = tuple(b for b in buckets if b <= n)
    shapes, wl, err = _parameter_sweep(
        lambda x, eps, B, g, workload: coarse(x, epsilon=eps, buckets=B, rng=g,
                                              workload=workload),
        buckets, n=n, trials=trials, settings=settings, datasets=datasets, seed=seed, log=log)
    tables, points = {}, []
    for w in wl:
        head = ("| eps x scale (scale / eps) | " + " | ".join(str(b) for b in buckets)
                + " | best |")
        lines = [head, "|---|" + "---|" * (len(buckets) + 1)]
        for scale, eps in sorted(settings, key=lambda t: (t[0] * t[1], t[0])):
            geo = {b: geomean(np.mean(err[(w, scale, eps, b, d)]) for d in shapes)
                   for b in buckets}
            best = min(geo, key=geo.get)
            if best < n:
                points.append((math.log10(eps * scale), math.log2(best)))
            lines.append(f"| {eps * scale:g} ({scale:.0e} / {eps:g}) | " + " | ".join(
                f"{geo[b] / geo[best]:.2f}" for b in buckets) + f" | {best} |")
        tables[w] = "\n".join(lines)
        log(f"\n## coarse: error / best bucket count's, {w} workload ({len(shapes)} datasets, "
            f"n = {n}, {trials} trials)\n" + tables[w])
    xs, ys = np.array(points).T
    slope, intercept = np.polyfit(xs, ys, 1)
    log(f"\n# bucket rule: log2 B = {intercept:.4f} + {slope:.4f} * log10(eps N) "
        f"(least squares over {len(points)} best counts below n)")
    rows = [{"workload": k[0], "scale": k[1], "epsilon": k[2], "buckets": k[3], "dataset": k[4],
             "n": n, "errors": v} for k, v in err.items()]
    return {"tables": tables, "rule": (float(intercept), float(slope)), "errors": rows}


#: the (scale, epsilon) settings of the privtree tree-fraction calibration: eps * N 10 to 10^5
PRIVTREE_SETTINGS = ((10**3, 0.01), (10**3, 0.1), (10**3, 1.0), (10**5, 0.01), (10**5, 0.1),
                     (10**5, 1.0), (10**7, 0.01))


def privtree_fraction_calibration(*, fractions=(0.05, 0.1, 0.15, 0.2, 0.3), n: int = 1024,
                                  trials: int = 3, settings=PRIVTREE_SETTINGS, datasets=None,
                                  seed: int = 15, log=print) -> dict:
    """privtree's error for each ``tree_fraction``, per setting and workload (how the
    default 0.15 was chosen; :mod:`veil.histograms.privtree`).

    For each workload and (scale, eps): the geometric mean over datasets of the scaled error
    with each fraction, divided by the best fraction's; the best fraction per row; a last row
    with the geometric mean of each column over the settings.
    """
    from .evaluation import geomean
    from .privtree import privtree

    shapes, wl, err = _parameter_sweep(
        lambda x, eps, f, g, workload: privtree(x, epsilon=eps, tree_fraction=f, rng=g,
                                                workload=workload),
        fractions, n=n, trials=trials, settings=settings, datasets=datasets, seed=seed, log=log)
    tables, overall = {}, {}
    for w in wl:
        lines = ["| eps x scale (scale / eps) | " + " | ".join(f"{f:g}" for f in fractions)
                 + " | best |", "|---|" + "---|" * (len(fractions) + 1)]
        cols = {f: [] for f in fractions}
        for scale, eps in sorted(settings, key=lambda t: (t[0] * t[1], t[0])):
            geo = {f: geomean(np.mean(err[(w, scale, eps, f, d)]) for d in shapes)
                   for f in fractions}
            best = min(geo, key=geo.get)
            for f in fractions:
                cols[f].append(geo[f] / geo[best])
            lines.append(f"| {eps * scale:g} ({scale:.0e} / {eps:g}) | " + " | ".join(
                f"{geo[f] / geo[best]:.2f}" for f in fractions) + f" | {best:g} |")
        overall[w] = {f: geomean(v) for f, v in cols.items()}
        lines.append("| geometric mean over settings | " + " | ".join(
            f"{overall[w][f]:.2f}" for f in fractions) + " | |")
        tables[w] = "\n".join(lines)
        log(f"\n## privtree: error / best tree fraction's, {w} workload ({len(shapes)} datasets, "
            f"n = {n}, {trials} trials)\n" + tables[w])
    rows = [{"workload": k[0], "scale": k[1], "epsilon": k[2], "tree_fraction": k[3],
             "dataset": k[4], "n": n, "errors": v} for k, v in err.items()]
    return {"tables": tables, "overall": overall, "errors": rows}


def fit_dawa_penalty(files, *, penalties=(2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0), folds: int = 3,
                     seed: int = 0, log=print) -> dict:
    """Fit :data:`veil.histograms.dawa.PENALTY_SCHEDULE` on ``--calibrate-dawa --json`` files.

    Per signal level ``log10(eps * scale / n)`` and penalty, the cost is the mean over the
    datasets, settings and both workloads of ``log(error / least error of any penalty)``
    (errors floored at one record per query). The schedule is the step function of the
    level that does not increase with the signal and has the least total cost (dynamic
    programming over the levels), steps put halfway between adjacent levels. Held out: the
    same ``folds``-fold split by dataset as ``autofit`` (a fixed public permutation); each
    fold's schedule is scored on its held-out datasets against the constant
    ``SELECTION_PENALTY``.
    """
    import json
    from pathlib import Path

    from .dawa import SELECTION_PENALTY

    pens = tuple(float(p) for p in penalties)
    cells: dict = {}
    for f in files:
        for r in json.loads(Path(f).read_text()):
            if float(r["penalty"]) not in pens:
                continue
            lv = round(math.log10(r["epsilon"] * r["scale"] / r["n"]), 4)
            key = (r["workload"], lv, r["epsilon"], r["scale"], r["dataset"], str(f))
            cells.setdefault(key, {})[float(r["penalty"])] = (float(np.mean(r["errors"])),
                                                               float(r["scale"]))
    cells = {k: c for k, c in cells.items() if len(c) == len(pens)}

    def lr(c, p):
        best = min(max(e, 1.0 / sc) for e, sc in c.values())
        e, sc = c[p]
        return math.log(max(e, 1.0 / sc) / best)

    def fit(keep):
        cost: dict = {}
        for k, c in cells.items():
            if k[4] in keep:
                for p in pens:
                    cost.setdefault(k[1], {}).setdefault(p, []).append(lr(c, p))
        levels = sorted(cost)
        mean = [{p: float(np.mean(cost[lv][p])) for p in pens} for lv in levels]
        best, back = [dict(mean[0])], []
        for i in range(1, len(levels)):
            row, arg = {}, {}
            for p in pens:  # the previous (lower-signal) level's penalty is >= p
                q = min((q for q in pens if q >= p), key=lambda q: best[-1][q])
                row[p], arg[p] = mean[i][p] + best[-1][q], q
            best.append(row)
            back.append(arg)
        p = min(pens, key=lambda p: best[-1][p])
        seq = [p]
        for arg in reversed(back):
            p = arg[p]
            seq.append(p)
        seq.reverse()
        steps = []
        for i, (lv, p) in enumerate(zip(levels, seq)):
            if i + 1 == len(levels) or seq[i + 1] != p:
                up = math.inf if i + 1 == len(levels) else round((lv + levels[i + 1]) / 2, 4)
                steps.append((up, p))
        return tuple(steps)

    def pick(steps, lv):
        return next(p for up, p in steps if lv < up)

    names = sorted({k[4] for k in cells})
    schedule = fit(set(names))
    log(f"# schedule fitted on all {len(names)} datasets: {schedule}")
    perm = [names[i] for i in np.random.default_rng(seed).permutation(len(names))]
    held: list = []
    for i in range(folds):
        test = set(perm[i::folds])
        st = fit(set(names) - test)
        log(f"#   fold {i} (held out: {', '.join(sorted(test))}): {st}")
        held += [(k, lr(c, pick(st, k[1])),
                  lr(c, SELECTION_PENALTY) if SELECTION_PENALTY in c else math.nan)
                 for k, c in cells.items() if k[4] in test]
    lines = ["| log10(signal) level | cells | schedule: geo. mean ratio to the best penalty | "
             f"constant {SELECTION_PENALTY:g} |", "|---|---|---|---|"]
    for lv in sorted({k[1] for k, _, _ in held}):
        a = [x for k, x, _ in held if k[1] == lv]
        b = [y for k, _, y in held if k[1] == lv]
        lines.append(f"| {lv:.2f} | {len(a)} | {math.exp(np.mean(a)):.2f} | "
                     f"{math.exp(np.mean(b)):.2f} |")
    a = np.array([x for _, x, _ in held])
    b = np.array([y for _, _, y in held])
    lines.append(f"| all | {a.size} | {math.exp(a.mean()):.3f} | {math.exp(b.mean()):.3f} |")
    table = "\n".join(lines)
    log("\n## DAWA selection penalty, held out by dataset (3 folds)\n" + table)
    return {"schedule": schedule, "table": table}


def dawa_schedule_check(files, *, log=print) -> dict:
    """How :data:`~veil.histograms.dawa.PENALTY_SCHEDULE` (fitted at n = 1024) does at other
    sizes, on ``--calibrate-dawa --json`` files run at those sizes.

    For every dataset, setting and workload: the error with the scheduled penalty (the
    calibrated penalty nearest to it), divided by the least error of the calibrated
    penalties; the geometric mean and the worst per file, for the schedule read with the
    per-bin signal ``eps N / n`` (what ``dawa`` does), with the total ``eps N`` (as if n were
    1024), and for the constant ``SELECTION_PENALTY``.
    """
    import json
    from pathlib import Path

    from .dawa import PENALTY_SCHEDULE, SELECTION_PENALTY

    def pick(ls):
        return next(p for u, p in PENALTY_SCHEDULE if ls < u)

    out = {}
    lines = ["| file | n | cells | schedule, eps N / n | schedule, eps N | constant "
             f"{SELECTION_PENALTY:g} |", "|---|---|---|---|---|---|"]
    for f in files:
        cells: dict = {}
        for r in json.loads(Path(f).read_text()):
            key = (r["workload"], r["epsilon"], r["scale"], r["dataset"], r["n"])
            cells.setdefault(key, {})[float(r["penalty"])] = (float(np.mean(r["errors"])),
                                                               float(r["scale"]))
        res: dict = {"per-bin": [], "total": [], "constant": []}
        for (_, e, sc, _, n), c in cells.items():
            best = min(max(v, 1.0 / sc) for v, _ in c.values())

            def lr(p, c=c, sc=sc, best=best):
                p = min(c, key=lambda q: abs(q - p))
                return math.log(max(c[p][0], 1.0 / sc) / best)
            res["per-bin"].append(lr(pick(math.log10(e * sc / n))))
            res["total"].append(lr(pick(math.log10(e * sc / 1024))))
            res["constant"].append(lr(SELECTION_PENALTY))
        ns = sorted({k[4] for k in cells})
        summary = {k: (math.exp(float(np.mean(v))), math.exp(max(v))) for k, v in res.items()}
        out[str(f)] = summary
        lines.append(f"| {Path(f).name} | {', '.join(map(str, ns))} | {len(cells)} | " + " | ".join(
            f"{summary[k][0]:.2f} (worst {summary[k][1]:.1f})"
            for k in ("per-bin", "total", "constant")) + " |")
    log("\n## DAWA's penalty schedule at other sizes: geometric mean ratio to the best "
        "calibrated penalty\n" + "\n".join(lines))
    return out


def dawa_penalty_on_maps(*, trials: int = 4, seed: int = 3, log=print) -> list:
    """DAWA-2D's inner 1-D DAWA (Hilbert order, n = 65536) with the penalty the schedule would
    give against the constant, on the two DPBench 2-D maps and three point-file maps (N 10^4
    and 10^6, eps 0.1 and 1, 2000 random rectangles): why the schedule stops at
    ``SCHEDULE_MAX_N``."""
    from ..maps.evaluation import (load_dpbench_2d, random_rectangles, real_shapes,
                                   resample_map)
    from ..maps.evaluation import scaled_error as map_error
    from ..maps.mechanisms import hilbert_cells
    from .dawa import PARTITION_NOISE, PENALTY_SCHEDULE, SELECTION_PENALTY, dawa

    shapes = load_dpbench_2d()
    shapes.update(dict(list(real_shapes().items())[:3]))
    g = make_rng(seed=seed)  # experiments only
    rows = []
    lines = ["| map | N | eps | scheduled penalty | error, scheduled | error, constant | ratio |",
             "|---|---|---|---|---|---|---|"]
    for name, sh in shapes.items():
        q = random_rectangles(*sh.shape, size=2000, rng=np.random.default_rng(1))
        idx = hilbert_cells(*sh.shape)
        for N in (10**4, 10**6):
            for eps in (0.1, 1.0):
                s = eps * N / idx.size
                pen = next(p for u, p in PENALTY_SCHEDULE if math.log10(s) < u)
                lam = 1.0 / (0.75 * eps) + pen * PARTITION_NOISE / (0.25 * eps)
                e_s, e_c = [], []
                for _ in range(trials):
                    x = resample_map(sh, N, rng=g)
                    flat = x.ravel()[idx]
                    for cost, acc in ((lam, e_s), (None, e_c)):
                        r = dawa(flat, epsilon=eps, bucket_cost=cost, rng=g)
                        est = np.empty(idx.size)
                        est[idx] = r.value
                        acc.append(map_error(q, x, est.reshape(sh.shape), scale=N))
                a, b = float(np.mean(e_s)), float(np.mean(e_c))
                rows.append({"map": name, "N": N, "epsilon": eps, "penalty": pen,
                             "scheduled": a, "constant": b})
                lines.append(f"| {name} | {N:.0e} | {eps:g} | {pen:g} | {a:.3g} | {b:.3g} | "
                             f"{a / b:.2f} |")
    log(f"\n## DAWA on Hilbert-ordered maps (n = 65536): scheduled penalty vs {SELECTION_PENALTY:g}"
        f", {trials} trials\n" + "\n".join(lines))
    return rows


def dawa2d_penalty_calibration(*, penalties=(1.0, 1.5, 2.0, 2.5, 3.0), trials: int = 3,
                               part: int = 0, parts: int = 2, log=print) -> list:
    """DAWA-2D's inner DAWA (Hilbert order, n = 65536) with several selection penalties on the
    eight maps of the maps protocol (``part`` of ``parts``, maps in name order, seed
    ``20 + part``): N in {10^4, 10^6, 10^8}, eps in {0.1, 1}, 2000 random rectangles. Rows
    ``{map, N, epsilon, penalty, trial, error}`` (whether a 2-D schedule would help DAWA-2D)."""
    from ..maps.evaluation import (fresh_shapes, load_dpbench_2d, random_rectangles,
                                   real_shapes, resample_map)
    from ..maps.evaluation import scaled_error as map_error
    from ..maps.mechanisms import hilbert_cells
    from .dawa import PARTITION_NOISE, dawa

    shapes = {**load_dpbench_2d(), **real_shapes(), **fresh_shapes()}
    g = np.random.default_rng(20 + part)  # experiments only
    rows = []
    for name in sorted(shapes)[part::parts]:
        sh = shapes[name]
        q = random_rectangles(*sh.shape, size=2000, rng=np.random.default_rng(1))
        idx = hilbert_cells(*sh.shape)
        for N in (10**4, 10**6, 10**8):
            for eps in (0.1, 1.0):
                for t in range(trials):
                    x = resample_map(sh, N, rng=g)
                    flat = x.ravel()[idx]
                    for p in penalties:
                        lam = 1.0 / (0.75 * eps) + p * PARTITION_NOISE / (0.25 * eps)
                        r = dawa(flat, epsilon=eps, bucket_cost=lam, rng=g)
                        est = np.empty(idx.size)
                        est[idx] = r.value
                        rows.append({"map": name, "N": N, "epsilon": eps, "penalty": p,
                                     "trial": t, "error": map_error(q, x, est.reshape(sh.shape),
                                                                    scale=N)})
        log(f"  {name}")
    return rows


def dawa2d_penalty_table(rows, *, log=print) -> str:
    """Per level of ``eps N``: the geometric mean over maps of each penalty's mean error over
    the least one's (rows of :func:`dawa2d_penalty_calibration`, all parts merged)."""
    pens = sorted({r["penalty"] for r in rows})
    cells: dict = {}
    for r in rows:
        cells.setdefault((r["map"], r["N"], r["epsilon"]), {}).setdefault(
            r["penalty"], []).append(r["error"])
    lines = ["| eps x N (maps) | " + " | ".join(f"{p:g}" for p in pens) + " |",
             "|---|" + "---|" * len(pens)]
    for lvl in sorted({N * e for (_, N, e) in cells}):
        ks = [k for k in cells if k[1] * k[2] == lvl]
        lr: dict = {p: [] for p in pens}
        for k in ks:
            m = {p: float(np.mean(cells[k][p])) for p in pens}
            b = min(m.values())
            for p in pens:
                lr[p].append(math.log(m[p] / b))
        lines.append(f"| {lvl:g} ({len(ks)}) | " + " | ".join(
            f"{math.exp(np.mean(lr[p])):.2f}" for p in pens) + " |")
    table = "\n".join(lines)
    log("\n## DAWA-2D: error / best penalty's (geometric mean over maps)\n" + table)
    return table


#: ratios "veil / reference" that issue 19 quotes for the implementation on main (measured by
#: the issue's author against the DPBench reference code on the 7 classic datasets, n = 1024,
#: prefix workload); ``None`` for the scale or epsilon means "every setting quoted".
ISSUE19_QUOTED = (
    ("structurefirst", None, None, (2.5, 3.1), "StructureFirst (default) vs the authors' C++"),
    ("dawa", 10**3, None, (2.6, 2.8), "DAWA vs DPBench DAWA, scale 1e3"),
    ("dawa", 10**5, 0.1, (1.6, 1.6), "DAWA vs DPBench DAWA, eps 0.1, scale 1e5"),
    ("ahp", None, None, (1.1, 2.8), "AHP vs DPBench AHP"),
)


def baseline_report(new_rows, old_rows, *, methods=("identity", "hb", "structurefirst",
                                                     "optimized-structurefirst", "ahp", "dawa"),
                    workload: str = "prefix") -> str:
    """Markdown: this checkout's error over another checkout's on the same inputs, per cell,
    and what the ratios issue 19 quotes for the other checkout then imply for this one."""
    from .evaluation import geomean

    def index(rows):
        return {(r.dataset, r.method, r.scale, r.epsilon): r.error for r in rows
                if r.workload == workload}

    new, old = index(new_rows), index(old_rows)
    keys = sorted({(s, e) for (_, _, s, e) in old})
    ds = sorted({d for (d, *_) in old})
    head = "| method | " + " | ".join(f"{s:.0e} / {e:g}" for s, e in keys) + " |"
    lines = ["new / old (geometric mean over datasets of the per-dataset ratio)", "", head,
             "|---|" + "---|" * len(keys)]
    ratio = {}
    for m in methods:
        cells = []
        for s, e in keys:
            f = 1.0 / s
            v = [max(new[(d, m, s, e)], f) / max(old[(d, m, s, e)], f) for d in ds
                 if (d, m, s, e) in new and (d, m, s, e) in old]
            ratio[(m, s, e)] = geomean(v) if v else float("nan")
            cells.append(f"{ratio[(m, s, e)]:.2f}" if v else "-")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines += ["", "| issue 19 quote (old / reference) | cells | new / old | implied new / "
              "reference |", "|---|---|---|---|"]
    for m, s0, e0, (lo, hi), label in ISSUE19_QUOTED:
        cells = [(s, e) for s, e in keys if (s0 is None or s == s0) and (e0 is None or e == e0)]
        r = [ratio[(m, s, e)] for s, e in cells if (m, s, e) in ratio]
        if not r:
            continue
        g = geomean(r)
        span = f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"
        lines.append(f"| {label}: {span} | {len(cells)} | {min(r):.2f}-{max(r):.2f} "
                     f"(geo. {g:.2f}) | {lo * min(r):.2f}-{hi * max(r):.2f} |")
    return "\n".join(lines)


def structurefirst_k_check(baseline_json, *, ks=(1, 2, 4, 8, 16, 103), trials: int = 4,
                           cells=((10**3, 1.0), (10**5, 0.1), (10**7, 1.0), (10**3, 0.01)),
                           seed: int = 11, log=print) -> str:
    """StructureFirst's prefix error for several ``k`` over the reference that issue 19
    implies: main's StructureFirst error (``baseline_json`` of ``--baseline``) / 2.8, the middle
    of the quoted 2.5-3.1x (7 classic datasets, n = 1024)."""
    import json
    from pathlib import Path

    from .api import publish
    from .evaluation import DPBENCH_CLASSIC, geomean, load_dpbench
    from .workload import prefix_workload, scaled_error

    old = {(r["dataset"], int(r["scale"]), float(r["epsilon"])): r["error"]
           for r in json.loads(Path(baseline_json).read_text())["accuracy"]
           if r["method"] == "structurefirst" and r["workload"] == "prefix"}
    shapes = load_dpbench(DPBENCH_CLASSIC, n=1024)
    g = make_rng(seed=seed)  # experiments only
    W = prefix_workload(1024)
    lines = ["| scale / eps | " + " | ".join(f"k = {k}" for k in ks) + " |",
             "|---|" + "---|" * len(ks)]
    for scale, eps in cells:
        res = {k: [] for k in ks}
        for name, shape in shapes.items():
            e = {k: [] for k in ks}
            for _ in range(trials):
                x = resample_to_scale(shape, scale, rng=g)
                for k in ks:
                    r = publish(x, epsilon=eps, method="structurefirst", k=k,
                                count_bound=float(scale), rng=g)
                    e[k].append(scaled_error(W, x, r.value))
            ref = old[(name, scale, eps)] / 2.8
            for k in ks:
                res[k].append(float(np.mean(e[k])) / ref)
        lines.append(f"| {scale:.0e} / {eps:g} | " + " | ".join(
            f"{geomean(res[k]):.2f}" for k in ks) + " |")
    tab = "\n".join(lines)
    log("# StructureFirst / (main's StructureFirst / 2.8), geometric mean over the 7 classic\n"
        + tab)
    return tab


def structurefirst_authors_tree_check(*, trials: int = 4, n: int = 1024,
                                      cells=((10**3, 1.0), (10**5, 0.1), (10**7, 1.0),
                                             (10**3, 0.01), (10**5, 1.0), (10**7, 0.1)),
                                      seed: int = 3, log=print) -> list[dict]:
    """StructureFirst's prefix error with the bucket trees published four ways, on the same
    private structures (the default: ``k = ceil(n/10)``, the authors' split, ``F = scale``):
    veil's trees; the audit module's tree (the same mechanism: a check of that code); that
    tree with the padding leaves noised, as veil did before
    :func:`veil.histograms.tree.zero_padding`; and the authors' tree as read in their code,
    whose internal nodes are exact for every bucket that starts at or after its own length
    (NOT private: ``CANARIES["structurefirst/authors-bucket-tree"]`` fails the audit).
    ``k = 1`` (one Boost tree, the whole budget) for comparison. 7 classic datasets, prefix
    workload, geometric means over the datasets of the mean over ``trials``."""
    from .audits import bucket_tree_release
    from .evaluation import DPBENCH_CLASSIC, geomean, load_dpbench
    from ._common import noisy_integers
    from .structurefirst import (_bucket_trees, authors_structure_fraction, private_structure,
                                 structure_first)
    from .tree import tree_height
    from .workload import prefix_workload, scaled_error

    shapes = load_dpbench(DPBENCH_CLASSIC, n=n)
    g = make_rng(seed=seed)  # experiments only
    W = prefix_workload(n)
    k = max(1, math.ceil(n / 10))
    names = ["veil", "audit tree", "padding noised", "authors' tree", "k = 1"]
    out = []
    log("| scale / eps | " + " | ".join(names) + " | audit tree / veil | padding noised / veil"
        " | authors' tree / veil | k = 1 / veil | internal nodes exact (authors') |")
    log("|---|" + "---|" * (len(names) + 5))
    for scale, eps in cells:
        per = {v: [] for v in names}
        exact_share = []
        for shape in shapes.values():
            e = {v: [] for v in names}
            for _ in range(trials):
                x = resample_to_scale(shape, scale, rng=g)
                F = float(scale)
                frac = authors_structure_fraction(n=n, k=k, count_bound=F, epsilon=eps)
                edges = private_structure(x, k=k, epsilon=frac * eps, count_bound=F, rng=g)
                eps2 = (1.0 - frac) * eps
                e["veil"].append(scaled_error(W, x, _bucket_trees(x, edges, eps2, 2, g)[0]))
                for v, kw in (("audit tree", {}), ("padding noised", {"exact_padding": False}),
                              ("authors' tree", {"authors_tree": True})):
                    y = np.concatenate([
                        bucket_tree_release(x[a:b], start=int(a), epsilon=eps2, rng=g, **kw)[0]
                        if b - a > 1 else noisy_integers(x[a:b], eps2, g)[0].astype(float)
                        for a, b in zip(edges[:-1], edges[1:])])
                    e[v].append(scaled_error(W, x, y))
                r1 = structure_first(x, epsilon=eps, k=1, count_bound=F, rng=g)
                e["k = 1"].append(scaled_error(W, x, r1.value))
                tot = ex = 0
                for a, b in zip(edges[:-1], edges[1:]):
                    m = int(b - a)
                    for lv in range(1, tree_height(m, 2) + 1 if m > 1 else 1):
                        first = np.arange(0, m, 2 ** lv)
                        tot += first.size
                        ex += int(np.sum(a + first >= m))
                exact_share.append(ex / max(tot, 1))
            for v in names:
                per[v].append(float(np.mean(e[v])))
        ratios = {v: geomean([p / q for p, q in zip(per[v], per["veil"])]) for v in names[1:]}
        row = {"scale": scale, "epsilon": eps, **{v: geomean(per[v]) for v in names},
               **{f"{v} / veil": r for v, r in ratios.items()},
               "internal nodes exact": float(np.mean(exact_share))}
        out.append(row)
        log(f"| {scale:.0e} / {eps:g} | " + " | ".join(f"{row[v]:.3g}" for v in names) + " | "
            + " | ".join(f"{ratios[v]:.2f}" for v in names[1:])
            + f" | {row['internal nodes exact']:.2f} |")
    return out


def ahp_steps_reference(x: np.ndarray, epsilon: float, rng, *, rho: float = 0.85,
                        eta: float = 0.35) -> np.ndarray:
    """AHP with the choices the DPBench implementation makes where veil's :func:`ahp` differs
    (a baseline for :func:`ahp_reference_check`, NOT private as published: continuous noise
    in floating point): continuous Laplace noise in both steps, a deterministic ascending
    sort (ties by position), and the clustering's early-stop bound over one more element
    than remain (``(n - j + 1)**2``; veil's ``(n - j)**2`` differs in the last digits). The
    split ``rho``, the threshold ``eta ln(n) / eps1``, the greedy clustering and the
    re-measured cluster averages are veil's (the same steps)."""
    from .sortgroup import ahp_clusters

    x = np.asarray(x, dtype=np.float64)
    n = x.size
    e1, e2 = rho * epsilon, (1.0 - rho) * epsilon
    y = x + rng.laplace(0.0, 1.0 / e1, n)
    y = np.where(y <= eta * math.log(n) / e1, 0.0, y)
    order = np.argsort(y, kind="stable")
    edges = ahp_clusters(y[order], 2.0 / (e2 * e2))
    sizes = np.diff(edges)
    labels = np.empty(n, dtype=np.int64)
    labels[order] = np.repeat(np.arange(sizes.size), sizes)
    sums = np.bincount(labels, weights=x, minlength=sizes.size)
    return ((sums + rng.laplace(0.0, 1.0 / e2, sizes.size)) / sizes)[labels]


def ahp_reference_check(*, trials: int = 30, n: int = 1024, seed: int = 5,
                        epsilons=(0.01, 0.1, 1.0, 10.0), scales=(10**3, 10**5, 10**7),
                        log=print) -> list[dict]:
    """veil's AHP against :func:`ahp_steps_reference` on the same re-sampled histograms: the
    7 classic datasets at ``n`` bins, prefix and 2000 random ranges, geometric means over the
    datasets of the mean over ``trials``; the ratio is veil / reference steps. What it shows:
    how much veil's deviations from the DPBench implementation (discrete Laplace noise, a
    randomized sort) change the error. It does not run the DPBench code."""
    from .evaluation import DPBENCH_CLASSIC, geomean, load_dpbench
    from .sortgroup import ahp
    from .workload import make_workload, resample_to_scale, scaled_error

    shapes = load_dpbench(DPBENCH_CLASSIC, n=n)
    g = make_rng(seed=seed)  # experiments only
    wls = {"prefix": make_workload("prefix", n),
           "random": make_workload("random", n, size=2000, rng=np.random.default_rng(n))}
    out = []
    log("| scale / eps | prefix: veil | reference steps | veil / reference | "
        "ranges: veil | reference steps | veil / reference |")
    log("|---|---|---|---|---|---|---|")
    for scale in scales:
        for eps in epsilons:
            per = {(w, v): [] for w in wls for v in ("veil", "ref")}
            for shape in shapes.values():
                e = {k: [] for k in per}
                for _ in range(trials):
                    x = resample_to_scale(shape, int(scale), rng=g)
                    (child,) = spawn(g, 1)
                    mine = ahp(x, epsilon=eps, rng=child).value
                    ref = ahp_steps_reference(x, eps, g)
                    for w, W in wls.items():
                        e[(w, "veil")].append(scaled_error(W, x, mine))
                        e[(w, "ref")].append(scaled_error(W, x, ref))
                for k in per:
                    per[k].append(float(np.mean(e[k])))
            row = {"scale": int(scale), "epsilon": float(eps)}
            for w in wls:
                a, b = geomean(per[(w, "veil")]), geomean(per[(w, "ref")])
                row[w] = {"veil": a, "reference_steps": b, "ratio": a / b}
            out.append(row)
            log(f"| {scale:.0e} / {eps:g} | " + " | ".join(
                f"{row[w]['veil']:.3g} | {row[w]['reference_steps']:.3g} | "
                f"{row[w]['ratio']:.2f}" for w in wls) + " |")
    return out
