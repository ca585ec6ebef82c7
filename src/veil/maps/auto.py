"""``method='auto'``: a public rule that picks a map mechanism from the signal.

The rule reads only public quantities and one DP estimate: the grid's number of cells, epsilon,
the contribution bound ``s`` and the number of points ``N`` -- a public ``scale`` when the
caller has one, else a noisy count bought with 5 % of epsilon (the same estimate the chosen
mechanism then reuses, so it is paid once). With the *signal per cell*
``sigma = eps N / (s rows cols)`` (points per cell in units of the noise scale):

* ``sigma <= AUTO_THRESHOLD``: **AG** (Qardaji et al.'s adaptive grid), whose cell sizes adapt
  to the noisy density and average noise away where points are few;
* otherwise: **HDMM** with Kronecker p-Identity strategies, whose data-independent error is the
  lowest once the counts stand well above the noise.

This follows what the DPBench 2-D protocol measures on the two DPBench 2-D histograms
(``docs/benchmarks.md``, maps section): AG wins at low signal, HDMM at high signal, and the
threshold is fitted there (:func:`fit_threshold`, printed by ``python benchmarks/maps.py fit``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..random import make_rng
from ..release import Release
from ..validation import check_int, check_positive
from ._common import SCALE_FRACTION, as_budget, check_sensitivity, scale_estimate

__all__ = ["AUTO_THRESHOLD", "choose_method", "publish_auto", "signal", "fit_threshold"]

#: signal per cell above which ``auto`` picks HDMM (below: AG); fitted on DPBench 2-D
#: (``python benchmarks/maps.py fit``, see docs/benchmarks.md)
AUTO_THRESHOLD = 8.15


def signal(*, rows: int, cols: int, epsilon: float, scale: float, sensitivity: int = 1
           ) -> float:
    """Signal per cell ``eps N / (s rows cols)``.

    Examples
    --------
    >>> signal(rows=256, cols=256, epsilon=1.0, scale=65536)
    1.0
    """
    return float(epsilon) * float(scale) / (int(sensitivity) * int(rows) * int(cols))


def choose_method(*, rows: int, cols: int, epsilon: float, scale: float,
                  sensitivity: int = 1, threshold: float | None = None) -> tuple[str, str]:
    """The public rule behind ``auto``; returns ``(method, reason)``.

    Examples
    --------
    >>> choose_method(rows=256, cols=256, epsilon=0.1, scale=10**4)[0]
    'ag'
    >>> choose_method(rows=256, cols=256, epsilon=1.0, scale=10**8)[0]
    'hdmm'
    """
    rows = check_int(rows, "rows", minimum=1)
    cols = check_int(cols, "cols", minimum=1)
    t = AUTO_THRESHOLD if threshold is None else check_positive(threshold, "threshold")
    sig = signal(rows=rows, cols=cols, epsilon=check_positive(epsilon, "epsilon"),
                 scale=check_positive(scale, "scale"), sensitivity=sensitivity)
    if sig <= t:
        return "ag", f"signal per cell eps*N/(s*cells) = {sig:.3g} <= {t:g}: ag"
    return "hdmm", f"signal per cell eps*N/(s*cells) = {sig:.3g} > {t:g}: hdmm"


def publish_auto(x: np.ndarray, *, epsilon, sensitivity: int = 1, scale=None, rng=None,
                 scale_fraction: float = SCALE_FRACTION, threshold: float | None = None
                 ) -> Release:
    """Publish with the mechanism :func:`choose_method` picks (see the module docstring).

    Why it is eps-DP: the noisy count (when no public ``scale`` is given) is
    ``scale_fraction * eps``-DP; the rule is a public function of it and of public values; the
    chosen mechanism is run with the rest of the budget and reuses the noisy count as its
    scale (sequential composition: the parts sum to eps).
    """
    from .api import publish

    b = as_budget(epsilon)
    s = check_sensitivity(sensitivity)
    g = make_rng(rng)
    rows, cols = x.shape
    n_est, b_rest, split, note = scale_estimate(x, b, scale=scale, sensitivity=s, rng=g,
                                                fraction=scale_fraction)
    method, reason = choose_method(rows=rows, cols=cols, epsilon=b_rest.epsilon, scale=n_est,
                                   sensitivity=s, threshold=threshold)
    rel = publish(x, epsilon=b_rest, method=method, sensitivity=s, scale=n_est, rng=g)
    split = {**split, **{f"{method}:{k}": v for k, v in rel.budget_split.items()}}
    return dataclasses.replace(
        rel, budget=b, budget_split=split,
        parameters={**rel.parameters, "chosen": method, "auto_rule": reason,
                    "auto_threshold": AUTO_THRESHOLD if threshold is None else threshold,
                    "scale_rule": note},
        notes=(*rel.notes, f"auto: {reason}", note))


def fit_threshold(errors: dict[tuple, dict[str, float]], *, rows: int, cols: int,
                  sensitivity: int = 1) -> tuple[float, dict]:
    """Fit :data:`AUTO_THRESHOLD` on measured errors.

    ``errors`` maps ``(dataset, epsilon, scale)`` to ``{method: mean scaled error}`` (with at
    least ``'ag'`` and ``'hdmm'``). Candidates are the geometric midpoints between consecutive
    signals of the settings (the signal uses 95 % of epsilon, as ``auto`` does without a public
    scale); the threshold minimises the largest ratio of the rule's choice to the best method of
    each setting, then the mean log ratio. Returns ``(threshold, report)``.
    """
    sig = {k: signal(rows=rows, cols=cols, epsilon=k[1] * (1 - SCALE_FRACTION), scale=k[2],
                     sensitivity=sensitivity) for k in errors}
    levels = sorted(set(sig.values()))
    cands = [math.sqrt(a * b) for a, b in zip(levels, levels[1:])]
    cands = [levels[0] / 2, *cands, levels[-1] * 2]
    best_t, best_key, best_rep = None, None, None
    for t in cands:
        ratios = {}
        for k, e in errors.items():
            choice = "ag" if sig[k] <= t else "hdmm"
            ratios[k] = e[choice] / min(e.values())
        worst = max(ratios.values())
        mean_log = float(np.mean(np.log(list(ratios.values()))))
        key = (round(worst, 6), mean_log)
        if best_key is None or key < best_key:
            best_t, best_key, best_rep = t, key, {"worst": worst, "mean_log": mean_log,
                                                  "ratios": ratios}
    return float(best_t), best_rep
