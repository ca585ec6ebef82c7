"""Report section: DP density maps of locations on the synthetic city.

The people of veil's fictional city move for a day (GPS-like fixes every 5 minutes); their
fixes are written to a Parquet file and go through the whole pipeline: per-person bounding and
grid counts in DuckDB, then a mechanism. Two figures, each with the numbers behind it:

* the true map and the published map side by side (same colour scale), one release with
  ``auto`` at epsilon 1;
* rectangle-query error against epsilon for the mechanisms (DPBench scaled error on random
  rectangles, mean over runs).
"""

from __future__ import annotations

import numpy as np

from ..core import DemoContext, Section, Table, figure_from_matplotlib
from ..stats import mean_ci, plural, rank_methods
from .histograms import winners_sentence

__all__ = ["build", "auto_sentence", "busiest_sentence"]

GUARANTEE = """\
Each published map is **epsilon-differentially private for one person**: every person's
points (their check-ins or GPS fixes) are bounded first -- at most `max_points` of them are kept,
chosen uniformly at random -- so adding or removing any one person, with all their points,
changes the probability of any published map by at most a factor e^epsilon. The grid and its
bounding box are public and fixed in advance (a named region here); veil refuses to take the box
from the data unless asked (`--bbox-from-data`, with a warning), because the extreme points can
reveal individuals.

What it does not protect: where the crowd is (the density is what is published), and a person
with more than `max_points` points is represented by a sample of them. Repeated releases add up
(two maps at epsilon each cost 2 epsilon). Cells with few points are noisy by design; the
mechanisms below differ in how they share the noise across cells.
"""

HOW_TO = """\
# a 64 x 64 map of GPS fixes, one person protected (at most 20 points each), epsilon 1
veil map publish pings.parquet --user-column user --max-points 20 --region port-veil --grid 64x64 \\
    --epsilon 1 -o map.parquet --png map.png --geojson map.geojson
# rectangle queries answered from the published map (no privacy cost)
veil map query map.parquet --bbox 43.99,-32.02,44.01,-31.98
"""

METHODS = ("identity", "ug", "ag", "privtree", "hdmm", "auto")


def auto_sentence(chosen: dict[float, list[str]], ratio: dict[float, float]) -> str:
    """What ``auto`` picked at each epsilon (over the runs) and how close it came to the best.

    Examples
    --------
    >>> auto_sentence({0.1: ["ug", "ug"], 1.0: ["ag", "ug"]}, {0.1: 1.5, 1.0: 0.9})
    'auto picked ug at eps=0.1, ag (1 of 2 runs) and ug (1 of 2 runs) at eps=1; its mean error is between 0.90 and 1.50 times the lowest-mean mechanism\'s.'
    """
    from collections import Counter

    parts = []
    for e, picks in chosen.items():
        c = Counter(picks)
        if len(c) == 1:
            parts.append(f"{picks[0]} at eps={e:g}")
        else:
            parts.append(" and ".join(f"{m} ({n} of {len(picks)} runs)"
                                      for m, n in sorted(c.items())) + f" at eps={e:g}")
    lo, hi = min(ratio.values()), max(ratio.values())
    return (f"auto picked {', '.join(parts)}; its mean error is between {lo:.2f} and "
            f"{hi:.2f} times the lowest-mean mechanism's.")


def busiest_sentence(true: np.ndarray, published: np.ndarray, n: int) -> str:
    """How the busiest cells came out: their true and published totals.

    Examples
    --------
    >>> busiest_sentence(np.array([[10, 1], [5, 0]]), np.array([[9.0, 2.0], [6.5, -1.0]]), 2)
    'The 2 busiest cells hold 15 points (of 16), published as 15.5.'
    """
    t = np.asarray(true).ravel()
    big = np.argsort(t, kind="stable")[::-1][:n]
    return (f"The {n} busiest cells hold {int(t[big].sum()):,} points (of {int(t.sum()):,}), "
            f"published as {float(np.asarray(published).ravel()[big].sum()):,.1f}.")


