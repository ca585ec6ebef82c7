"""HDMM for 1-D range workloads (McKenna, Miklau, Hay, Machanavajjhala, VLDB 2018).

The High-Dimensional Matrix Mechanism answers a *public* workload of linear
queries ``W`` (here: range queries over the bins) by measuring a different set
of queries, the *strategy* ``A``, with the Laplace mechanism and reconstructing
the histogram by least squares. The strategy is optimized for the workload
before any data is seen, so the error does not depend on the data and is known
exactly in advance:

    E ||W x_hat - W x||^2 = (2 / eps^2) ||A||_1^2 tr[(A^T A)^{-1} W^T W].

For one attribute the paper optimizes a *p-Identity* strategy
(``OPT_0``): ``A(B) = [I; B] D`` with a non-negative ``p x n`` matrix ``B`` of
free parameters and ``D`` the diagonal scaling that makes every column of
``A`` have L1 norm 1 (so the sensitivity is 1). The objective
``f(B) = tr[(A^T A)^{-1} G]`` (``G = W^T W``) is minimized with L-BFGS-B over
``B >= 0``. With ``X = I + B^T B``, ``c = 1 + 1^T B`` (column sums) and
``G' = diag(c) G diag(c)``, ``(A^T A)^{-1} = diag(c) X^{-1} diag(c)``, and
Woodbury (``X^{-1} = I - B^T R B``, ``R = (I_p + B B^T)^{-1}``) keeps every
step at ``O(p^2 n)`` with the implicit Gram products of
:class:`veil.histograms.workload.RangeWorkload`:

    f(B)        = tr(G') - sum(B * Z),            Z = R B G'
    grad f(B)   = -2 (Z - (Z B^T) R B) + 2 * 1 v^T,
                  v_j = (c_j^2 G_jj - sum_i B_ij Z_ij) / c_j

(derivation: ``df = -tr[X^{-1} dX X^{-1} G'] + tr[X^{-1} dG']`` with
``dX = dB^T B + B^T dB``, ``B X^{-1} = R B``, and ``dc_j = sum_i dB_ij``).

Defaults follow the paper for 1-D: ``p = n / 16`` extra queries (when optimized
here, capped at 64, see :func:`default_p`; the shipped strategies have the
paper's ``p`` at every size), a uniform random start, L-BFGS-B with relative
tolerance 1e-4. The optimizer's start is
drawn from a fixed public seed, so the same workload always gives the same
strategy (and a cache can reuse it); the noise comes from the caller's ``rng``.

The strategies of the built-in workloads (prefix, all ranges) at the power-of-two
sizes 8 to 4096 are optimized ahead of time by that same code and shipped with veil
(:mod:`veil.histograms._hdmm_shipped`): at those sizes no optimization runs at all
(n = 4096 took about 10 s on a quiet machine with p = 64, 2.5 min with the shipped
p = 256). A size between two shipped sizes uses the next shipped strategy restricted
to its first ``n`` bins (the others are publicly empty; no optimizer: n = 4000 took 18 s
optimized at ``p = 64``, and the restricted strategy's expected error is 0.96x of that;
0.95x-1.08x over the sizes measured in docs/benchmarks.md). Sizes above 4096, an explicit
``p`` and user range sets start L-BFGS-B from the nearest shipped strategy, resampled
(``start='auto'``), which converges in fewer steps; ``start='random'`` is the paper's
random start.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ..errors import ParameterError
from ..release import Release
from ..validation import check_int
from ._common import NEIGHBOURS, as_budget, as_counts, as_rng
from .workload import RangeWorkload

__all__ = ["hdmm", "HDMMStrategy", "optimize_strategy", "default_p", "P_CAP", "linear_strategy_error",
           "clear_strategy_cache"]

#: relative function tolerance of L-BFGS-B (the HDMM authors' setting)
FTOL = 1e-4
_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 32


#: the largest default number of extra strategy queries (see :func:`default_p`)
P_CAP = 64


def default_p(n: int) -> int:
    """Extra strategy queries: the paper's ``n // 16`` for one attribute, at most ``P_CAP``.

    Each optimizer step costs ``O(p^2 n)``; the cap keeps the one-time strategy
    optimization at large domains to seconds (n = 4096: p = 64 instead of 256;
    docs/benchmarks.md gives the time and the error for both choices measured).

    Examples
    --------
    >>> default_p(64), default_p(1024), default_p(4096)
    (4, 64, 64)
    """
    return max(1, min(check_int(n, "n", minimum=1) // 16, P_CAP))


def _loss_grad(b: np.ndarray, p: int, n: int, workload: RangeWorkload, gdiag: np.ndarray):
    B = b.reshape(p, n)
    c = 1.0 + B.sum(axis=0)
    try:
        R = np.linalg.inv(np.eye(p) + B @ B.T)
    except np.linalg.LinAlgError:  # pragma: no cover - I + B B^T is positive definite
        return math.inf, np.zeros_like(b)
    Z = R @ (workload.gram_rows(B * c) * c)          # R B G'
    BZ = B * Z
    f = float(np.dot(c * c, gdiag) - BZ.sum())
    v = (c * c * gdiag - BZ.sum(axis=0)) / c
    grad = -2.0 * (Z - (Z @ B.T) @ (R @ B)) + 2.0 * v[None, :]
    return f, grad.ravel()


@dataclass(frozen=True)
class HDMMStrategy:
    """An optimized p-Identity strategy ``A = [I; B] D`` for one public workload.

    Attributes
    ----------
    B : ndarray, shape (p, n)
        Non-negative free parameters.
    objective : float
        ``tr[(A^T A)^{-1} W^T W]``; the expected total squared error over the
        workload is ``2 objective / eps^2`` (Laplace noise of scale ``1/eps``).
    workload : RangeWorkload
    iterations, seconds : int, float
        Optimizer effort (over all restarts); 0 iterations for a shipped strategy.
    source : str
        Where the strategy came from: ``'shipped'`` (optimized ahead of time for a
        built-in workload), ``'optimized (random start)'`` or ``'optimized (start:
        shipped n=M, resampled)'``, or ``'shipped n=M, restricted to the first n bins'``.
    """

    B: np.ndarray
    objective: float
    workload: RangeWorkload = field(repr=False)
    iterations: int = 0
    seconds: float = 0.0
    source: str = "optimized (random start)"

    @property
    def p(self) -> int:
        return int(self.B.shape[0])

    @property
    def n(self) -> int:
        return int(self.B.shape[1])

    @property
    def column_scale(self) -> np.ndarray:
        """``c = 1 + column sums of B``; ``A = [I; B] diag(1/c)`` has unit L1 columns."""
        return 1.0 + self.B.sum(axis=0)

    def dense(self) -> np.ndarray:
        """The strategy matrix ``A`` (``(n + p) x n``), for tests and small domains."""
        A = np.vstack((np.eye(self.n), self.B))
        return A / self.column_scale

    def expected_total_squared_error(self, epsilon: float) -> float:
        """Exact ``E sum_q (W x_hat - W x)_q^2`` with Laplace noise of scale ``1/epsilon``."""
        return 2.0 * self.objective / (epsilon * epsilon)

    def expected_rmse(self, epsilon: float) -> float:
        """Root of the expected squared error per workload query."""
        return math.sqrt(self.expected_total_squared_error(epsilon) / self.workload.size)

    def query_variances(self, epsilon: float, queries=None) -> np.ndarray:
        """Exact error variance of each range query ``[lo, hi)`` (default: the workload's)."""
        if queries is None:
            if self.workload.queries is None:
                raise ParameterError("query_variances needs explicit queries for the "
                                     "all-range workload")
            queries = self.workload.queries
        q = np.asarray(queries, dtype=np.int64)
        c = self.column_scale
        R = np.linalg.inv(np.eye(self.p) + self.B @ self.B.T)
        Pc2 = np.concatenate(([0.0], np.cumsum(c * c)))
        PB = np.concatenate((np.zeros((self.p, 1)), np.cumsum(self.B * c, axis=1)), axis=1)
        U = PB[:, q[:, 1]] - PB[:, q[:, 0]]                  # B D^{-1} w_q
        quad = Pc2[q[:, 1]] - Pc2[q[:, 0]] - np.einsum("ij,ij->j", U, R @ U)
        return 2.0 * quad / (epsilon * epsilon)

    def answers(self, x: np.ndarray) -> np.ndarray:
        """The true strategy answers ``A x`` (length ``n + p``)."""
        xs = np.asarray(x, dtype=np.float64) / self.column_scale
        return np.concatenate((xs, self.B @ xs))

    def measure(self, x: np.ndarray, epsilon: float, rng, *, scale_factor: float = 1.0,
                size: int | None = None):
        """Noisy strategy answers ``A x + Lap(1/epsilon)`` per answer.

        ``size`` draws that many independent measurements at once (shape
        ``(size, n + p)``, for audits); ``scale_factor`` scales the noise (canaries only).
        """
        ans = self.answers(x)
        b = scale_factor / epsilon
        shape = ans.shape if size is None else (int(size), ans.size)
        return ans + rng.laplace(0.0, b, size=shape)

    def estimate(self, y: np.ndarray) -> np.ndarray:
        """Least squares ``(A^T A)^{-1} A^T y`` (post-processing; rows of a 2-d ``y`` each)."""
        n, c, B = self.n, self.column_scale, self.B
        y = np.asarray(y, dtype=np.float64)
        u = y[..., :n] + y[..., n:] @ B
        R = np.linalg.inv(np.eye(self.p) + B @ B.T)
        return c * (u - ((u @ B.T) @ R.T) @ B)


def optimize_strategy(workload, n: int | None = None, *, p: int | None = None,
                      restarts: int = 1, seed: int = 0, cache: bool = True,
                      start: str = "auto") -> HDMMStrategy:
    """Optimize a p-Identity strategy for a public range workload (``OPT_0`` of HDMM).

    Parameters
    ----------
    workload : 'prefix', 'all-range', array (q, 2) of ranges, or RangeWorkload
    n : int
        Number of bins (not needed for a RangeWorkload).
    p : int, optional
        Extra strategy queries (default: the paper's ``n // 16``; where no strategy is
        shipped, :func:`default_p`, which caps it at 64 to bound the optimizer's time).
    restarts : int
        Independent random starts; the best objective is kept.
    seed : int
        Seed of the optimizer's random start. The strategy is a function of
        public inputs only, so this seed has no bearing on privacy.
    cache : bool
        Reuse a strategy already optimized in this process for the same inputs.
    start : {'auto', 'random'}
        ``'random'``: the paper's uniform random start drawn from ``seed``.
        ``'auto'`` (default): with the default ``p`` (or the shipped one), one restart and
        seed 0, a built-in workload at a shipped size returns the shipped strategy
        (optimized ahead of time with ``'random'`` and ``p = n // 16``; no optimization
        here); at a size between shipped sizes it returns the next shipped strategy
        restricted to the first ``n`` bins (no optimization); with ``p`` equal to
        :func:`default_p` and seed 0,
        anything else starts from the nearest shipped strategy, resampled to ``(p, n)``
        (a user range set from the all-range one), plus uniform jitter of its mean size;
        further restarts start at random. Every start is public. Against the random
        start (``benchmarks/histograms.py --hdmm-start``): objective 0.78-1.007x, 2-3.5x
        faster at n >= 1000.

    Examples
    --------
    >>> s = optimize_strategy("prefix", 64)
    >>> s.p, s.n, s.expected_rmse(1.0) < 6.0, s.source
    (4, 64, True, 'shipped')
    >>> optimize_strategy("prefix", 48).source
    'shipped n=64, restricted to the first 48 bins'
    >>> optimize_strategy("prefix", 48, p=default_p(48)).source
    'optimized (start: shipped n=64, resampled)'
    """
    if isinstance(workload, RangeWorkload):
        w = workload
    else:
        if n is None:
            raise ParameterError("n (the number of bins) is required with a workload name "
                                 "or a range array")
        w = RangeWorkload.from_spec(workload, n)
    from . import _hdmm_shipped as shipped

    n = w.n
    default = p is None
    if not default:
        p = check_int(p, "p", minimum=1)
    restarts = check_int(restarts, "restarts", minimum=1)
    if start not in ("auto", "random"):
        raise ParameterError(f"start must be 'auto' or 'random', got {start!r}")
    t0 = time.perf_counter()
    kind = "all-range" if w.kind == "ranges" else w.kind
    if start == "auto" and int(seed) == 0 and restarts == 1 and w.kind != "ranges":
        # the shipped strategy (the paper's p = n // 16, see _hdmm_shipped.shipped_p); between
        # shipped sizes, the next shipped strategy on the first n bins, no optimizer (n = 4000:
        # 18 s optimized at p = 64, expected error 0.96x of that)
        B = shipped.shipped_parameters(kind, n)
        if B is not None and (default or p == B.shape[0]):
            source, key = "shipped", (w.key(), B.shape[0], restarts, 0, start)
        else:
            near = shipped.restricted_parameters(kind, n) if default and B is None else None
            B = near[1] if near is not None and near[1].shape[0] > 0 else None
            if B is not None:
                source = f"shipped n={near[0]}, restricted to the first {n} bins"
                key = (w.key(), "restricted", near[0])
        if B is not None:
            if cache and key in _CACHE:
                _CACHE.move_to_end(key)
                return _CACHE[key]
            gd = w.gram_diag()
            obj, _ = _loss_grad(B.ravel(), B.shape[0], n, w, gd)
            if obj > float(gd.sum()):  # never worse than Identity (B = 0)
                B, obj = np.zeros((1, n)), float(gd.sum())
            strat = HDMMStrategy(B, float(obj), w, 0, time.perf_counter() - t0, source)
            return _remember(key, strat) if cache else strat
    p = default_p(n) if default else p
    key = (w.key(), p, restarts, int(seed), start)
    if cache and key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    gdiag = w.gram_diag()
    warm, source = None, "optimized (random start)"
    if start == "auto" and int(seed) == 0 and (default or p == default_p(n)):
        near = shipped.nearest_shipped(kind, n)
        if near is not None:
            warm = shipped.resample_parameters(near[1], n, p).ravel()
            source = f"optimized (start: shipped n={near[0]}, resampled)"
    from scipy import optimize  # here: a shipped strategy needs no optimizer (0.5 s import)
    from threadpoolctl import threadpool_limits

    g = np.random.default_rng(np.random.SeedSequence(int(seed)))  # public: the start point
    best, iters = None, 0
    bounds = optimize.Bounds(np.zeros(p * n), np.full(p * n, np.inf))
    # One BLAS thread: the products are (p x n) with p <= 64, where thread start-up costs
    # more than it saves (n = 1000 on 2 cores: 0.8 s with one thread, 4.3 s with two).
    with threadpool_limits(limits=1, user_api="blas"):
        for r in range(restarts):
            x0 = g.random(p * n)
            if r == 0 and warm is not None:
                # the resampled strategy plus uniform jitter of its mean size: without it the
                # many exact zeros sit on the bound and L-BFGS-B can stop at once (a 40-range
                # set at n = 64: 1.17x the random start's objective; with it 0.83x)
                x0 = warm + (warm.mean() if warm.mean() > 0 else 1.0) * x0
            res = optimize.minimize(_loss_grad, x0, args=(p, n, w, gdiag), jac=True,
                                    method="L-BFGS-B", bounds=bounds,
                                    options={"ftol": FTOL, "maxiter": 15000})
            iters += int(res.nit)
            if best is None or res.fun < best.fun:
                best = res
    B = np.maximum(best.x.reshape(p, n), 0.0)
    obj, _ = _loss_grad(B.ravel(), p, n, w, gdiag)
    if obj > float(gdiag.sum()):
        # B = 0 is feasible and is Identity (objective tr G); at tiny domains the optimizer
        # can stop above it (all ranges, n = 16, p = 1: 852 vs 816), so keep the better
        B = np.zeros((p, n))
        obj = float(gdiag.sum())
    strat = HDMMStrategy(B, float(obj), w, iters, time.perf_counter() - t0, source)
    return _remember(key, strat) if cache else strat


def _remember(key, strat: HDMMStrategy) -> HDMMStrategy:
    _CACHE[key] = strat
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return strat


def clear_strategy_cache() -> None:
    """Forget the strategies optimized in this process."""
    _CACHE.clear()


def linear_strategy_error(A, workload, *, noise_variances) -> float:
    """Exact expected total squared workload error of any full-rank linear strategy.

    ``A`` (dense, ``m x n``) is measured with independent noise of the given
    variance per row and reconstructed by generalised least squares; the error is
    ``tr[(A^T S^{-1} A)^{-1} W^T W]``, ``S = diag(noise_variances)``. Used to put
    HDMM's closed form beside other strategies (Identity, HB's tree).

    Examples
    --------
    >>> round(linear_strategy_error(np.eye(3), "prefix", noise_variances=np.full(3, 2.0)), 6)
    12.0
    """
    A = np.asarray(A, dtype=np.float64)
    w = RangeWorkload.from_spec(workload, A.shape[1])
    s = np.broadcast_to(np.asarray(noise_variances, dtype=np.float64), (A.shape[0],))
    M = A.T @ (A / s[:, None])
    return float(np.trace(np.linalg.solve(M, w.dense_gram())))


def hdmm(counts, *, epsilon, workload="prefix", p: int | None = None, restarts: int = 1,
         strategy: HDMMStrategy | None = None, rng=None) -> Release:
    """HDMM: workload-optimized strategy, Laplace noise, least squares.

    Steps: (1) optimize a p-Identity strategy ``A`` for the public workload
    (data-independent; cached per process); (2) measure ``A x`` with
    Laplace noise of scale ``1/epsilon`` on each of the ``n + p`` answers; (3)
    publish the least-squares estimate ``(A^T A)^{-1} A^T y``.

    Why it is eps-DP: every column of ``A`` has L1 norm 1, so one record (one bin
    count changing by 1) moves ``A x`` by a vector of L1 norm 1; Laplace noise of
    scale ``1/epsilon`` per answer is the Laplace mechanism for that
    sensitivity. The strategy depends only on the public workload and ``n``;
    least squares is post-processing. The whole budget is spent in step (2).
    Noise is float64 Laplace (the strategy answers are real numbers; see
    ``docs/guarantees.md`` on floating point).

    Parameters
    ----------
    counts : array_like of int, shape (n,)
    epsilon : float or PureDP
    workload : 'prefix', 'all-range' or array (q, 2) of ranges ``[lo, hi)``
        The public queries the release should answer well.
    p : int, optional
        Extra strategy queries (default as in :func:`optimize_strategy`).
    restarts : int
        Random starts of the optimizer (best kept).
    strategy : HDMMStrategy, optional
        A strategy optimized earlier (:func:`optimize_strategy`) for this workload.
    rng : numpy.random.Generator, optional

    Returns
    -------
    Release
        ``expected_error`` holds the exact expected total squared error over the
        workload and the expected RMSE per query (data-independent).

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = hdmm([5, 0, 3, 8, 2, 2, 9, 1], epsilon=1.0, rng=make_rng(seed=0))
    >>> r.mechanism, r.budget_split, r.value.shape
    ('hdmm', {'strategy_answers': 1.0}, (8,))
    """
    x = as_counts(counts)
    n = x.size
    b = as_budget(epsilon)
    g = as_rng(rng)
    if strategy is None:
        strategy = optimize_strategy(workload, n, p=p, restarts=restarts)
    elif not isinstance(strategy, HDMMStrategy) or strategy.n != n:
        raise ParameterError(f"strategy must be an HDMMStrategy over n={n} bins")
    w = strategy.workload
    y = strategy.measure(x, b.epsilon, g)
    value = strategy.estimate(y)
    tse = strategy.expected_total_squared_error(b.epsilon)
    err = {"total_squared_error": tse, "rmse_per_query": math.sqrt(tse / w.size),
           "workload_queries": w.size}
    return Release(value, "hdmm", b,
                   {"n": n, "workload": w.describe(), "p": strategy.p,
                    "strategy": "p-Identity (OPT_0)", "strategy_objective": strategy.objective,
                    "strategy_source": strategy.source,
                    "optimizer_iterations": strategy.iterations},
                   {"strategy_answers": b.epsilon}, noise_scale=1.0 / b.epsilon,
                   noise_variance=2.0 / b.epsilon ** 2, expected_error=err,
                   notes=(NEIGHBOURS, "strategy optimized on the public workload only "
                          "(data-independent error)", "float64 Laplace noise"))
