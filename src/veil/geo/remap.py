"""Optimal remapping: free post-processing that makes obfuscated locations more useful.

Chatzikokolakis, ElSalamouny and Palamidessi (PoPETs 2017, "Efficient utility improvement
for location privacy") observe that a report ``z`` of a known mechanism, combined with a
*public* prior ``pi`` over locations (e.g. a DP density map, or the public mobility model),
gives the posterior ``P(x | z) ~ pi(x) f(z | x)``; publishing instead of ``z`` the point
``g(z)`` that minimizes the posterior expected loss never hurts the expected utility (for
the loss it is optimal for) and costs no privacy: ``g`` uses only the report and public
information, so ``g(z)`` is post-processing of an eps-geo-indistinguishable (or eps-DP)
output.

* Euclidean loss: ``g(z)`` = the posterior's weighted geometric median (Weiszfeld's
  iterations, vectorized over reports).
* Squared loss: the posterior mean.

:func:`optimal_remap` remaps planar Laplace reports (lat/lon) with a prior given as weighted
points; :func:`remap_trajectory` remaps a PIM/LM trajectory release with the posterior that
the release loop computes anyway (the adversary's filter under the public model).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..release import Release
from ..validation import check_choice, check_int
from .geometry import LocalProjection, check_latlon

__all__ = ["weighted_geometric_median", "posterior_weights", "optimal_remap",
           "remap_trajectory", "LOSSES"]

LOSSES = ("euclidean", "squared")


def weighted_geometric_median(weights: Any, points: Any, *, init: Any = None,
                              max_iter: int = 100, tol: float = 1e-4) -> np.ndarray:
    """Per row of ``weights`` (r, n), the point minimizing ``sum_i w_i |x_i - g|``.

    Weiszfeld's fixed-point iteration from the weighted mean (or ``init``), vectorized over
    the rows; a point that coincides with a support point is kept away from the 0/0 by a
    1e-9 floor on the distances. Stops when no row moves by more than ``tol`` (units of
    ``points``).

    Examples
    --------
    >>> p = [[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]]
    >>> g = weighted_geometric_median([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]], p)
    >>> np.round(g, 2).tolist()
    [[2.11, 2.11], [0.0, 0.0]]
    """
    W = np.asarray(weights, dtype=np.float64)
    X = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if W.ndim == 1:
        W = W[None]
    if W.shape[1] != X.shape[0]:
        raise ParameterError(f"weights have {W.shape[1]} columns for {X.shape[0]} points")
    tot = W.sum(axis=1, keepdims=True)
    if not (tot > 0).all():
        raise ParameterError("every row of weights needs a positive sum")
    W = W / tot
    g = W @ X if init is None else np.array(init, dtype=np.float64).reshape(-1, 2)
    active = np.ones(len(W), dtype=bool)
    for _ in range(check_int(max_iter, "max_iter", minimum=1)):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        d = np.hypot(g[idx, None, 0] - X[None, :, 0], g[idx, None, 1] - X[None, :, 1])
        w = W[idx] / np.maximum(d, 1e-9)
        new = (w @ X) / w.sum(axis=1, keepdims=True)
        moved = np.hypot(*(new - g[idx]).T)
        g[idx] = new
        active[idx[moved <= tol]] = False
    return g


def _geomedian_local(W: np.ndarray, P: np.ndarray, max_iter: int = 100,
                     tol: float = 1e-4) -> np.ndarray:
    """Weiszfeld per row with a per-row support: ``W`` (r, k), ``P`` (r, k, 2)."""
    g = np.einsum("rk,rkj->rj", W, P)
    active = np.arange(len(W))
    for _ in range(max_iter):
        if active.size == 0:
            break
        d = np.hypot(*(P[active] - g[active, None, :]).transpose(2, 0, 1))
        v = W[active] / np.maximum(d, 1e-9)
        new = np.einsum("rk,rkj->rj", v, P[active]) / v.sum(axis=1, keepdims=True)
        moved = np.hypot(*(new - g[active]).T)
        g[active] = new
        active = active[moved > tol]
    return g


def posterior_weights(reports_xy: np.ndarray, prior_xy: np.ndarray, prior: np.ndarray,
                      epsilon: float) -> np.ndarray:
    """``P(x_i | z) ~ pi_i exp(-eps |z - x_i|)`` for planar Laplace, one row per report."""
    d = np.hypot(reports_xy[:, None, 0] - prior_xy[None, :, 0],
                 reports_xy[:, None, 1] - prior_xy[None, :, 1])
    with np.errstate(divide="ignore"):
        logw = np.log(prior)[None, :] - epsilon * d
    logw -= logw.max(axis=1, keepdims=True)
    w = np.exp(logw)
    return w / w.sum(axis=1, keepdims=True)


def _remap_xy(W: np.ndarray, X: np.ndarray, loss: str) -> np.ndarray:
    if loss == "squared":
        return W @ X
    return weighted_geometric_median(W, X)


def _subdivide(X: np.ndarray, w: np.ndarray, cell_m: float, eps: float
               ) -> tuple[np.ndarray, np.ndarray, int]:
    """Spread each cell's mass over ``s x s`` sub-points, ``s = ceil(2 eps cell_m)`` (1..8):
    the posterior of a report is then resolved finer than the noise, not only to the
    cells' centres."""
    s = int(min(8, max(1, math.ceil(2.0 * eps * cell_m))))
    if s == 1:
        return X, w, 1
    off = ((np.arange(s) + 0.5) / s - 0.5) * cell_m
    d = np.array(np.meshgrid(off, off)).reshape(2, -1).T
    return ((X[:, None, :] + d[None]).reshape(-1, 2), np.repeat(w / (s * s), s * s), s)


