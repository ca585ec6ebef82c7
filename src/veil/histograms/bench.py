"""Speed and accuracy benchmarks (used by ``benchmarks/histograms.py`` and ``veil bench histograms``).

Everything runs in one process on the same inputs: the compiled V-optimal
kernel against the straightforward numpy implementation of the same
recurrence, StructureFirst at the published size (n = 4096, k = 410),
NoiseFirst over every k, and the DPBench accuracy table.
"""

from __future__ import annotations

import os
import resource
import time
import tracemalloc

import numpy as np

from ..random import make_rng
from .partition import HAVE_NUMBA, voptimal, voptimal_reference
from .workload import resample_to_scale

__all__ = ["time_median", "speed_benchmark", "accuracy_benchmark", "machine_note"]


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
    # other mechanisms at n = 4096 for reference
    for m in ("identity", "hb", "boost", "dawa", "optimized-structurefirst", "sort-and-group",
              "ahp"):
        extra = {"count_bound": 1e5, "k": 410} if "structure" in m else {}
        t, _ = time_median(lambda: publish(x4096, epsilon=1.0, method=m, rng=g, **extra),
                           repeats)
        row(mechanism=m, n=4096, seconds=t)
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


def accuracy_benchmark(*, trials: int = 2, epsilons=(0.1, 1.0), scales=(10**3, 10**5, 10**7),
                       datasets=None, methods=None, seed: int = 0, log=print):
    """DPBench accuracy on the 1-D datasets; returns (rows, markdown tables per workload)."""
    from .evaluation import evaluate, format_table, load_dpbench

    shapes = load_dpbench(datasets)
    log(f"# histograms accuracy: {len(shapes)} datasets, scales {list(scales)}, eps "
        f"{list(epsilons)}, {trials} trial(s) each; {machine_note()}")
    t0 = time.perf_counter()
    rows = evaluate(shapes, methods=methods, epsilons=epsilons, scales=scales,
                    workloads=("prefix", "random", "point"), trials=trials,
                    rng=make_rng(seed=seed), progress=lambda m: log(f"  {m}"))
    log(f"# accuracy evaluation took {time.perf_counter() - t0:.0f} s")
    tables = {w: format_table(rows, workload=w) for w in ("prefix", "random", "point")}
    for w, tab in tables.items():
        log(f"\n## scaled error, {w} workload (geometric mean over datasets)\n{tab}")
    return rows, tables


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
