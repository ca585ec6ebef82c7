"""Report section: differentially private histograms on synthetic data.

Two figures, each with the numbers behind it:

* range-query error against epsilon for several mechanisms (DPBench scaled
  error on random ranges, mean over a few trials);
* one histogram before and after privatisation with error bars (the 5-95 %
  band over repeated releases), so the size of the noise is visible.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import DemoContext, Section, Table, figure_from_matplotlib
from ..stats import Ranking, mean_ci, plural, rank_methods

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


def identity_bin_error(eps: float) -> tuple[float, float]:
    """Identity's mean absolute error per bin and its noise scale at ``eps`` (exact).

    The sampler rounds the scale 1/eps up to a dyadic fraction t; the noise is two-sided
    geometric with ratio a = exp(-1/t), whose mean absolute value is 2a / (1 - a^2).

    Examples
    --------
    >>> mae, t = identity_bin_error(0.1)
    >>> round(mae, 2), round(t, 5)
    (9.98, 10.0)
    """
    from ...samplers import dyadic_scale

    num, den = dyadic_scale(1.0 / eps)
    t = num / den
    a = math.exp(-1.0 / t)
    return 2 * a / (1 - a * a), t


def guarantee_text(eps: float = 0.1) -> str:
    """The guarantee paragraph, with Identity's mean absolute error per bin computed at ``eps``."""
    mae, t = identity_bin_error(eps)
    return GUARANTEE_TEMPLATE.format(eps=eps, mae=mae, scale=t)


def slope_sentence(epsilons, means: dict[str, list[float]]) -> str:
    """How error falls with epsilon: the median fitted slope of log(error) on log(epsilon).

    Examples
    --------
    >>> slope_sentence([0.1, 1.0], {"a": [1.0, 0.1], "b": [2.0, 0.2]})
    'Error falls as about epsilon^-1.00 (median fitted slope over the 2 mechanisms).'
    """
    slopes = [float(np.polyfit(np.log(epsilons), np.log(np.maximum(v, 1e-300)), 1)[0])
              for v in means.values()]
    return (f"Error falls as about epsilon^{np.median(slopes):.2f} (median fitted slope over "
            f"the {len(slopes)} mechanisms).")


def winners_sentence(rankings: dict[float, "Ranking"]) -> str:
    """Which mechanisms win across epsilons, and how many wins are significant.

    Examples
    --------
    >>> from veil.report.stats import rank_methods
    >>> r1 = rank_methods({"a": [1, 1.1, 0.9], "b": [5, 5.1, 4.9]})
    >>> r2 = rank_methods({"a": [5, 5.1, 4.9], "b": [1, 1.1, 0.9]})
    >>> winners_sentence({0.1: r1, 1.0: r2})
    'A significant winner at all 2 epsilons; 2 different mechanisms win (a, b): no mechanism wins everywhere.'
    """
    sig = [e for e, r in rankings.items() if r.significant]
    names = sorted({r.best for e, r in rankings.items() if r.significant})
    n = len(rankings)
    if len(sig) == n:
        head = f"A significant winner at all {n} epsilons"
    elif not sig:
        head = f"No significant winner at any of the {n} epsilons"
    else:
        head = f"A significant winner at {len(sig)} of the {n} epsilons"
    if not names:
        return head + "."
    if len(names) == 1:
        tail = f"{names[0]} wins at every epsilon with a significant winner"
    else:
        tail = (f"{len(names)} different mechanisms win ({', '.join(names)}): no mechanism "
                "wins everywhere")
    return f"{head}; {tail}."


def negative_sentence(draws: np.ndarray) -> str:
    """How many published counts came out negative (computed from the releases).

    Examples
    --------
    >>> negative_sentence(np.array([[1.0, -2.0], [3.0, 4.0]]))
    '1 of the 4 published counts (25.0%) came out negative; clip or round them only as post-processing.'
    >>> negative_sentence(np.array([[1.0, 2.0]]))
    'None of the 2 published counts came out negative here, but they can; clip or round them only as post-processing.'
    """
    neg = int((draws < 0).sum())
    if neg == 0:
        return (f"None of the {draws.size:,} published counts came out negative here, but "
                "they can; clip or round them only as post-processing.")
    return (f"{neg:,} of the {draws.size:,} published counts ({neg / draws.size:.1%}) came out "
            "negative; clip or round them only as post-processing.")


HOW_TO = """\
# publish a 20-bin histogram of the 'age' column with epsilon = 0.5 (bins fixed publicly)
veil histogram publish people.csv --column age --bins 0:100:20 --epsilon 0.5 --method hb -o ages.csv
# the sidecar ages.csv.meta.json records the mechanism, budget split and noise scale
# compare a published histogram with the true counts on all prefix ranges
veil histogram evaluate ages.csv --true true_counts.csv --workload prefix
"""

METHODS = ("identity", "hb", "hdmm", "dawa", "coarse", "privtree", "structurefirst",
           "sort-and-group")


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
    # the number of records is public in this demo: the bound on any bin count
    # (StructureFirst) and the records bound that sets coarse's number of buckets
    if method == "structurefirst":
        return {"count_bound": float(records), "k": None}
    return {"records_bound": float(records)} if method == "coarse" else {}


