"""``veil demo`` section: k-anonymity by suppression (DIVA) and generalization, risk, on a synthetic table."""

from __future__ import annotations

__all__ = ["build", "summary_sentence", "generalization_sentence"]


def generalization_sentence(rows, risk_rows) -> str:
    """Generalization methods against each other, from the figure's two tables.

    ``rows`` are ``[method, granularity loss, ...]`` (the input excluded); ``risk_rows`` are
    ``[table, classes, highest risk, success rate, ...]`` with the input first.

    Examples
    --------
    >>> generalization_sentence([["a", 0.2], ["b", 0.5]],
    ...                         [["input", 9, 1.0, 0.9], ["a", 3, 0.2, 0.1], ["b", 2, 0.2, 0.3]])
    'a loses least granularity (0.200; b 0.500). Average prosecutor risk falls from 0.900 (input) to 0.100 (a) at best and 0.300 (b) at worst.'
    """
    by_loss = sorted(rows, key=lambda r: (r[1], r[0]))
    best = by_loss[0]
    others = "; ".join(f"{r[0]} {r[1]:.3f}" for r in by_loss[1:])
    out = f"{best[0]} loses least granularity ({best[1]:.3f}" + (f"; {others})." if others
                                                                  else ").")
    start, after = risk_rows[0], risk_rows[1:]
    if after:
        lo = min(after, key=lambda r: (r[3], r[0]))
        hi = max(after, key=lambda r: (r[3], r[0]))
        verb = "falls" if hi[3] <= start[3] else "changes"
        out += (f" Average prosecutor risk {verb} from {start[3]:.3f} ({start[0]}) to "
                f"{lo[3]:.3f} ({lo[0]}) at best and {hi[3]:.3f} ({hi[0]}) at worst.")
    return out


def summary_sentence(methods, shares, satisfied, n_constraints, min_class, k) -> str:
    """DIVA against the baselines, computed from the figure's numbers.

    Examples
    --------
    >>> summary_sentence(["DIVA", "Mondrian"], {"DIVA": 0.2, "Mondrian": 0.1},
    ...                  {"DIVA": 3, "Mondrian": 1}, 3, {"DIVA": 5, "Mondrian": 6}, 5)
    "DIVA suppresses 20.0% of the QI cells and meets all 3 constraints; the least suppression among the baselines is Mondrian's 10.0%, meeting 1 of the 3. Smallest class in every output: 5 rows or more (k = 5)."
    """
    from ..stats import count_phrase

    base = [m for m in methods if m != "DIVA"]
    out = (f"DIVA suppresses {shares['DIVA']:.1%} of the QI cells and meets "
           f"{count_phrase(satisfied['DIVA'], n_constraints)} constraints")
    if base:
        b = min(base, key=lambda m: shares[m])
        out += (f"; the least suppression among the baselines is {b}'s {shares[b]:.1%}, "
                f"meeting {count_phrase(satisfied[b], n_constraints)}")
    low = min(min_class[m] for m in methods)
    if low >= k:
        out += f". Smallest class in every output: {low} rows or more (k = {k})."
    else:
        worst = [m for m in methods if min_class[m] < k]
        out += (f". Classes smaller than k = {k} in: {', '.join(worst)} (smallest {low} rows; "
                f"an empty table has no class).")
    return out


