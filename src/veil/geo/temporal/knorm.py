"""Sensitivity hulls, the K-norm, and the two location mechanisms of the PIM framework.

* :class:`SensitivityHull` -- a convex polygon ``K`` containing the origin, with its
  gauge (K-norm) ``||v||_K = max_i (n_i . v) / b_i`` computed from the edges
  (``n_i . x <= b_i`` inside), the exit edge of a direction, the exact uniform
  sampler, the isotropic transform and the K-norm density.
* :func:`sensitivity_hull` -- ``K = Conv({v_i - v_j})`` over the vertices of the
  convex hull of a delta-location set (Xiao and Xiong, CCS 2015, Section 5).
* :class:`PlanarIsotropicMechanism` (PIM) and :class:`L1LaplaceMechanism` (LM).

Floating point: the noise is drawn in float64 (``numpy`` Gamma / Laplace and the
exact-up-to-float64 polygon sampler); as for every continuous mechanism, the
guarantee holds for the ideal real-valued sampler (Mironov, CCS 2012).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.spatial import ConvexHull

from ...budget import PureDP
from ...errors import ParameterError
from ...random import make_rng
from ...release import Release
from ...samplers import uniform_in_convex_polygon
from ...validation import check_epsilon, check_finite_array
from ..snapping import DEFAULT_RESOLUTION_M, check_resolution, lattice_note, snap_plane, \
    snapping_correction

__all__ = ["SensitivityHull", "sensitivity_hull", "knorm_noise", "PlanarIsotropicMechanism",
           "pure_epsilon",
           "L1LaplaceMechanism", "MECHANISMS"]


def _ccw_hull(points: np.ndarray) -> np.ndarray:
    """Vertices of the convex hull in counter-clockwise order (qhull)."""
    h = ConvexHull(points)
    return points[h.vertices]


def _difference_body(v: np.ndarray) -> np.ndarray:
    """Vertices (counter-clockwise) of ``Conv({v_i - v_j}) = P + (-P)`` for a convex polygon
    ``P`` given by its counter-clockwise vertices: the Minkowski sum, by merging the edges
    of ``P`` and ``-P`` in angle order (O(h log h), no qhull call)."""
    e = np.roll(v, -1, axis=0) - v
    edges = np.vstack((e, -e))
    ang = np.mod(np.arctan2(edges[:, 1], edges[:, 0]), 2 * np.pi)
    edges = edges[np.argsort(ang, kind="stable")]
    # lowest (then leftmost) vertex of P and of -P
    lo = np.lexsort((v[:, 0], v[:, 1]))[0]
    hi = np.lexsort((-v[:, 0], -v[:, 1]))[0]
    start = v[lo] - v[hi]
    pts = start + np.vstack((np.zeros((1, 2)), np.cumsum(edges[:-1], axis=0)))
    # drop vertices between two parallel edges (P's parallel sides meet -P's)
    a = edges
    b = np.roll(edges, 1, axis=0)
    cross = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    scale = np.einsum("ij,ij->i", a, a) + np.einsum("ij,ij->i", b, b)
    return pts[np.abs(cross) > 1e-12 * scale]


@dataclass(frozen=True)
class SensitivityHull:
    """A convex polygon ``K`` with the origin in its interior, used as a norm ball.

    Parameters
    ----------
    vertices : array (h, 2)
        Counter-clockwise vertices (at least 3, strictly containing 0).
    degenerate : str or None
        ``"single"`` or ``"collinear"`` when the hull was padded (see
        :func:`sensitivity_hull`), else ``None``.

    Examples
    --------
    >>> K = SensitivityHull.from_polygon([[-2, -1], [2, -1], [2, 1], [-2, 1]])
    >>> K.norm([[2.0, 0.0], [1.0, 1.0], [-4.0, 0.5]])
    array([1., 1., 2.])
    >>> K.area
    8.0
    """

    vertices: np.ndarray
    degenerate: str | None = None
    normals: np.ndarray = field(init=False, repr=False)
    offsets: np.ndarray = field(init=False, repr=False)
    area: float = field(init=False)

    def __post_init__(self) -> None:
        v = np.asarray(self.vertices, dtype=np.float64)
        e = np.roll(v, -1, axis=0) - v
        normals = np.column_stack((e[:, 1], -e[:, 0]))  # outward for counter-clockwise
        offsets = np.einsum("ij,ij->i", normals, v)
        area = 0.5 * float(np.dot(v[:, 0], np.roll(v[:, 1], -1))
                           - np.dot(np.roll(v[:, 0], -1), v[:, 1]))
        v.setflags(write=False)
        object.__setattr__(self, "vertices", v)
        object.__setattr__(self, "normals", normals)
        object.__setattr__(self, "offsets", offsets)
        object.__setattr__(self, "area", area)

    @classmethod
    def from_polygon(cls, vertices: Any, *, degenerate: str | None = None) -> "SensitivityHull":
        """Validate a convex polygon (any order) that contains 0 in its interior."""
        v = check_finite_array(vertices, "vertices", ndim=2)
        if v.shape[1] != 2 or v.shape[0] < 3:
            raise ParameterError(f"vertices must have shape (h>=3, 2), got {v.shape}")
        try:
            hv = _ccw_hull(v)
        except Exception as exc:  # qhull: flat input
            raise ParameterError(f"vertices span no area: {exc}".splitlines()[0]) from None
        if hv.shape[0] != v.shape[0]:
            raise ParameterError("vertices are not the vertices of a convex polygon")
        k = cls(hv, degenerate)
        if not (k.offsets > 1e-12 * max(1.0, float(np.abs(hv).max()) ** 2)).all():
            raise ParameterError("the origin must lie strictly inside the polygon")
        return k

    # -- the gauge -------------------------------------------------------------------
    def _ratios(self, v: np.ndarray) -> np.ndarray:
        return (v @ self.normals.T) / self.offsets

    def norm(self, v: Any) -> np.ndarray:
        """``||v||_K`` for each row of ``v`` (shape (n, 2) -> (n,))."""
        v = np.asarray(v, dtype=np.float64).reshape(-1, 2)
        return np.maximum(self._ratios(v).max(axis=1), 0.0)

    def exit_edge(self, v: Any) -> np.ndarray:
        """Index ``i`` of the edge ``(v_i, v_{i+1})`` the ray from 0 through ``v`` leaves by."""
        v = np.asarray(v, dtype=np.float64).reshape(-1, 2)
        return self._ratios(v).argmax(axis=1)

    def cone_measure(self) -> np.ndarray:
        """Edge probabilities of the cone measure: area of (0, v_i, v_{i+1}) / area(K)."""
        v = self.vertices
        w = np.roll(v, -1, axis=0)
        tri = 0.5 * (v[:, 0] * w[:, 1] - v[:, 1] * w[:, 0])
        return tri / tri.sum()

    def edge_lengths(self) -> np.ndarray:
        return np.hypot(*(np.roll(self.vertices, -1, axis=0) - self.vertices).T)

    # -- sampling and densities -------------------------------------------------------
    def sample_uniform(self, size: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """Exact uniform points inside ``K`` (:func:`veil.samplers.uniform_in_convex_polygon`)."""
        return uniform_in_convex_polygon(self.vertices, size, rng)

    def log_density(self, v: Any, epsilon: float) -> np.ndarray:
        """log of ``eps^2 / (2 area(K)) * exp(-eps ||v||_K)``: the 2-d K-norm density."""
        return math.log(epsilon ** 2 / (2.0 * self.area)) - epsilon * self.norm(v)

    def second_moment(self) -> tuple[np.ndarray, np.ndarray]:
        """Exact mean and covariance of the uniform distribution on ``K``."""
        v = self.vertices
        a, b, c = v[0], v[1:-1], v[2:]
        w = 0.5 * np.abs((b[:, 0] - a[0]) * (c[:, 1] - a[1]) - (b[:, 1] - a[1]) * (c[:, 0] - a[0]))
        s = a + b + c
        mean = (w[:, None] * s / 3.0).sum(axis=0) / w.sum()
        # E[x x^T] on a triangle = (sum p p^T + s s^T) / 12
        pp = (np.einsum("i,j->ij", a, a)[None] + np.einsum("ni,nj->nij", b, b)
              + np.einsum("ni,nj->nij", c, c) + np.einsum("ni,nj->nij", s, s)) / 12.0
        m2 = (w[:, None, None] * pp).sum(axis=0) / w.sum()
        return mean, m2 - np.outer(mean, mean)

    def isotropic_transform(self) -> np.ndarray:
        """The linear map ``T`` that puts ``K`` in isotropic position (``T K`` has
        identity covariance under the uniform distribution).

        Computed exactly from the polygon's second moments (the paper estimates it by
        sampling). An exact K-norm sampler's output does not depend on ``T``
        (``T^-1 (r u_TK) = r u_K`` in distribution); ``T`` serves the error analysis:
        in isotropic position the K-norm mechanism is near-optimal (Hardt-Talwar).
        """
        _, cov = self.second_moment()
        evals, evecs = np.linalg.eigh(cov)
        return (evecs / np.sqrt(evals)) @ evecs.T

    def scaled(self, factor: float) -> "SensitivityHull":
        return SensitivityHull(self.vertices * float(factor), self.degenerate)


def _signed_area(v: np.ndarray) -> float:
    return 0.5 * float(np.dot(v[:, 0], np.roll(v[:, 1], -1)) - np.dot(np.roll(v[:, 0], -1), v[:, 1]))


def _pad_box(pad: tuple[float, float]) -> np.ndarray:
    w, h = float(pad[0]), float(pad[1])
    return np.array([[w, h], [-w, h], [-w, -h], [w, -h]])


def _classify(points: np.ndarray) -> str | None:
    """``"single"``, ``"collinear"`` or ``None`` for a set of planar points."""
    d = points - points[0]
    scale = float(np.abs(d).max()) if d.size else 0.0
    if scale == 0.0:
        return "single"
    far = d[np.argmax(np.einsum("ij,ij->i", d, d))]
    cross = d[:, 0] * far[1] - d[:, 1] * far[0]
    if np.abs(cross).max() <= 1e-9 * scale * scale:
        return "collinear"
    return None


def sensitivity_hull(points: Any, *, pad: tuple[float, float] | None = None,
                     validate: bool = True) -> SensitivityHull:
    """The sensitivity hull ``K = Conv({v_i - v_j})`` of a delta-location set.

    ``v_1, ..., v_h`` are the vertices of ``Conv(points)``; ``K`` is centrally
    symmetric and every difference ``x - x'`` of two points of the set lies in it,
    so ``||x - x'||_K <= 1``.

    Degenerate sets (a public property of the public delta-set, so handling them
    leaks nothing): a single cell or collinear cells give a ``K`` of zero area, for
    which no density exists. They are padded with the public box
    ``[-w, w] x [-h, h]`` (``pad = (w, h)``, the grid's cell size in the release loop):
    ``K = Conv(differences U box corners)``. ``K`` only grows, so every pair of the set
    still has ``||x - x'||_K <= 1`` and the mechanism stays eps-DP on the set; a
    one-cell set is released as if the user could be anywhere in that cell.

    Parameters
    ----------
    points : array (n, 2)
        Planar (metric) coordinates of the delta-location set.
    pad : (float, float), optional
        Required when the set is degenerate (ParameterError otherwise).

    Examples
    --------
    >>> K = sensitivity_hull([[0, 0], [2, 0], [0, 1]])
    >>> sorted(map(tuple, K.vertices.round(6).tolist()))
    [(-2.0, 0.0), (-2.0, 1.0), (0.0, -1.0), (0.0, 1.0), (2.0, -1.0), (2.0, 0.0)]
    >>> sensitivity_hull([[5, 5]], pad=(1, 1)).degenerate
    'single'
    """
    p = check_finite_array(points, "points", ndim=2) if validate else np.asarray(points, float)
    if p.shape[1] != 2:
        raise ParameterError(f"points must have shape (n, 2), got {p.shape}")
    kind = _classify(p)
    if kind is None:
        if p.shape[0] > 3:
            v = _ccw_hull(p)
        else:  # a non-degenerate triangle: orient it counter-clockwise
            v = p if _signed_area(p) > 0 else p[::-1]
        return SensitivityHull(_difference_body(v))
    if pad is None or not (pad[0] > 0 and pad[1] > 0):
        raise ParameterError(f"the delta-location set is degenerate ({kind}); pass pad=(w, h) "
                             f"> 0 (the public cell size), got pad={pad!r}")
    if kind == "single":
        return SensitivityHull(_ccw_hull(_pad_box(pad)), "single")
    d = p - p[0]
    far = p[np.argmax(np.einsum("ij,ij->i", d, d))]
    near = p[np.argmax(np.einsum("ij,ij->i", p - far, p - far))]
    seg = np.array([far - near, near - far])
    return SensitivityHull(_ccw_hull(np.vstack((seg, _pad_box(pad)))), "collinear")


def knorm_noise(hull: SensitivityHull, epsilon: float, size: int,
                rng: np.random.Generator | None = None) -> np.ndarray:
    """K-norm noise ``r u``: ``r ~ Gamma(3, 1/eps)`` and ``u`` uniform *inside* ``K``.

    Its density is ``eps^2 / (2 area(K)) exp(-eps ||v||_K)`` exactly (in 2-d the
    radius of ``r u`` in the K-norm is Gamma(2, 1/eps) and the direction follows the
    cone measure of ``K``). Sampling ``u`` on the boundary by arc length is NOT
    equivalent (it is wrong whenever the edges are not equidistant from 0).

    Examples
    --------
    >>> K = SensitivityHull.from_polygon([[-1, -1], [1, -1], [1, 1], [-1, 1]])
    >>> knorm_noise(K, 1.0, 4, rng=make_rng(seed=0)).shape
    (4, 2)
    """
    rng = make_rng(rng)
    r = rng.gamma(3.0, 1.0 / epsilon, size=size)
    return r[:, None] * hull.sample_uniform(size, rng)


def _l1_radius(hull: SensitivityHull) -> float:
    """Largest L1 norm of a vertex (the L1 diameter S for an L1 ball)."""
    return float(np.abs(hull.vertices).sum(axis=1).max())


def _l1_hull(s: float) -> SensitivityHull:
    return SensitivityHull(np.array([[s, 0.0], [0.0, s], [-s, 0.0], [0.0, -s]]))


def pure_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """Epsilon from a float or a :class:`~veil.budget.PureDP` budget (GeoDP refused).

    Examples
    --------
    >>> pure_epsilon(PureDP(0.5)), pure_epsilon(1)
    (0.5, 1.0)
    """
    from ...budget import GeoDP

    if isinstance(epsilon, PureDP):
        return check_epsilon(epsilon.epsilon, name)
    if isinstance(epsilon, GeoDP):
        raise ParameterError(f"{name}: PIM and LM are epsilon-DP among the cells of the "
                             f"delta-location set (a pure-DP epsilon per timestamp); got "
                             f"GeoDP({epsilon.epsilon_per_metre}) per metre, use PureDP(eps)")
    return check_epsilon(epsilon, name)


#: Bounds on the float64 samplers' radius (multiples of 1/eps): numpy's Gamma(3) draws are
#: at most ~149 (Marsaglia-Tsang on a ziggurat normal whose tail is below 14), its Laplace
#: draws at most 37 scales (a log of a uniform >= 2^-53).
_GAMMA3_MAX = 150.0
_LAPLACE_MAX = 37.0


class _Mechanism:
    name = ""

    def __init__(self, *, epsilon: float | PureDP, pad: tuple[float, float] | None = None,
                 resolution: float = DEFAULT_RESOLUTION_M):
        self.epsilon = pure_epsilon(epsilon)
        if pad is not None:
            arr = check_finite_array(pad, "pad", ndim=1)
            if arr.shape != (2,) or not (arr > 0).all():
                raise ParameterError(f"pad must be two positive numbers (w, h), got {pad!r}")
            pad = (float(arr[0]), float(arr[1]))
        self.pad = pad
        self.resolution = check_resolution(resolution)

    def snap(self, z: np.ndarray) -> np.ndarray:
        """Round released points to the public lattice ``resolution * Z^2``."""
        return snap_plane(z, self.resolution)

    def _max_displacement(self, hull: SensitivityHull) -> float:
        raise NotImplementedError

    def float_correction(self, hull: SensitivityHull, points: np.ndarray) -> float:
        """The additive float64 correction to ``epsilon`` of a snapped release on this set.

        Andres et al.'s argument (CCS 2013, Sec. 5) for a lattice of step ``u``: a lattice
        cell's probability is mis-computed only through draws within float rounding
        distance of its boundary, so every ratio of output probabilities exceeds the ideal
        one by at most the factor ``(q + 2 e^{eps_m u}) / (q - 2 e^{eps_m u})``, with
        ``q = u / (2 r_max p)`` (``r_max`` the sampler's largest displacement, ``p`` the
        relative float precision) and ``eps_m = eps / r_in`` the largest loss per unit of
        distance (``r_in`` the inradius of the noise ball). The log of that factor is
        added to ``epsilon`` (about 1e-8 for metre lattices on city grids).
        """
        if self.resolution == 0:
            return 0.0
        r_in = float((hull.offsets / np.hypot(hull.normals[:, 0], hull.normals[:, 1])).min())
        corr_m = snapping_correction(self.epsilon / r_in, self.resolution,
                                     self._max_displacement(hull))
        return corr_m * self.resolution

    def public_float_correction(self, cell_size_m: tuple[float, float],
                                diameter_m: float) -> float:
        """An upper bound of :meth:`float_correction` over every set of a grid's cells.

        Depends only on public quantities (``epsilon``, the resolution, the grid's cell size
        and diameter ``D``), so a ledger can reserve ``T x (epsilon + bound)`` before a
        release. Any sensitivity hull of cells of the grid has inradius at least
        ``c^2 / (2 D)`` (``c`` the smaller cell side: it contains ``conv(+-a, +-b)`` for two
        non-collinear lattice differences, whose inradius is ``|a x b| / max|a +- b|`` with
        ``|a x b| >= c^2`` and ``|a +- b| <= 2 D``; a padded degenerate set's is at least
        ``c / 2``), and vertices in the square of half-side ``D + c``; the correction grows as
        the inradius shrinks and the largest displacement grows.
        """
        if self.resolution == 0:
            return 0.0
        c, d = float(min(cell_size_m)), float(diameter_m)
        if not (c > 0 and d >= c):
            raise ParameterError(f"cell size {c} and diameter {d} must satisfy 0 < c <= D")
        r_in = c * c / (2.0 * d)
        # every difference (padded: plus a cell) lies in the square of half-side D + c, the
        # largest hull for both mechanisms' displacement bounds (Euclidean and L1 radius)
        e = d + c
        big = SensitivityHull.from_polygon(np.array([[e, e], [-e, e], [-e, -e], [e, -e]]))
        corr_m = snapping_correction(self.epsilon / r_in, self.resolution,
                                     self._max_displacement(big))
        return corr_m * self.resolution

    def noise_hull(self, points: np.ndarray, *, validate: bool = True) -> SensitivityHull:
        """The norm ball whose K-norm density this mechanism's noise has."""
        raise NotImplementedError

    def noise(self, hull: SensitivityHull, size: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def release(self, x: Any, *, location_set: Any,
                rng: np.random.Generator | None = None) -> Release:
        """Release one location ``x`` (which must be a point of ``location_set``).

        Returns a :class:`~veil.release.Release` whose value is the released point
        ``z`` (shape (2,)), with ``budget = PureDP(epsilon)`` spent on indistinguishability
        within ``location_set``.
        """
        pts = check_finite_array(location_set, "location_set", ndim=2)
        x = check_finite_array(x, "x", ndim=1)
        if x.shape != (2,) or pts.shape[1] != 2:
            raise ParameterError(f"x must have shape (2,) and location_set (n, 2); got "
                                 f"{x.shape} and {pts.shape}")
        if not (np.abs(pts - x).max(axis=1) <= 1e-9 * (1 + np.abs(x).max())).any():
            raise ParameterError("x must be one of the points of location_set (use the "
                                 "surrogate: the nearest point of the set)")
        hull = self.noise_hull(pts)
        z = self.snap(x + self.noise(hull, 1, make_rng(rng))[0])
        corr = self.float_correction(hull, pts)
        split = {"release": self.epsilon}
        if corr:
            split["float64 snapping correction"] = corr
        params = self._params(hull, pts.shape[0])
        params["resolution"] = self.resolution
        return Release(value=z, mechanism=self.name, budget=PureDP(self.epsilon + corr),
                       parameters=params, budget_split=split,
                       noise_scale=self._scale(hull),
                       expected_error={"mean_norm_K": 2.0 / self.epsilon},
                       notes=("eps-DP among the points of location_set (delta-location set); "
                              "float64 sampler",
                              lattice_note(self.resolution, corr).replace(" m ", " ")))

    def sample(self, x: Any, *, location_set: Any, size: int,
               rng: np.random.Generator | None = None) -> np.ndarray:
        """``size`` independent releases of ``x`` (the same law as :meth:`release`,
        snapped to the same lattice), shape ``(size, 2)``: for audits and simulations."""
        pts = check_finite_array(location_set, "location_set", ndim=2)
        x = check_finite_array(x, "x", ndim=1)
        hull = self.noise_hull(pts)
        return self.snap(x + self.noise(hull, int(size), make_rng(rng)))

    def _params(self, hull: SensitivityHull, n: int) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "set_size": n, "hull_area_m2": hull.area,
                "degenerate": hull.degenerate}

    def _scale(self, hull: SensitivityHull) -> float:
        return float(np.sqrt(hull.area)) / self.epsilon


class PlanarIsotropicMechanism(_Mechanism):
    """Planar Isotropic Mechanism: the K-norm mechanism on the sensitivity hull.

    ``z = x + r u`` with ``r ~ Gamma(3, 1/eps)`` and ``u`` uniform inside
    ``K = Conv({v_i - v_j})`` (:func:`sensitivity_hull`), so ``z`` has density
    ``eps^2/(2 area K) exp(-eps ||z - x||_K)``.

    Why it is private: for ``x, x'`` in the location set, ``x - x'`` lies in ``K``, so
    ``||x - x'||_K <= 1``; the gauge of the symmetric convex ``K`` is a norm, hence
    ``f(z|x) / f(z|x') = exp(eps (||z - x'||_K - ||z - x||_K)) <= exp(eps ||x - x'||_K)
    <= e^eps``. The whole budget ``eps`` goes to this one draw per timestamp (over
    ``T`` timestamps the event-level guarantee composes to ``T eps``). Degenerate sets
    are padded with the public ``pad`` box (see :func:`sensitivity_hull`), which only
    enlarges ``K``. The sampler is exact (Gamma radius, fan-triangulation uniform point);
    the isotropic transform (:meth:`SensitivityHull.isotropic_transform`) is not
    needed for sampling because it leaves the output distribution unchanged.

    Parameters
    ----------
    epsilon : float
        Budget per release (> 0).
    pad : (float, float), optional
        Public padding for degenerate sets (the grid cell size in metres).
    resolution : float, default 1.0
        Released points are snapped to the public lattice ``resolution * Z^2`` (units of
        the plane, metres in veil's grids), so no input-dependent float bits are
        published; the float64 correction is added to the Release budget. ``0`` is the
        explicit opt-in to raw float64 output (:mod:`veil.geo.snapping`).

    Examples
    --------
    >>> pim = PlanarIsotropicMechanism(epsilon=1.0, pad=(300.0, 300.0))
    >>> r = pim.release([0.0, 0.0], location_set=[[0, 0], [300, 0], [0, 300]],
    ...                 rng=make_rng(seed=1))
    >>> r.value.shape, r.mechanism
    ((2,), 'pim')
    """

    name = "pim"

    def noise_hull(self, points: np.ndarray, *, validate: bool = True) -> SensitivityHull:
        return sensitivity_hull(points, pad=self.pad, validate=validate)

    def _max_displacement(self, hull: SensitivityHull) -> float:
        return _GAMMA3_MAX / self.epsilon * float(np.hypot(*hull.vertices.T).max())

    def noise(self, hull: SensitivityHull, size: int, rng: np.random.Generator) -> np.ndarray:
        return knorm_noise(hull, self.epsilon, size, rng)


class L1LaplaceMechanism(_Mechanism):
    """The Laplace mechanism with L1 sensitivity over the location set (the paper's LM).

    ``z = x + (L_1, L_2)`` with i.i.d. ``L_i ~ Laplace(S / eps)`` and
    ``S = max ||x - x'||_1`` over the set (attained at vertices of ``K``), i.e. the
    K-norm mechanism for the L1 ball of radius ``S``: density
    ``(eps / 2S)^2 exp(-eps ||z - x||_1 / S)``.

    Why it is private: ``||x - x'||_1 <= S`` on the set, so the density ratio is at
    most ``exp(eps ||x - x'||_1 / S) <= e^eps``; the whole ``eps`` is spent on one
    draw per timestamp. Degenerate sets use the padded hull's L1 radius (``S`` only
    grows), so a single cell gets ``S = w + h``. Outputs are snapped to the public
    ``resolution`` lattice as for PIM (the raw ``x + numpy Laplace`` let an attacker rule
    out inputs through float rounding).

    Examples
    --------
    >>> lm = L1LaplaceMechanism(epsilon=1.0, pad=(300.0, 300.0))
    >>> lm.noise_hull(np.array([[0.0, 0.0], [300.0, 0.0], [0.0, 300.0]])).norm([[600.0, 0]])
    array([1.])
    """

    name = "lm"

    def noise_hull(self, points: np.ndarray, *, validate: bool = True) -> SensitivityHull:
        k = sensitivity_hull(points, pad=self.pad, validate=validate)
        return SensitivityHull(_l1_hull(_l1_radius(k)).vertices, k.degenerate)

    def noise(self, hull: SensitivityHull, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.laplace(0.0, _l1_radius(hull) / self.epsilon, size=(size, 2))

    def _max_displacement(self, hull: SensitivityHull) -> float:
        return _LAPLACE_MAX * math.sqrt(2.0) * _l1_radius(hull) / self.epsilon

    def _params(self, hull: SensitivityHull, n: int) -> dict[str, Any]:
        d = super()._params(hull, n)
        d["l1_sensitivity_m"] = _l1_radius(hull)
        return d

    def _scale(self, hull: SensitivityHull) -> float:
        return _l1_radius(hull) / self.epsilon


MECHANISMS = {"pim": PlanarIsotropicMechanism, "lm": L1LaplaceMechanism}
