"""Deliberately wrong K-norm samplers (canaries), shipped in veil.geo.temporal.audit."""

from __future__ import annotations

from veil.geo.temporal.audit import (arc_length_noise, boundary_by_arc_length,  # noqa: F401
                                     boundary_by_cone_measure, cone_boundary_noise,
                                     gamma2_interior_noise, gamma3_boundary_noise)
from veil.geo.temporal import SensitivityHull, knorm_noise


def halved_hull_noise(hull: SensitivityHull, eps: float, size: int, rng):
    """The correct sampler on K scaled by 0.5 (twice too little noise)."""
    return knorm_noise(hull.scaled(0.5), eps, size, rng)
