"""Demo section: one synthetic user's visit histogram before and after SLH, TR and TA."""

from __future__ import annotations

import numpy as np

from ..core import DemoContext, Section, Table, figure_from_matplotlib
from ..stats import count_phrase

__all__ = ["build", "hide_sentence", "bound_sentence", "size_sentence"]

TREE = {
    "Food": {"Coffee Shop": {}, "Pizza Place": {}, "Thai Restaurant": {}},
    "Nightlife Spot": {"Bar": {}, "Nightclub": {}},
    "Outdoors & Recreation": {"Park": {}, "Gym": {}},
    "Professional & Other Places": {"Office": {}, "Medical Center": {"Hospital": {},
                                                                      "Dentist's Office": {}},
                                    "Spiritual Center": {"Church": {}, "Mosque": {}}},
    "Travel & Transport": {"Metro Station": {}, "Bus Station": {}},
}
SENSITIVE = ["Medical Center", "Spiritual Center"]


def hide_sentence(subtrees, sens_mask, original, hidden) -> str:
    """What hide did to the sensitive categories, computed from the two histograms.

    Examples
    --------
    >>> m = np.array([True, False, True])
    >>> hide_sentence(["Medical Center"], m, np.array([2, 5, 1]), np.array([0, 8, 0]))
    'Hide sets all 2 sensitive categories (under Medical Center) to zero and moves their 3 visits to other categories where they change the JS distance least.'
    >>> hide_sentence(["Medical Center"], m, np.array([2, 5, 1]), np.array([1, 7, 0]))
    'Hide sets 1 of the 2 sensitive categories (under Medical Center) to zero; 1 visit is left in a sensitive category.'
    """
    sens = np.flatnonzero(sens_mask)
    zero = int((hidden[sens] == 0).sum())
    under = " and ".join(subtrees)
    head = f"Hide sets {count_phrase(zero, sens.size)} sensitive categories (under {under}) to zero"
    left = int(hidden[sens].sum())
    if left == 1:
        return head + "; 1 visit is left in a sensitive category."
    if left:
        return head + f"; {left:,} visits are left in sensitive categories."
    moved = int(original[sens].sum())
    return (head + f" and moves their {moved:,} visit{'s' if moved != 1 else ''} to other "
            "categories where they change the JS distance least.")


def bound_sentence(losses: dict[str, float], bound: float) -> str:
    """Each method's quality loss against the bound (computed comparison).

    Examples
    --------
    >>> bound_sentence({"resemble": 0.031, "avoid": 0.05}, 0.05)
    'Quality loss (JS) resemble 0.031, avoid 0.05: both within the bound 0.05.'
    >>> bound_sentence({"resemble": 0.031, "avoid": 0.07}, 0.05)
    'Quality loss (JS) resemble 0.031, avoid 0.07: avoid exceeds the bound 0.05.'
    """
    parts = ", ".join(f"{k} {v:.3g}" for k, v in losses.items())
    over = [k for k, v in losses.items() if v > bound * (1 + 1e-9)]
    if not over:
        both = "both" if len(losses) == 2 else f"all {len(losses)}"
        return f"Quality loss (JS) {parts}: {both} within the bound {bound:g}."
    return (f"Quality loss (JS) {parts}: {' and '.join(over)} exceed"
            f"{'s' if len(over) == 1 else ''} the bound {bound:g}.")


def size_sentence(size: int, sizes: dict[str, int]) -> str:
    """Whether every output kept the input's number of visits.

    Examples
    --------
    >>> size_sentence(60, {"hide": 60, "resemble": 60})
    'Every output keeps the size (60 visits).'
    >>> size_sentence(60, {"hide": 60, "resemble": 58})
    'Sizes differ from the input (60 visits): resemble 58.'
    """
    off = {k: v for k, v in sizes.items() if v != size}
    if not off:
        return f"Every output keeps the size ({size:,} visits)."
    return (f"Sizes differ from the input ({size:,} visits): "
            + ", ".join(f"{k} {v:,}" for k, v in off.items()) + ".")


