"""Report section: sanity plots of the noise samplers every mechanism draws from.

Three checks, each a figure with the numbers behind it and a goodness-of-fit
test (the p-values are shown, not asserted; the audited tests live in
``tests/``):

* the exact discrete Laplace sampler: histogram of draws against its pmf;
* planar Laplace: the radius histogram against the Gamma(2, 1/eps) density,
  and a scatter of the 2-D displacements with the uniformity of the angle;
* the exponential mechanism: selection frequencies against its probabilities.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import DemoContext, Section, Table, figure_from_matplotlib
from ..stats import mean_ci

__all__ = ["build"]

GUARANTEE_TEMPLATE = """\
These are the random sources behind every veil mechanism; the plots check that the draws follow the
distributions the privacy proofs assume.

**Discrete Laplace** (two-sided geometric) noise with scale t added to a count that one person can
change by at most 1 gives **epsilon-differential privacy with epsilon = 1/t**: whatever one person
does, every output becomes at most e^epsilon times more or less likely. The sampler is exact: it
uses only random integers and integer comparisons, so there is no floating-point rounding on the
sampling path (the kind that broke early Laplace implementations), and t is rounded *up* to a
dyadic fraction, so the real epsilon is never larger than the one asked for.

**Planar Laplace** noise gives **geo-indistinguishability**: two places d metres apart produce
reported locations whose probabilities differ by at most a factor e^(epsilon d). It protects the
exact position, not the neighbourhood: {planar_example} This sampler is float64; mechanisms
that publish points snap them to a grid where the guarantee is stated.