def optimal_remap(release: Release | Any, *, prior_points: Any, prior_weights: Any = None,
                  epsilon: float | None = None, loss: str = "euclidean",
                  projection: LocalProjection | None = None, prior_cell_m: float | None = None,
                  max_support: int = 4096, chunk: int = 1024) -> Release:
    """Remap planar Laplace reports ``[lat, lon]`` to their optimal guess under a public prior.

    Parameters
    ----------
    release : Release or array (n, 2)
        The output of :func:`veil.geo.planar_laplace` (its epsilon is read from the
        Release), or reported ``[lat, lon]`` points together with ``epsilon``.
    prior_points : array (k, 2)
        ``[lat, lon]`` support of the public prior (e.g. the centres of a public grid).
    prior_weights : array (k,), optional
        Its (unnormalized) weights, e.g. a DP histogram of visits; uniform by default.
        Must be public: never weights computed from the points being protected.
    epsilon : float, optional
        Per metre, when ``release`` is a plain array.
    loss : {"euclidean", "squared"}
        The loss the remap is optimal for.
    projection : LocalProjection, optional
        The public plane of the computation (default: the centre of the prior's
        bounding box).
    prior_cell_m : float, optional
        The prior points are the centres of square cells of this side (metres) whose mass
        is spread uniformly inside them: each cell is resolved into ``s x s`` sub-points,
        ``s = ceil(2 eps cell)`` up to 8, so the remap is not stuck at cell centres when
        the noise is smaller than a cell.
    max_support : int
        Each report's posterior is computed on its ``max_support`` nearest support points
        (a public truncation; farther points have negligible posterior mass when they lie
        beyond about ``10 / eps``).

    Returns
    -------
    Release
        The remapped points, with the original budget (remapping is post-processing) and
        ``parameters["remap"]`` describing the prior.

    Examples
    --------
    >>> from veil.geo.geoind import planar_laplace
    >>> from veil.random import make_rng
    >>> grid = [[45.0 + i * 0.001, 7.0 + j * 0.001] for i in range(5) for j in range(5)]
    >>> rel = planar_laplace([[45.002, 7.002]], epsilon=0.01, rng=make_rng(seed=1))
    >>> out = optimal_remap(rel, prior_points=grid)
    >>> out.value.shape, out.parameters["remap"]["loss"]
    ((1, 2), 'euclidean')
    """
    loss = check_choice(loss, "loss", LOSSES)
    if isinstance(release, Release):
        pts = np.asarray(release.value, dtype=np.float64).reshape(-1, 2)
        eps = float(release.parameters.get("epsilon_per_metre", release.epsilon))
        base = release
    else:
        if epsilon is None:
            raise ParameterError("epsilon is required when remapping plain points")
        from .geoind import geo_epsilon
        eps = geo_epsilon(epsilon)
        pts = np.asarray(release, dtype=np.float64).reshape(-1, 2)
        base = None
    check_latlon(pts[:, 0], pts[:, 1], name="reports")
    P = np.asarray(prior_points, dtype=np.float64).reshape(-1, 2)
    check_latlon(P[:, 0], P[:, 1], name="prior_points")
    if prior_weights is None:
        w = np.full(len(P), 1.0 / len(P))
    else:
        w = np.asarray(prior_weights, dtype=np.float64).reshape(-1)
        if w.shape != (len(P),) or not np.isfinite(w).all() or (w < 0).any() or not w.sum() > 0:
            raise ParameterError(f"prior_weights must be {len(P)} finite values >= 0 with a "
                                 f"positive sum")
        w = w / w.sum()
    if projection is None:
        projection = LocalProjection.centred_on(P)  # across the antimeridian if shorter
    X = projection.points_to_plane(P)
    Z = projection.points_to_plane(pts)
    keep = w > 0
    X, w = X[keep], w[keep]
    sub = 1
    if prior_cell_m is not None:
        from ..validation import check_positive
        X, w, sub = _subdivide(X, w, check_positive(prior_cell_m, "prior_cell_m"), eps)
    max_support = check_int(max_support, "max_support", minimum=1)
    out = np.empty_like(Z)
    if len(X) <= max_support:
        for a in range(0, len(Z), chunk):
            W = posterior_weights(Z[a:a + chunk], X, w, eps)
            out[a:a + chunk] = _remap_xy(W, X, loss)
    else:
        from scipy.spatial import cKDTree

        tree = cKDTree(X)
        logw = np.log(w)
        for a in range(0, len(Z), chunk):
            d, idx = tree.query(Z[a:a + chunk], k=max_support)
            lw = logw[idx] - eps * d
            lw -= lw.max(axis=1, keepdims=True)
            W = np.exp(lw)
            W /= W.sum(axis=1, keepdims=True)
            if loss == "squared":
                out[a:a + chunk] = np.einsum("rk,rkj->rj", W, X[idx])
            else:
                out[a:a + chunk] = _geomedian_local(W, X[idx])
    latlon = projection.points_to_latlon(out)
    info = {"method": "optimal remapping (Chatzikokolakis et al. PoPETs 2017)", "loss": loss,
            "prior_points": int(len(P)), "projection": [projection.lat0, projection.lon0],
            "prior_cell_m": prior_cell_m, "subdivision": sub,
            "support_per_report": int(min(len(X), max_support))}
    note = ("remapped to the posterior-optimal point under a public prior: post-processing, "
            "no extra privacy cost")
    if base is None:
        from ..budget import GeoDP
        return Release(latlon, "remapped", GeoDP(eps), parameters={"remap": info},
                       notes=(note,), columns=("lat", "lon"))
    return replace(base, value=latlon, mechanism=f"{base.mechanism}+remap",
                   parameters={**base.parameters, "remap": info}, notes=base.notes + (note,),
                   columns=("lat", "lon"))


