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


def greedy_h_reference(edges, workload, *, criterion="dawa"):
    """GreedyH node by node (the straightforward form of ``veil.histograms.dawa.greedy_h``,
    which works level by level over arrays): ``(weights, model_error)``."""
    from veil.histograms.dawa import GRID, _build_hierarchy
    from veil.histograms.workload import RangeWorkload

    e = np.asarray(edges, dtype=np.int64)
    m, n = e.size - 1, int(e[-1])
    w = RangeWorkload.from_spec(workload, n)
    lo, hi, left, right, depth = _build_hierarchy(m)
    bsize = np.diff(e).astype(float)
    r_grid = np.arange(GRID) / GRID
    q_grid = 1.0 - r_grid
    err, k, share, U = {}, {}, {}, {}

    def quad(v_lo, v_hi, u):
        """u^T G u over the node's bins (u per bucket spread over its bins)."""
        vec = np.zeros(n)
        vec[e[v_lo]:e[v_hi]] = np.repeat(u / bsize[v_lo:v_hi], np.diff(e[v_lo:v_hi + 1]))
        return float(w.block_quadratic(vec, [0])[0])

    for v in sorted(range(lo.size), key=lambda v: -depth[v]):
        if left[v] < 0:
            U[v] = np.ones(1)
            err[v], k[v], share[v] = quad(lo[v], hi[v], U[v]), 1.0, 1.0
            continue
        a, b = left[v], right[v]
        u = np.concatenate((U[a], U[b]))
        M = quad(lo[v], hi[v], u)
        kk, E = float(u.sum()), err[a] + err[b]
        if criterion == "dawa":
            M1 = quad(lo[a], hi[a], U[a]) + quad(lo[b], hi[b], U[b])
            dec = 2.0 ** (-depth[v] / 2.0)
            r2, Mm = r_grid ** 2 * dec, (M - M1) * dec + M1
        else:
            r2, Mm = r_grid ** 2, M
        tot = (E - Mm * r2 / (q_grid ** 2 + r2 * kk)) / q_grid ** 2
        i = int(np.argmin(tot))
        r, q = r_grid[i], q_grid[i]
        U[v] = u * (1.0 - r * r / (q * q + r * r * kk) * kk) / (q * q)
        err[v], k[v], share[v] = tot[i], float(U[v].sum()), r
    weight = np.zeros(lo.size)
    passed = np.ones(lo.size)
    for v in range(lo.size):
        weight[v] = passed[v] * share[v]
        for c in (left[v], right[v]):
            if c >= 0:
                passed[c] = passed[v] * (1.0 - share[v])
    return weight, err[0]
