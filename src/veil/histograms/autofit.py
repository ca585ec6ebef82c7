"""Offline fit and held-out evaluation of the public ``auto`` rule (DPBench rows).

The rule (:data:`veil.histograms.api.AUTO_RULE`) maps epsilon, the workload
class and ``log10(signal)``, ``signal = epsilon * N / n``, to a method. It is
fitted on the per-dataset errors of an evaluation run
(:func:`veil.histograms.evaluation.evaluate`, every candidate method on the same
re-sampled histograms):

0. from some epsilon on, Identity's exact discrete noise is 0 in almost every
   bin and it is best whatever the signal: the smallest epsilon level from which
   Identity is the least-cost candidate at every signal level (threshold halfway,
   geometrically, to the next lower level) -- ``exact_epsilon``;
1. below it, for each workload class and each signal level in the training rows,
   every candidate's cost is the mean over the training datasets and settings at
   that level of ``log(error / best error)``, where *best* is the least error of
   any method evaluated for that dataset and setting; the level gets the
   candidate of least cost (errors below one record per query, ``1/scale``, count
   as exact and equal). With ``target`` (e.g. ``TARGET`` = 1.15, the accuracy goal
   of issue 19) the level instead gets the candidate with the fewest cells above
   ``target`` times the best, ties broken by the mean log ratio. On the two
   DPBench runs of 2026-12-06 both fit the same rule on all 18 datasets; held out,
   the count was better on one run's random ranges (200 against 196 of 216 cells
   within 1.15x) and worse on the other's (192 against 195), so the default stays
   the mean log ratio;
2. consecutive levels with the same choice are merged and the boundaries put
   halfway (in ``log10``) between adjacent levels with different choices.

:func:`cross_validate` fits on all but one fold of datasets and scores the
held-out fold: ``auto``'s error divided by the best method's, and by Identity's,
per (dataset, epsilon, scale, workload).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError

__all__ = ["fit_rule", "apply_rule", "evaluate_rule", "cross_validate", "check_target",
           "CLASS_OF_WORKLOAD"]

#: evaluation workload -> rule class
CLASS_OF_WORKLOAD = {"prefix": "prefix", "random": "ranges"}

#: with ``fit_rule(..., target=TARGET)`` the fit counts the cells where a candidate is more
#: than this many times the best
TARGET = 1.15


def check_target(target, name: str = "target") -> float | None:
    """``target`` of :func:`fit_rule`: None, or a finite ratio of at least 1."""
    if target is None:
        return None
    from ..validation import check_positive

    t = check_positive(target, name)
    if t < 1.0:
        raise ParameterError(f"{name} must be a ratio of at least 1, got {target!r}")
    return t


def _cost(ratios, target: float | None) -> tuple[float, float]:
    """A candidate's cost over cells: (share of ratios above ``target``, mean log ratio),
    compared in that order; with ``target=None`` only the mean log ratio."""
    r = np.asarray(ratios, dtype=np.float64)
    mean_log = float(np.mean(np.log(r)))
    return (0.0 if target is None else float(np.mean(r > target)), mean_log)


def _ratio(a: float, b: float, scale: float) -> float:
    """``a / b`` for scaled errors, both floored at one record per query (``1 / scale``).

    Releases within a record of exact (discrete noise at large epsilon is 0 in almost
    every bin) count as equally good instead of giving ratios like 1e-9 / 0.
    """
    f = 1.0 / scale
    return max(a, f) / max(b, f)


def _index(rows):
    """{(class, level, eps, scale, dataset): {method: error}} with level = round(log10 s, 6)."""
    out: dict = {}
    for r in rows:
        if r.method == "auto" or r.workload not in CLASS_OF_WORKLOAD:
            continue
        s = r.epsilon * r.scale / r.n
        key = (CLASS_OF_WORKLOAD[r.workload], round(math.log10(s), 6), r.epsilon, r.scale,
               r.dataset)
        out.setdefault(key, {})[r.method] = r.error
    return out


def _fit_exact_epsilon(idx, keep, candidates, target: float | None = None) -> float:
    """The smallest epsilon from which Identity is the best candidate at every signal level.

    Identity's exact discrete Laplace noise is 0 in all but a fraction ``2a/(1+a)``
    (``a = e^-eps``) of the bins, whatever the number of records, so above some epsilon
    it beats every method that adds continuous noise; that depends on epsilon, not on
    the signal. The threshold is put halfway (geometrically) between the largest
    epsilon where Identity loses somewhere and the next epsilon level.
    """
    levels = sorted({k[2] for k in idx})
    wins = []
    for eps in levels:
        cells = [v for k, v in idx.items() if k[2] == eps and (keep is None or k[4] in keep)]
        ok = True
        for lv in sorted({k[1] for k in idx if k[2] == eps}):
            sub = [(k[3], v) for k, v in idx.items() if k[2] == eps and k[1] == lv
                   and (keep is None or k[4] in keep)]
            cost = {m: _cost([_ratio(c[m], min(c.values()), sc) for (sc, c) in sub], target)
                    for m in candidates if all(m in c for _, c in sub)}
            ok &= bool(cost) and min(cost, key=cost.get) == "identity"
        wins.append(bool(cells) and ok)
    # the longest run of winning levels at the top
    k = len(levels)
    while k > 0 and wins[k - 1]:
        k -= 1
    if k == len(levels):
        return math.inf
    if k == 0:
        return 0.0
    return float(round(math.sqrt(levels[k - 1] * levels[k]), 6))


def fit_rule(rows, *, datasets=None, candidates=("identity", "hb", "hdmm", "dawa", "mwem"),
             target: float | None = None) -> dict:
    """Fit the rule on the rows of the given datasets (all by default); see the module doc.

    Returns ``{"exact_epsilon": E, "prefix": steps, "ranges": steps}``: Identity from
    epsilon ``E`` on (see :func:`_fit_exact_epsilon`), below it the step function of
    ``log10(signal)`` fitted on the cells with epsilon below ``E``.

    Examples
    --------
    >>> from veil.histograms.evaluation import EvalRow
    >>> rows = [EvalRow("d", m, e, 1000, "prefix", n=1000, errors=[v])
    ...         for e, m, v in [(0.01, "a", 1.0), (0.01, "b", 2.0), (1.0, "a", 3.0),
    ...                         (1.0, "b", 1.0)]]
    >>> fit_rule(rows, candidates=("a", "b"))["prefix"]
    ((-1.0, 'a'), (inf, 'b'))
    """
    target = check_target(target)
    idx = _index(rows)
    keep = None if datasets is None else set(datasets)
    exact = (_fit_exact_epsilon(idx, keep, candidates, target) if "identity" in candidates
             else math.inf)
    rule: dict = {"exact_epsilon": exact}
    for cls in sorted({k[0] for k in idx}):
        levels = sorted({k[1] for k in idx if k[0] == cls and k[2] < exact})
        choice = []
        for lv in levels:
            cells = [(k[3], v) for k, v in idx.items() if k[0] == cls and k[1] == lv
                     and k[2] < exact and (keep is None or k[4] in keep)]
            if not cells:
                continue
            cost = {}
            for m in candidates:
                vals = [_ratio(c[m], min(c.values()), sc) for sc, c in cells if m in c]
                if len(vals) == len(cells):
                    cost[m] = _cost(vals, target)
            if not cost:
                raise ParameterError(f"no candidate was evaluated at every {cls} setting")
            choice.append((lv, min(cost, key=cost.get)))
        steps = []
        for (lv, m), nxt in zip(choice, choice[1:] + [(math.inf, None)]):
            if nxt[1] != m:
                upper = math.inf if nxt[1] is None else round((lv + nxt[0]) / 2.0, 6)
                steps.append((upper, m))
        rule[cls] = tuple(steps)
    return rule


def apply_rule(rule: dict, cls: str, log_signal: float, epsilon: float = 0.0) -> str:
    """The method a rule picks for a workload class at ``log10(signal)`` and ``epsilon``."""
    if epsilon >= rule.get("exact_epsilon", math.inf):
        return "identity"
    for upper, m in rule[cls]:
        if log_signal < upper:
            return m
    raise ParameterError(f"rule for {cls!r} has no open last interval")


def evaluate_rule(rows, rule: dict, *, datasets=None) -> list[dict]:
    """``auto``'s error (the chosen method's) against the best and Identity, per setting."""
    idx = _index(rows)
    out = []
    for (cls, lv, eps, scale, d), errs in sorted(idx.items()):
        if datasets is not None and d not in datasets:
            continue
        m = apply_rule(rule, cls, lv, eps)
        if m not in errs:
            continue
        best = min(errs, key=errs.get)
        out.append({"dataset": d, "class": cls, "epsilon": eps, "scale": scale,
                    "log10_signal": lv, "chosen": m, "best": best,
                    "over_best": _ratio(errs[m], errs[best], scale),
                    "over_identity": _ratio(errs[m], errs["identity"], scale)
                    if "identity" in errs else float("nan")})
    return out


def cross_validate(rows, *, folds: int = 3, candidates=("identity", "hb", "hdmm", "dawa", "mwem"),
                   seed: int = 0, target: float | None = None
                   ) -> tuple[list[dict], list[dict]]:
    """Fit on ``folds - 1`` folds of datasets and evaluate on the held-out fold, each in turn.

    Returns ``(rules, held_out)``: the rule of each fold (with its held-out
    datasets) and the held-out evaluation rows of all folds. The split is a fixed
    public permutation of the dataset names (``seed``).
    """
    names = sorted({r.dataset for r in rows})
    perm = [names[i] for i in np.random.default_rng(seed).permutation(len(names))]
    parts = [perm[i::folds] for i in range(folds)]
    rules, held = [], []
    for i, test in enumerate(parts):
        train = [d for d in names if d not in test]
        rule = fit_rule(rows, datasets=train, candidates=candidates, target=target)
        rules.append({"fold": i, "held_out": test, "rule": rule})
        for e in evaluate_rule(rows, rule, datasets=set(test)):
            held.append({**e, "fold": i})
    return rules, held
