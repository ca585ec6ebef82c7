"""The adversary's hidden-Markov-model inference and the delta-location set.

The adversary knows the (public) Markov model ``M`` and the release mechanism; after
seeing released points ``z_1..z_t`` it holds the posterior ``p_t^+`` over cells:

* prior ``p_t^- = p_{t-1}^+ M`` (``p_1^-`` = the public initial distribution);
* posterior ``p_t^+[i] proportional to p_t^-[i] Pr(z_t | u_t = s_i)``.

This is the forward pass of the forward-backward algorithm. The releasing side runs
the same recursion to choose the delta-location set.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from ...errors import ParameterError
from ...validation import check_delta, check_finite_array

__all__ = ["delta_location_set", "nearest_in_set", "grid_surrogates", "posterior_update", "forward_filter",
           "brute_force_filter"]


def delta_location_set(prior: Any, delta: float, *, validate: bool = True) -> np.ndarray:
    """The delta-location set: the smallest set of most probable cells with mass >= 1 - delta.

    Cells are taken in order of decreasing probability (ties broken by cell index, so
    the set is a deterministic function of the public prior) until their cumulative
    probability reaches ``1 - delta`` (relative to the total mass, with a 1e-12
    tolerance for rounding). Only cells with positive probability can enter.

    Returns the cell indices in that order.

    Examples
    --------
    >>> delta_location_set([0.3, 0.4, 0.05, 0.2, 0.03, 0.02], 0.1).tolist()
    [1, 0, 3]
    >>> delta_location_set([0.3, 0.4, 0.05, 0.2, 0.03, 0.02], 0.05).tolist()
    [1, 0, 3, 2]
    """
    if validate:
        delta = check_delta(delta)
        p = check_finite_array(prior, "prior", ndim=1)
        if (p < 0).any() or not p.sum() > 0:
            raise ParameterError("prior must be non-negative with a positive sum")
    else:
        p = prior
    support = np.flatnonzero(p > 0)
    ps = p[support]
    order = support[np.argsort(-ps, kind="stable")]  # support ascending: ties by index
    cum = np.cumsum(p[order])
    total = cum[-1]
    k = int(np.searchsorted(cum, (1.0 - delta) * total * (1 - 1e-12), side="left")) + 1
    return order[:min(k, order.size)]


def nearest_in_set(query: np.ndarray, set_points: np.ndarray) -> np.ndarray:
    """Index (into ``set_points``) of the nearest set point to each query point.

    Ties are broken towards the lower index, deterministically; the release loop and
    the adversary's likelihood use this same function, so the surrogate of a cell
    outside the set is well defined and public.
    """
    query = np.asarray(query, dtype=np.float64).reshape(-1, 2)
    n = set_points.shape[0]
    k = min(8, n)
    if n <= 8:
        cand = np.broadcast_to(np.arange(n), (query.shape[0], n))
    else:
        _, cand = cKDTree(set_points).query(query, k=k)
    d2 = ((query[:, None, :] - set_points[cand]) ** 2).sum(axis=2)
    tied = d2 <= d2.min(axis=1, keepdims=True) * (1 + 1e-9)
    best = np.where(tied, cand, np.iinfo(np.int64).max).min(axis=1)
    if n > 8:  # all k candidates tied: the true tie set may be larger; resolve exactly
        full = np.flatnonzero(tied.all(axis=1))
        if full.size:
            d2f = ((query[full, None, :] - set_points[None, :, :]) ** 2).sum(axis=2)
            tf = d2f <= d2f.min(axis=1, keepdims=True) * (1 + 1e-9)
            best[full] = np.argmax(tf, axis=1)
    return best.astype(np.int64)


def grid_surrogates(grid, in_set: np.ndarray) -> np.ndarray:
    """For every cell of a regular grid, the nearest cell of the set (itself if in the set).

    Computed by the exact Euclidean distance transform in metres
    (``scipy.ndimage.distance_transform_edt`` with the cell size as sampling): O(cells)
    per call, about 0.3 ms on 50 x 50. Equidistant candidates are resolved by the
    transform's deterministic rule; the release loop computes this map once per step
    and uses it both for the surrogate of the true cell and for the adversary's
    likelihood, so the two always agree.

    Parameters
    ----------
    grid : TemporalGrid
    in_set : bool array (n_cells,)

    Returns
    -------
    int64 array (n_cells,)
    """
    from scipy import ndimage

    mask = np.asarray(in_set, dtype=bool).reshape(grid.ny, grid.nx)
    if not mask.any():
        raise ParameterError("the set is empty")
    w, h = grid.cell_size_m
    _, ind = ndimage.distance_transform_edt(~mask, sampling=(h, w), return_indices=True)
    return (ind[0] * grid.nx + ind[1]).ravel().astype(np.int64)


def posterior_update(prior: np.ndarray, log_likelihood: np.ndarray) -> np.ndarray:
    """``prior * exp(log_likelihood)`` normalised, computed stably in the log domain.

    Cells where the prior is zero stay zero (their likelihood is ignored).
    """
    out = np.zeros_like(prior)
    s = np.flatnonzero(prior > 0)
    ll = log_likelihood[s]
    w = prior[s] * np.exp(ll - ll.max())
    out[s] = w / w.sum()
    return out


def forward_filter(initial: Any, matrix: Any, log_likelihoods: Any) -> tuple[np.ndarray, np.ndarray]:
    """HMM forward filtering: priors and posteriors for a whole sequence.

    Parameters
    ----------
    initial : array (m,)
        ``p_1^-``.
    matrix : (m, m) sparse or dense row-stochastic matrix ``M``.
    log_likelihoods : array (T, m)
        ``log Pr(z_t | u_t = s_i)`` (up to an additive constant per ``t``).

    Returns
    -------
    priors, posteriors : arrays (T, m)

    Examples
    --------
    >>> M = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> pri, post = forward_filter([0.5, 0.5], M, np.log([[0.8, 0.2], [0.3, 0.7]]))
    >>> post[-1].round(4).tolist()
    [0.5758, 0.4242]
    """
    p = check_finite_array(initial, "initial", ndim=1)
    ll = np.asarray(log_likelihoods, dtype=np.float64)
    if ll.ndim != 2 or ll.shape[1] != p.size:
        raise ParameterError(f"log_likelihoods must have shape (T, {p.size}), got {ll.shape}")
    mt = matrix.T
    priors = np.empty_like(ll)
    posts = np.empty_like(ll)
    prior = p / p.sum()
    for t in range(ll.shape[0]):
        priors[t] = prior
        posts[t] = posterior_update(prior, ll[t])
        prior = np.asarray(mt @ posts[t]).ravel()
    return priors, posts


def brute_force_filter(initial: Any, matrix: Any, likelihoods: Any) -> np.ndarray:
    """``P(u_T = s | z_1..z_T)`` by summing over every path (``m^T`` of them); tests only."""
    import itertools

    p0 = np.asarray(initial, dtype=np.float64)
    p0 = p0 / p0.sum()
    m_ = np.asarray(matrix.toarray() if hasattr(matrix, "toarray") else matrix, dtype=np.float64)
    lik = np.asarray(likelihoods, dtype=np.float64)
    t_len, m = lik.shape
    out = np.zeros(m)
    for path in itertools.product(range(m), repeat=t_len):
        w = p0[path[0]] * lik[0, path[0]]
        for t in range(1, t_len):
            w *= m_[path[t - 1], path[t]] * lik[t, path[t]]
        out[path[-1]] += w
    return out / out.sum()
