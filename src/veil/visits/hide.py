"""Sensitive location hiding (SLH, SLH_r): zero the sensitive bins, redistribute their visits.

Two exact solvers:

* :func:`lho` -- the paper's LHO: a shortest path through the layered DAG
  ``(0,0) -> (1, k1) -> ... -> (m, r)``, computed as a min-plus convolution chain
  (``O(m r^2)`` time, ``O(m r)`` memory, compiled with numba when available).
  It accepts any per-bin cost table, convex or not, with ``inf`` entries.
* :func:`convex_allocate` -- for per-bin costs convex in the added count (every
  distance in :data:`veil.distances.BIN_DISTANCES` is), the optimum takes the
  ``r`` smallest marginal costs over all bins (greedy marginal allocation is
  exact for separable convex resource allocation). Found without a heap: a
  bisection on the marginal value with a vectorized per-bin binary search,
  then an exact selection among the few candidates left;
  ``O(m log r log(range))`` work.

Tie-break (L1): with ``distance="l1"`` many allocations share the optimum (for
SLH every allocation does: the L1 loss is always ``2K/N``). veil then
evaluates the L1 cost exactly in integers (scaled by ``N S``) and breaks ties
by the secondary objective ``sum_i k_i^2`` (spread the added visits as
evenly as possible over the allowed bins), then by bin order (earlier bins
first in the greedy; fewest units to later bins in LHO). Both solvers share
the same integer objective, so their optima coincide exactly. For the other
distances ties are measure-zero and broken the same way (smallest bin index).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InfeasibleError, ParameterError
from ..validation import check_choice, check_counts, check_int
from ._kernels import minplus_backtrack, minplus_chain
from .costs import QualityCost, check_distance
from .result import VisitResult

__all__ = ["hide", "hide_many", "lho", "convex_allocate", "resolve_bins", "check_hide_distance"]


def resolve_bins(selection: Any, n: int, labels: Sequence[str] | None, name: str) -> np.ndarray:
    """Turn indices, a boolean mask or label names into a sorted array of bin indices."""
    if selection is None:
        return np.zeros(0, dtype=np.int64)
    if isinstance(selection, str):
        selection = [selection]
    sel = list(selection) if not isinstance(selection, np.ndarray) else selection
    arr = np.asarray(sel)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise ParameterError(f"{name} mask must have {n} entries, got shape {arr.shape}")
        return np.flatnonzero(arr).astype(np.int64)
    if arr.dtype.kind in "iu":
        bad = (arr < 0) | (arr >= n)
        if bad.any():
            raise ParameterError(f"{name} index {int(arr[bad][0])} is out of range 0..{n - 1}")
        return np.unique(arr.astype(np.int64))
    if labels is None:
        raise ParameterError(f"{name} names bins {sel[:3]!r} but the histogram has no labels")
    pos = {lab: i for i, lab in enumerate(labels)}
    out = []
    for s in sel:
        if s not in pos:
            import difflib

            hint = difflib.get_close_matches(str(s), list(pos), n=1)
            extra = f"; did you mean {hint[0]!r}?" if hint else ""
            raise ParameterError(f"{name}: unknown bin {s!r}{extra}")
        out.append(pos[s])
    return np.unique(np.asarray(out, dtype=np.int64))


def lho(costs: np.ndarray, total: int, *, backend: str = "auto") -> tuple[np.ndarray, float]:
    """Exact min-cost allocation of ``total`` units to bins (the LHO shortest path).

    Parameters
    ----------
    costs : ndarray, shape (m, total + 1)
        ``costs[i, k]`` = cost of adding ``k`` units to bin ``i``; ``inf`` forbids.
    total : int
        Units to allocate.
    backend : {"auto", "numba", "numpy"}

    Returns
    -------
    allocation : ndarray of int64, shape (m,)
    cost : float

    Raises
    ------
    InfeasibleError
        If every allocation has infinite cost.

    Examples
    --------
    >>> import numpy as np
    >>> k = np.arange(4)
    >>> alloc, cost = lho(np.vstack([k ** 2, 2.0 * k ** 2]).astype(float), 3)
    >>> alloc.tolist(), cost
    ([2, 1], 6.0)
    """
    costs = np.asarray(costs, dtype=np.float64)
    if costs.ndim != 2 or costs.shape[1] != total + 1:
        raise ParameterError(f"costs must have shape (m, {total + 1}), got {costs.shape}")
    if np.isnan(costs).any():
        raise ParameterError("costs contain NaN")
    layers, arg = minplus_chain(costs, backend=backend)
    best = float(layers[-1][total])
    if not np.isfinite(best):
        raise InfeasibleError(f"no allocation of {total} units has finite cost (every allowed "
                              "bin is forbidden)")
    return minplus_backtrack(arg, total), best


def convex_allocate(marginal: Callable[[np.ndarray, np.ndarray], np.ndarray], m: int, total: int,
                    *, max_candidates: int = 1 << 14) -> np.ndarray:
    """Exact allocation of ``total`` units when each bin's cost is convex in its units.

    Parameters
    ----------
    marginal : callable
        ``marginal(bins, k)`` -> cost of the ``(k+1)``-th unit in each bin
        (non-decreasing in ``k``; ``inf`` for a forbidden step). Vectorized.
    m : int
        Number of bins.
    total : int
        Units to allocate.
    max_candidates : int
        Size of the final exact selection.

    Returns
    -------
    ndarray of int64, shape (m,)
        Units per bin; ties go to the smallest bin index.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.array([1.0, 2.0])
    >>> convex_allocate(lambda b, k: w[b] * (2 * k + 1), 2, 3).tolist()
    [2, 1]
    """
    out = np.zeros(m, dtype=np.int64)
    if total == 0 or m == 0:
        if total > 0:
            raise InfeasibleError("no bin to allocate into")
        return out
    idx = np.arange(m)

    def count(lam: float) -> np.ndarray:
        lo = np.zeros(m, dtype=np.int64)
        hi = np.full(m, total, dtype=np.int64)
        act = idx
        while act.size:
            mid = (lo[act] + hi[act]) // 2
            ok = marginal(act, mid) <= lam
            lo[act] = np.where(ok, mid + 1, lo[act])
            hi[act] = np.where(ok, hi[act], mid)
            act = act[lo[act] < hi[act]]
        return lo

    first = marginal(idx, np.zeros(m, dtype=np.int64))
    last = marginal(idx, np.full(m, total - 1, dtype=np.int64))
    fin_first = first[np.isfinite(first)]
    fin_last = last[np.isfinite(last)]
    if fin_first.size == 0:
        raise InfeasibleError("no allowed bin can receive a unit (all are forbidden)")
    lo = float(np.nextafter(fin_first.min(), -np.inf))
    if fin_last.size:
        hi = float(fin_last.max())
    else:  # every bin is capped below `total`: use the largest finite marginal seen
        hi = float(np.nextafter(np.finfo(np.float64).max, 0))
    c_lo = np.zeros(m, dtype=np.int64)
    c_hi = count(hi)
    if c_hi.sum() < total:
        raise InfeasibleError(f"only {int(c_hi.sum())} of {total} units can be placed at "
                              "finite cost")
    while int(c_hi.sum() - c_lo.sum()) > max_candidates:
        mid = lo + (hi - lo) / 2.0
        if not (lo < mid < hi):
            break
        c_mid = count(mid)
        if c_mid.sum() >= total:
            hi, c_hi = mid, c_mid
        else:
            lo, c_lo = mid, c_mid
    need = total - int(c_lo.sum())
    extra = c_hi - c_lo
    n_cand = int(extra.sum())
    if n_cand <= 8 * max_candidates:
        rep = np.repeat(idx, extra)
        starts = np.cumsum(extra) - extra
        ks = c_lo[rep] + (np.arange(n_cand) - starts[rep])
        vals = marginal(rep, ks)
        order = np.lexsort((ks, rep, vals))[:need]
        take = np.bincount(rep[order], minlength=m)
    else:  # a collapsed bracket: every candidate has the same marginal value
        take = np.clip(need - (np.cumsum(extra) - extra), 0, extra)
    return c_lo + take


def hide(histogram: Any, *, sensitive: Any, distance: str = "js", r: int | None = None,
         method: str = "auto", forbid_unvisited: bool = False,
         labels: Sequence[str] | None = None, mitigation: Any = None,
         rng: Any = None) -> VisitResult:
    """Sensitive location hiding: zero the sensitive bins and redistribute their visits.

    Solves SLH (``r`` = the sensitive total ``K``, size preserved) or SLH_r
    (``r`` visits redistributed, size ``N - K + r``) exactly: the result
    minimizes ``d_q(H, H')`` over all integer histograms with zero sensitive bins.

    Parameters
    ----------
    histogram : array-like of int, pandas Series or dict
        The user's visit counts ``H`` (non-negative integers). A Series index or dict keys
        name the bins, as ``labels`` would (see :mod:`veil.labelled`).
    sensitive : indices, boolean mask, or bin names (with ``labels``)
        The sensitive locations.
    distance : str
        Quality distance ``d_q``: js, l1, l2, chi2, hellinger. ``kl`` is always
        rejected: ``KL(H || H')`` is infinite whenever a sensitive place was
        visited, so accepting it only for users without sensitive visits would
        make the error itself reveal them.
    r : int, optional
        Visits to redistribute (SLH_r); default ``K``.
    method : {"auto", "lho", "convex"}
        ``lho``: the min-plus DP (the paper's exact algorithm, ``O(m r^2)``);
        ``convex``: the exact greedy fast path; ``auto`` = ``convex`` (all
        supported distances are convex in the added count).
    forbid_unvisited : bool
        Never add visits to a place the user never visited.
    labels : sequence of str, optional
        Bin names (needed when ``sensitive`` names bins).
    mitigation : Resample, optional
        Randomized post-processing applied to every user alike (see
        :mod:`veil.visits.mitigation`): the LHO answer is resampled to a public
        size. Default ``None``: the paper's deterministic SLH.
    rng : numpy.random.Generator, optional
        Randomness of the mitigation (default: OS entropy; a seeded generator
        is for experiments only).

    Returns
    -------
    VisitResult
        ``exact=True``, ``gap=0`` (with a mitigation: ``exact`` refers to the
        LHO step; ``histogram`` is the resampled release and ``quality_loss``
        its distance to the input).

    Raises
    ------
    ParameterError
        Negative or non-integer counts, bad ``r``, unknown bins or distance.
    InfeasibleError
        The sensitive set covers every visited place (nothing to redistribute
        into), or every allowed bin is forbidden.

    Examples
    --------
    >>> res = hide([5, 3, 0, 2], sensitive=[3], distance="js")
    >>> res.histogram.tolist(), res.size
    ([6, 4, 0, 0], 10)
    """
    t0 = time.perf_counter()
    from ..labelled import labelled_values

    histogram, labels = labelled_values(histogram, labels, name="histogram")
    h = check_counts(histogram, "histogram")
    n = h.size
    if labels is not None:
        labels = tuple(str(x) for x in labels)
        if len(labels) != n:
            raise ParameterError(f"labels has {len(labels)} names for {n} bins")
    distance = check_hide_distance(distance)
    check_choice(method, "method", ("auto", "lho", "convex"))
    mitigation = check_mitigation(mitigation, forbid_unvisited)
    sens = resolve_bins(sensitive, n, labels, "sensitive")
    N = int(h.sum())
    if N == 0:
        raise ParameterError("histogram is empty (all counts are 0): nothing to sanitize")
    K = int(h[sens].sum())
    r = K if r is None else check_int(r, "r", minimum=0)
    mask = np.zeros(n, dtype=bool)
    mask[sens] = True
    free = np.flatnonzero(~mask)
    if free.size == 0:
        raise InfeasibleError("sensitive covers every bin: there is no place to redistribute "
                              "the visits into")
    if int(h[free].sum()) == 0:
        raise InfeasibleError("the sensitive set covers every visited place: nothing is left "
                              "to redistribute the visits into (remove some sensitive places)")
    size = N - K + r
    if size >= 2**53:  # float64 costs; r = 10^20 overflowed int64 ("internal error")
        raise ParameterError(f"r={r}: the sanitized size N - K + r = {size:,} must stay below "
                             f"2^53 = {2**53:,} (visits are computed in float64, which holds "
                             "whole numbers exactly only below that)")
    cost = QualityCost(h, free, size, distance, forbid_unvisited=forbid_unvisited,
                       l1_exact=True, max_units=r)
    m = free.size
    method_used = "convex" if method == "auto" else method
    notes = []
    if r == 0:
        add = np.zeros(m, dtype=np.int64)
    elif method_used == "lho":
        if m * float(r + 1) ** 2 > 3e9:
            from ..errors import InstanceTooLargeError

            raise InstanceTooLargeError(f"LHO would need {m * float(r + 1) ** 2:.2g} operations "
                                        f"(m={m} bins, r={r}): use method='convex' (exact for "
                                        "every supported distance)")
        add, _ = lho(cost.table(r), r)
    else:
        add = convex_allocate(cost.marginal, m, r)
    if distance == "l1" and not cost.l1_exact:
        notes.append("l1 objective too large for exact integer evaluation: float ties")
    out = np.zeros(n, dtype=np.int64)
    out[free] = h[free] + add
    from ..distances import bin_terms

    params = {"sensitive": [labels[i] for i in sens] if labels else sens.tolist(),
              "K": K, "r": r, "forbid_unvisited": forbid_unvisited, "method": method}
    if mitigation is not None:
        from ..random import make_rng
        from .mitigation import apply_resample

        params["lho_histogram"] = out.tolist()
        out = apply_resample(out[None, :], sens, mitigation, make_rng(rng))[0]
        size = mitigation.size
        params["mitigation"] = mitigation.to_dict()
    q = float(bin_terms(h / N, out / size, distance).sum())
    return VisitResult(
        histogram=out, original=h, problem="hide",
        algorithm="LHO" if method_used == "lho" else "convex-greedy", exact=True,
        quality_distance=distance, quality_loss=q, bound=q, gap=0.0, labels=labels,
        parameters=params, runtime_s=time.perf_counter() - t0, notes=tuple(notes))


def check_hide_distance(distance: Any) -> str:
    """The quality distance of SLH; ``kl`` is refused for every input (see :func:`hide`)."""
    distance = check_distance(distance, "distance")
    if distance == "kl":
        raise ParameterError("distance 'kl' cannot be used to hide: KL(H||H') is infinite "
                             "whenever a sensitive place was visited (H'=0 where H>0), so it "
                             "would fail exactly for the users with sensitive visits; use js, "
                             "chi2, hellinger, l1 or l2")
    return distance


def check_mitigation(mitigation: Any, forbid_unvisited: bool = False):
    """Validate the ``mitigation`` option of :func:`hide` (None or a Resample)."""
    if mitigation is None:
        return None
    from .mitigation import Resample

    if not isinstance(mitigation, Resample):
        raise ParameterError(f"mitigation must be None or veil.visits.Resample, got "
                             f"{type(mitigation).__name__}")
    if forbid_unvisited and mitigation.mix > 0:
        raise ParameterError("forbid_unvisited cannot be combined with a resample mix > 0 (the "
                             "public profile puts visits on unvisited places)")
    return mitigation


def hide_many(H: Any, *, sensitive: Any, distance: str = "js", forbid_unvisited: bool = False,
              max_steps: int = 64, mitigation: Any = None,
              rng: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SLH for many users at once (same domain and sensitive set), vectorized across users.

    Users with at most ``max_steps`` sensitive visits are solved together by
    the stepwise greedy (one vectorized argmin over all users per added
    visit; exact for convex per-bin costs, same tie-break as :func:`hide`);
    the others go through :func:`hide` one by one. This is the bucket kernel
    of the per-user batch driver.

    Parameters
    ----------
    H : array-like of int, shape (users, bins)
    sensitive : indices or boolean mask over bins
    distance : str
    forbid_unvisited : bool
    max_steps : int
    mitigation : Resample, optional
        Applied to every feasible user (see :func:`hide`).
    rng : numpy.random.Generator, optional
        Randomness of the mitigation (default: OS entropy).

    Returns
    -------
    out : ndarray of int64, shape (users, bins)
        Sanitized histograms (rows of infeasible users are all zero).
    quality : ndarray of float64, shape (users,)
        ``d_q(H_u, H'_u)`` (NaN for infeasible users).
    status : ndarray of object
        ``""`` for success, else the error message of that user.

    Examples
    --------
    >>> out, q, st = hide_many([[5, 3, 0, 2], [1, 0, 4, 4]], sensitive=[3])
    >>> out.tolist(), st.tolist()
    ([[6, 4, 0, 0], [2, 0, 7, 0]], ['', ''])
    """
    from ..distances import bin_terms

    H = np.asarray(H)
    if H.ndim != 2:
        raise ParameterError(f"H must be 2-dimensional (users, bins), got shape {H.shape}")
    if H.size and (H.dtype.kind not in "iu" or (H < 0).any()):
        if H.dtype.kind == "f" and np.all(H == np.round(H)) and (H >= 0).all():
            H = H.astype(np.int64)
        else:
            raise ParameterError("H must hold non-negative integer counts")
    H = H.astype(np.int64)
    U, n = H.shape
    distance = check_hide_distance(distance)
    mitigation = check_mitigation(mitigation, forbid_unvisited)
    sens = resolve_bins(sensitive, n, None, "sensitive")
    mask = np.zeros(n, dtype=bool)
    mask[sens] = True
    free = np.flatnonzero(~mask)
    out = np.zeros_like(H)
    quality = np.full(U, np.nan)
    status = np.full(U, "", dtype=object)
    N = H.sum(axis=1)
    K = H[:, sens].sum(axis=1)
    bad = (N == 0) | (H[:, free].sum(axis=1) == 0)
    status[N == 0] = "histogram is empty"
    status[(N > 0) & bad] = "the sensitive set covers every visited place: nothing to " \
                             "redistribute into"
    fast = ~bad & (K <= max_steps)
    slow = np.flatnonzero(~bad & ~fast)
    rows = np.flatnonzero(fast)
    if rows.size and free.size:
        hf = H[np.ix_(rows, free)].astype(np.float64)
        Nu = N[rows].astype(np.float64)[:, None]
        Su = Nu  # size preserved
        Ku = K[rows]
        exact_l1 = distance == "l1"
        Mu = (Ku.astype(np.float64) ** 2 + 1)[:, None]
        forbid = (hf == 0) if forbid_unvisited else None

        def cost(x):
            if exact_l1:
                c = np.abs(Nu * x - Su * hf) * Mu + (x - hf) ** 2
            else:
                c = bin_terms(hf / Nu, x / Su, distance)
            if forbid is not None:
                c = np.where(forbid & (x > hf), np.inf, c)
            return c

        x = hf.copy()
        cur = cost(x)
        nxt = cost(x + 1)
        with np.errstate(invalid="ignore"):
            marg = np.where(np.isinf(nxt), np.inf, nxt - cur)
        left = Ku.copy()
        ar = np.arange(rows.size)
        while True:
            act = np.flatnonzero(left > 0)
            if act.size == 0:
                break
            b = np.argmin(marg[act], axis=1)  # first minimum = smallest bin index
            ua = ar[act]
            x[ua, b] += 1
            left[act] -= 1
            xb = x[ua, b]
            hb = hf[ua, b]
            if exact_l1:
                cb = np.abs(Nu[ua, 0] * xb - Su[ua, 0] * hb) * Mu[ua, 0] + (xb - hb) ** 2
                nb = np.abs(Nu[ua, 0] * (xb + 1) - Su[ua, 0] * hb) * Mu[ua, 0] + (xb + 1 - hb) ** 2
            else:
                cb = bin_terms(hb / Nu[ua, 0], xb / Su[ua, 0], distance)
                nb = bin_terms(hb / Nu[ua, 0], (xb + 1) / Su[ua, 0], distance)
            marg[ua, b] = nb - cb
        res = np.zeros((rows.size, n), dtype=np.int64)
        res[:, free] = x.astype(np.int64)
        out[rows] = res
        Hr = H[rows].astype(np.float64)
        quality[rows] = bin_terms(Hr / Nu, res / Su, distance).sum(axis=1)
    for u in slow:
        try:
            r = hide(H[u], sensitive=sens, distance=distance, forbid_unvisited=forbid_unvisited)
        except (InfeasibleError, ParameterError) as exc:
            status[u] = " ".join(str(exc).split())
            continue
        out[u] = r.histogram
        quality[u] = r.quality_loss
    if mitigation is not None:
        from ..random import make_rng
        from .mitigation import apply_resample

        ok = np.flatnonzero(status == "")
        if ok.size:
            out[ok] = apply_resample(out[ok], sens, mitigation, make_rng(rng))
            S = float(mitigation.size)
            quality[ok] = bin_terms(H[ok] / N[ok, None].astype(np.float64), out[ok] / S,
                                    distance).sum(axis=1)
    return out, quality, status
