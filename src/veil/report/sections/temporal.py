"""Report section: location release under temporal correlations (PIM vs LM).

Runs on synthetic data generated from the demo's generator (no shared data): a 20 x 20
grid over a small box, a Markov model learned from random walks with inertia, and one
test trajectory released repeatedly by PIM and by the L1 Laplace baseline.
"""

from __future__ import annotations

import numpy as np

from ..core import DemoContext, Section, Table, figure_from_matplotlib
from ..stats import count_phrase, mean_ci, plural, rank_methods

__all__ = ["build"]

GUARANTEE_TEMPLATE = """\
A user shares a location at every timestamp. An adversary knows a public Markov model of how
people move and filters the released points with a hidden Markov model. At each timestamp veil
computes the adversary's prior over grid cells, keeps the **delta-location set** (the most
probable cells holding 1 - delta of the prior mass) and releases a point that is
**epsilon-differentially private among the cells of that set**: whichever of those cells the
user is in, each released point is at most e^epsilon times more or less likely. If the true
cell has drifted out of the set, a surrogate (the nearest cell of the set) is released instead,
which reveals nothing extra but costs accuracy. The **Planar Isotropic Mechanism** shapes its
noise to the set (K-norm mechanism on the sensitivity hull, an exact sampler); the **Laplace
baseline** uses the L1 diameter of the set, i.e. a diamond-shaped noise that is wider than
needed.

Not protected: cells outside the delta-set (probability delta under the prior) are only
protected through their surrogate; the guarantee is per timestamp and composes over time
(T releases spend T x epsilon); it is relative to the public model and grid. Released points
are rounded to a public {resolution:g} m lattice.
"""

HOW_TO = """\
veil trajectory model ../shared/data/geolife/geolife_long_10_MB --grid beijing -o model.npz
veil trajectory release track.csv --epsilon 1 --delta 0.01 --mechanism pim --model model.npz -o released.csv
VEIL_SHARED=../shared python benchmarks/temporal.py     # PIM vs LM on GeoLife
"""


def _synthetic(ctx: DemoContext, n_walks: int, length: int):
    from ...geo.temporal import MarkovModel, TemporalGrid

    grid = TemporalGrid(lon_min=116.30, lat_min=39.88, lon_max=116.42, lat_max=39.97,
                        nx=20, ny=20)
    rng = ctx.rng
    moves = np.array([[0, 0], [0, 1], [1, 0], [0, -1], [-1, 0]])

    def walk(n):
        r, c = rng.integers(3, 17, size=2)
        d = moves[rng.integers(1, 5)]
        out = []
        for _ in range(n):
            u = rng.random()
            if u < 0.04:
                d = moves[rng.integers(1, 5)]        # turn
            step = d if u > 0.8 else moves[0]         # mostly stay (frequent GPS fixes)
            r = int(np.clip(r + step[0], 0, 19))
            c = int(np.clip(c + step[1], 0, 19))
            out.append(r * 20 + c)
        return np.array(out)

    model = MarkovModel.from_trajectories([walk(200) for _ in range(n_walks)], grid=grid,
                                          meta={"kind": "synthetic"})
    return grid, model, walk(length)


def compare_sentence(rows: list[list]) -> str:
    """How PIM compares with LM over the table's rows ``[t, pim, lm, ...]`` (computed)."""
    n = len(rows)
    below = sum(1 for r in rows if r[1] < r[2])
    if below == n:
        return f"PIM is below LM at all {n} timestamps shown."
    if below == 0:
        return f"PIM is above or equal to LM at all {n} timestamps shown."
    return f"PIM is below LM at {below} of the {n} timestamps shown."


def baseline_sentence(pim: float, lm: float, base: float, width_m: float) -> str:
    """PIM and LM against the no-information baseline and the map's size (computed)."""
    parts = []
    for name, v in (("PIM", pim), ("LM", lm)):
        rel = "below" if v < base else "above"
        parts.append(f"{name}'s mean error {v:,.0f} m is {rel} the no-information baseline "
                     f"({base:,.0f} m)")
    s = "; ".join(parts) + "."
    if max(pim, lm) > width_m:
        s += (f" A mean error above the grid's width ({width_m:,.0f} m) means the noise is "
              f"larger than the map.")
    return s


