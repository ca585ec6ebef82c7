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

__all__ = ["build"]

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
veil map publish pings.parquet --user user --max-points 20 --region port-veil --grid 64x64 \\
    --epsilon 1 -o map.parquet --png map.png --geojson map.geojson
# rectangle queries answered from the published map (no privacy cost)
veil map query map.parquet --bbox 43.99,-32.02,44.01,-31.98
"""

METHODS = ("identity", "ug", "ag", "privtree", "hdmm", "auto")


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
    runs = 2 if ctx.quick else 5
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
    q = random_rectangles(side, side, size=1000, rng=ctx.rng)
    true_ans = rectangle_answers(q, x)

    ctx.progress(f"maps: {len(METHODS)} mechanisms x {len(epsilons)} epsilons")
    err = {m: [] for m in METHODS}
    chosen = {}
    for eps in epsilons:
        for m in METHODS:
            e = []
            for _ in range(runs):
                rel = publish(x, epsilon=eps, method=m, sensitivity=s, rng=ctx.rng)
                e.append(float(np.mean(np.abs(true_ans - rectangle_answers(q, rel.value))))
                         / n_points)
                if m == "auto":
                    chosen[eps] = rel.parameters["chosen"]
            err[m].append(float(np.mean(e)))

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
    big = np.argsort(x.ravel())[::-1][:8]
    t1 = Table(["row", "col", "true", "published"],
               [[int(i // side), int(i % side), int(x.ravel()[i]),
                 round(float(rel.value.ravel()[i]), 1)] for i in big],
               caption="the 8 busiest cells")
    mae = float(np.mean(np.abs(rel.value - x)))
    f1 = figure_from_matplotlib(
        fig, "The true map and the published map",
        f"{side} x {side} cells over Port Veil; at most {max_points} fixes per person "
        f"(sampled uniformly in DuckDB). Mean absolute error per cell {mae:.2f} points; the "
        "colour scale is the same in both panels (negative estimates shown as 0).", t1)

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for m in METHODS:
        ax.loglog(epsilons, err[m], marker="o", label=m, lw=2.2 if m == "auto" else 1.2)
    ax.set_xlabel("epsilon (per person)")
    ax.set_ylabel("scaled error (mean |rectangle error| / points)")
    ax.set_title(f"Random rectangles, {side} x {side} map, {n_points:,} points")
    ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
    ax.minorticks_off()
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    t2 = Table(["method", *[f"eps={e:g}" for e in epsilons]],
               [[m, *[float(f"{v:.4g}") for v in err[m]]] for m in METHODS],
               caption=f"mean over {runs} releases of 1,000 random rectangles")
    best = {e: min(METHODS[:-1], key=lambda m, i=i: err[m][i]) for i, e in enumerate(epsilons)}
    ratio = {e: err["auto"][i] / err[best[e]][i] for i, e in enumerate(epsilons)}
    f2 = figure_from_matplotlib(
        fig, "Rectangle-query error against epsilon",
        "Lowest error in this run: " + ", ".join(f"{best[e]} at eps={e:g}" for e in epsilons)
        + "; auto picked " + ", ".join(f"{chosen[e]} at eps={e:g}" for e in epsilons)
        + f" (auto / best between {min(ratio.values()):.2f} and {max(ratio.values()):.2f}).",
        t2)
    return Section(
        id="maps",
        title="DP maps: where are people, without revealing any one person?",
        guarantee=GUARANTEE,
        parameters={"grid": f"{side} x {side} over Port Veil", "people": users,
                    "fixes per person": steps, "max points per person": max_points,
                    "epsilons": epsilons, "runs": runs, "workload": "1,000 random rectangles",
                    "neighbouring datasets": "differ by one person (all their points)"},
        results={"points after the bound": n_points,
                 **{f"best method at eps={e:g}": best[e] for e in epsilons},
                 **{f"auto / best at eps={e:g}": ratio[e] for e in epsilons},
                 "mean abs error per cell (auto, eps=1)": mae},
        figures=[f1, f2],
        how_to=HOW_TO,
    )
