"""Report section: geo-indistinguishability and optimal noise functions.

Synthetic points in a public 6 x 6 km area (a mixture of "home" clusters) are
obfuscated with planar Laplace; the figures show the true vs reported points,
the radial noise densities of planar Laplace and the (D, eps) optimum, and the
expected loss against eps with the Bayesian adversary's remaining error.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import DemoContext, Section, Table, figure_from_matplotlib
from ..stats import mean_ci

__all__ = ["build"]

GUARANTEE_TEMPLATE = """\
**Geo-indistinguishability** (epsilon per metre): for any two places d metres apart, every reported
location is at most e^(epsilon d) times more likely from one than from the other. {example}
Each report spends the budget again; reports of the same place at different times add up (use the
consistent obfuscator, which repeats the same output within a time window).

**l-privacy** generalizes the bound to any non-decreasing l(d); (D, eps)-location privacy bounds the
ratio by e^eps within D metres and says nothing beyond. For a continuous region, circular noise
functions are enough, and among them planar Laplace is optimal for geo-indistinguishability for
every increasing loss (ElSalamouny & Gambs); for (D, eps) the optimum is a staircase whose first
step depends on the loss. Noise is added in a local metric plane (metres), never in raw degrees.
"""


def geo_example(eps: float, ratio: float = 4.0) -> str:
    """What epsilon per metre protects: the radius within which the ratio stays below ``ratio``.

    Examples
    --------
    >>> geo_example(math.log(4) / 200)
    'With epsilon = 0.00693 per metre, someone at home is hidden among neighbours within 200 m (likelihood ratio <= 4), while places 2,000 m apart differ by up to 1e+06: it protects the *exact* position, not the district.'
    """
    r = math.log(ratio) / eps
    far = 10 * r
    return (f"With epsilon = {eps:.3g} per metre, someone at home is hidden among neighbours "
            f"within {r:,.0f} m (likelihood ratio <= {ratio:g}), while places {far:,.0f} m apart "
            f"differ by up to {math.exp(eps * far):.2g}: it protects the *exact* position, not "
            f"the district.")


def guarantee_text(eps: float) -> str:
    """The guarantee paragraph with the example computed at ``eps`` (per metre)."""
    return GUARANTEE_TEMPLATE.format(example=geo_example(eps))


def staircase_sentence(noise, D: float) -> str:
    """The shape of a (D, eps) optimum, measured from its radial profile.

    Examples
    --------
    >>> from veil.geo.lprivacy import TightNoise, d_epsilon_privacy
    >>> staircase_sentence(TightNoise(d_epsilon_privacy(100.0, 1.0), core=50.0), 100.0)
    'The (D, eps) optimum is flat for its first 50 m, then drops by a factor 0.368 (e^-1) every 100 m.'
    """
    c = float(getattr(noise, "core", 0.0))
    r0, r1 = noise.radial([c + 0.5 * D, c + 1.5 * D])
    ratio = float(r1 / r0)
    return (f"The (D, eps) optimum is flat for its first {c:,.0f} m, then drops by a factor "
            f"{ratio:.3g} (e^{math.log(ratio):.3g}) every {D:,.0f} m.")


def trend_sentence(epsilons, user_loss, adversary, prior_only: float) -> str:
    """How both sides change with epsilon, computed from the columns of the figure.

    Examples
    --------
    >>> trend_sentence([0.002, 0.02], [1000.0, 100.0], [800.0, 150.0], 900.0)
    'From epsilon 0.002 to 0.02 the expected distance of the report falls from 1,000 to 100 m, and the adversary error after remapping falls from 800 to 150 m (her error without any report: 900 m).'
    >>> trend_sentence([0.002, 0.01, 0.02], [1000.0, 90.0, 100.0], [800.0, 700.0, 150.0], 900.0)
    'From epsilon 0.002 to 0.02 the expected distance of the report changes from 1,000 to 100 m, not monotonically, and the adversary error after remapping falls from 800 to 150 m (her error without any report: 900 m).'
    """
    def how(v, what):
        v = np.asarray(v, dtype=float)
        d = np.diff(v)
        word = ("falls" if (d <= 0).all() else "rises" if (d >= 0).all() else "changes")
        tail = "" if word != "changes" else ", not monotonically"
        return f"{what} {word} from {v[0]:,.0f} to {v[-1]:,.0f} m{tail}"

    return (f"From epsilon {epsilons[0]:.3g} to {epsilons[-1]:.3g} "
            + how(user_loss, "the expected distance of the report") + ", and "
            + how(adversary, "the adversary error after remapping")
            + f" (her error without any report: {prior_only:,.0f} m).")


HOW_TO = """\
# obfuscate a CSV of points (columns lat, lon), epsilon per metre
veil location obfuscate points.csv --epsilon 0.0069 -o noisy.csv
# snap to a public 50 m grid inside a public box; the sidecar records eps'
veil location obfuscate points.csv --epsilon 0.0069 --grid-step 50 --region 39.8,116.2,40.0,116.5 -o noisy.parquet
# the optimal noise for (D, eps)-location privacy and a loss
veil location noise --privacy D-eps --radius 200 --epsilon 1 --loss distance
"""


def _points(ctx: DemoContext, n: int) -> np.ndarray:
    centres = ctx.rng.uniform(-2000, 2000, size=(12, 2))
    which = ctx.rng.integers(0, len(centres), n)
    return centres[which] + ctx.rng.normal(0, 150, size=(n, 2))


def build(ctx: DemoContext) -> Section:
    """Build the geo section (well under a second with ``ctx.quick``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...geo.geometry import LocalProjection
    from ...geo.geoind import planar_laplace
    from ...geo.lprivacy import (PlanarLaplace, d_epsilon_privacy, distance_loss, expected_loss,
                                 optimal_noise)
    from ...geo.metrics import adversary_error, distance_errors, error_summary

    n = 300 if ctx.quick else 3000
    eps = math.log(4) / 200
    proj = LocalProjection(39.9, 116.4)          # a public reference point
    xy = _points(ctx, n)
    ll = proj.points_to_latlon(xy)
    ctx.progress(f"planar Laplace on {n} synthetic points")
    rel = planar_laplace(ll, epsilon=eps, rng=ctx.rng)
    rep = proj.points_to_plane(rel.value)
    dists = distance_errors(ll, rel.value)
    err = error_summary(dists)
    mean_iv = mean_ci(dists)

    # figure 1: map-like scatter
    fig, ax = plt.subplots(figsize=(6.0, 6.0))
    from matplotlib.collections import LineCollection

    k = min(n, 300)
    ax.add_collection(LineCollection(np.stack((xy[:k], rep[:k]), axis=1), colors="#cccccc",
                                     linewidths=0.5, zorder=1))
    ax.scatter(xy[:k, 0], xy[:k, 1], s=8, color="#1f5f99", label="true", zorder=2)
    ax.scatter(rep[:k, 0], rep[:k, 1], s=8, color="#d95f02", label="reported", zorder=3)
    ax.set_aspect("equal")
    ax.set_xlabel("east (m)")
    ax.set_ylabel("north (m)")
    ax.set_title(f"{k} true points and their reports")
    ax.legend(frameon=False)
    disp = np.hypot(*(rep - xy).T)
    t1 = Table(["true x (m)", "true y (m)", "reported x (m)", "reported y (m)", "distance (m)"],
               [[float(a), float(b), float(c), float(d), float(e)] for a, b, c, d, e in
                zip(xy[:k, 0], xy[:k, 1], rep[:k, 0], rep[:k, 1], disp[:k])],
               caption=f"the {k} plotted points (synthetic)")
    f1 = figure_from_matplotlib(
        fig, f"True vs reported locations (planar Laplace, eps = {eps:.3g} per metre)",
        f"Mean displacement {mean_iv.text('{:.0f}', 'm')}; theory 2/eps = {2 / eps:.0f} m; 90% "
        f"of reports within {err['q90']:.0f} m. Grey lines join each of the {k} plotted true "
        "points to its report.", t1)

    # figure 2: radial densities
    D = 200.0
    l_d = d_epsilon_privacy(D, 1.0)
    opt_d = optimal_noise(l_d, distance_loss(), cores=np.linspace(0, 2 * D, 9 if ctx.quick else 21),
                          slopes=[1.0])
    r = np.linspace(0, 1500, 600)
    pl = PlanarLaplace(eps)
    fig, ax = plt.subplots(figsize=(7.0, 3.4))
    ax.plot(r, pl.radius_pdf(r), label=f"planar Laplace eps={eps:.4f}/m")
    ax.plot(r, opt_d.noise.radius_pdf(r), label=f"(D={D:.0f} m, eps=1) optimum: staircase, "
                                                f"first step {opt_d.core:.0f} m")
    ax.set_xlabel("noise length r (m)")
    ax.set_ylabel("density of |noise|")
    ax.set_title("Length of the noise: two optimal mechanisms")
    ax.legend(frameon=False, fontsize=8)
    rr = r[::20]
    t2 = Table(["r (m)", "planar Laplace density", "(D, eps) optimum density"],
               [[float(a), float(b), float(c)] for a, b, c in
                zip(rr, pl.radius_pdf(rr), opt_d.noise.radius_pdf(rr))],
               caption="densities of the noise length (per metre)")
    f2 = figure_from_matplotlib(
        fig, "Radial densities of two optimal noise functions",
        "Density of the noise length 2 pi r R(r) / Z. Planar Laplace is the optimum for "
        "geo-indistinguishability. " + staircase_sentence(opt_d.noise, D), t2)

    # figure 3: expected loss vs eps, with the Bayesian adversary's remaining error
    epss = np.geomspace(0.002, 0.02, 4 if ctx.quick else 7)
    cell = 200.0 if ctx.quick else 150.0
    m = int(6000 // cell)
    c1 = -3000 + cell / 2 + cell * np.arange(m)
    cells = np.array(np.meshgrid(c1, c1)).reshape(2, -1).T
    idx = np.clip(((xy + 3000) // cell).astype(int), 0, m - 1)
    prior = np.bincount(idx[:, 1] * m + idx[:, 0], minlength=m * m).astype(float) + 0.01
    prior /= prior.sum()
    from ...geo.metrics import planar_laplace_channel
    rows = []
    for e in epss:
        el = expected_loss(PlanarLaplace(float(e)), distance_loss(), bracket=False).value
        K = planar_laplace_channel(cells, cells, cell ** 2, float(e))
        adv = adversary_error(K, prior, cells)
        rows.append([float(e), el, adv["adversary_error"], adv["prior_only_error"]])
    rows_a = np.array(rows)
    fig, ax = plt.subplots(figsize=(7.0, 3.4))
    ax.loglog(rows_a[:, 0], rows_a[:, 1], "o-", label="user: expected distance of the report")
    ax.loglog(rows_a[:, 0], rows_a[:, 2], "s-", label="adversary: expected error after remapping")
    ax.axhline(rows_a[0, 3], color="grey", ls=":", label="adversary without any report")
    # one tick per epsilon evaluated (a single decade has one major tick only)
    ax.set_xticks(rows_a[:, 0], [f"{e:.2g}" for e in rows_a[:, 0]])
    ax.minorticks_off()
    ax.set_xlabel("epsilon (per metre)")
    ax.set_ylabel("metres")
    ax.set_title("Utility loss and adversary error against epsilon")
    ax.legend(frameon=False, fontsize=8)
    table = Table(["epsilon per metre", "expected loss (m)", "adversary error (m)",
                   "prior-only error (m)"], rows,
                  caption=f"{cell:.0f} m cells; prior = synthetic density per cell")
    f3 = figure_from_matplotlib(
        fig, "Both sides: utility loss and the Bayesian adversary's error against epsilon",
        trend_sentence(rows_a[:, 0], rows_a[:, 1], rows_a[:, 2], float(rows_a[0, 3]))
        + " The adversary knows the prior and the mechanism and remaps each report to her best "
        "guess; "
        f"her error is computed on {cell:.0f} m cells (locations and guesses are cell centres), "
        "so it understates what she learns about the position inside a cell.",
        table)
    return Section(
        id="geo",
        title="Geo-indistinguishability: obfuscating locations with optimal noise",
        guarantee=guarantee_text(eps),
        parameters={"points": n, "epsilon per metre": eps, "area": "6 km x 6 km synthetic",
                    "(D, eps) example": f"D={D:.0f} m, eps=1, distance loss"},
        results={"mean displacement (m)": err["mean"],
                 "mean displacement 95% CI (m)": [mean_iv.low, mean_iv.high],
                 "median displacement (m)": err["q50"],
                 "90% displacement (m)": err["q90"],
                 "(D, eps) optimal first step (m)": opt_d.core,
                 "(D, eps) optimal expected loss (m)": opt_d.expected_loss.value},
        figures=[f1, f2, f3],
        how_to=HOW_TO,
    )