def remap_trajectory(result: Any, grid: Any, *, loss: str = "euclidean") -> Release:
    """Remap a PIM/LM trajectory release with the release loop's own posterior.

    At each timestamp the loop computes the posterior ``p_t^+`` over cells given the
    public model and the released points so far (the adversary's filter); it is public,
    so the optimal guess under it -- the geometric median of the cell centres weighted by
    ``p_t^+`` for the Euclidean loss -- is post-processing. Needs
    ``release_trajectory(..., keep_posteriors=True)``.

    Returns a Release of ``[lat, lon]`` points with the trajectory's budget.

    Examples
    --------
    >>> from veil.geo.temporal import TemporalGrid, MarkovModel, release_trajectory
    >>> from veil.random import make_rng
    >>> g = TemporalGrid(lat_min=0.0, lon_min=0.0, lat_max=0.05, lon_max=0.05, nx=5, ny=5)
    >>> m = MarkovModel.from_trajectories([[0, 1, 2, 7, 12, 13, 18, 24]], grid=g)
    >>> r = release_trajectory([0, 1, 2, 7], model=m, epsilon=1.0, delta=0.05,
    ...                        rng=make_rng(seed=0), keep_posteriors=True)
    >>> remap_trajectory(r, g).value.shape
    (4, 2)
    """
    loss = check_choice(loss, "loss", LOSSES)
    post = getattr(result, "posteriors", None)
    if post is None:
        raise ParameterError("remapping needs the posteriors: call release_trajectory(..., "
                             "keep_posteriors=True)")
    C = grid.centers_m
    xy = np.empty((post.shape[0], 2))
    for a in range(0, post.shape[0], 256):
        W = post[a:a + 256]
        cols = np.flatnonzero((W > 0).any(axis=0))
        xy[a:a + 256] = _remap_xy(W[:, cols], C[cols], loss)
    base = result.release
    info = {"method": "optimal remapping with the release loop's posterior", "loss": loss}
    return replace(base, value=grid.to_latlon(xy), mechanism=f"{base.mechanism}+remap",
                   parameters={**base.parameters, "remap": info},
                   notes=base.notes + ("remapped to the posterior-optimal point (public model "
                                       "and released points only): post-processing",))


def remapped_xy(result: Any, grid: Any, loss: str = "euclidean") -> np.ndarray:
    """The remapped trajectory in the grid's metric plane (for error measurements)."""
    return grid.to_metres(*remap_trajectory(result, grid, loss=loss).value.T)


