"""DPBench-style accuracy evaluation of the histogram mechanisms.

Protocol (Hay et al., SIGMOD 2016): for every dataset shape, target scale and
epsilon, draw a histogram of ``scale`` records from the dataset's shape, run
each mechanism, and report the scaled range-query error
``mean_q |W x - W x_hat| / scale`` averaged over trials, for the prefix
workload and 2000 random ranges.

Public parameters used for the mechanisms that need them: the target scale is
the public bound on the number of records (``records_bound`` for ``auto``) and,
since no bin can hold more records than exist, also the count bound ``F`` of
StructureFirst; ``k = ceil(n/10)`` buckets (the published setting).
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
from .api import METHODS, publish
from .workload import make_workload, resample_to_scale, scaled_error

__all__ = ["DPBENCH_1D", "load_dpbench", "method_params", "evaluate", "summarize",
           "EvalRow", "format_table"]

#: file stems of the 18 one-dimensional DPBench histograms
DPBENCH_1D = (
    "ADULTFRANK.n4096", "HEPTH.n4096", "INCOME.n4096", "MEDCOST.n4096", "NETTRACE.n4096",
    "PATENT.n4096", "SEARCHLOGS.n4096", "bids", "bids_j", "bids_m", "GrossCompenMDSalary1",
    "GrossCompenMDSalary2_filtered", "RejectStats_0_4096_no_outliers",
    "RejectStats_0_4096_no_outliers_filter_7_1", "RejectStats_0_4096_no_outliers_filter_7_2",
    "RejectStats_4_4096_no_outliers", "RejectStats_4_4096_no_outliers_filter_7_1",
    "RejectStats_4_4096_no_outliers_filter_7_2",
)


def load_dpbench(names=None) -> dict[str, np.ndarray]:
    """Read DPBench 1-D histograms in place from the shared data folder (int64 counts)."""
    names = DPBENCH_1D if names is None else tuple(names)
    out = {}
    for name in names:
        if name not in DPBENCH_1D:
            raise ParameterError(f"unknown DPBench dataset {name!r}; known: {', '.join(DPBENCH_1D)}")
        arr = np.load(shared_data_path("dpbench-1d", f"{name}.npy"))
        out[name] = check_counts(np.rint(arr).astype(np.int64), name)
    return out


def method_params(method: str, *, n: int, scale: int) -> dict:
    """Public parameters the evaluation gives each method (see module docstring)."""
    if method == "structurefirst":
        return {"k": max(1, math.ceil(n / 10)), "count_bound": float(scale)}
    if method == "optimized-structurefirst":
        return {"k": max(1, math.ceil(n / 10)), "count_bound": float(scale),
                "records_bound": float(scale)}
    if method == "auto":
        return {"records_bound": float(scale)}
    return {}


@dataclass
class EvalRow:
    dataset: str
    method: str
    epsilon: float
    scale: int
    workload: str
    errors: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    chosen: str = ""

    @property
    def error(self) -> float:
        return float(np.mean(self.errors))

    def to_dict(self) -> dict:
        return {"dataset": self.dataset, "method": self.method, "epsilon": self.epsilon,
                "scale": self.scale, "workload": self.workload, "error": self.error,
                "error_std": float(np.std(self.errors)), "trials": len(self.errors),
                "seconds_median": float(np.median(self.seconds)), "chosen": self.chosen}


def evaluate(shapes: dict[str, np.ndarray], *, methods=None, epsilons=(0.1, 1.0),
             scales=(10**3, 10**5, 10**7), workloads=("prefix", "random"), trials: int = 3,
             random_queries: int = 2000, rng=None, progress=None) -> list[EvalRow]:
    """Run every method on every dataset shape, scale, epsilon and trial.

    One re-sampled histogram per (dataset, scale, trial) is shared by all
    methods and epsilons, and one random-range workload per dataset size, so
    the methods are compared on the same inputs.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> rows = evaluate({"toy": np.arange(64)}, methods=["identity", "hb"], epsilons=[1.0],
    ...                 scales=[1000], trials=2, rng=make_rng(seed=0))
    >>> sorted({r.method for r in rows}), len(rows)
    (['hb', 'identity'], 4)
    """
    methods = list(METHODS) if methods is None else list(methods)
    trials = check_int(trials, "trials", minimum=1)
    g = make_rng(rng)
    rows: dict[tuple, EvalRow] = {}
    wl_cache: dict[tuple[str, int], np.ndarray] = {}
    for dname, shape in shapes.items():
        n = int(np.asarray(shape).size)
        for w in workloads:
            if (w, n) not in wl_cache:
                wl_cache[(w, n)] = make_workload(w, n, size=random_queries, rng=g)
        for scale in scales:
            for t in range(trials):
                x = resample_to_scale(shape, int(scale), rng=g)
                for eps in epsilons:
                    for m in methods:
                        params = method_params(m, n=n, scale=int(scale))
                        (child,) = spawn(g, 1)
                        t0 = time.perf_counter()
                        rel = publish(x, epsilon=eps, method=m, rng=child, **params)
                        dt = time.perf_counter() - t0
                        for w in workloads:
                            key = (dname, m, float(eps), int(scale), w)
                            row = rows.setdefault(key, EvalRow(*key))
                            row.errors.append(scaled_error(wl_cache[(w, n)], x, rel.value))
                            row.seconds.append(dt)
                            row.chosen = rel.mechanism
                if progress is not None:
                    progress(f"{dname} scale={scale} trial={t + 1}/{trials}")
    return list(rows.values())


def summarize(rows: list[EvalRow]) -> dict:
    """Per (scale, epsilon, workload): geometric-mean error of each method over datasets,
    how often each method is best, and how close ``auto`` gets to the best per dataset."""
    out: dict = {}
    keys = sorted({(r.scale, r.epsilon, r.workload) for r in rows})
    for key in keys:
        sub = [r for r in rows if (r.scale, r.epsilon, r.workload) == key]
        by_method: dict[str, list[float]] = {}
        for r in sub:
            by_method.setdefault(r.method, []).append(r.error)
        geo = {m: float(np.exp(np.mean(np.log(np.maximum(v, 1e-300)))))
               for m, v in by_method.items()}
        wins: dict[str, int] = {}
        ratios = []
        for d in sorted({r.dataset for r in sub}):
            drows = [r for r in sub if r.dataset == d and r.method != "auto"]
            if not drows:
                continue
            best = min(drows, key=lambda r: r.error)
            wins[best.method] = wins.get(best.method, 0) + 1
            auto = [r for r in sub if r.dataset == d and r.method == "auto"]
            if auto and best.error > 0:
                ratios.append(auto[0].error / best.error)
        out[key] = {"geomean": geo, "wins": wins,
                    "auto_over_best_median": float(np.median(ratios)) if ratios else None}
    return out


def format_table(rows: list[EvalRow], *, workload: str = "prefix") -> str:
    """Markdown table: geometric mean over datasets of the scaled error, per method and setting."""
    summ = summarize(rows)
    keys = [k for k in summ if k[2] == workload]
    methods = sorted({r.method for r in rows}, key=lambda m: METHODS.index(m)
                     if m in METHODS else 99)
    head = "| method | " + " | ".join(f"scale {s:.0e}, eps {e:g}" for s, e, _ in keys) + " |"
    sep = "|---|" + "---|" * len(keys)
    lines = [head, sep]
    for m in methods:
        cells = [f"{summ[k]['geomean'].get(m, float('nan')):.3g}" for k in keys]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines.append("| best (datasets won) | " + " | ".join(
        ", ".join(f"{m} {c}" for m, c in sorted(summ[k]["wins"].items(), key=lambda t: -t[1]))
        for k in keys) + " |")
    lines.append("| auto / best (median) | " + " | ".join(
        f"{summ[k]['auto_over_best_median']:.2f}" if summ[k]["auto_over_best_median"] else "-"
        for k in keys) + " |")
    return "\n".join(lines)