The **exponential mechanism** picks a candidate with probability proportional to
exp(epsilon u / (2 s)) where u is the candidate's score and s the most one person can change any
score; each pick is epsilon-DP.
"""

#: Below this p-value a goodness-of-fit test in this section flags the sampler as broken
#: (the audited tests in ``tests/`` use the same level).
ALPHA = 1e-6


def planar_example(eps: float) -> str:
    """What epsilon per metre means in metres: the mean displacement and a place 10x farther.

    Examples
    --------
    >>> planar_example(0.01)
    'with epsilon = 0.01 per metre the displacement is 200 m on average, while two places 2,000 m apart can be told apart by a likelihood ratio up to e^20 (about 4.9e+08).'
    """
    mean = 2.0 / eps
    far = 10 * mean
    return (f"with epsilon = {eps:g} per metre the displacement is {mean:,.0f} m on average, "
            f"while two places {far:,.0f} m apart can be told apart by a likelihood ratio up "
            f"to e^{eps * far:g} (about {math.exp(eps * far):.2g}).")


def guarantee_text(eps_geo: float) -> str:
    """The guarantee paragraph with the planar example computed at ``eps_geo``."""
    return GUARANTEE_TEMPLATE.format(planar_example=planar_example(eps_geo))


def fit_sentence(test: str, p: float, alpha: float = ALPHA) -> str:
    """A goodness-of-fit verdict from its p-value.

    Examples
    --------
    >>> fit_sentence("Chi-square", 0.31)
    'Chi-square goodness of fit p = 0.31: consistent with the claimed distribution (p below 1e-06 would flag a broken sampler).'
    >>> fit_sentence("Chi-square", 1e-9)
    'Chi-square goodness of fit p = 1e-09: the draws depart from the claimed distribution (p below 1e-06).'
    """
    if p < alpha:
        return (f"{test} goodness of fit p = {p:.3g}: the draws depart from the claimed "
                f"distribution (p below {alpha:g}).")
    return (f"{test} goodness of fit p = {p:.3g}: consistent with the claimed distribution "
            f"(p below {alpha:g} would flag a broken sampler).")


def direction_sentence(p: float, sectors: np.ndarray, alpha: float = ALPHA) -> str:
    """Whether the angles look uniform, from the KS p-value and the sector counts.

    Examples
    --------
    >>> direction_sentence(0.5, np.array([10, 12, 11, 9]))
    'No direction is preferred (angle uniformity KS p = 0.5); the 4 sectors hold 9 to 12 draws.'
    >>> direction_sentence(1e-12, np.array([40, 2, 1, 1]))
    'The directions are NOT uniform (angle uniformity KS p = 1e-12); the 4 sectors hold 1 to 40 draws.'
    """
    spread = (f"the {sectors.size} sectors hold {int(sectors.min()):,} to "
              f"{int(sectors.max()):,} draws.")
    if p < alpha:
        return f"The directions are NOT uniform (angle uniformity KS p = {p:.3g}); {spread}"
    return f"No direction is preferred (angle uniformity KS p = {p:.3g}); {spread}"


def exponential_sentence(scores: np.ndarray, prob: np.ndarray, counts: np.ndarray) -> str:
    """How selection follows the score, from the frequencies drawn.

    Examples
    --------
    >>> exponential_sentence(np.array([0., 1., 2.]), np.array([.2, .3, .5]), np.array([20, 30, 50]))
    'Frequencies rise with the score (Spearman rank correlation 1 over 3 candidates): the best-scored candidate is picked in 50% of draws (probability 50%), never with certainty.'
    """
    from scipy import stats

    n = int(counts.sum())
    freq = counts / n
    rho = float(stats.spearmanr(scores, freq).statistic)
    trend = ("rise with" if rho > 0.5 else "fall with" if rho < -0.5 else "barely follow")
    best = int(np.argmax(scores))
    certain = ("never with certainty" if counts[best] < n
               else "in every draw (no uncertainty left)")
    return (f"Frequencies {trend} the score (Spearman rank correlation {rho:.2g} over "
            f"{scores.size} candidates): the best-scored candidate is picked in "
            f"{freq[best]:.0%} of draws (probability {prob[best]:.0%}), {certain}.")


HOW_TO = """\
# exact discrete Laplace noise on your own counts (epsilon-DP for counts of sensitivity 1)
python -c "from veil.mechanisms import geometric_mechanism; print(geometric_mechanism([120, 45, 3], epsilon=0.5).value)"
# planar Laplace displacements in metres (epsilon per metre)
python -c "from veil.samplers import planar_laplace_noise; print(planar_laplace_noise(0.01, 3))"
"""


def _chi2_pvalue(observed: np.ndarray, expected: np.ndarray) -> tuple[float, float, int]:
    from scipy import stats

    stat = float(((observed - expected) ** 2 / expected).sum())
    dof = observed.size - 1
    return stat, float(stats.chi2.sf(stat, dof)), dof


def _discrete_laplace(ctx: DemoContext, n: int, scale: float):
    import matplotlib.pyplot as plt

    from ...samplers import discrete_laplace, discrete_laplace_pmf, discrete_laplace_variance

    ctx.progress(f"discrete Laplace: {n:,} exact draws")
    z = np.asarray(discrete_laplace(scale, size=n, rng=ctx.rng))
    pmf_all = discrete_laplace_pmf(np.arange(0, 200), scale)
    # bins -K..K plus two tails, K so that every expected count is >= 5
    K = int(min(40, np.flatnonzero(n * pmf_all >= 5).max()))
    zs = np.arange(-K, K + 1)
    pmf = discrete_laplace_pmf(zs, scale)
    tail = (1.0 - pmf.sum()) / 2.0
    obs = np.bincount(np.clip(z, -K - 1, K + 1) + K + 1, minlength=2 * K + 3)
    exp_ = n * np.concatenate(([tail], pmf, [tail]))
    stat, p, dof = _chi2_pvalue(obs.astype(float), exp_)
    var_emp = float(z.var())
    var_th = discrete_laplace_variance(scale)

    fig, ax = plt.subplots(figsize=(7.2, 3.4))
    ax.bar(zs, obs[1:-1] / n, width=0.8, color="#9dc3e6", label=f"{n:,} draws (frequency)")
    ax.plot(zs, pmf, "o", color="#1f5f99", ms=4, label="pmf")
    ax.set_xlabel("noise value z")
    ax.set_ylabel("probability")
    ax.set_title(f"Exact discrete Laplace, scale t = {scale:g} (epsilon = {1 / scale:g} per count)")
    ax.legend(frameon=False)
    ax.grid(alpha=0.25)
    rows = [[f"< {-K}", int(obs[0]), float(exp_[0]), float(obs[0] / n), float(tail)]]
    rows += [[int(v), int(o), float(e), float(o / n), float(q)]
             for v, o, e, q in zip(zs, obs[1:-1], exp_[1:-1], pmf)]
    rows += [[f"> {K}", int(obs[-1]), float(exp_[-1]), float(obs[-1] / n), float(tail)]]
    table = Table(["z", "observed count", "expected count", "observed frequency", "pmf"], rows,
                  caption=f"chi-square = {stat:.1f} on {dof} degrees of freedom, p = {p:.3g}")
    figure = figure_from_matplotlib(
        fig, "Discrete Laplace draws against the exact pmf",
        f"Bars: frequencies of {n:,} draws of the exact sampler; dots: the pmf "
        f"P[Z = z] = (1 - a)/(1 + a) a^|z| with a = exp(-1/t). "
        + fit_sentence("Chi-square", p)
        + f" Values beyond +-{K} are pooled into two tail bins; the draws' variance is "
          f"{var_emp / var_th:.3f} times the exact one.", table)
    results = {"discrete Laplace fit p-value": p,
               "discrete Laplace variance (draws / exact)": var_emp / var_th}
    return figure, results


def _planar_laplace(ctx: DemoContext, n: int, eps: float):
    import matplotlib.pyplot as plt
    from scipy import stats

    from ...samplers import planar_laplace_noise

    ctx.progress(f"planar Laplace: {n:,} displacements")
    d = planar_laplace_noise(eps, n, rng=ctx.rng)
    r = np.hypot(d[:, 0], d[:, 1])
    theta = np.mod(np.arctan2(d[:, 1], d[:, 0]), 2 * np.pi)
    dist = stats.gamma(2.0, scale=1.0 / eps)
    ks_r = stats.kstest(r, dist.cdf)
    ks_t = stats.kstest(theta / (2 * np.pi), "uniform")
    q_view = 0.995
    r_max = float(dist.ppf(q_view))
    edges = np.linspace(0.0, r_max, 31)
    counts, _ = np.histogram(r, bins=edges)
    width = np.diff(edges)
    dens_obs = counts / (n * width)
    dens_exp = np.diff(dist.cdf(edges)) / width

    fig, ax = plt.subplots(figsize=(7.2, 3.4))
    ax.bar(edges[:-1], dens_obs, width=width, align="edge", color="#9dc3e6",
           edgecolor="white", label=f"{n:,} draws")
    grid = np.linspace(0.0, r_max, 300)
    ax.plot(grid, eps ** 2 * grid * np.exp(-eps * grid), color="#1f5f99",
            label=r"Gamma(2, 1/$\epsilon$) density  $\epsilon^2 r e^{-\epsilon r}$")
    ax.axvline(2 / eps, color="#c77700", ls="--", lw=1, label=f"mean 2/epsilon = {2 / eps:g} m")
    ax.set_xlabel("displacement r (metres)")
    ax.set_ylabel("density")
    ax.set_title(f"Planar Laplace radius, epsilon = {eps:g} per metre")
    ax.legend(frameon=False)
    ax.grid(alpha=0.25)
    t1 = Table(["r from (m)", "r to (m)", "count", "observed density", "Gamma(2) density"],
               [[float(a), float(b), int(c), float(o), float(e)]
                for a, b, c, o, e in zip(edges[:-1], edges[1:], counts, dens_obs, dens_exp)],
               caption=f"{int((r > r_max).sum()):,} draws beyond {r_max:.0f} m "
                       f"({1 - q_view:.1%} of {n:,} expected: {(1 - q_view) * n:,.0f}); "
                       f"KS p = {ks_r.pvalue:.3g}")
    r_ci = mean_ci(r)
    f1 = figure_from_matplotlib(
        fig, "Planar Laplace radius against the Gamma(2) density",
        f"Histogram of |noise| for {n:,} draws; the curve is the density the geo-"
        f"indistinguishability proof assumes. " + fit_sentence("Kolmogorov-Smirnov", ks_r.pvalue)
        + f" Mean {r_ci.text('{:.1f}', 'm')} against 2/epsilon = {2 / eps:g} m.", t1)

    m = min(n, 3000)
    fig, ax = plt.subplots(figsize=(4.6, 4.6))
    ax.scatter(d[:m, 0], d[:m, 1], s=3, alpha=0.45, color="#1f5f99", lw=0)
    qs = [0.5, 0.9]
    for q, ls in zip(qs, ["--", ":"]):
        rq = float(dist.ppf(q))
        ax.add_patch(plt.Circle((0, 0), rq, fill=False, color="#c77700", ls=ls, lw=1.2,
                                label=f"{int(q * 100)}% of draws within {rq:.0f} m"))
    lim = float(dist.ppf(0.99))
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.plot([0], [0], "k+", ms=10)
    ax.set_xlabel("east (m)")
    ax.set_ylabel("north (m)")
    ax.set_title("Planar Laplace displacements")
    ax.legend(frameon=False, loc="upper right", fontsize=8)
    sectors = np.bincount(np.minimum((theta / (2 * np.pi) * 8).astype(int), 7), minlength=8)
    t2 = Table(["angle sector (degrees)", "draws", "expected (uniform)"],
               [[f"{45 * k}-{45 * (k + 1)}", int(c), n / 8] for k, c in enumerate(sectors)],
               caption=f"All {n:,} draws by direction; angle uniformity KS p = {ks_t.pvalue:.3g}")
    inside = [float(np.mean(r <= dist.ppf(q))) for q in qs]
    f2 = figure_from_matplotlib(
        fig, "Planar Laplace displacements in the plane",
        f"{m:,} of the draws around the true point (+); the circles should hold "
        + " and ".join(f"{q:.0%}" for q in qs) + " of the mass and hold "
        + " and ".join(f"{v:.1%}" for v in inside) + " of the draws. "
        + direction_sentence(float(ks_t.pvalue), sectors)
        + " The table counts all draws by 45-degree sector.", t2)
    results = {"planar radius fit p-value": float(ks_r.pvalue),
               "planar mean displacement (m)": r_ci.text("{:.1f}"),
               "planar expected displacement 2/eps (m)": 2 / eps}
    return [f1, f2], results


def _exponential(ctx: DemoContext, n: int, eps: float):
    import matplotlib.pyplot as plt

    from ...mechanisms import exponential_mechanism, exponential_mechanism_probabilities

    ctx.progress(f"exponential mechanism: {n:,} selections")
    scores = np.array([0.0, 1.0, 2.0, 2.5, 4.0, 4.5, 5.0, 6.0, 7.0, 7.5])
    p = exponential_mechanism_probabilities(scores, epsilon=eps, sensitivity=1.0)
    picks = exponential_mechanism(scores, epsilon=eps, sensitivity=1.0, size=n, rng=ctx.rng).value
    counts = np.bincount(picks, minlength=scores.size)
    stat, pval, dof = _chi2_pvalue(counts.astype(float), n * p)
    x = np.arange(scores.size)
    fig, ax = plt.subplots(figsize=(7.2, 3.4))
    ax.bar(x, counts / n, width=0.7, color="#9dc3e6", label=f"{n:,} selections (frequency)")
    ax.plot(x, p, "o", color="#1f5f99", ms=5, label="exp(eps u / 2) / Z")
    ax.set_xticks(x, [f"{i}\nu={s:g}" for i, s in zip(x, scores)], fontsize=8)
    ax.set_xlabel("candidate (score u)")
    ax.set_ylabel("probability")
    ax.set_title(f"Exponential mechanism, epsilon = {eps:g}, sensitivity 1")
    ax.legend(frameon=False)
    ax.grid(alpha=0.25, axis="y")
    table = Table(["candidate", "score", "probability", "selections", "frequency"],
                  [[int(i), float(s), float(q), int(c), float(c / n)]
                   for i, s, q, c in zip(x, scores, p, counts)],
                  caption=f"chi-square = {stat:.1f} on {dof} degrees of freedom, p = {pval:.3g}")
    fig_ = figure_from_matplotlib(
        fig, "Exponential mechanism: selection frequencies against probabilities",
        exponential_sentence(scores, p, counts) + " That uncertainty is the privacy. "
        + fit_sentence("Chi-square", pval), table)
    return fig_, {"exponential mechanism fit p-value": pval,
                  "best candidate picked (share)": float(counts[-1] / n)}


def build(ctx: DemoContext) -> Section:
    """Build the samplers section (about a second; ``ctx.quick`` uses 20,000 draws)."""
    import matplotlib

    matplotlib.use("Agg")
    n = 20_000 if ctx.quick else 200_000
    scale, eps_geo, eps_em = 2.0, 0.01, 1.0
    f_dl, r_dl = _discrete_laplace(ctx, n, scale)
    f_pl, r_pl = _planar_laplace(ctx, n, eps_geo)
    f_em, r_em = _exponential(ctx, n, eps_em)
    results = {**r_dl, **r_pl, **r_em}
    return Section(
        id="samplers",
        title="Noise samplers: do the draws follow the claimed distributions?",
        guarantee=guarantee_text(eps_geo),
        parameters={"draws per check": n, "discrete Laplace scale t": scale,
                    "discrete Laplace epsilon (count sensitivity 1)": 1 / scale,
                    "planar Laplace epsilon (per metre)": eps_geo,
                    "exponential mechanism epsilon": eps_em,
                    "exponential mechanism sensitivity": 1.0,
                    "goodness-of-fit tests": f"chi-square / Kolmogorov-Smirnov; a p-value below "
                                             f"{ALPHA:g} would signal a broken sampler"},
        results=results,
        figures=[f_dl, *f_pl, f_em],
        how_to=HOW_TO,
    )
