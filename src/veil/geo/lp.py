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

__all__ = ["greedy_spanner", "OptimalMechanism", "optimal_mechanism_lp", "repair_channel"]


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
        ``max(ln K[x, z] - ln K[x', z] - eps d(x, x'))`` of the published (repaired)
        ``channel`` over *all* pairs and outputs, zeros included (``inf`` if some
        ``K[x, z] > 0 = K[x', z]``); at most 0 after the repair, which is verified.
    lp_expected_loss : float
        Objective of the raw LP solution, before the repair.
    lp_max_violation : float
        The same maximum for the raw LP solution (solver tolerance makes it positive, often
        ``inf`` through entries that are 0 for one input and positive for another).
    repair_weight : float
        ``lam`` of the repair ``(1 - lam) K_lp + lam E`` (0 when the raw channel verified).
    verified : bool
        Every inequality ``K[x, z] <= exp(eps d(x, x')) K[x', z]`` holds in float64 with a
        relative margin of 1e-9.
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
    lp_expected_loss: float = float("nan")
    lp_max_violation: float = float("nan")
    repair_weight: float = 0.0
    verified: bool = False

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
                "max_violation": self.max_violation, "lp_expected_loss": self.lp_expected_loss,
                "lp_max_violation": self.lp_max_violation,
                "repair_weight": self.repair_weight,
                "repair_loss_increase": self.expected_loss - self.lp_expected_loss,
                "verified": self.verified}


#: Relative margin of the exact verification: every ``K[x, z] <= exp(eps d) K[x', z] (1 - m)``.
VERIFY_MARGIN = 1e-9


def _pair_excess(K: np.ndarray, DX: np.ndarray, eps: float, margin: float, chunk: int = 64):
    """``max_{x, x', z} K[x, z] - exp(eps d(x, x')) (1 - margin) K[x', z]`` (chunked over x)."""
    worst = -np.inf
    bound = np.exp(eps * DX) * (1.0 - margin)
    for a in range(0, K.shape[0], chunk):
        ex = K[a:a + chunk, None, :] - bound[a:a + chunk, :, None] * K[None, :, :]
        # x = x' compares an entry with itself (margin only): skip the diagonal
        for i in range(ex.shape[0]):
            ex[i, a + i, :] = -np.inf
        worst = max(worst, float(ex.max()))
    return worst


def _log_violation(K: np.ndarray, DX: np.ndarray, eps: float, chunk: int = 64) -> float:
    """``max ln K[x, z] - ln K[x', z] - eps d(x, x')`` over x != x', zeros included."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lk = np.log(K)
    worst = -np.inf
    for a in range(0, K.shape[0], chunk):
        with np.errstate(invalid="ignore"):
            v = lk[a:a + chunk, None, :] - lk[None, :, :] - eps * DX[a:a + chunk, :, None]
        v = np.where(np.isnan(v), -np.inf, v)     # 0 vs 0: ratio 0/0 is no violation
        for i in range(v.shape[0]):
            v[i, a + i, :] = -np.inf
        worst = max(worst, float(v.max()))
    return worst


def repair_channel(K: Any, inputs: Any, outputs: Any, epsilon: float
                   ) -> tuple[np.ndarray, float, bool]:
    """Make a channel *exactly* eps-geo-indistinguishable: ``(1 - lam) K + lam E``.

    An LP solver returns a channel that satisfies the privacy constraints only up to its
    feasibility tolerance: some ``K[x, z]`` exceed ``exp(eps d(x, x')) K[x', z]`` by ~1e-10,
    and entries that are exactly 0 for one input but positive for a neighbour are an
    infinite ratio. The repair mixes in ``E[x, z] ~ exp(-(eps/4) d(x, z))`` (rows
    normalised), which has full support and satisfies every constraint with slack: its
    ratio is at most ``exp((eps/2) d(x, x'))`` (the normalisers contribute the other
    ``eps/4``). With ``A = K[x, z] - e^{eps d} K[x', z]`` (the violation) and
    ``B = e^{eps d} E[x', z] - E[x, z] > 0`` (E's slack), the mixture satisfies the
    constraint iff ``lam / (1 - lam) >= A / B``; ``lam`` starts at the smallest such value
    over all triples and is doubled until every triple verifies in float64 with a relative
    margin of :data:`VERIFY_MARGIN` (at ``lam = 1`` the channel is ``E`` itself, which
    verifies with margin ``exp(-(eps/2) d)``).

    Returns ``(channel, lam, verified)``.

    Examples
    --------
    >>> K = np.array([[1.0, 0.0], [0.5, 0.5]])     # 1 > 0 = K[0, 1]: an infinite ratio
    >>> K2, lam, ok = repair_channel(K, [[0, 0], [100, 0]], [[0, 0], [100, 0]], 0.01)
    >>> ok, bool(K2.min() > 0), bool(0 < lam < 1)
    (True, True, True)
    """
    eps = check_epsilon(epsilon, "epsilon")
    K = np.array(K, dtype=np.float64)
    X = np.asarray(inputs, dtype=np.float64).reshape(-1, 2)
    Z = np.asarray(outputs, dtype=np.float64).reshape(-1, 2)
    DX = pairwise_distances(X)
    if _pair_excess(K, DX, eps, VERIFY_MARGIN) <= 0 and K.min() >= 0:
        return K, 0.0, True
    logE = -(eps / 4.0) * pairwise_distances(X, Z)
    logE -= logE.max(axis=1, keepdims=True)
    E = np.exp(logE)
    E /= E.sum(axis=1, keepdims=True)
    r_max = 0.0
    for a in range(0, len(X), 64):
        ed = np.exp(eps * DX[a:a + 64])[:, :, None]
        A = K[a:a + 64, None, :] - ed * K[None, :, :]
        B = ed * E[None, :, :] - E[a:a + 64, None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(A > 0, A / B, 0.0)
        for i in range(r.shape[0]):
            r[i, a + i, :] = 0.0
        r_max = max(r_max, float(np.nanmax(r)))
    lam = min(1.0, max(r_max / (1.0 + r_max), 1e-15))
    while True:
        K2 = (1.0 - lam) * K + lam * E
        K2 /= K2.sum(axis=1, keepdims=True)
        if _pair_excess(K2, DX, eps, VERIFY_MARGIN) <= 0:
            return K2, lam, True
        if lam >= 1.0:
            return K2, lam, False
        lam = min(1.0, 2.0 * lam)


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

    Privacy: the constraints are eps-geo-indistinguishability on ``X`` (with the spanner
    they imply it by chaining), but a solver meets them only up to its feasibility
    tolerance. The solution is therefore post-processed by :func:`repair_channel` into a
    channel verified *exactly* (every pair and output, zeros included, in float64 with a
    relative margin); the utility cost of the repair is ``expected_loss -
    lp_expected_loss`` (reported by :meth:`OptimalMechanism.summary`).

    Examples
    --------
    >>> pts = [[0, 0], [100, 0], [0, 100], [100, 100]]
    >>> m = optimal_mechanism_lp(pts, epsilon=0.01)
    >>> m.channel.shape, m.verified, bool(m.max_violation <= 0)
    ((4, 4), True, True)
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
    raw_v = _log_violation(K, DX, eps) if n > 1 else 0.0
    raw_loss = float(np.sum(pi[:, None] * K * Lxz))
    K2, lam, ok = repair_channel(K, X, Z, eps) if n > 1 else (K, 0.0, True)
    if not ok:  # pragma: no cover - E itself verifies; reached only through float trouble
        raise InfeasibleError("the LP solution could not be repaired into an exactly "
                              "eps-geo-indistinguishable channel")
    loss = float(np.sum(pi[:, None] * K2 * Lxz))
    max_v = _log_violation(K2, DX, eps) if n > 1 else 0.0
    return OptimalMechanism(K2, X, Z, eps, loss, n * m, P * m + n,
                            int(A.nnz + Aeq.nnz), build, solve, n_edges, dil, max_v,
                            lp_expected_loss=raw_loss, lp_max_violation=raw_v,
                            repair_weight=lam, verified=ok)
