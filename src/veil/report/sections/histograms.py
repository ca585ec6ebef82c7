"""Report section: differentially private histograms on synthetic data.

Two figures, each with the numbers behind it:

* range-query error against epsilon for several mechanisms (DPBench scaled
  error on random ranges, mean over a few trials);
* one histogram before and after privatisation with error bars (the 5-95 %
  band over repeated releases), so the size of the noise is visible.
"""

from __future__ import annotations

import numpy as np

from ..core import DemoContext, Section, Table, figure_from_matplotlib

__all__ = ["build"]

GUARANTEE_TEMPLATE = """\
Each published histogram is **epsilon-differentially private** with respect to one record: adding
or removing any one person's record changes the probability of every possible published histogram
by at most a factor e^epsilon. The bins must be fixed in advance (public); veil refuses to take the
bin range from the data unless asked (`--bins-from-data`, with a warning), because the minimum and
maximum of the data can reveal individual records.

What it does not protect: facts about the population as a whole (the shape of the histogram is
what is being published), and repeated releases of the same data add up (two releases at epsilon
each cost 2 epsilon). Small counts are noisy by design: at epsilon = {eps:g} a single bin is off by
about {mae:.0f} records on average with the plain mechanism (Identity: discrete Laplace noise of
scale {scale:g}); the structured mechanisms below share noise across bins so that range sums are
more accurate.
"""


def guarantee_text(eps: float = 0.1) -> str:
    """The guarantee paragraph, with Identity's mean absolute error per bin computed at ``eps``."""
    import math

    from ...samplers import dyadic_scale

    num, den = dyadic_scale(1.0 / eps)
    a = math.exp(-den / num)
    mae = 2 * a / (1 - a * a)        # E|Z| of the two-sided geometric with ratio a
    return GUARANTEE_TEMPLATE.format(eps=eps, mae=mae, scale=num / den)

HOW_TO = """\
# publish a 20-bin histogram of the 'age' column with epsilon = 0.5 (bins fixed publicly)
veil histogram publish people.csv --column age --bins 0:100:20 --epsilon 0.5 --method hb -o ages.csv
# the sidecar ages.csv.meta.json records the mechanism, budget split and noise scale
# compare a published histogram with the true counts on all prefix ranges
veil histogram evaluate ages.csv --true true_counts.csv --workload prefix
"""

METHODS = ("identity", "hb", "hdmm", "dawa", "structurefirst", "sort-and-group")


def _synthetic(ctx: DemoContext, n_bins: int, records: int) -> np.ndarray:
    """A smooth mixture with a flat empty stretch and a spike (all from ctx.rng)."""
    g = ctx.rng
    centres = np.array([0.2, 0.55, 0.8]) * n_bins
    widths = np.array([0.05, 0.08, 0.02]) * n_bins
    comp = g.choice(3, size=records, p=[0.5, 0.35, 0.15])
    v = g.normal(centres[comp], widths[comp])
    v = v[(v >= 0) & (v < n_bins)]
    return np.bincount(v.astype(np.int64), minlength=n_bins)[:n_bins].astype(np.int64)


def _params(method: str, records: int) -> dict:
    # the number of records is the public bound on any bin count in this demo
    return {"count_bound": float(records), "k": None} if method == "structurefirst" else {}


