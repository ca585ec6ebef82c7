"""Target resemblance (TR) and target avoidance (TA).

Both pick an integer histogram ``H'`` of a fixed size ``S`` (``S = |H|``, or the
target's size for the ``TR_|H''|`` / ``TA_|H''|`` variants) under a quality
bound ``d_q(H, H') <= eps``; TR minimizes the privacy distance
``d_p(H', H'')`` to the target, TA maximizes it. With ``phi = d_p`` (TR) or
``phi = -d_p`` (TA) both are

    minimize sum_i phi_i(x_i)  s.t.  sum_i g_i(x_i) <= eps,  sum_i x_i = S,  x_i >= 0 integer,

a constrained shortest path through the layered DAG of the paper (node
``(i, t)`` = ``t`` visits placed in bins ``1..i``; edge length ``phi_i(k)``,
edge cost ``g_i(k)``).

* **RO / AO** (exact): label-setting over the layers with three prunings that
  keep it exact: (1) Pareto dominance between labels at the same node, (2)
  feasibility -- a label whose cost plus the cheapest possible completion
  (a backward min-plus DP) exceeds ``eps`` is dropped, (3) bounds -- a label whose
  length plus a lower bound on any completion exceeds the best known feasible
  answer is dropped; the completion bounds are the shortest completion
  ignoring quality and the Lagrangian completion
  ``min sum (phi + lambda* g) - lambda* (eps - cost so far)`` at the best
  multiplier ``lambda*`` (valid for every ``lambda >= 0``). Past ``max_labels``
  labels in one layer (or
  ``time_limit`` seconds) it raises :class:`~veil.errors.InstanceTooLargeError`.
* **RH / AH** (heuristic): the paper's greedy moves -- move one visit from a
  source bin to a destination bin while ``d_q`` stays within ``eps``, as long
  as ``d_p`` improves. veil picks the move with the best ``d_p`` gain per unit
  of ``d_q`` spent (``rule="ratio"``) over all bin pairs; the paper's
  restriction to over-/under-represented bins and the largest-gain rule are
  options (``restrict=True``, ``rule="gain"``). On random instances
  (n = 5..20, N = 30..150) the ratio rule without restriction matched the
  optimum on about 60% of them with mean excess 1e-4..5e-4 in JS, the
  restricted largest-gain rule on under 20% with mean excess 0.01..0.05.
* **Lagrangian bound**: ``max_{lambda >= 0} min_x sum_i (phi_i + lambda g_i)(x_i) - lambda eps``
  (inner problem: the convex greedy for TR, the min-plus DP for TA), a proven
  lower bound on the TR optimum (upper bound on the TA optimum); every result
  reports ``gap = |value - bound|``.
"""

from __future__ import annotations

import math
import time
from typing import Any, Sequence

import numpy as np

from ..distances import bin_terms
from ..errors import InfeasibleError, InstanceTooLargeError, ParameterError
from ..validation import (check_choice, check_counts, check_finite_array, check_int,
                          check_nonnegative)
from ._kernels import greedy_moves, lagrangian_compiled, minplus_backtrack, minplus_chain
from .costs import check_distance
from .hide import convex_allocate
from .result import VisitResult

__all__ = ["resemble", "avoid", "lagrangian_bound", "convex_table_alloc", "DISTANCE_MAX"]

#: the largest value each normalized distance can take (used to reject a threshold c that no
#: histogram can reach); ``kl`` is unbounded.
DISTANCE_MAX = {"js": math.log(2.0), "l1": 2.0, "l2": 2.0, "chi2": 2.0, "hellinger": 1.0,
                "kl": math.inf}

_TOL = 1e-12

#: largest ``n * S^2`` for which a min-plus DP over the instance is run (about 1-3 s with
#: numba); beyond it TA uses a cheap bound and the exact search is not attempted.
DP_WORK_LIMIT = 3e8


