"""Demo section: one synthetic user's visit histogram before and after SLH, TR and TA."""

from __future__ import annotations

import numpy as np

from ..core import DemoContext, Section, Table, figure_from_matplotlib

TREE = {
    "Food": {"Coffee Shop": {}, "Pizza Place": {}, "Thai Restaurant": {}},
    "Nightlife Spot": {"Bar": {}, "Nightclub": {}},
    "Outdoors & Recreation": {"Park": {}, "Gym": {}},
    "Professional & Other Places": {"Office": {}, "Medical Center": {"Hospital": {},
                                                                      "Dentist's Office": {}},
                                    "Spiritual Center": {"Church": {}, "Mosque": {}}},
    "Travel & Transport": {"Metro Station": {}, "Bus Station": {}},
}


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
    sens_mask = tax.sensitive_mask(cats, ["Medical Center", "Spiritual Center"])
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
        "Hide zeroes the Medical Center and Spiritual Center subtrees and moves their visits "
        "where they change the JS distance least; resemble/avoid move visits towards/away from "
        f"a city-wide profile within a JS quality loss of {eps}.", data)
    summary = Table(
        ["problem", "algorithm", "exact", "d_q (JS)", "d_p (JS) to target", "bound", "gap",
         "size", "ms"],
        [[r.problem, r.algorithm, r.exact, round(r.quality_loss, 5),
          None if r.privacy_value is None else round(r.privacy_value, 5),
          None if r.bound is None else round(r.bound, 5), round(r.gap, 6), r.size,
          round(1e3 * r.runtime_s, 2)] for r in (r_hide, r_tr, r_ta)],
        caption="d_p before sanitization: "
                f"{float(np.sum(_js(h, city))):.5f}. Sizes are preserved.")
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
        parameters={"sensitive": ["Medical Center", "Spiritual Center"], "distance": "js",
                    "quality_bound": eps, "size": int(h.sum()), "bins": n},
        results={"hide_quality_loss": r_hide.quality_loss,
                 "resemble_privacy": r_tr.privacy_value, "resemble_gap": r_tr.gap,
                 "avoid_privacy": r_ta.privacy_value, "avoid_gap": r_ta.gap},
        figures=[figure], tables=[summary],
        how_to=("veil visits hide checkins.csv --sensitive 'Medical Center,Spiritual Center' "
                "--taxonomy foursquare -o out.csv [--report private.csv] "
                "[--resample-size 10 --resample-mix 0.2]"))


def _js(h, target):
    from ...distances import bin_terms

    return bin_terms(h / h.sum(), target / target.sum(), "js")