def build(ctx: DemoContext) -> Section:
    """Build the histograms section (about a second; ``ctx.quick`` uses smaller sizes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...histograms import publish
    from ...histograms.workload import random_range_workload, scaled_error

    n_bins, records = (128, 5_000) if ctx.quick else (256, 20_000)
    trials = 1 if ctx.quick else 4
    epsilons = [0.1, 0.5, 1.0, 5.0] if ctx.quick else [0.05, 0.1, 0.5, 1.0, 5.0]
    x = _synthetic(ctx, n_bins, records)
    scale = int(x.sum())
    queries = random_range_workload(n_bins, size=1000, rng=ctx.rng)

    ctx.progress(f"histograms: {len(METHODS)} mechanisms x {len(epsilons)} epsilons")
    err = {m: [] for m in METHODS}
    for eps in epsilons:
        for m in METHODS:
            e = [scaled_error(queries, x, publish(x, epsilon=eps, method=m, rng=ctx.rng,
                                                  **_params(m, scale)).value)
                 for _ in range(trials)]
            err[m].append(float(np.mean(e)))

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for m in METHODS:
        ax.loglog(epsilons, err[m], marker="o", label=m)
    ax.set_xlabel("epsilon")
    ax.set_ylabel("scaled error (mean |range error| / records)")
    ax.set_title(f"Random range queries, {n_bins} bins, {scale:,} records")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    t1 = Table(["method", *[f"eps={e:g}" for e in epsilons]],
               [[m, *[float(f"{v:.4g}") for v in err[m]]] for m in METHODS],
               caption=f"mean over {trials} trials of 1,000 random ranges")
    ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
    ax.minorticks_off()
    best = {e: min(METHODS, key=lambda m, i=i: err[m][i]) for i, e in enumerate(epsilons)}
    summary = ", ".join(f"{best[e]} at eps={e:g}" for e in epsilons)
    # the measured slope of log(error) against log(epsilon), per method (median over methods)
    slopes = [float(np.polyfit(np.log(epsilons), np.log(err[m]), 1)[0]) for m in METHODS]
    winners = sorted(set(best.values()))
    who = (f"{winners[0]} wins at every epsilon here" if len(winners) == 1 else
           f"{len(winners)} different mechanisms win across these epsilons")
    f1 = figure_from_matplotlib(
        fig, "Range-query error against epsilon",
        f"Error falls as about epsilon^{np.median(slopes):.2f} (median fitted slope over the "
        f"{len(METHODS)} mechanisms). Lowest error in this run: {summary} "
        f"(mean of {trials} trial{'s' if trials != 1 else ''}; {who}: "
        "see docs/benchmarks.md for the full DPBench comparison).", t1)

    eps_show, reps = 0.5, 20 if ctx.quick else 100
    ctx.progress(f"histograms: {reps} releases at epsilon={eps_show} for error bars")
    rel = publish(x, epsilon=eps_show, method="hb", rng=ctx.rng)
    draws = np.stack([publish(x, epsilon=eps_show, method="hb", rng=ctx.rng).value
                      for _ in range(reps)])
    lo, hi = np.percentile(draws, [5, 95], axis=0)
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    b = np.arange(n_bins)
    ax.bar(b, x, width=1.0, color="#c9d6e8", label="true counts")
    ax.fill_between(b, lo, hi, step="mid", color="#e07b39", alpha=0.35,
                    label="5-95 % of releases")
    ax.step(b, rel.value, where="mid", color="#b3441b", lw=0.9, label="one release (hb)")
    ax.set_xlabel("bin")
    ax.set_ylabel("count")
    ax.set_title(f"Before and after: hb at epsilon = {eps_show}")
    ax.legend(fontsize=8)
    half = (hi - lo) / 2
    t2 = Table(["bin", "true", "published", "5 %", "95 %"],
               [[int(i), int(x[i]), round(float(rel.value[i]), 1), round(float(lo[i]), 1),
                 round(float(hi[i]), 1)] for i in range(0, n_bins, max(1, n_bins // 16))],
               caption=f"every {max(1, n_bins // 16)}th bin; band from {reps} releases")
    f2 = figure_from_matplotlib(
        fig, "A histogram before and after privatisation",
        f"Average half-width of the 5-95 % band: {half.mean():.1f} records per bin. "
        "Counts can come out negative; clip or round them only as post-processing.", t2)

    best = {f"best method at eps={e:g}": min(METHODS, key=lambda m: err[m][i])
            for i, e in enumerate(epsilons)}
    return Section(
        id="histograms",
        title="DP histograms: how accurate are range queries at a given epsilon?",
        guarantee=guarantee_text(),
        parameters={"bins": n_bins, "records": scale, "epsilons": epsilons, "trials": trials,
                    "workload": "1,000 random ranges",
                    "structurefirst count bound": "number of records (public in this demo)",
                    "neighbouring datasets": "differ by one record"},
        results={**best, "hb band half-width (records, eps=0.5)": float(half.mean()),
                 **{f"scaled error {m} at eps=1": err[m][epsilons.index(1.0)]
                    for m in METHODS}},
        figures=[f1, f2],
        how_to=HOW_TO,
    )