class _Problem:
    """Tabulated costs of one TR/TA instance."""

    def __init__(self, h, target, S, eps, qd, pd, forbid_unvisited, sign):
        self.h = h
        self.N = int(h.sum())
        self.n = h.size
        self.S = int(S)
        self.eps = eps
        self.eps_tol = eps * (1 + 1e-9) + _TOL
        self.t = target / target.sum()
        x = np.arange(self.S + 1, dtype=np.float64)[None, :]
        self.G = bin_terms((h / self.N)[:, None], x / self.S, qd)
        if forbid_unvisited:
            self.G = np.where((h == 0)[:, None] & (x > 0), np.inf, self.G)
        self.F = bin_terms(x / self.S, self.t[:, None], pd)
        self.sign = sign
        self.phi = sign * self.F
        self.qd, self.pd = qd, pd
        self._ar = np.arange(self.n)

    def quality(self, x):
        return float(self.G[self._ar, x].sum())

    def objective(self, x):
        return float(self.phi[self._ar, x].sum())

    def min_quality_alloc(self):
        return convex_table_alloc(self.G, self.S)


def convex_table_alloc(C: np.ndarray, S: int) -> np.ndarray:
    """Exact ``argmin sum_i C[i, x_i]`` with ``sum x = S`` for rows convex where finite.

    A row may start with infinite entries (``KL(H || H')`` is infinite when a
    visited bin gets 0): each bin first receives the smallest count at which
    its cost is finite, then the remaining units go by the convex greedy on
    the shifted rows. Raises :class:`InfeasibleError` when no allocation has a
    finite cost.
    """
    n, R1 = C.shape
    fin = np.isfinite(C)
    if not fin.any(axis=1).all():
        i = int(np.flatnonzero(~fin.any(axis=1))[0])
        raise InfeasibleError(f"bin {i} has an infinite cost for every count: no histogram of "
                              f"size {S} has a finite cost")
    lo = fin.argmax(axis=1).astype(np.int64)
    need = int(S) - int(lo.sum())
    if need < 0:
        raise InfeasibleError(f"{int(lo.sum())} visits are needed just to make every bin's cost "
                              f"finite, more than the size {S}")

    def marg(b, k):
        kk = lo[b] + k
        nxt = np.minimum(kk + 1, R1 - 1)
        with np.errstate(invalid="ignore"):
            d = C[b, nxt] - C[b, np.minimum(kk, R1 - 1)]
        return np.where((kk + 1 >= R1) | np.isnan(d) | np.isinf(C[b, nxt]), np.inf, d)

    return lo + convex_allocate(marg, n, need)


def _inner(prob: _Problem, lam: float, convex: bool) -> np.ndarray:
    C = prob.phi + lam * prob.G if lam > 0 else prob.phi.copy()
    C = np.where(np.isnan(C), np.inf, C)
    if convex:
        return convex_table_alloc(C, prob.S)
    layers, arg = minplus_chain(C)
    if not np.isfinite(layers[-1][prob.S]):
        raise InfeasibleError("every histogram of the required size has infinite cost")
    return minplus_backtrack(arg, prob.S)


#: largest n * S for which the compiled Lagrangian (greedy inner solve, O(n S) per multiplier)
#: is used for convex costs; beyond it the threshold allocation of veil.visits.hide is faster.
COMPILED_CONVEX_LIMIT = 2e6


def lagrangian_bound(prob: _Problem, *, iters: int = 30, convex: bool = True,
                     backend: str = "auto"):
    """Best Lagrangian dual value and the best feasible allocation met on the way.

    Returns ``(bound, best_x, best_value, lam)`` where ``bound`` is a proven lower
    bound on ``min sum phi`` subject to the quality constraint (``best_x`` may be
    None when no evaluated multiplier gave a feasible allocation). With numba
    the whole bisection runs compiled (``backend="auto"``; ``"python"`` forces
    the reference loop below); both solve every inner problem exactly, so the
    bound is the same up to ties between equally good inner solutions.
    """
    if backend != "python" and (not convex or prob.n * float(prob.S) <= COMPILED_CONVEX_LIMIT):
        res = lagrangian_compiled(prob.phi, prob.G, prob.S, prob.eps, prob.eps_tol, convex, iters)
        if res is not None:
            status, bound, bx, bv, lam = res
            if status:
                raise InfeasibleError("every histogram of the required size has infinite cost")
            return bound, bx, bv, lam
    best_x, best_v = None, math.inf
    bound = -math.inf
    best_lam = 0.0

    def ev(lam):
        nonlocal best_x, best_v, bound, best_lam
        x = _inner(prob, lam, convex)
        f = prob.objective(x)
        g = prob.quality(x)
        val = f + lam * (g - prob.eps) if lam > 0 else f
        if math.isfinite(val) and val > bound:
            bound, best_lam = val, lam
        if g <= prob.eps_tol and f < best_v:
            best_x, best_v = x, f
        return f, g

    f0, g0 = ev(0.0)
    if g0 <= prob.eps_tol:
        return f0, best_x, best_v, 0.0  # the unconstrained optimum is feasible: bound is tight
    lo, hi = 0.0, 1.0
    lo_fg = (f0, g0)
    for _ in range(80):
        f, g = ev(hi)
        if g <= prob.eps_tol:
            hi_fg = (f, g)
            break
        lo, lo_fg = hi, (f, g)
        hi *= 4.0
    else:
        return bound, best_x, best_v, best_lam
    for _ in range(iters):
        if best_x is not None and best_v - bound <= 1e-12 * max(1.0, abs(best_v)):
            break  # a feasible allocation meets the bound: it is optimal
        mid = 0.5 * (lo + hi)
        f, g = ev(mid)
        if g <= prob.eps_tol:
            hi, hi_fg = mid, (f, g)
        else:
            lo, lo_fg = mid, (f, g)
    # where the two supporting lines cross
    (fl, gl), (fh, gh) = lo_fg, hi_fg
    if gl != gh and math.isfinite(fl) and math.isfinite(fh):
        lam_x = (fh - fl) / (gl - gh)
        if lam_x > 0 and math.isfinite(lam_x):
            ev(lam_x)
    return bound, best_x, best_v, best_lam