def build(ctx):
    """Build the tables section (a few seconds on an idle machine, also with ``ctx.quick``)."""
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
    data = Table(["method", "suppressed share", "constraints met", "classes", "smallest class"],
                 [[x, r["suppressed_share"][x], r["satisfied"][x], r["classes"][x],
                   r["min_class_size"][x]] for x in methods])
    figure = figure_from_matplotlib(
        fig, "Information loss and constraints met",
        "Share of quasi-identifier cells replaced by '*' (lower is better) and how many "
        "diversity constraints the anonymized table satisfies. "
        + summary_sentence(methods, r["suppressed_share"], r["satisfied"], m,
                           r["min_class_size"], r["k"]), data=data)
    g = r["generalization"]
    fig2, (a1, a2) = plt.subplots(1, 2, figsize=(9.6, 3.2))
    names = [row[0] for row in g["rows"]]
    a1.barh(names, [row[1] for row in g["rows"]], color="#2b6cb0")
    a1.set_xlabel("granularity loss (0 = exact values, 1 = all '*')")
    a1.set_title("Information loss")
    a1.invert_yaxis()
    risk_names = [row[0] for row in g["risk_rows"]]
    a2.barh(risk_names, [row[3] for row in g["risk_rows"]], color="#c05621")
    a2.set_xlabel("prosecutor success rate (classes / rows)")
    a2.set_title("Re-identification risk")
    a2.invert_yaxis()
    figure2 = figure_from_matplotlib(
        fig2, "Generalization: information loss and re-identification risk",
        f"k = {r['k']} on the raw ages and {', '.join(g['qi'][1:])}, with a generalization "
        "hierarchy per quasi-identifier (age in bands, categories in groups, then '*'). Left: "
        "granularity loss per method (lower is better). Right: average prosecutor risk, the "
        "input first. " + generalization_sentence(g["rows"], g["risk_rows"]),
        data=Table(g["columns"], g["rows"]))
    lg = g["l_diversity"]
    return Section(
        id="tables",
        title="Tables: k-anonymity by suppression and generalization, diversity constraints, "
              "risk",
        guarantee=("k-anonymity: every published combination of quasi-identifier values "
                   "(exact, a hierarchy label, or '*') is shared by at least k rows, so linking "
                   "on those values finds at least k candidates; with l-diversity or "
                   "t-closeness, every such class also has varied sensitive values. This is NOT "
                   "differential privacy: it does not protect against background knowledge, "
                   "homogeneous sensitive values in a class (unless l-diversity or t-closeness "
                   "is asked for), or several releases of the same data. Diversity constraints "
                   "are a utility/fairness requirement (enough rows of each group stay "
                   "visible), not a privacy guarantee."),
        parameters={"k": r["k"], "rows": r["n"], "quasi_identifiers": r["qi"],
                    "constraints": r["constraints"],
                    "generalization_quasi_identifiers": g["qi"],
                    "optimal_global_node": g["node"],
                    "l_diversity": {k_: lg[k_] for k_ in ("model", "sensitive", "l")}},
        results={"suppressed_share": r["suppressed_share"], "constraints_met": r["satisfied"],
                 "min_class_size": r["min_class_size"], "runtime_s": r["runtime_s"],
                 "generalization": {row[0]: {"granularity": row[1], "nue_bits": row[2]}
                                    for row in g["rows"]},
                 "l_diversity_worst_class": lg["worst"]},
        figures=[figure, figure2],
        tables=[Table(r["status_columns"], r["status_rows"],
                      caption="Constraint status: count of visible target rows after "
                              "anonymization (suppressed cells never match)."),
                Table(r["excerpt_columns"], r["excerpt_rows"],
                      caption="First rows of the DIVA output ('*' = suppressed); the payload "
                              "column is unchanged."),
                Table(g["columns"], g["rows"],
                      caption="Generalization against suppression on the same table: "
                              "granularity loss (mean over QI cells of the share of the "
                              "domain a published label leaves open) and non-uniform "
                              "entropy."),
                Table(g["risk_columns"], g["risk_rows"],
                      caption="Re-identification risk (prosecutor: highest = 1 / smallest "
                              "class; success rate = classes / rows; ARX's definitions) "
                              "before and after."),
                Table(g["excerpt_columns"], g["excerpt_rows"],
                      caption=f"First rows of the optimal full-domain generalization with "
                              f"distinct {lg['l']}-diversity of {lg['sensitive']!r}: every "
                              f"class has at least {lg['worst']:g} distinct values.")],
        how_to=("veil table anonymize people.csv --k 5 --qi age,education,sex,race "
                "--constraints constraints.txt --output anonymized.csv; "
                "veil table anonymize people.csv --k 5 --qi age,education,sex,race "
                "--method global --hierarchies hierarchies/ --max-suppression 0.02 "
                "--sensitive salary --l-diversity 2 --output generalized.csv; "
                "veil table risk people.csv --qi age,education,sex,race"),
    )
