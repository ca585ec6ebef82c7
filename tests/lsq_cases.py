"""Brute force for the bucket mechanisms (coarse, privtree): their release is the weighted
least-squares solve of GreedyH's noisy node totals, spread uniformly inside each bucket."""

from __future__ import annotations

import numpy as np


def dense_gls(edges, strat, y, var):
    """Weighted least squares over the bucket totals (a dense solve of every measured node),
    spread uniformly over each bucket's bins."""
    on = strat.weight > 0
    m = len(edges) - 1
    rows = np.array([[1.0 if strat.lo[v] <= b < strat.hi[v] else 0.0 for b in range(m)]
                     for v in np.flatnonzero(on)])
    wts = 1 / np.sqrt(var[on])
    tot = np.linalg.lstsq(rows * wts[:, None], y[on] * wts, rcond=None)[0]
    return np.repeat(tot / np.diff(edges), np.diff(edges))


def small_cases(workload, trials: int = 6):
    """``(trial, n, x)``: small random histograms for the exactness tests (20 to 30 bins for
    a given range set, whose ranges reach bin 20)."""
    g = np.random.default_rng(3)
    for trial in range(trials):
        n = int(g.integers(5, 21)) if isinstance(workload, str) else int(g.integers(20, 31))
        yield trial, n, g.integers(0, 30, n)