def _leave_infinite_bins(prob: _Problem, x: np.ndarray) -> np.ndarray:
    """Move visits out of bins whose privacy term is infinite (RH with ``kl``).

    ``KL(H' || H'')`` is infinite while a bin the target leaves empty holds a
    visit, and no single move changes that sum (inf - inf), so the move loop
    would stop at once. The objective is lexicographic: first the number of
    visits in infinite bins, then the finite sum. Each step moves one visit
    from an infinite bin to a finite-cost bin, keeping the quality bound, the
    cheapest in quality first (ties: the smaller privacy increase, then the
    first bins); it stops when no infinite bin is left or no move is allowed.
    """
    x = x.copy()
    ar = prob._ar
    G, phi, S = prob.G, prob.phi, prob.S
    diag = np.eye(prob.n, dtype=bool)
    for _ in range(int(S) + 1):
        bad = np.isinf(phi[ar, x]) & (x > 0)
        if not bad.any():
            break
        xm = np.maximum(x - 1, 0)
        xp = np.minimum(x + 1, S)
        with np.errstate(invalid="ignore"):
            rq = np.where(bad, G[ar, xm] - G[ar, x], np.inf)
            aq = np.where(x < S, G[ar, xp] - G[ar, x], np.inf)
            af = np.where(x < S, phi[ar, xp] - phi[ar, x], np.inf)
        rq = np.where(np.isnan(rq) | np.isinf(G[ar, xm]), np.inf, rq)
        aq = np.where(np.isnan(aq) | np.isinf(G[ar, xp]), np.inf, aq)
        af = np.where(np.isnan(af) | np.isinf(phi[ar, xp]), np.inf, af)
        dq = rq[:, None] + aq[None, :]
        ok = (prob.quality(x) + dq <= prob.eps_tol) & ~diag & np.isfinite(dq) \
            & np.isfinite(af)[None, :]
        if not ok.any():
            break
        key_q = np.where(ok, dq, np.inf).ravel()
        key_f = np.broadcast_to(af[None, :], dq.shape).ravel()
        j = int(np.lexsort((np.arange(key_q.size), key_f, key_q))[0])
        a, b = divmod(j, prob.n)
        x[a] -= 1
        x[b] += 1
    return x


