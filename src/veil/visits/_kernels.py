"""Min-plus dynamic-programming kernels (numba when available, numpy otherwise).

The layered DAG of the paper (layer i = non-sensitive bin i, node (i, j) =
j visits allocated to bins 1..i, edge weight = cost of giving bin i the
difference) is never built: a shortest path through it is the min-plus
convolution chain ``D_i[j] = min_{k <= j} D_{i-1}[j - k] + C[i, k]``. Ties at a
node are broken towards the smallest ``k`` (fewest visits to the current bin).
"""

from __future__ import annotations

import os

import numpy as np

from .._jit import call

__all__ = ["minplus_chain", "minplus_backtrack", "greedy_moves", "HAVE_NUMBA"]

try:  # pragma: no cover - exercised when numba is installed
    if os.environ.get("VEIL_NO_NUMBA"):
        raise ImportError("disabled by VEIL_NO_NUMBA")
    import numba

    @numba.njit(cache=True)
    def _chain_numba(C, keep_all):  # noqa: N803
        m, R1 = C.shape
        arg = np.empty((m, R1), dtype=np.int32)
        layers = np.empty((m + 1 if keep_all else 1, R1), dtype=np.float64)
        D = np.full(R1, np.inf)
        D[0] = 0.0
        if keep_all:
            layers[0, :] = D
        for i in range(m):
            newD = np.empty(R1, dtype=np.float64)
            for j in range(R1):
                best = np.inf
                bk = 0
                for k in range(j + 1):
                    v = D[j - k] + C[i, k]
                    if v < best:
                        best = v
                        bk = k
                newD[j] = best
                arg[i, j] = bk
            D = newD
            if keep_all:
                layers[i + 1, :] = D
        if not keep_all:
            layers[0, :] = D
        return layers, arg

    @numba.njit(cache=True)
    def _moves_numba(G, phi, x, S, t, sign, restrict, eps_tol, ratio, tol, max_iter):  # noqa: N803
        n = x.shape[0]
        inf = np.inf
        rq = np.empty(n)
        rf = np.empty(n)
        aq = np.empty(n)
        af = np.empty(n)
        src = np.empty(n, dtype=np.bool_)
        dst = np.empty(n, dtype=np.bool_)
        for _ in range(max_iter):
            Q = 0.0
            for i in range(n):
                Q += G[i, x[i]]
            for i in range(n):
                xi = x[i]
                if xi > 0:
                    v = G[i, xi - 1] - G[i, xi]
                    rq[i] = inf if np.isnan(v) else v
                    v = phi[i, xi - 1] - phi[i, xi]
                    rf[i] = inf if np.isnan(v) else v
                else:
                    rq[i] = inf
                    rf[i] = inf
                if xi < S:
                    v = G[i, xi + 1] - G[i, xi]
                    aq[i] = inf if (np.isnan(v) or np.isinf(G[i, xi + 1])) else v
                    v = phi[i, xi + 1] - phi[i, xi]
                    af[i] = inf if np.isnan(v) else v
                else:
                    aq[i] = inf
                    af[i] = inf
                src[i] = xi > 0
                dst[i] = xi < S
                if restrict:
                    share = xi / S
                    if sign > 0:
                        src[i] = src[i] and share > t[i]
                        dst[i] = dst[i] and share < t[i]
                    else:
                        src[i] = src[i] and share <= t[i]
                        dst[i] = dst[i] and share >= t[i]
            best = inf
            ba = -1
            bb = -1
            for a in range(n):
                if not src[a]:
                    continue
                for b in range(n):
                    if not dst[b] or a == b:
                        continue
                    dq = rq[a] + aq[b]
                    df = rf[a] + af[b]
                    if not (Q + dq <= eps_tol) or np.isnan(df) or not (df < inf):
                        continue
                    if not (df < -tol):
                        continue
                    if ratio:
                        sc = df / max(dq, 1e-15)
                        if np.isnan(sc):
                            sc = inf
                    else:
                        sc = df
                    if ba < 0 or sc < best:   # first minimum in (a, b) order, as np.argmin
                        best = sc
                        ba = a
                        bb = b
            if ba < 0:
                break
            x[ba] -= 1
            x[bb] += 1
        return x

    @numba.njit(cache=True)
    def _lag_inner(phi, G, lam, S, convex, x):  # noqa: N803
        """Exact minimizer of sum_i phi[i, x_i] + lam G[i, x_i] with sum x = S (False: none)."""
        n, R1 = phi.shape
        if convex:  # greedy marginal allocation, ties to the smallest bin
            for i in range(n):
                x[i] = 0
            for _ in range(S):
                best = np.inf
                bb = -1
                for b in range(n):
                    k = x[b]
                    if k + 1 >= R1:
                        continue
                    c0 = phi[b, k] + lam * G[b, k] if lam > 0 else phi[b, k]
                    c1 = phi[b, k + 1] + lam * G[b, k + 1] if lam > 0 else phi[b, k + 1]
                    d = c1 - c0
                    if np.isnan(d) or np.isinf(c1):
                        d = np.inf
                    if d < best:
                        best = d
                        bb = b
                if bb < 0:
                    return False
                x[bb] += 1
            return True
        C = np.empty((n, R1))
        for i in range(n):
            for k in range(R1):
                v = phi[i, k] + lam * G[i, k] if lam > 0 else phi[i, k]
                C[i, k] = np.inf if np.isnan(v) else v
        layers, arg = _chain_numba(C, False)
        if not np.isfinite(layers[0, S]):
            return False
        j = S
        for i in range(n - 1, -1, -1):
            k = arg[i, j]
            x[i] = k
            j -= k
        return True

    @numba.njit(cache=True)
    def _lag_ev(phi, G, lam, S, convex, x, eps, eps_tol, st, best_x):  # noqa: N803
        """Solve the inner problem at ``lam`` and record it; ``(ok, f, g)``.

        ``st`` = [bound, its multiplier, best feasible value, 1 if a feasible x was seen].
        """
        if not _lag_inner(phi, G, lam, S, convex, x):
            return False, np.inf, np.inf
        f = 0.0
        g = 0.0
        for i in range(x.shape[0]):
            f += phi[i, x[i]]
            g += G[i, x[i]]
        val = f + lam * (g - eps) if lam > 0 else f
        if np.isfinite(val) and val > st[0]:
            st[0] = val
            st[1] = lam
        if g <= eps_tol and f < st[2]:
            best_x[:] = x
            st[2] = f
            st[3] = 1.0
        return True, f, g

    @numba.njit(cache=True)
    def _lag_numba(phi, G, S, eps, eps_tol, convex, iters):  # noqa: N803
        """Status (0 done, 1 an inner problem without finite allocation), st, best_x."""
        n = phi.shape[0]
        x = np.zeros(n, dtype=np.int64)
        best_x = np.zeros(n, dtype=np.int64)
        st = np.array([-np.inf, 0.0, np.inf, 0.0])
        ok, fl, gl = _lag_ev(phi, G, 0.0, S, convex, x, eps, eps_tol, st, best_x)
        if not ok:
            return 1, st, best_x
        if gl <= eps_tol:   # the unconstrained optimum is feasible: the bound is tight
            st[0] = fl
            st[1] = 0.0
            return 0, st, best_x
        lo, hi = 0.0, 1.0
        fh, gh = np.inf, np.inf
        found = False
        for _ in range(80):
            ok, f, g = _lag_ev(phi, G, hi, S, convex, x, eps, eps_tol, st, best_x)
            if not ok:
                return 1, st, best_x
            if g <= eps_tol:
                fh, gh = f, g
                found = True
                break
            lo, fl, gl = hi, f, g
            hi *= 4.0
        if not found:
            return 0, st, best_x
        for _ in range(iters):
            if st[3] > 0 and st[2] - st[0] <= 1e-12 * max(1.0, abs(st[2])):
                break   # a feasible allocation meets the bound: it is optimal
            mid = 0.5 * (lo + hi)
            ok, f, g = _lag_ev(phi, G, mid, S, convex, x, eps, eps_tol, st, best_x)
            if not ok:
                return 1, st, best_x
            if g <= eps_tol:
                hi, fh, gh = mid, f, g
            else:
                lo, fl, gl = mid, f, g
        if gl != gh and np.isfinite(fl) and np.isfinite(fh):   # where the two lines cross
            lam_x = (fh - fl) / (gl - gh)
            if lam_x > 0 and np.isfinite(lam_x):
                ok, f, g = _lag_ev(phi, G, lam_x, S, convex, x, eps, eps_tol, st, best_x)
                if not ok:
                    return 1, st, best_x
        return 0, st, best_x

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - numpy fallback
    _chain_numba = None
    _moves_numba = None
    _lag_numba = None
    HAVE_NUMBA = False


