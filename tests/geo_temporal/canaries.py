"""Deliberately wrong K-norm samplers (canaries) shared by the conformance and audit tests."""

from __future__ import annotations

import numpy as np

from veil.geo.temporal import SensitivityHull, knorm_noise


def boundary_by_arc_length(hull: SensitivityHull, size: int, rng) -> np.ndarray:
    """Points on the boundary of K chosen uniformly by arc length (the published bug)."""
    v = hull.vertices
    w = np.roll(v, -1, axis=0)
    length = hull.edge_lengths()
    edge = rng.choice(v.shape[0], size=size, p=length / length.sum())
    s = rng.random(size)
    return v[edge] + s[:, None] * (w[edge] - v[edge])


def boundary_by_cone_measure(hull: SensitivityHull, size: int, rng) -> np.ndarray:
    """Points on the boundary of K by the cone measure (correct with a Gamma(2) radius)."""
    u = hull.sample_uniform(size, rng)
    return u / hull.norm(u)[:, None]


def arc_length_noise(hull: SensitivityHull, eps: float, size: int, rng) -> np.ndarray:
    """Gamma(2, 1/eps) radius times an arc-length boundary point: right norm, wrong direction."""
    return rng.gamma(2.0, 1.0 / eps, size)[:, None] * boundary_by_arc_length(hull, size, rng)


def gamma2_interior_noise(hull: SensitivityHull, eps: float, size: int, rng) -> np.ndarray:
    """Gamma(2, 1/eps) radius times a uniform interior point: wrong norm distribution."""
    return rng.gamma(2.0, 1.0 / eps, size)[:, None] * hull.sample_uniform(size, rng)


def gamma3_boundary_noise(hull: SensitivityHull, eps: float, size: int, rng) -> np.ndarray:
    """Gamma(3, 1/eps) radius times a cone-measure boundary point: norm Gamma(3), wrong."""
    return rng.gamma(3.0, 1.0 / eps, size)[:, None] * boundary_by_cone_measure(hull, size, rng)


def cone_boundary_noise(hull: SensitivityHull, eps: float, size: int, rng) -> np.ndarray:
    """Gamma(2) radius times a cone-measure boundary point: a correct alternative sampler."""
    return rng.gamma(2.0, 1.0 / eps, size)[:, None] * boundary_by_cone_measure(hull, size, rng)


def halved_hull_noise(hull: SensitivityHull, eps: float, size: int, rng) -> np.ndarray:
    """The correct sampler on K scaled by 0.5 (twice too little noise)."""
    return knorm_noise(hull.scaled(0.5), eps, size, rng)