def _heuristic(prob: _Problem, x0: np.ndarray, restrict: bool,
               rule: str = "ratio", backend: str = "auto") -> np.ndarray:
    max_iter = 4 * prob.S * max(prob.n, 1) + 10
    if prob.sign > 0 and np.isinf(prob.phi[prob._ar, x0]).any():
        x0 = _leave_infinite_bins(prob, x0)
    if backend != "numpy":
        x = greedy_moves(prob.G, prob.phi, x0, prob.S, prob.t, prob.sign, restrict,
                         prob.eps_tol, rule == "ratio", _TOL, max_iter)
        if x is not None:
            return x
    x = x0.copy()
    n, S = prob.n, prob.S
    ar = prob._ar
    G, phi = prob.G, prob.phi
    Q = prob.quality(x)
    diag = np.eye(n, dtype=bool)
    for _ in range(max_iter):
        xm = np.maximum(x - 1, 0)
        xp = np.minimum(x + 1, S)
        with np.errstate(invalid="ignore"):
            rq = np.where(x > 0, G[ar, xm] - G[ar, x], np.inf)
            rf = np.where(x > 0, phi[ar, xm] - phi[ar, x], np.inf)
            aq = np.where(x < S, G[ar, xp] - G[ar, x], np.inf)
            af = np.where(x < S, phi[ar, xp] - phi[ar, x], np.inf)
        rq = np.where(np.isnan(rq), np.inf, rq)
        aq = np.where(np.isnan(aq) | np.isinf(G[ar, xp]), np.inf, aq)
        rf = np.where(np.isnan(rf), np.inf, rf)
        af = np.where(np.isnan(af), np.inf, af)
        src = x > 0
        dst = x < S
        if restrict:
            share = x / S
            if prob.sign > 0:  # RH: from over-represented to under-represented bins
                src &= share > prob.t
                dst &= share < prob.t
            else:  # AH: away from the target
                src &= share <= prob.t
                dst &= share >= prob.t
        si = np.flatnonzero(src)
        di = np.flatnonzero(dst)
        if si.size == 0 or di.size == 0:
            break
        dq = rq[si][:, None] + aq[di][None, :]
        with np.errstate(invalid="ignore"):
            df = rf[si][:, None] + af[di][None, :]
        # -inf: the move leaves a bin of infinite privacy cost (kl with an empty target bin)
        ok = (Q + dq <= prob.eps_tol) & ~diag[np.ix_(si, di)] & ~np.isnan(df) & (df < np.inf)
        if not ok.any():
            break
        ok &= df < -_TOL
        if not ok.any():
            break
        if rule == "ratio":  # most privacy gained per unit of quality spent
            with np.errstate(invalid="ignore", over="ignore"):
                score = np.where(ok, df / np.maximum(dq, 1e-15), np.inf)
        else:  # largest privacy gain
            score = np.where(ok, df, np.inf)
        j = int(np.argmin(score))
        a, b = si[j // di.size], di[j % di.size]
        x[a] -= 1
        x[b] += 1
        Q = prob.quality(x)
    return x


def _exact(prob: _Problem, incumbent: float, max_labels: int, time_limit: float | None,
           t0: float, lam: float = 0.0, pruning: str = "full") -> np.ndarray | None:
    n, S = prob.n, prob.S
    G, phi = prob.G, prob.phi
    Cphi = np.where(np.isnan(phi), np.inf, phi)
    # completion bounds: after[i][j] = best over bins i+1..n-1 placing exactly j visits
    layers_g, _ = minplus_chain(G[::-1], keep_all=True)
    layers_f, _ = minplus_chain(Cphi[::-1], keep_all=True)
    # Lagrangian completion bound: for any lam >= 0 the rest of a path costs at least
    # min sum (phi + lam g) - lam * (eps - cost so far)
    if lam > 0:
        Clam = np.where(np.isnan(Cphi + lam * G), np.inf, Cphi + lam * G)
        layers_l, _ = minplus_chain(Clam[::-1], keep_all=True)
    ub = incumbent + 1e-9 * max(1.0, abs(incumbent)) if math.isfinite(incumbent) else math.inf
    t = np.zeros(1, dtype=np.int64)
    c = np.zeros(1)
    ln = np.zeros(1)
    history = []
    ks = np.arange(S + 1)
    for i in range(n):
        gafter = layers_g[n - 1 - i]
        fafter = layers_f[n - 1 - i]
        chunk = max(1, 2_000_000 // (S + 1))
        parts = []
        for s0 in range(0, t.size, chunk):
            tt, cc, ll = t[s0:s0 + chunk], c[s0:s0 + chunk], ln[s0:s0 + chunk]
            if i == n - 1:
                kk = (S - tt)[:, None]
            else:
                kk = np.broadcast_to(ks[None, :], (tt.size, S + 1))
            nt = tt[:, None] + kk
            valid = nt <= S
            ntc = np.minimum(nt, S)
            kc = np.minimum(kk, S)
            nc = cc[:, None] + G[i, kc]
            nl = ll[:, None] + Cphi[i, kc]
            if pruning == "paper":  # only labels that already violate the quality bound
                valid &= nc <= prob.eps_tol
            else:
                valid &= nc + gafter[S - ntc] <= prob.eps_tol
                valid &= nl + fafter[S - ntc] <= ub
            if lam > 0 and pruning != "paper":
                with np.errstate(invalid="ignore"):
                    lb = nl + layers_l[n - 1 - i][S - ntc] - lam * (prob.eps - nc)
                valid &= ~(lb > ub)
            rows, cols = np.nonzero(valid)
            parts.append((rows + s0, kc[rows, cols], ntc[rows, cols], nc[rows, cols],
                          nl[rows, cols]))
        par = np.concatenate([p[0] for p in parts])
        kk = np.concatenate([p[1] for p in parts])
        nt = np.concatenate([p[2] for p in parts])
        nc = np.concatenate([p[3] for p in parts])
        nl = np.concatenate([p[4] for p in parts])
        if nt.size == 0:
            return None
        # Pareto pruning per node nt: sort by (nt, cost, length); keep strictly better lengths
        order = np.lexsort((nl, nc, nt))
        par, kk, nt, nc, nl = par[order], kk[order], nt[order], nc[order], nl[order]
        _, rank = np.unique(nl, return_inverse=True)
        big = rank.size + 1
        v = rank.astype(np.int64) - nt.astype(np.int64) * big
        cm = np.minimum.accumulate(v)
        keep = np.ones(v.size, dtype=bool)
        keep[1:] = v[1:] < cm[:-1]
        par, kk, nt, nc, nl = par[keep], kk[keep], nt[keep], nc[keep], nl[keep]
        if nt.size > max_labels:
            raise InstanceTooLargeError(
                f"exact search needs more than max_labels={max_labels} labels at bin {i + 1} of "
                f"{n} ({nt.size} after pruning): use method='heuristic' or raise max_labels")
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            raise InstanceTooLargeError(
                f"exact search exceeded time_limit={time_limit} s at bin {i + 1} of {n}: use "
                "method='heuristic' or raise time_limit")
        history.append((par, kk))
        t, c, ln = nt, nc, nl
    best = int(np.argmin(ln))
    x = np.empty(n, dtype=np.int64)
    j = best
    for i in range(n - 1, -1, -1):
        par, kk = history[i]
        x[i] = kk[j]
        j = int(par[j])
    return x


def _solve(problem: str, histogram, target, *, quality_bound, privacy_threshold,
           quality_distance, privacy_distance, method, size, forbid_unvisited, labels,
           max_labels, time_limit, restrict, rule, pruning="full") -> VisitResult:
    t0 = time.perf_counter()
    from ..labelled import is_series, labelled_values

    from collections.abc import Mapping

    def named(x):
        return isinstance(x, Mapping) or (is_series(x) and not (
            type(x.index).__name__ == "RangeIndex" and x.index.start == 0))

    if labels is None and named(histogram) and named(target):
        # both name their bins: the domain is the histogram's bins, then the target's others
        hk = [str(k) for k in (histogram.index if is_series(histogram) else histogram)]
        tk = [str(k) for k in (target.index if is_series(target) else target)]
        labels = hk + [k for k in tk if k not in set(hk)]
    elif labels is None and named(target):
        raise ParameterError("the target names its bins but the histogram does not: give "
                             "labels= (the histogram's bin names) or a labelled histogram")
    histogram, labels = labelled_values(histogram, labels, name="histogram")
    target, _ = labelled_values(target, labels, name="target")
    h = check_counts(histogram, "histogram")
    N = int(h.sum())
    if N == 0:
        raise ParameterError("histogram is empty (all counts are 0): nothing to sanitize")
    tgt = check_finite_array(target, "target", ndim=1)
    if tgt.size != h.size:
        raise ParameterError(f"target has {tgt.size} bins but the histogram has {h.size}: they "
                             "must share one domain (align them by category first)")
    if (tgt < 0).any():
        i = int(np.flatnonzero(tgt < 0)[0])
        raise ParameterError(f"target[{i}] must be >= 0, got {tgt[i]!r}")
    with np.errstate(over="ignore"):
        tgt_total = float(tgt.sum())
    if tgt_total <= 0:
        raise ParameterError("target sums to 0: it must put weight on at least one bin")
    if not np.isfinite(tgt_total):  # [1e308, 1e308, ...] normalized to NaN: "certified optimal"
        raise ParameterError("target's weights add up to more than float64 holds: scale them "
                             "down (only their proportions matter)")
    if labels is not None:
        labels = tuple(str(v) for v in labels)
        if len(labels) != h.size:
            raise ParameterError(f"labels has {len(labels)} names for {h.size} bins")
    eps = check_nonnegative(quality_bound, "quality_bound")
    qd = check_distance(quality_distance, "quality_distance")
    pd = check_distance(privacy_distance, "privacy_distance")
    if problem == "avoid" and pd == "kl" and (tgt == 0).any():
        raise ParameterError("privacy_distance 'kl' is unbounded for avoid when the target has "
                             "empty bins (any visit there gives an infinite distance); use js, "
                             "chi2, hellinger, l1 or l2")
    c = None
    if privacy_threshold is not None:
        c = check_nonnegative(privacy_threshold, "privacy_threshold")
        if problem == "avoid" and c > DISTANCE_MAX[pd]:
            raise ParameterError(f"privacy_threshold={c!r} exceeds the largest possible "
                                 f"{pd} distance ({DISTANCE_MAX[pd]:.6g}): no histogram can "
                                 "avoid the target that much")
    check_choice(method, "method", ("auto", "exact", "heuristic"))
    check_choice(rule, "rule", ("ratio", "gain"))
    check_choice(pruning, "pruning", ("full", "paper"))
    if isinstance(size, str):
        check_choice(size, "size", ("histogram", "target"))
        if size == "histogram":
            S = N
        else:
            s = float(tgt.sum())
            if abs(s - round(s)) > 1e-9 or round(s) < 1:
                raise ParameterError(f"size='target' needs a target with an integer total >= 1, "
                                     f"got {s!r}")
            S = int(round(s))
    else:
        S = check_int(size, "size", minimum=1)
    sign = 1.0 if problem == "resemble" else -1.0
    if h.size * float(S + 1) > 5e7:
        raise InstanceTooLargeError(
            f"{problem} tabulates per-bin costs for every count 0..S: n*(S+1) = "
            f"{h.size * (S + 1):.2g} exceeds 5e7 cells (n={h.size}, S={S})")
    prob = _Problem(h, tgt, S, eps, qd, pd, forbid_unvisited, sign)
    names = ("RO", "RH") if problem == "resemble" else ("AO", "AH")
    notes: list[str] = []
    # starting point: H itself (size kept) or the closest histogram of size S
    x0 = h.copy() if S == N else prob.min_quality_alloc()
    q0 = prob.quality(x0)
    if q0 > prob.eps_tol:
        raise InfeasibleError(f"no histogram of size {S} is within quality_bound={eps!r} of the "
                              f"input: the closest one has {qd} distance {q0:.6g}")
    ta = time.perf_counter()
    xh = _heuristic(prob, x0, restrict, rule)
    tb = time.perf_counter()
    big = prob.n * float(S + 1) ** 2 > DP_WORK_LIMIT
    if sign < 0 and big:
        # the TA dual needs a min-plus DP; use the bound that ignores the size and quality
        # constraints: sum_i max_x d_p-term_i(x) (valid, weaker)
        bound, lag_x, lag_v, lam = float(np.nanmin(prob.phi, axis=1).sum()), None, math.inf, 0.0
        # no histogram is farther than the distance's largest value (ln 2 for js)
        bound = max(bound, -DISTANCE_MAX[pd])
        notes.append(f"instance too large for the Lagrangian DP (n*S^2 > {DP_WORK_LIMIT:.0e}): "
                     "the upper bound ignores the size and quality constraints (clipped to the "
                     f"largest possible {pd} distance)")
    else:
        bound, lag_x, lag_v, lam = lagrangian_bound(prob, convex=(sign > 0))
    tc = time.perf_counter()
    timings = {"heuristic_s": tb - ta, "bound_s": tc - tb}
    x, algo, exact = xh, names[1], False
    certified = (pruning == "full" and lag_x is not None
                 and lag_v - bound <= 1e-12 * max(1.0, abs(lag_v)))
    if method in ("auto", "exact") and certified:
        # the Lagrangian found a feasible allocation whose value equals the bound: optimal
        x, algo, exact = lag_x, names[0], True
        notes.append("optimality certified by the Lagrangian bound (no search needed)")
    elif method in ("auto", "exact"):
        inc = prob.objective(xh)
        if lag_x is not None:
            inc = min(inc, lag_v)
        try:
            if big:
                raise InstanceTooLargeError(
                    f"exact search needs min-plus DPs of n*S^2 = {prob.n * (S + 1) ** 2:.2g} > "
                    f"{DP_WORK_LIMIT:.0e} cells: use method='heuristic'")
            tl = time_limit if (time_limit is not None or method == "exact") else 10.0
            xe = _exact(prob, inc, max_labels, tl, t0, lam, pruning)
            timings["exact_s"] = time.perf_counter() - tc
        except InstanceTooLargeError as exc:
            if method == "exact":
                raise
            notes.append(f"exact {names[0]} skipped: {exc}; heuristic answer returned")
        else:
            if xe is None:  # only the incumbent reaches the bound
                xe = xh if prob.objective(xh) <= (lag_v if lag_x is not None else math.inf) \
                    else lag_x
            x, algo, exact = xe, names[0], True
    value_obj = prob.objective(x)
    dp = float(bin_terms(x / S, prob.t, pd).sum())
    dq = float(bin_terms(h / N, x / S, qd).sum())
    if exact:
        bnd = dp
        gap = 0.0
        bound = value_obj
    else:
        bnd = sign * bound
        # a distance lies in [0, DISTANCE_MAX]: a bound outside that range is clipped to it
        bnd = max(bnd, 0.0) if sign > 0 else min(bnd, DISTANCE_MAX[pd])
        gap = max(0.0, sign * (dp - bnd))
    if c is not None:
        fail = dp > c + _TOL if problem == "resemble" else dp < c - _TOL
        if fail:
            rel = "<=" if problem == "resemble" else ">="
            proven = exact or (bnd > c if problem == "resemble" else bnd < c)
            if proven:
                raise InfeasibleError(
                    f"no histogram within quality_bound={eps!r} has {pd} distance {rel} "
                    f"privacy_threshold={c!r} to the target: the best possible is {dp:.6g} "
                    f"(proven by {algo if exact else 'the Lagrangian bound'}); raise "
                    "quality_bound or relax privacy_threshold")
            raise InfeasibleError(
                f"{algo} reached {pd} distance {dp:.6g}, not {rel} privacy_threshold={c!r}; the "
                f"bound {bnd:.6g} does not rule a solution out: try method='exact' or raise "
                "quality_bound")
    return VisitResult(
        histogram=x.astype(np.int64), original=h, problem=problem, algorithm=algo, exact=exact,
        quality_distance=qd, quality_loss=dq, privacy_distance=pd, privacy_value=dp,
        bound=float(bnd), gap=float(gap), labels=labels,
        parameters={"quality_bound": eps, "privacy_threshold": c, "size": S,
                    "method": method, "forbid_unvisited": forbid_unvisited,
                    "heuristic_rule": rule, "restrict": restrict, "timings": timings},
        runtime_s=time.perf_counter() - t0, notes=tuple(notes))


_DOC_PARAMS = """
    Parameters
    ----------
    histogram : array-like of int, pandas Series or dict
        The user's visit counts (a Series index or dict keys name the bins; see
        :mod:`veil.labelled`).
        The user's visit counts ``H``.
    target : array-like of float, pandas Series or dict
        The target ``H''`` on the same bins: a histogram or a distribution
        (non-integer values allowed); it is normalized. A labelled target is aligned by
        name (bins it does not mention count as 0).
    quality_bound : float
        ``eps``: the largest acceptable ``d_q(H, H')`` (>= 0).
    privacy_threshold : float, optional
        ``c``. When given, an answer that misses it raises InfeasibleError.
    quality_distance, privacy_distance : str
        js, kl, l1, l2, chi2 or hellinger (on normalized histograms).
    method : {"auto", "exact", "heuristic"}
        ``exact`` raises InstanceTooLargeError past the limits; ``auto`` falls
        back to the heuristic with a note; ``heuristic`` never runs the exact search.
    size : "histogram", "target" or int
        Size of ``H'``: ``|H|`` (default), ``|H''|`` (the target-size variant;
        the target total must be an integer) or a given number.
    forbid_unvisited : bool
        Never put visits on places the user never visited.
    labels : sequence of str, optional
        Bin names, carried into the result.
    max_labels : int
        Exact search limit: labels kept in one layer after pruning.
    time_limit : float, optional
        Exact search limit in seconds (checked after each bin); ``None`` means
        no limit for ``method="exact"`` and 10 s for ``method="auto"``.
    restrict : bool
        Heuristic moves only from over- to under-represented bins (RH) or the
        reverse (AH), as the paper describes; off by default (measured worse:
        the restriction blocks moves that pay off later).
    rule : {"ratio", "gain"}
        Heuristic move choice: best privacy change per unit of quality spent
        (default; the quality bound is the budget the moves consume) or the
        largest privacy change.
    pruning : {"full", "paper"}
        Exact search pruning: ``full`` (dominance, feasibility and bound
        pruning) or ``paper`` (dominance and the quality bound only, as the
        paper's RO; for comparisons -- it is much slower).

    Returns
    -------
    VisitResult
        With ``bound`` (Lagrangian, or the optimum when exact) and ``gap``.

    Raises
    ------
    ParameterError
        Bad counts, a target on a different domain, eps or c out of range.
    InfeasibleError
        No histogram reaches ``c`` within the quality bound (proven), the
        heuristic missed ``c`` without proof, or no histogram of the required
        size meets the quality bound.
    InstanceTooLargeError
        ``method="exact"`` past ``max_labels`` / ``time_limit``.
"""


def resemble(histogram: Any, target: Any, *, quality_bound: float,
             privacy_threshold: float | None = None, quality_distance: str = "js",
             privacy_distance: str = "js", method: str = "auto", size: Any = "histogram",
             forbid_unvisited: bool = False, labels: Sequence[str] | None = None,
             max_labels: int = 200_000, time_limit: float | None = None,
             restrict: bool = False, rule: str = "ratio", pruning: str = "full") -> VisitResult:
    return _solve("resemble", histogram, target, quality_bound=quality_bound,
                  privacy_threshold=privacy_threshold, quality_distance=quality_distance,
                  privacy_distance=privacy_distance, method=method, size=size,
                  forbid_unvisited=forbid_unvisited, labels=labels, max_labels=max_labels,
                  time_limit=time_limit, restrict=restrict, rule=rule, pruning=pruning)


def avoid(histogram: Any, target: Any, *, quality_bound: float,
          privacy_threshold: float | None = None, quality_distance: str = "js",
          privacy_distance: str = "js", method: str = "auto", size: Any = "histogram",
          forbid_unvisited: bool = False, labels: Sequence[str] | None = None,
          max_labels: int = 200_000, time_limit: float | None = None,
          restrict: bool = False, rule: str = "ratio", pruning: str = "full") -> VisitResult:
    return _solve("avoid", histogram, target, quality_bound=quality_bound,
                  privacy_threshold=privacy_threshold, quality_distance=quality_distance,
                  privacy_distance=privacy_distance, method=method, size=size,
                  forbid_unvisited=forbid_unvisited, labels=labels, max_labels=max_labels,
                  time_limit=time_limit, restrict=restrict, rule=rule, pruning=pruning)


resemble.__doc__ = """Target resemblance (TR): the histogram closest to a target within a bound.

    Minimizes ``d_p(H', H'')`` over integer ``H'`` of the chosen size with
    ``d_q(H, H') <= eps``: exactly (RO) or with the RH heuristic; the answer
    always carries a proven lower bound and its gap.
""" + _DOC_PARAMS + """
    Examples
    --------
    >>> r = resemble([6, 2, 0, 2], [1, 1, 1, 1], quality_bound=0.05, method="exact")
    >>> r.algorithm, r.histogram.tolist(), r.gap
    ('RO', [4, 2, 1, 3], 0.0)
"""

avoid.__doc__ = """Target avoidance (TA): the histogram farthest from a target within a bound.

    Maximizes ``d_p(H', H'')`` over integer ``H'`` of the chosen size with
    ``d_q(H, H') <= eps``: exactly (AO) or with the AH heuristic; the answer
    always carries a proven upper bound and its gap.
""" + _DOC_PARAMS + """
    Examples
    --------
    >>> r = avoid([3, 3, 2, 2], [1, 1, 1, 1], quality_bound=0.05, method="exact")
    >>> r.algorithm, int(r.histogram.sum())
    ('AO', 10)
"""