def _chain_numpy(C: np.ndarray, keep_all: bool):
    from numpy.lib.stride_tricks import sliding_window_view

    m, R1 = C.shape
    arg = np.empty((m, R1), dtype=np.int32)
    layers = np.empty((m + 1 if keep_all else 1, R1), dtype=np.float64)
    D = np.full(R1, np.inf)
    D[0] = 0.0
    if keep_all:
        layers[0] = D
    pad = np.full(2 * R1 - 1, np.inf)
    for i in range(m):
        pad[R1 - 1:] = D
        # win[j, t] = pad[j + t] = D[j + t - (R1 - 1)];  k = R1 - 1 - t  ->  D[j - k]
        win = sliding_window_view(pad, R1)[:, ::-1]
        tot = win + C[i][None, :]
        a = np.argmin(tot, axis=1)  # first minimum = smallest k
        arg[i] = a
        D = tot[np.arange(R1), a]
        if keep_all:
            layers[i + 1] = D
    if not keep_all:
        layers[0] = D
    return layers, arg


def minplus_chain(C: np.ndarray, *, keep_all: bool = False, backend: str = "auto"):
    """Run the min-plus convolution chain over the rows of ``C``.

    Parameters
    ----------
    C : ndarray, shape (m, R + 1)
        ``C[i, k]`` is the cost of giving bin ``i`` exactly ``k`` units (``inf``
        forbids it).
    keep_all : bool
        Return every layer ``D_0 .. D_m`` (shape ``(m + 1, R + 1)``) instead of
        only the last one (shape ``(1, R + 1)``).
    backend : {"auto", "numba", "numpy"}

    Returns
    -------
    layers : ndarray
        ``D[j]`` = minimum total cost of allocating exactly ``j`` units.
    arg : ndarray of int32, shape (m, R + 1)
        ``arg[i, j]``: units given to bin ``i`` on the best path into node (i, j).

    Examples
    --------
    >>> import numpy as np
    >>> C = np.array([[0.0, 1.0, 4.0], [0.0, 1.0, 4.0]])
    >>> layers, arg = minplus_chain(C)
    >>> float(layers[-1][2]), minplus_backtrack(arg, 2).tolist()
    (2.0, [1, 1])
    """
    C = np.ascontiguousarray(C, dtype=np.float64)
    if backend == "auto":
        backend = "numba" if HAVE_NUMBA else "numpy"
    if backend == "numba":
        if not HAVE_NUMBA:
            raise ImportError("numba is not installed (pip install numba)")
        return call(_chain_numba, C, keep_all)
    return _chain_numpy(C, keep_all)


