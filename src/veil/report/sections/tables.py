"""``veil demo`` section: diversity-constrained k-anonymization (DIVA) on a synthetic table."""

from __future__ import annotations


def build(ctx):
    """Build the tables section (a few seconds; under ~3 s with ``ctx.quick``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...tables.demo import demo_results
    from ..core import Section, Table, figure_from_matplotlib

    ctx.progress("tables: DIVA and baselines on a synthetic table")
    r = demo_results(ctx.rng, quick=ctx.quick)
    methods = r["methods"]
    m = len(r["constraints"])
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    shares = [100 * r["suppressed_share"][x] for x in methods]
    bars = ax.bar(methods, shares, color=["#2b6cb0" if x == "DIVA" else "#a0aec0"
                                          for x in methods])
    for b, x in zip(bars, methods):
        ax.annotate(f"{r['satisfied'][x]}/{m} met", (b.get_x() + b.get_width() / 2,
                                                      b.get_height()),
                    ha="center", va="bottom", fontsize=8)
    ax.set_ylim(0, 1.15 * max(shares))  # room for the labels above the bars
    ax.set_ylabel("suppressed QI cells (%)")
    ax.set_title(f"k = {r['k']}, {r['n']} rows, {m} diversity constraints")
    data = Table(["method", "suppressed share", "constraints met", "classes"],
                 [[x, r["suppressed_share"][x], r["satisfied"][x], r["classes"][x]]
                  for x in methods])
    figure = figure_from_matplotlib(
        fig, "Information loss and constraints met",
        "Share of quasi-identifier cells replaced by '*' (lower is better) and how many "
        "diversity constraints the anonymized table satisfies.", data=data)
    return Section(
        id="tables",
        title="Diversity-constrained k-anonymization (DIVA)",
        guarantee=("k-anonymity by suppression: every published combination of "
                   "quasi-identifier values is shared by at least k rows, so linking on those "
                   "values finds at least k candidates. This is NOT differential privacy: it "
                   "does not protect against background knowledge, homogeneous sensitive values "
                   "in a class, or several releases of the same data. Diversity constraints "
                   "are a utility/fairness requirement (enough rows of each group stay "
                   "visible), not a privacy guarantee."),
        parameters={"k": r["k"], "rows": r["n"], "quasi_identifiers": r["qi"],
                    "constraints": r["constraints"]},
        results={"suppressed_share": r["suppressed_share"], "constraints_met": r["satisfied"],
                 "min_class_size": r["min_class_size"], "runtime_s": r["runtime_s"]},
        figures=[figure],
        tables=[Table(r["status_columns"], r["status_rows"],
                      caption="Constraint status: count of visible target rows after "
                              "anonymization (suppressed cells never match)."),
                Table(r["excerpt_columns"], r["excerpt_rows"],
                      caption="First rows of the DIVA output ('*' = suppressed); the payload "
                              "column is unchanged.")],
        how_to=("veil table anonymize people.csv --k 5 --qi age,education,sex,race "
                "--constraints constraints.txt --output anonymized.csv"),
    )