def growth_sentence(mean_error, first: int) -> str:
    """Whether the error grows over the first timestamps (computed from the mean curve).

    Examples
    --------
    >>> growth_sentence([100.0, 200.0, 400.0, 400.0, 420.0, 390.0], 2)
    'The error grows over the first steps (150 m on average over the first 2 timestamps, 402 m after):'
    >>> growth_sentence([400.0, 380.0, 400.0, 410.0], 2)
    'The error does not grow over the first steps here (390 m on average over the first 2 timestamps, 405 m after).'
    """
    v = np.asarray(mean_error, dtype=float)
    a, b = float(v[:first].mean()), float(v[first:].mean())
    nums = f"{a:,.0f} m on average over the first {first} timestamps, {b:,.0f} m after"
    if b > 1.1 * a:
        return f"The error grows over the first steps ({nums}):"
    return f"The error does not grow over the first steps here ({nums})."


def view_sentence(released_km, lo, hi) -> str:
    """How many released points fall outside the plotted view (computed).

    Examples
    --------
    >>> view_sentence(np.array([[0.5, 0.5], [3.0, 0.5]]), np.array([0.0, 0.0]), np.array([1.0, 1.0]))
    '1 of the 2 released points falls outside the view and is not shown.'
    """
    z = np.asarray(released_km)
    out = int((~((z >= lo) & (z <= hi)).all(axis=1)).sum())
    n = len(z)
    if out == 0:
        return f"All {n:,} released points are inside the view."
    verb = "falls" if out == 1 else "fall"
    pron = "is" if out == 1 else "are"
    return f"{count_phrase(out, n).capitalize()} released points {verb} outside the view and " \
           f"{pron} not shown."