def greedy_moves(G: np.ndarray, phi: np.ndarray, x0: np.ndarray, S: int, t: np.ndarray,
                 sign: float, restrict: bool, eps_tol: float, ratio: bool, tol: float,
                 max_iter: int) -> np.ndarray | None:
    """The RH/AH move loop compiled with numba (None when numba is unavailable).

    One move takes a visit from bin ``a`` to bin ``b`` (``a != b``) keeping the
    quality ``sum_i G[i, x_i] <= eps_tol`` and lowering ``sum_i phi[i, x_i]``
    by more than ``tol``; the move chosen has the smallest ``dphi / max(dq, 1e-15)``
    (``ratio``) or the smallest ``dphi``, ties to the first ``(a, b)`` in row-major
    order. ``restrict`` limits sources and destinations by the bins' share
    against the target ``t`` (see :func:`veil.visits.resemble`). Same moves as
    the numpy loop in ``veil.visits.resemble._heuristic``, which tests compare.
    """
    if _moves_numba is None:
        return None
    return call(_moves_numba, np.ascontiguousarray(G, dtype=np.float64),
                np.ascontiguousarray(phi, dtype=np.float64),
                np.array(x0, dtype=np.int64), int(S),
                np.ascontiguousarray(t, dtype=np.float64), float(sign), bool(restrict),
                float(eps_tol), bool(ratio), float(tol), int(max_iter))


def lagrangian_compiled(phi: np.ndarray, G: np.ndarray, S: int, eps: float, eps_tol: float,
                        convex: bool, iters: int):
    """The whole Lagrangian bisection of ``veil.visits.resemble.lagrangian_bound`` compiled.

    Returns ``None`` without numba; else ``(status, bound, best_x or None, best_v, lam)``
    with ``status`` 1 when some multiplier's inner problem has no finite allocation.
    """
    if _lag_numba is None:
        return None
    status, st, bx = call(
        _lag_numba,
        np.ascontiguousarray(phi, dtype=np.float64), np.ascontiguousarray(G, dtype=np.float64),
        int(S), float(eps), float(eps_tol), bool(convex), int(iters))
    return int(status), float(st[0]), (bx if st[3] > 0 else None), float(st[2]), float(st[1])


def minplus_backtrack(arg: np.ndarray, total: int) -> np.ndarray:
    """Recover the per-bin allocation ending at node (m, total)."""
    m = arg.shape[0]
    out = np.empty(m, dtype=np.int64)
    j = int(total)
    for i in range(m - 1, -1, -1):
        k = int(arg[i, j])
        out[i] = k
        j -= k
    return out
