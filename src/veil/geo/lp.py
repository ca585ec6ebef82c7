"""The optimal discrete geo-indistinguishable mechanism by linear programming (baseline).

Bordenabe, Chatzikokolakis and Palamidessi (CCS 2014): for a finite set of
locations ``X`` (inputs), reported locations ``Z`` (default ``Z = X``), a prior
``pi`` on ``X`` and a loss ``L``, the mechanism ``K[x, z] = P[report z | x]``
that minimizes ``sum_x pi_x sum_z K[x, z] L(d(x, z))`` subject to
``K[x, z] <= exp(eps d(x, x')) K[x', z]`` for all ``x, x', z`` is a linear
program with ``|X| |Z|`` variables and ``|X| (|X| - 1) |Z|`` privacy
constraints. A greedy ``delta``-spanner of ``X`` reduces the constraints to
its edges with ``eps / delta`` (chaining along a spanner path of length at
most ``delta d(x, x')`` gives back ``eps d(x, x')``), at a small loss of
utility.

Solved with scipy's HiGHS on sparse matrices. This is the baseline the
continuous theory of :mod:`veil.geo.lprivacy` is compared against; it
scales badly (see ``benchmarks/geo.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from ..errors import InfeasibleError, InstanceTooLargeError, ParameterError
from ..random import make_rng
from ..validation import check_epsilon, check_positive, check_probability_vector
from .geometry import pairwise_distances

__all__ = ["greedy_spanner", "OptimalMechanism", "optimal_mechanism_lp"]


def greedy_spanner(points: Any, dilation: float) -> np.ndarray:
    """Edges ``(m, 2)`` of the greedy ``dilation``-spanner of planar points.

    Pairs are scanned by increasing distance; a pair becomes an edge when
    the current graph distance exceeds ``dilation`` times its Euclidean
    distance. All-pairs graph distances are updated after each new edge
    (O(n^2) per edge).

    Examples
    --------
    >>> e = greedy_spanner([[0, 0], [1, 0], [2, 0]], 1.0)
    >>> sorted(map(tuple, e.tolist()))
    [(0, 1), (1, 2)]
    """
    X = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    dil = check_positive(dilation, "dilation")
    if dil < 1:
        raise ParameterError(f"dilation must be >= 1, got {dil}")
    n = len(X)
    D = pairwise_distances(X)
    G = np.full((n, n), np.inf)
    np.fill_diagonal(G, 0.0)
    iu, ju = np.triu_indices(n, 1)
    order = np.argsort(D[iu, ju], kind="stable")
    edges = []
    for k in order:
        u, v = int(iu[k]), int(ju[k])
        w = D[u, v]
        if G[u, v] > dil * w * (1 + 1e-12):
            edges.append((u, v))
            via = np.minimum(G[:, u, None] + w + G[None, v, :], G[:, v, None] + w + G[None, u, :])
            np.minimum(G, via, out=G)
    return np.array(edges, dtype=np.int64).reshape(-1, 2)


@dataclass(frozen=True)
class OptimalMechanism:
    """The LP optimum: channel, loss, size and timings.

    Attributes
    ----------
    channel : numpy.ndarray (n, m)
        ``P[report z | x]``.
    expected_loss : float
        Objective value.
    n_variables, n_constraints, nnz : int
        LP size (privacy rows + equality rows; non-zeros of the matrices).
    build_seconds, solve_seconds : float
    spanner_edges : int or None
        Number of spanner edges (None for the full LP).
    dilation : float
    max_violation : float
        ``max(ln K[x, z] - ln K[x', z] - eps d(x, x'))`` over all pairs with
        ``K[x', z] > 1e-12`` (solver tolerance; ~0).
    """

    channel: np.ndarray
    inputs: np.ndarray
    outputs: np.ndarray
    epsilon: float
    expected_loss: float
    n_variables: int
    n_constraints: int
    nnz: int
    build_seconds: float
    solve_seconds: float
    spanner_edges: int | None
    dilation: float
    max_violation: float

    def sample(self, index: Any, rng: np.random.Generator | None = None) -> np.ndarray:
        """Reported points for input indices (one draw each from the channel rows)."""
        rng = make_rng(rng)
        idx = np.asarray(index, dtype=np.int64).reshape(-1)
        cdf = np.cumsum(self.channel[idx], axis=1)
        u = rng.uniform(size=(len(idx), 1)) * cdf[:, -1:]
        z = (cdf < u).sum(axis=1)
        return self.outputs[np.minimum(z, len(self.outputs) - 1)]

    def summary(self) -> dict[str, Any]:
        return {"n_inputs": int(self.channel.shape[0]), "n_outputs": int(self.channel.shape[1]),
                "expected_loss": self.expected_loss, "n_variables": self.n_variables,
                "n_constraints": self.n_constraints, "nnz": self.nnz,
                "build_seconds": self.build_seconds, "solve_seconds": self.solve_seconds,
                "spanner_edges": self.spanner_edges, "dilation": self.dilation,
                "max_violation": self.max_violation}


def optimal_mechanism_lp(inputs: Any, *, epsilon: float, prior: Any = None, outputs: Any = None,
                         loss: Callable[[np.ndarray], np.ndarray] | None = None,
                         spanner_dilation: float | None = None, time_limit: float | None = None,
                         max_variables: int = 2_000_000) -> OptimalMechanism:
    """Solve the optimal eps-geo-indistinguishable mechanism on a finite set (HiGHS).

    Parameters
    ----------
    inputs : array (n, 2)
        Planar locations (metres), e.g. grid centres.
    epsilon : float
        Per metre.
    prior : array (n,), optional
        Uniform by default.
    outputs : array (m, 2), optional
        Reported locations (default: the inputs).
    loss : callable, optional
        Vectorized ``L(d)`` (default: distance).
    spanner_dilation : float, optional
        Use the greedy spanner with this dilation (> 1) and ``eps / dilation``
        on its edges; default: the full LP.
    time_limit : float, optional
        Seconds for HiGHS; exceeding it raises :class:`InstanceTooLargeError`.
    max_variables : int
        Refuse larger instances up front.

    Privacy: the constraints are exactly eps-geo-indistinguishability on ``X``
    (up to the solver's feasibility tolerance, reported as ``max_violation``);
    with the spanner they imply it by chaining.

    Examples
    --------
    >>> pts = [[0, 0], [100, 0], [0, 100], [100, 100]]
    >>> m = optimal_mechanism_lp(pts, epsilon=0.01)
    >>> m.channel.shape, bool(m.max_violation < 1e-6)
    ((4, 4), True)
    """
    from scipy.optimize import linprog

    eps = check_epsilon(epsilon, "epsilon")
    X = np.asarray(inputs, dtype=np.float64).reshape(-1, 2)
    if len(X) < 1 or not np.isfinite(X).all():
        raise ParameterError("inputs must be a non-empty finite (n, 2) array")
    Z = X if outputs is None else np.asarray(outputs, dtype=np.float64).reshape(-1, 2)
    n, m = len(X), len(Z)
    pi = np.full(n, 1.0 / n) if prior is None else check_probability_vector(prior, "prior")
    if len(pi) != n:
        raise ParameterError(f"prior has {len(pi)} entries for {n} inputs")
    if n * m > max_variables:
        raise InstanceTooLargeError(f"{n} x {m} = {n * m} variables exceeds max_variables={max_variables}")
    t0 = time.perf_counter()
    DX = pairwise_distances(X)
    DZ = pairwise_distances(X, Z)
    Lxz = DZ if loss is None else np.asarray(loss(DZ), dtype=np.float64)
    if spanner_dilation is None:
        iu, ju = np.nonzero(~np.eye(n, dtype=bool))
        pairs = np.column_stack((iu, ju))
        eps_e, n_edges, dil = eps, None, 1.0
    else:
        dil = check_positive(spanner_dilation, "spanner_dilation")
        e = greedy_spanner(X, dil)
        pairs = np.vstack((e, e[:, ::-1]))
        eps_e, n_edges = eps / dil, int(len(e))
    P = len(pairs)
    # row (p, z): K[x, z] - exp(eps d(x, x')) K[x', z] <= 0 ; variable index x * m + z
    rows = np.arange(P * m)
    xa = np.repeat(pairs[:, 0], m)
    xb = np.repeat(pairs[:, 1], m)
    zz = np.tile(np.arange(m), P)
    coef = -np.exp(eps_e * DX[pairs[:, 0], pairs[:, 1]])
    A = sp.csr_matrix((np.concatenate((np.ones(P * m), np.repeat(coef, m))),
                       (np.concatenate((rows, rows)), np.concatenate((xa * m + zz, xb * m + zz)))),
                      shape=(P * m, n * m))
    Aeq = sp.csr_matrix((np.ones(n * m), (np.repeat(np.arange(n), m), np.arange(n * m))),
                        shape=(n, n * m))
    c = (pi[:, None] * Lxz).ravel()
    build = time.perf_counter() - t0
    opts = {} if time_limit is None else {"time_limit": float(time_limit)}
    t1 = time.perf_counter()
    res = linprog(c, A_ub=A, b_ub=np.zeros(P * m), A_eq=Aeq, b_eq=np.ones(n), bounds=(0, None),
                  method="highs", options=opts)
    solve = time.perf_counter() - t1
    if res.status == 1:
        raise InstanceTooLargeError(f"HiGHS hit the time limit ({time_limit} s) on {n * m} variables "
                                    f"and {P * m + n} constraints")
    if res.status != 0:
        raise InfeasibleError(f"HiGHS failed: {res.message}")
    K = np.clip(res.x.reshape(n, m), 0.0, None)
    K /= K.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        lk = np.log(np.where(K > 1e-12, K, np.nan))
        viol = lk[:, None, :] - lk[None, :, :] - eps * DX[:, :, None]
    max_v = float(np.nanmax(viol)) if np.isfinite(viol).any() else 0.0
    return OptimalMechanism(K, X, Z, eps, float(res.fun), n * m, P * m + n,
                            int(A.nnz + Aeq.nnz), build, solve, n_edges, dil, max_v)
