"""DPBench-style accuracy evaluation of the histogram mechanisms.

Protocol (Hay et al., SIGMOD 2016; DESIGN.md section 7): for every dataset
shape, target scale and trial, draw a histogram of ``scale`` records from the
dataset's shape (multinomial re-sampling), run each mechanism at each
epsilon on that same histogram, and report the scaled range-query error
``mean_q |W x - W x_hat| / scale`` for the prefix workload and 2000 random
ranges; summaries are geometric means over datasets of the mean over trials.

Workload-aware mechanisms (DAWA, HDMM, MWEM, coarse, privtree) are run once per workload with
that workload as their public target; the others are run once and evaluated on
every workload. Public parameters given to the mechanisms that need them: the
target scale is the public bound on the number of records (``records_bound``,
used by ``auto``, DAWA, coarse and optimized StructureFirst) and, since no bin can hold more
records than exist, also the count bound ``F`` of StructureFirst; ``k =
ceil(n/10)`` buckets (the published setting).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..datasets import shared_data_path
from ..errors import ParameterError
from ..random import make_rng, spawn
from ..validation import check_counts, check_int
from .api import METHODS, WORKLOAD_AWARE, publish
from .workload import make_workload, resample_to_scale, scaled_error

__all__ = ["DPBENCH_1D", "DPBENCH_CLASSIC", "load_dpbench", "method_params", "evaluate",
           "summarize", "EvalRow", "format_table", "geomean"]

#: file stems of the 18 one-dimensional DPBench histograms
DPBENCH_1D = (
    "ADULTFRANK.n4096", "HEPTH.n4096", "INCOME.n4096", "MEDCOST.n4096", "NETTRACE.n4096",
    "PATENT.n4096", "SEARCHLOGS.n4096", "bids", "bids_j", "bids_m", "GrossCompenMDSalary1",
    "GrossCompenMDSalary2_filtered", "RejectStats_0_4096_no_outliers",
    "RejectStats_0_4096_no_outliers_filter_7_1", "RejectStats_0_4096_no_outliers_filter_7_2",
    "RejectStats_4_4096_no_outliers", "RejectStats_4_4096_no_outliers_filter_7_1",
    "RejectStats_4_4096_no_outliers_filter_7_2",
)
#: the seven classic 1-D datasets (DAWA's and DPBench's first group)
DPBENCH_CLASSIC = DPBENCH_1D[:7]


def load_dpbench(names=None, *, n: int | None = None) -> dict[str, np.ndarray]:
    """Read DPBench 1-D histograms in place from the shared data folder (int64 counts).

    ``n`` coarsens each 4096-bin histogram to ``n`` bins by summing consecutive
    groups of ``4096 / n`` bins (DPBench's way of varying the domain size).
    """
    names = DPBENCH_1D if names is None else tuple(names)
    out = {}
    for name in names:
        if name not in DPBENCH_1D:
            raise ParameterError(f"unknown DPBench dataset {name!r}; known: {', '.join(DPBENCH_1D)}")
        arr = np.load(shared_data_path("dpbench-1d", f"{name}.npy"))
        c = check_counts(np.rint(arr).astype(np.int64), name)
        if n is not None:
            n = check_int(n, "n", minimum=1)
            if c.size % n:
                raise ParameterError(f"n must divide {c.size}, got {n}")
            c = c.reshape(n, -1).sum(axis=1)
        out[name] = c
    return out


def method_params(method: str, *, n: int, scale: int) -> dict:
    """Public parameters the evaluation gives each method (see module docstring)."""
    if method == "structurefirst":
        return {"k": max(1, math.ceil(n / 10)), "count_bound": float(scale)}
    if method == "optimized-structurefirst":
        return {"k": max(1, math.ceil(n / 10)), "count_bound": float(scale),
                "records_bound": float(scale)}
    if method in ("auto", "dawa", "coarse"):
        return {"records_bound": float(scale)}
    return {}


def geomean(values) -> float:
    """Geometric mean (the DPBench summary over datasets)."""
    v = np.asarray(list(values), dtype=np.float64)
    return float(np.exp(np.mean(np.log(np.maximum(v, 1e-300)))))


@dataclass
class EvalRow:
    dataset: str
    method: str
    epsilon: float
    scale: int
    workload: str
    n: int = 0
    errors: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    chosen: list[str] = field(default_factory=list)

    @property
    def error(self) -> float:
        return float(np.mean(self.errors))

    def to_dict(self) -> dict:
        return {"dataset": self.dataset, "method": self.method, "epsilon": self.epsilon,
                "scale": self.scale, "workload": self.workload, "n": self.n,
                "error": self.error, "error_std": float(np.std(self.errors)),
                "trials": len(self.errors), "errors": [float(e) for e in self.errors],
                "seconds_median": float(np.median(self.seconds)),
                "chosen": sorted(set(self.chosen))}

    @classmethod
    def from_dict(cls, d: dict) -> "EvalRow":
        return cls(d["dataset"], d["method"], float(d["epsilon"]), int(d["scale"]),
                   d["workload"], int(d.get("n", 0)), list(d.get("errors", [d["error"]])),
                   [float(d.get("seconds_median", 0.0))], list(d.get("chosen", [])))


def evaluate(shapes: dict[str, np.ndarray], *, methods=None, epsilons=(0.1, 1.0),
             scales=(10**3, 10**5, 10**7), workloads=("prefix", "random"), trials: int = 3,
             random_queries: int = 2000, rng=None, progress=None) -> list[EvalRow]:
    """Run every method on every dataset shape, scale, epsilon and trial.

    One re-sampled histogram per (dataset, scale, trial) is shared by all
    methods and epsilons, and one random-range workload per domain size, so the
    methods are compared on the same inputs.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> rows = evaluate({"toy": np.arange(64)}, methods=["identity", "hb"], epsilons=[1.0],
    ...                 scales=[1000], trials=2, rng=make_rng(seed=0))
    >>> sorted({r.method for r in rows}), len(rows)
    (['hb', 'identity'], 4)
    """
    methods = list(METHODS) if methods is None else list(methods)
    for m in methods:
        if m not in METHODS:
            raise ParameterError(f"unknown method {m!r}; known: {', '.join(METHODS)}")
    trials = check_int(trials, "trials", minimum=1)
    g = make_rng(rng)
    rows: dict[tuple, EvalRow] = {}
    wl_cache: dict[tuple[str, int], np.ndarray] = {}
    for dname, shape in shapes.items():
        n = int(np.asarray(shape).size)
        for w in workloads:
            if (w, n) not in wl_cache:
                wl_cache[(w, n)] = make_workload(w, n, size=random_queries,
                                                 rng=np.random.default_rng(n))
        for scale in scales:
            for t in range(trials):
                x = resample_to_scale(shape, int(scale), rng=g)
                for eps in epsilons:
                    for m in methods:
                        params = method_params(m, n=n, scale=int(scale))
                        targets = ([(w, [w]) for w in workloads] if m in WORKLOAD_AWARE
                                   or m == "auto" else [(None, list(workloads))])
                        for target, evaluated in targets:
                            (child,) = spawn(g, 1)
                            kw = dict(params)
                            if target is not None:
                                q = wl_cache[(target, n)]
                                kw["workload"] = "prefix" if target == "prefix" else q
                            t0 = time.perf_counter()
                            rel = publish(x, epsilon=eps, method=m, rng=child, **kw)
                            dt = time.perf_counter() - t0
                            for w in evaluated:
                                key = (dname, m, float(eps), int(scale), w)
                                row = rows.setdefault(key, EvalRow(*key, n=n))
                                row.errors.append(scaled_error(wl_cache[(w, n)], x,
                                                               rel.value))
                                row.seconds.append(dt)
                                row.chosen.append(rel.mechanism)
                if progress is not None:
                    progress(f"{dname} scale={scale} trial={t + 1}/{trials}")
    return list(rows.values())


def summarize(rows: list[EvalRow]) -> dict:
    """Per (scale, epsilon, workload): geometric-mean error of each method over datasets, how
    often each method is best, and ``auto``'s and the best method's ratios per dataset."""
    out: dict = {}
    keys = sorted({(r.scale, r.epsilon, r.workload) for r in rows})
    idx: dict[tuple, dict[str, dict[str, float]]] = {}
    for r in rows:
        idx.setdefault((r.scale, r.epsilon, r.workload), {}).setdefault(r.dataset, {})[
            r.method] = r.error
    for key in keys:
        per_ds = idx[key]
        methods = sorted({m for d in per_ds.values() for m in d})
        geo = {m: geomean(d[m] for d in per_ds.values() if m in d) for m in methods}
        wins: dict[str, int] = {}
        auto_ratios, id_ratios = [], []
        for d, errs in sorted(per_ds.items()):
            cand = {m: e for m, e in errs.items() if m != "auto"}
            if not cand:
                continue
            best = min(cand, key=cand.get)
            wins[best] = wins.get(best, 0) + 1
            if "auto" in errs:  # errors below one record per query count as exact
                f = 1.0 / key[0]
                auto_ratios.append(max(errs["auto"], f) / max(cand[best], f))
                if "identity" in errs:
                    id_ratios.append(max(errs["auto"], f) / max(errs["identity"], f))
        out[key] = {"geomean": geo, "wins": wins,
                    "auto_over_best_median": float(np.median(auto_ratios)) if auto_ratios
                    else None,
                    "auto_over_best_max": float(np.max(auto_ratios)) if auto_ratios else None,
                    "auto_over_identity_max": float(np.max(id_ratios)) if id_ratios else None}
    return out


def format_table(rows: list[EvalRow], *, workload: str = "prefix", methods=None,
                 reference: dict | None = None) -> str:
    """Markdown table: geometric mean over datasets of the scaled error, per method and setting.

    ``reference`` maps ``(scale, epsilon)`` to ``{label: value}`` rows of published
    figures to print beside veil's (``-`` where none is published). ``~0``: the geometric
    mean is below 1e-30 because some datasets were released exactly in every trial (discrete
    noise at large epsilon is 0 in almost every bin).
    """
    summ = summarize(rows)
    keys = [k for k in summ if k[2] == workload]
    present = {r.method for r in rows}
    methods = [m for m in (METHODS if methods is None else methods) if m in present]
    head = "| method | " + " | ".join(f"{s:.0e} / {e:g}" for s, e, _ in keys) + " |"
    sep = "|---|" + "---|" * len(keys)
    lines = [head, sep]
    def cell(v):  # a geometric mean over datasets where some releases were all exact
        return "~0" if v < 1e-30 else f"{v:.3g}"

    for m in methods:
        cells = [cell(summ[k]['geomean'].get(m, float('nan'))) for k in keys]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    for label in sorted({lab for v in (reference or {}).values() for lab in v}):
        cells = [f"{reference[(k[0], k[1])][label]:.3g}" if (k[0], k[1]) in reference and
                 label in reference[(k[0], k[1])] else "-" for k in keys]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("| best (datasets won) | " + " | ".join(
        ", ".join(f"{m} {c}" for m, c in sorted(summ[k]["wins"].items(), key=lambda t: -t[1]))
        for k in keys) + " |")
    if "auto" in present:
        lines.append("| auto / best (median; max) | " + " | ".join(
            f"{summ[k]['auto_over_best_median']:.2f}; {summ[k]['auto_over_best_max']:.2f}"
            if summ[k]["auto_over_best_median"] else "-" for k in keys) + " |")
    return "\n".join(lines)
