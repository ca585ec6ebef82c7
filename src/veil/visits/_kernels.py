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

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - numpy fallback
    _chain_numba = None
    _moves_numba = None
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
        return _chain_numba(C, keep_all)
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
    return _moves_numba(np.ascontiguousarray(G, dtype=np.float64),
                        np.ascontiguousarray(phi, dtype=np.float64),
                        np.array(x0, dtype=np.int64), int(S),
                        np.ascontiguousarray(t, dtype=np.float64), float(sign), bool(restrict),
                        float(eps_tol), bool(ratio), float(tol), int(max_iter))


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