def build(ctx: DemoContext) -> Section:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...visits import avoid, hide, resemble
    from ...visits.taxonomy import Taxonomy

    tax = Taxonomy.from_nested(TREE)
    cats = sorted(tax.leaves_under(list(TREE)))
    n = len(cats)
    rng = ctx.rng
    size = 60 if ctx.quick else 120
    pref = rng.dirichlet(np.full(n, 0.6))
    h = rng.multinomial(size, pref).astype(np.int64)
    sens_mask = tax.sensitive_mask(cats, SENSITIVE)
    if h[sens_mask].sum() == 0:  # make sure the demo has something to hide
        h[np.flatnonzero(sens_mask)[0]] += 3
    if h[~sens_mask].sum() == 0:
        h[np.flatnonzero(~sens_mask)[0]] += 3
    city = rng.dirichlet(np.full(n, 3.0))
    eps = 0.05
    ctx.progress("visits: hide / resemble / avoid")
    r_hide = hide(h, sensitive=sens_mask, labels=cats)
    r_tr = resemble(h, city, quality_bound=eps, labels=cats, method="auto", time_limit=1.0)
    r_ta = avoid(h, city, quality_bound=eps, labels=cats, method="auto", time_limit=1.0)

    fig, ax = plt.subplots(figsize=(9, 3.6))
    x = np.arange(n)
    w = 0.2
    ax.bar(x - 1.5 * w, h, w, label="original H", color="#444444")
    ax.bar(x - 0.5 * w, r_hide.histogram, w, label="hide (SLH)", color="#1b9e77")
    ax.bar(x + 0.5 * w, r_tr.histogram, w, label=f"resemble ({r_tr.algorithm})", color="#7570b3")
    ax.bar(x + 1.5 * w, r_ta.histogram, w, label=f"avoid ({r_ta.algorithm})", color="#d95f02")
    for i in np.flatnonzero(sens_mask):
        ax.axvspan(i - 0.45, i + 0.45, color="#e7298a", alpha=0.12, lw=0)
    ax.set_xticks(x, cats, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("visits")
    ax.set_title("One user's visits per place category (sensitive places shaded)")
    ax.legend(fontsize=7, ncol=4)
    rows = [[c, int(a), int(b), int(cc), int(d)] for c, a, b, cc, d in
            zip(cats, h, r_hide.histogram, r_tr.histogram, r_ta.histogram)]
    data = Table(["category", "original", "hide", "resemble", "avoid"], rows)
    figure = figure_from_matplotlib(
        fig, "Histogram before and after",
        hide_sentence(SENSITIVE, sens_mask, h, r_hide.histogram)
        + " Resemble/avoid move visits towards/away from a city-wide profile within a JS "
        f"quality loss of {eps:g}. "
        + bound_sentence({"resemble": r_tr.quality_loss, "avoid": r_ta.quality_loss}, eps),
        data)
    summary = Table(
        ["problem", "algorithm", "exact", "d_q (JS)", "d_p (JS) to target", "bound", "gap",
         "size", "ms"],
        [[r.problem, r.algorithm, r.exact, round(r.quality_loss, 5),
          None if r.privacy_value is None else round(r.privacy_value, 5),
          None if r.bound is None else round(r.bound, 5), round(r.gap, 6), r.size,
          round(1e3 * r.runtime_s, 2)] for r in (r_hide, r_tr, r_ta)],
        caption="d_p before sanitization: "
                f"{float(np.sum(_js(h, city))):.5f}. "
                + size_sentence(int(h.sum()), {r.problem: int(r.size)
                                               for r in (r_hide, r_tr, r_ta)}))
    return Section(
        id="visits", title="Location-visit histograms: hide, resemble, avoid",
        guarantee=("Deterministic optimisation, not differential privacy. Hide: every place in "
                   "the selected taxonomy subtrees has zero visits and the size is kept; the "
                   "published file holds only the sanitized counts over a public category "
                   "domain. The paper's adversary (who only sees the zeros) cannot tell whether "
                   "those places were visited, but an adversary with training data can do "
                   "better than chance: the kept size and the rest of the profile are "
                   "correlated with sensitive visits (measured by `veil bench visits "
                   "--adversary`; the optional --resample-size mitigation resamples every "
                   "release to a public size). Resemble/avoid: the privacy distance to the "
                   "target is minimized/maximized within the quality bound; with a threshold c "
                   "the answer is refused when c cannot be reached. Not protected: the "
                   "non-sensitive visits, the size, anything under repeated releases."),
        parameters={"sensitive": SENSITIVE, "distance": "js",
                    "quality_bound": eps, "size": int(h.sum()), "bins": n},
        results={"hide_quality_loss": r_hide.quality_loss,
                 "resemble_privacy": r_tr.privacy_value, "resemble_gap": r_tr.gap,
                 "avoid_privacy": r_ta.privacy_value, "avoid_gap": r_ta.gap},
        figures=[figure], tables=[summary],
        how_to=(f"veil visits hide checkins.csv --sensitive '{','.join(SENSITIVE)}' "
                "--taxonomy foursquare -o out.csv [--report private.csv] "
                "[--resample-size 10 --resample-mix 0.2]"))


def _js(h, target):
    from ...distances import bin_terms

    return bin_terms(h / h.sum(), target / target.sum(), "js")