def build(ctx: DemoContext) -> Section:
    """Build the histograms section (a few seconds; ``ctx.quick`` uses smaller sizes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...histograms import publish
    from ...histograms.workload import random_range_workload, scaled_error

    n_bins, records = (128, 5_000) if ctx.quick else (256, 20_000)
    # enough independent trials for the ranking test to separate the mechanisms that differ
    trials = 6 if ctx.quick else 20
    n_queries = 1000
    epsilons = [0.1, 0.5, 1.0, 5.0] if ctx.quick else [0.05, 0.1, 0.5, 1.0, 5.0]
    x = _synthetic(ctx, n_bins, records)
    scale = int(x.sum())
    queries = random_range_workload(n_bins, size=n_queries, rng=ctx.rng)

    ctx.progress(f"histograms: {len(METHODS)} mechanisms x {len(epsilons)} epsilons x "
                 f"{trials} trials")
    samples: dict[str, list[np.ndarray]] = {m: [] for m in METHODS}
    for eps in epsilons:
        for m in METHODS:
            samples[m].append(np.array([
                scaled_error(queries, x, publish(x, epsilon=eps, method=m, rng=ctx.rng,
                                                 **_params(m, scale)).value)
                for _ in range(trials)]))
    err = {m: [float(a.mean()) for a in samples[m]] for m in METHODS}
    rankings = {e: rank_methods({m: samples[m][i] for m in METHODS})
                for i, e in enumerate(epsilons)}

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    cut = 0
    for k, m in enumerate(METHODS):
        mean, lo, hi = mean_ci(np.stack(samples[m]), axis=1)
        cut += int((lo < mean / 5).sum())
        lo = np.maximum(lo, mean / 5)  # a log axis cannot show an interval reaching zero
        # offset the markers slightly so that overlapping intervals stay visible
        xs = np.asarray(epsilons) * (1 + 0.025 * (k - (len(METHODS) - 1) / 2))
        ax.errorbar(xs, mean, yerr=[mean - lo, hi - mean], marker="o", ms=4, capsize=2.5,
                    lw=1.2, label=m)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("scaled error (mean |range error| / records)")
    ax.set_title(f"Random range queries, {n_bins} bins, {scale:,} records")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
    ax.minorticks_off()
    cis = {m: [mean_ci(a) for a in samples[m]] for m in METHODS}
    t1 = Table(["method", "epsilon", "mean scaled error", "95% CI low", "95% CI high",
                "scaled error of each trial"],
               [[m, e, float(f"{c.mean:.4g}"), float(f"{c.low:.4g}"), float(f"{c.high:.4g}"),
                 [float(v) for v in samples[m][i]]]
                for m in METHODS for i, (e, c) in enumerate(zip(epsilons, cis[m]))],
               caption=f"mean scaled error over {plural(trials, 'trial')} of "
                       f"{n_queries:,} random ranges, with 95% t-intervals")
    f1 = figure_from_matplotlib(
        fig, "Range-query error against epsilon",
        slope_sentence(epsilons, err) + f" Error bars: 95% confidence intervals over "
        f"{plural(trials, 'trial')}"
        + (f" ({plural(cut, 'bar')} reaching below a fifth of {'its' if cut == 1 else 'their'} "
           f"mean {'is' if cut == 1 else 'are'} cut there: the table has the full interval). "
           if cut else ". ")
        + winners_sentence(rankings) + " Mechanism by "
        "mechanism in the table below; see docs/benchmarks.md for the full DPBench comparison.",
        t1)
    best_table = Table(
        ["epsilon", "lowest mean", "scaled error (95% CI)", "verdict"],
        [[e, r.best, r.intervals[r.best].text("{:.3g}"), r.sentence()]
         for e, r in rankings.items()],
        caption=f"Which mechanism is best? The lowest mean is named best only when a "
                f"{rankings[epsilons[0]].test} at alpha = {rankings[epsilons[0]].alpha:g} puts "
                f"it below every other mechanism; otherwise no significant difference is "
                f"reported.")

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
                    label=f"5-95 % of {reps} releases")
    ax.step(b, rel.value, where="mid", color="#b3441b", lw=0.9, label="one release (hb)")
    ax.set_xlabel("bin")
    ax.set_ylabel("count")
    ax.set_title(f"Before and after: hb at epsilon = {eps_show:g}")
    ax.legend(fontsize=8)
    half = (hi - lo) / 2
    every = max(1, n_bins // 16)
    t2 = Table(["bin", "true", "published", "5 %", "95 %"],
               [[int(i), int(x[i]), round(float(rel.value[i]), 1), round(float(lo[i]), 1),
                 round(float(hi[i]), 1)] for i in range(0, n_bins, every)],
               caption=f"every {every}th bin; band from {reps} releases")
    f2 = figure_from_matplotlib(
        fig, "A histogram before and after privatisation",
        f"Average half-width of the 5-95 % band: {half.mean():.1f} records per bin. "
        + negative_sentence(np.vstack([rel.value, draws])), t2)

    results = {f"best method at eps={e:g}": r.card() for e, r in rankings.items()}
    eps_card = 1.0 if 1.0 in epsilons else epsilons[-1]
    i_card = epsilons.index(eps_card)
    return Section(
        id="histograms",
        title="DP histograms: how accurate are range queries at a given epsilon?",
        guarantee=guarantee_text(),
        parameters={"bins": n_bins, "records": scale, "epsilons": epsilons, "trials": trials,
                    "workload": f"{n_queries:,} random ranges",
                    "structurefirst count bound": "number of records (public in this demo)",
                    "neighbouring datasets": "differ by one record",
                    "ranking test": f"{rankings[epsilons[0]].test}, alpha = "
                                    f"{rankings[epsilons[0]].alpha:g}"},
        results={**results,
                 f"hb band half-width (records, eps={eps_show:g})": float(half.mean()),
                 **{f"scaled error {m} at eps={eps_card:g}": cis[m][i_card].text("{:.3g}")
                    for m in METHODS}},
        figures=[f1, f2],
        tables=[best_table],
        how_to=HOW_TO,
    )