def build(ctx: DemoContext) -> Section:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...geo.temporal import release_trajectory

    steps = 60 if ctx.quick else 150
    reps = 3 if ctx.quick else 10
    eps, delta = 1.0, 0.01
    ctx.progress("temporal: synthetic grid, Markov model and trajectory")
    grid, model, truth = _synthetic(ctx, 100 if ctx.quick else 300, steps)
    p0 = np.zeros(grid.n_cells)
    p0[truth[0]] = 1.0  # the starting cell is assumed public in this demo
    res = {}
    for mech in ("pim", "lm"):
        ctx.progress(f"temporal: {reps} releases by {mech}")
        runs = [release_trajectory(truth, model=model, epsilon=eps, delta=delta,
                                   mechanism=mech, initial=p0, rng=ctx.rng)
                for _ in range(reps)]
        res[mech] = runs
    err = {m: np.array([r.errors_m(grid) for r in runs]) for m, runs in res.items()}
    # the no-information baseline: always report the grid centre (the best constant guess
    # under the uniform public prior); a mechanism above it tells an analyst less than nothing
    centre = grid.centers_m.mean(axis=0)
    base = np.hypot(*(grid.centers_m[truth] - centre).T)
    drift = {m: float(np.mean([r.drift_ratio for r in runs])) for m, runs in res.items()}
    size = {m: float(np.median(np.concatenate([r.set_sizes for r in runs])))
            for m, runs in res.items()}

    c = grid.centers_m / 1000
    view, views_out = {}, {}
    fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharex=True, sharey=True)
    for ax, m, col in zip(axes, ("pim", "lm"), ("#1f77b4", "#d62728")):
        z = res[m][0].released_m / 1000
        ax.plot(c[truth, 0], c[truth, 1], "-", color="k", lw=1.2, label="true (cell centres)")
        ax.plot(z[:, 0], z[:, 1], ".", color=col, ms=4, alpha=0.7, label=f"released ({m.upper()})")
        ax.set_title(f"{m.upper()}: eps={eps}, delta={delta}")
        lo, hi = c.min(axis=0), c.max(axis=0)
        span = hi - lo
        view[m] = (lo - span, hi + span)
        views_out[m] = view_sentence(z, *view[m])
        ax.set_xlim(view[m][0][0], view[m][1][0])
        ax.set_ylim(view[m][0][1], view[m][1][1])
        ax.set_xlabel("x (km)")
        ax.legend(fontsize=7, loc="upper right")
    axes[0].set_ylabel("y (km)")
    axes[1].tick_params(labelleft=True)  # each panel readable on its own
    zp, zl = res["pim"][0].released_m / 1000, res["lm"][0].released_m / 1000
    every = max(1, steps // 15)
    pts = Table(columns=["timestamp", "true x (km)", "true y (km)", "PIM x", "PIM y", "LM x",
                         "LM y"],
                rows=[[int(i), *(round(float(v), 3) for v in (c[truth[i], 0], c[truth[i], 1],
                                                               zp[i, 0], zp[i, 1], zl[i, 0],
                                                               zl[i, 1]))]
                      for i in range(0, steps, every)])
    f1 = figure_from_matplotlib(
        fig, "A trajectory and its released points", data=pts,
        caption="One release of the same synthetic trajectory by each mechanism (view: the "
                "grid box +/- its size). "
                + " ".join(f"{m.upper()}: {views_out[m]}" for m in ("pim", "lm")))

    t = np.arange(steps)
    fig, ax = plt.subplots(figsize=(8, 3.4))
    for m, col in (("pim", "#1f77b4"), ("lm", "#d62728")):
        mean, lo_, hi_ = mean_ci(err[m], axis=0)
        ax.fill_between(t, np.maximum(lo_, 0), hi_, color=col, alpha=0.18, lw=0,
                        label=f"{m.upper()} 95% CI")
        ax.plot(t, mean, color=col, label=f"{m.upper()} (mean of {reps})")
    ax.plot(t, base, color="grey", ls=":", label="no information: always the grid centre")
    ax.set_xlabel("timestamp")
    ax.set_ylabel("distance to true cell (m)")
    ax.set_title("Mean error per timestamp")
    ax.legend(fontsize=8)
    rows = [[int(i), round(float(err["pim"][:, i].mean()), 1),
             round(float(err["lm"][:, i].mean()), 1), round(float(base[i]), 1)]
            for i in range(steps)]
    data = Table(columns=["timestamp", "PIM mean error (m)", "LM mean error (m)",
                          "grid-centre baseline (m)"], rows=rows)
    first = max(2, steps // 10)
    grows = growth_sentence([(r[1] + r[2]) / 2 for r in rows], first)
    if grows.endswith(":"):
        grows += (" after each noisy release the adversary's prior spreads, so the "
                  "delta-location set, its sensitivity hull and the noise widen until prior and "
                  "releases balance. With epsilon per step this is the price of protecting every "
                  "timestamp.")
    f2 = figure_from_matplotlib(fig, "Error over time, PIM vs LM",
                                "Euclidean distance between released point and true cell "
                                f"centre, averaged over {plural(reps, 'repetition')} (bands: 95% "
                                f"confidence intervals of the mean). {grows} "
                                + compare_sentence(rows), data=data)
    width_m = float(np.ptp(grid.centers_m[:, 0]) + grid.cell_size_m[0])
    # one mean error per repetition: the unit of the interval and of the test
    per_rep = {m: err[m].mean(axis=1) for m in ("pim", "lm")}
    ranking = rank_methods({"PIM": per_rep["pim"], "LM": per_rep["lm"]}, unit="repetition")
    iv = {m: mean_ci(per_rep[m]) for m in ("pim", "lm")}
    table = Table(columns=["mechanism", "mean error (m)", "median error (m)", "drift ratio",
                           "median delta-set size", "mean error of each repetition (m)"],
                  rows=[[m.upper(), round(float(err[m].mean()), 1),
                         round(float(np.median(err[m])), 1), round(drift[m], 4), size[m],
                         [float(v) for v in per_rep[m]]]
                        for m in ("pim", "lm")]
                  + [["no information (grid centre)", round(float(base.mean()), 1),
                      round(float(np.median(base)), 1), "", "", ""]],
                  caption=f"{reps} releases of a {steps}-step synthetic trajectory, 20 x 20 "
                          f"grid {width_m / 1000:.1f} km wide. "
                          + baseline_sentence(float(err["pim"].mean()), float(err["lm"].mean()),
                                              float(base.mean()), width_m)
                          + " Over the repetitions, " + ranking.sentence("{:,.0f}") + ".")
    return Section(
        id="temporal", title="Location release under temporal correlations (PIM vs LM)",
        guarantee=GUARANTEE_TEMPLATE.format(
            resolution=res["pim"][0].release.parameters["resolution_m"]),
        parameters={"epsilon_per_step": eps, "delta": delta, "grid": "20 x 20 synthetic",
                    "steps": steps, "repetitions": reps, "initial": "start cell public"},
        results={"pim_mean_error_m": float(err["pim"].mean()),
                 "baseline_error_m": float(base.mean()),
                 "lm_mean_error_m": float(err["lm"].mean()),
                 "pim mean error, 95% CI over repetitions": iv["pim"].text("{:,.0f}", "m"),
                 "lm mean error, 95% CI over repetitions": iv["lm"].text("{:,.0f}", "m"),
                 "lower error (PIM vs LM)": ranking.card("{:,.0f}"),
                 "lm_over_pim_error": float(err["lm"].mean() / err["pim"].mean()),
                 "pim_drift_ratio": drift["pim"], "lm_drift_ratio": drift["lm"]},
        figures=[f1, f2], tables=[table], how_to=HOW_TO)