def build(ctx: DemoContext) -> Section:
    """Build the maps section (a few seconds; ``ctx.quick`` uses smaller sizes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...datasets.synthetic import synthetic_city, synthetic_trajectories
    from ...io import write_table
    from ...maps import MapGrid, grid_counts, publish
    from ...maps.evaluation import random_rectangles, rectangle_answers
    from ...maps.output import png_bytes

    users, steps, side = (400, 48, 32) if ctx.quick else (1000, 288, 64)
    # enough independent releases for the ranking test to separate mechanisms that differ
    runs = 6 if ctx.quick else 12
    n_queries = 1000
    max_points = 20 if ctx.quick else 50
    epsilons = [0.1, 0.5, 1.0, 5.0] if ctx.quick else [0.1, 0.3, 1.0, 3.0, 10.0]
    ctx.progress(f"maps: {users} people x {steps} fixes")
    city = synthetic_city(rng=ctx.rng)
    tr = synthetic_trajectories(city, n_users=users, n_steps=steps, rng=ctx.rng)
    path = ctx.outdir / "maps_pings.parquet"
    write_table({"user": tr.user, "lat": tr.lat, "lon": tr.lon}, path)
    grid = MapGrid.from_region("port-veil", side, side)
    try:
        pc = grid_counts(path, grid, user="user", max_points=max_points, rng=ctx.rng)
    finally:
        path.unlink(missing_ok=True)
    x = pc.counts
    s = pc.sensitivity
    n_points = int(x.sum())
    q = random_rectangles(side, side, size=n_queries, rng=ctx.rng)
    true_ans = rectangle_answers(q, x)

    ctx.progress(f"maps: {len(METHODS)} mechanisms x {len(epsilons)} epsilons x {runs} runs")
    samples: dict[str, list[np.ndarray]] = {m: [] for m in METHODS}
    chosen: dict[float, list[str]] = {}
    for eps in epsilons:
        for m in METHODS:
            e = []
            for _ in range(runs):
                rel = publish(x, epsilon=eps, method=m, sensitivity=s, rng=ctx.rng)
                e.append(float(np.mean(np.abs(true_ans - rectangle_answers(q, rel.value))))
                         / n_points)
                if m == "auto":
                    chosen.setdefault(eps, []).append(rel.parameters["chosen"])
            samples[m].append(np.array(e))
    err = {m: [float(a.mean()) for a in samples[m]] for m in METHODS}
    mechanisms = [m for m in METHODS if m != "auto"]
    rankings = {e: rank_methods({m: samples[m][i] for m in mechanisms}, unit="release")
                for i, e in enumerate(epsilons)}

    # figure 1: true vs private, same colour scale
    rel = publish(x, epsilon=1.0, method="auto", sensitivity=s, rng=ctx.rng)
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.6))
    vmax = float(max(x.max(), np.clip(rel.value, 0, None).max()))
    png_bytes(x, grid, title=f"true counts ({n_points:,} points after the bound)", ax=axes[0])
    png_bytes(rel.value, grid, title=f"published: auto -> {rel.parameters['chosen']}, "
              f"epsilon 1, one person protected", ax=axes[1])
    for ax in axes:
        ax.images[0].set_clim(0, vmax)
    axes[1].set_ylabel("")
    fig.colorbar(axes[1].images[0], ax=axes, shrink=0.8, label="points per cell")
    n_big = 8
    big = np.argsort(x.ravel(), kind="stable")[::-1][:n_big]
    t1 = Table(["row", "col", "true", "published"],
               [[int(i // side), int(i % side), int(x.ravel()[i]),
                 round(float(rel.value.ravel()[i]), 1)] for i in big],
               caption=f"the {n_big} busiest cells")
    mae = float(np.mean(np.abs(rel.value - x)))
    f1 = figure_from_matplotlib(
        fig, "The true map and the published map",
        f"{side} x {side} cells over Port Veil; at most {max_points} fixes per person "
        f"(sampled uniformly in DuckDB). " + busiest_sentence(x, rel.value, n_big)
        + f" Mean absolute error per cell {mae:.2f} points; the colour scale is the same in "
        "both panels (negative estimates shown as 0).", t1)

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    cut = 0
    for k, m in enumerate(METHODS):
        mean, lo, hi = mean_ci(np.stack(samples[m]), axis=1)
        cut += int((lo < mean / 5).sum())
        lo = np.maximum(lo, mean / 5)  # a log axis cannot show an interval reaching zero
        xs = np.asarray(epsilons) * (1 + 0.025 * (k - (len(METHODS) - 1) / 2))
        ax.errorbar(xs, mean, yerr=[mean - lo, hi - mean], marker="o", ms=4, capsize=2.5,
                    label=m, lw=2.2 if m == "auto" else 1.2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("epsilon (per person)")
    ax.set_ylabel("scaled error (mean |rectangle error| / points)")
    ax.set_title(f"Random rectangles, {side} x {side} map, {n_points:,} points")
    ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
    ax.minorticks_off()
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    cis = {m: [mean_ci(a) for a in samples[m]] for m in METHODS}
    t2 = Table(["method", "epsilon", "mean scaled error", "95% CI low", "95% CI high",
                "scaled error of each release"],
               [[m, e, float(f"{c.mean:.4g}"), float(f"{c.low:.4g}"), float(f"{c.high:.4g}"),
                 [float(v) for v in samples[m][i]]]
                for m in METHODS for i, (e, c) in enumerate(zip(epsilons, cis[m]))],
               caption=f"mean over {plural(runs, 'release')} of {n_queries:,} random "
                       "rectangles, with 95% t-intervals")
    ratio = {e: err["auto"][i] / err[rankings[e].best][i] for i, e in enumerate(epsilons)}
    f2 = figure_from_matplotlib(
        fig, "Rectangle-query error against epsilon",
        f"Error bars: 95% confidence intervals over {plural(runs, 'release')}"
        + (f" ({plural(cut, 'bar')} reaching below a fifth of {'its' if cut == 1 else 'their'} "
           f"mean {'is' if cut == 1 else 'are'} cut there: the table has the full interval). "
           if cut else ". ")
        + winners_sentence(rankings) + " " + auto_sentence(chosen, ratio),
        t2)
    best_table = Table(
        ["epsilon", "lowest mean", "scaled error (95% CI)", "verdict"],
        [[e, r.best, r.intervals[r.best].text("{:.3g}"), r.sentence()]
         for e, r in rankings.items()],
        caption=f"Which mechanism is best (auto left out: it picks one of them)? The lowest "
                f"mean is named best only when a {rankings[epsilons[0]].test} at alpha = "
                f"{rankings[epsilons[0]].alpha:g} puts it below every other mechanism; "
                f"otherwise no significant difference is reported.")
    return Section(
        id="maps",
        title="DP maps: where are people, without revealing any one person?",
        guarantee=GUARANTEE,
        parameters={"grid": f"{side} x {side} over Port Veil", "people": users,
                    "fixes per person": steps, "max points per person": max_points,
                    "epsilons": epsilons, "runs": runs,
                    "workload": f"{n_queries:,} random rectangles",
                    "neighbouring datasets": "differ by one person (all their points)",
                    "ranking test": f"{rankings[epsilons[0]].test}, alpha = "
                                    f"{rankings[epsilons[0]].alpha:g}"},
        results={"points after the bound": n_points,
                 **{f"best method at eps={e:g}": r.card() for e, r in rankings.items()},
                 **{f"auto / best at eps={e:g}": ratio[e] for e in epsilons},
                 "mean abs error per cell (auto, eps=1)": mae},
        figures=[f1, f2],
        tables=[best_table],
        how_to=HOW_TO,
    )
