"""DP ratio audits of PIM and LM on fixed delta-location sets, with their canaries.

Each function returns the :class:`veil.audit.AuditResult` of an experiment with fixed
seeds, so the tests and users run exactly the same thing. The neighbours are two cells
``x, x'`` of a fixed delta-set with ``||x - x'||_K = 1`` (the worst case: the claimed
loss ``eps ||x - x'||_K`` equals ``eps``).

The event family is fixed from the *claimed* model before sampling:

* likelihood-ratio level sets ``{llr > c}``, ``{llr <= c}`` with
  ``llr(z) = eps (||z - x'||_K - ||z - x||_K)``;
* the same level sets split by the pair of hull cones (exit edges) that ``z - x`` and
  ``z - x'`` fall in -- the events that see a wrong *direction* distribution (the
  arc-length boundary sampler puts too much mass in the cones of edges close to 0);
* small K-norm balls around ``x`` and ``x'`` (a radius law that is wrong near 0).

No level sits at ``llr = 0``: on polygonal norms ``llr`` is exactly 0 on regions of
positive area, where membership of ``{llr > 0}`` would be decided by float rounding of
``z - x`` versus ``z - x'`` -- a floating-point effect of every continuous sampler
(Mironov 2012; see :mod:`veil.samplers`), not a property of the mechanism's law, which
this audit checks. (Such events do separate A from B: float outputs leak low bits.)

Canaries (must FAIL): arc-length boundary point with a Gamma(2) radius, Gamma(2) radius
with a uniform interior point, the hull scaled by 0.5, a hull missing the difference
``x - x'``; for LM, the scale halved and an L-infinity "sensitivity".
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ...audit import AuditResult, Event, dp_ratio_audit, events_lr_levels
from ..snapping import snap_plane
from .knorm import (L1LaplaceMechanism, PlanarIsotropicMechanism, SensitivityHull,
                    _l1_radius, knorm_noise, sensitivity_hull)

__all__ = ["AUDIT_SETS", "audit_pim", "audit_lm", "PIM_CANARIES", "LM_CANARIES",
           "arc_length_noise", "gamma2_interior_noise", "gamma3_boundary_noise",
           "cone_boundary_noise", "boundary_by_arc_length", "boundary_by_cone_measure"]

EPS = 1.0
N = 200_000
PAD = (1.0, 1.0)

#: name -> (delta-set points in cell units, x, x')
AUDIT_SETS: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {
    "square": (np.array([[0, 0], [1, 0], [0, 1], [1, 1]], float), np.array([0.0, 0.0]),
               np.array([1.0, 1.0])),
    "elongated": (np.array([[i, j] for i in range(4) for j in range(2)], float),
                  np.array([0.0, 0.0]), np.array([3.0, 1.0])),
    "triangular": (np.array([[0, 0], [1, 0], [2, 0], [3, 0], [0, 1], [1, 1], [0, 2]], float),
                   np.array([3.0, 0.0]), np.array([0.0, 2.0])),
    "collinear": (np.array([[0, 0], [1, 0], [2, 0]], float), np.array([0.0, 0.0]),
                  np.array([2.0, 0.0])),
    # one cell: hidden within its public footprint (the padded box); x' a corner of it
    "single": (np.array([[0, 0]], float), np.array([0.0, 0.0]), np.array([1.0, 1.0])),
}


# --- wrong samplers (also used by the conformance tests) -------------------------------------
def boundary_by_arc_length(hull: SensitivityHull, size: int, rng) -> np.ndarray:
    """Points on the boundary of K uniformly by arc length (the published, non-private bug)."""
    v = hull.vertices
    w = np.roll(v, -1, axis=0)
    length = hull.edge_lengths()
    edge = rng.choice(v.shape[0], size=size, p=length / length.sum())
    s = rng.random(size)
    return v[edge] + s[:, None] * (w[edge] - v[edge])


def boundary_by_cone_measure(hull: SensitivityHull, size: int, rng) -> np.ndarray:
    """Boundary points distributed by the cone measure (projection of a uniform point)."""
    u = hull.sample_uniform(size, rng)
    return u / hull.norm(u)[:, None]


def arc_length_noise(hull: SensitivityHull, eps: float, size: int, rng) -> np.ndarray:
    """Gamma(2, 1/eps) radius x arc-length boundary point: right K-norm law, wrong direction."""
    return rng.gamma(2.0, 1.0 / eps, size)[:, None] * boundary_by_arc_length(hull, size, rng)


def gamma2_interior_noise(hull: SensitivityHull, eps: float, size: int, rng) -> np.ndarray:
    """Gamma(2, 1/eps) radius x uniform interior point (density with a log pole at 0)."""
    return rng.gamma(2.0, 1.0 / eps, size)[:, None] * hull.sample_uniform(size, rng)


def gamma3_boundary_noise(hull: SensitivityHull, eps: float, size: int, rng) -> np.ndarray:
    """Gamma(3, 1/eps) radius x cone-measure boundary point (K-norm law Gamma(3): wrong)."""
    return rng.gamma(3.0, 1.0 / eps, size)[:, None] * boundary_by_cone_measure(hull, size, rng)


def cone_boundary_noise(hull: SensitivityHull, eps: float, size: int, rng) -> np.ndarray:
    """Gamma(2, 1/eps) radius x cone-measure boundary point: an exact alternative sampler."""
    return rng.gamma(2.0, 1.0 / eps, size)[:, None] * boundary_by_cone_measure(hull, size, rng)


# --- events ----------------------------------------------------------------------------------
class _Features:
    """K-norms and cones of z - x and z - x', cached per output array (events share them)."""

    def __init__(self, hull: SensitivityHull, x: np.ndarray, xp: np.ndarray, eps: float):
        self.hull, self.x, self.xp, self.eps = hull, x, xp, eps
        self._key = None
        self._val = None

    def __call__(self, z: np.ndarray):
        if self._key is not z:
            rx = self.hull._ratios(z - self.x)
            rp = self.hull._ratios(z - self.xp)
            nx, npr = rx.max(axis=1), rp.max(axis=1)
            self._val = (nx, npr, rx.argmax(axis=1), rp.argmax(axis=1), self.eps * (npr - nx))
            self._key = z
        return self._val


def knorm_events(hull: SensitivityHull, x: np.ndarray, xp: np.ndarray, eps: float
                 ) -> list[Event]:
    """The fixed event family for a K-norm mechanism with ball ``hull`` on neighbours x, x'."""
    f = _Features(hull, x, xp, eps)
    ev = events_lr_levels(lambda z: f(z)[4], [eps * c for c in (-0.95, -0.7, -0.4, -0.05, 0.05,
                                                                 0.4, 0.7, 0.95)])
    m = hull.vertices.shape[0]
    for i in range(m):
        for j in range(m):
            for c in (0.05, 0.3, 0.6):
                ev.append(Event(f"cone({i},{j})&llr>{c:g}eps",
                                lambda z, i=i, j=j, c=c: ((f(z)[2] == i) & (f(z)[3] == j)
                                                          & (f(z)[4] > c * eps))))
                ev.append(Event(f"cone({i},{j})&llr<-{c:g}eps",
                                lambda z, i=i, j=j, c=c: ((f(z)[2] == i) & (f(z)[3] == j)
                                                          & (f(z)[4] < -c * eps))))
    for rho in (0.03, 0.1, 0.3):
        ev.append(Event(f"||z-x||_K<={rho}", lambda z, r=rho: f(z)[0] <= r))
        ev.append(Event(f"||z-x'||_K<={rho}", lambda z, r=rho: f(z)[1] <= r))
    return ev


NoiseFn = Callable[[SensitivityHull, float, int, np.random.Generator], np.ndarray]


#: Output lattice of the audits, in cell units: 1 m on 1 km cells, as the release APIs snap
#: (veil.geo.snapping); the audits run with the snapping on.
AUDIT_RESOLUTION = 1e-3


def _run(claimed_hull: SensitivityHull, noise_hull: SensitivityHull, noise: NoiseFn,
         x: np.ndarray, xp: np.ndarray, *, eps: float, n: int, seed: int,
         resolution: float = AUDIT_RESOLUTION) -> AuditResult:
    claimed = eps * float(claimed_hull.norm(x - xp)[0])
    return dp_ratio_audit(lambda k, g: snap_plane(x + noise(noise_hull, eps, k, g), resolution),
                          lambda k, g: snap_plane(xp + noise(noise_hull, eps, k, g), resolution),
                          knorm_events(claimed_hull, x, xp, eps), claimed_epsilon=claimed,
                          n=n, seed=seed)


def audit_pim(set_name: str, *, noise: NoiseFn | None = None, hull_transform=None,
              n: int = N, seed: int = 7) -> AuditResult:
    """DP ratio audit of PIM on one of :data:`AUDIT_SETS` (optionally with a broken twin).

    ``noise`` replaces the sampler and ``hull_transform(K, x, x')`` the hull the noise is
    drawn from (canaries); the events and the claim always come from the correct hull.
    """
    pts, x, xp = AUDIT_SETS[set_name]
    hull = PlanarIsotropicMechanism(epsilon=EPS, pad=PAD).noise_hull(pts)
    nh = hull if hull_transform is None else hull_transform(hull, pts, x, xp)
    return _run(hull, nh, noise or knorm_noise, x, xp, eps=EPS, n=n, seed=seed)


def _lm_noise(scale_factor: float = 1.0) -> NoiseFn:
    def f(hull, eps, k, g):
        s = _l1_radius(hull) * scale_factor
        return g.laplace(0.0, s / eps, size=(k, 2))
    return f


def audit_lm(set_name: str, *, noise: NoiseFn | None = None, sensitivity=None, n: int = N,
             seed: int = 8) -> AuditResult:
    """DP ratio audit of LM (L1-ball K-norm mechanism) on one of :data:`AUDIT_SETS`.

    ``sensitivity(points) -> S`` replaces the L1 diameter used for the noise (canaries);
    the events and the claim always come from the correct L1 ball.
    """
    pts, x, xp = AUDIT_SETS[set_name]
    hull = L1LaplaceMechanism(epsilon=EPS, pad=PAD).noise_hull(pts)
    if sensitivity is not None:
        s_wrong = float(sensitivity(pts))
        noise = (lambda h, eps, k, g: g.laplace(0.0, s_wrong / eps, size=(k, 2)))
    return _run(hull, hull, noise or _lm_noise(), x, xp, eps=EPS, n=n, seed=seed)


def _missing_difference(hull: SensitivityHull, pts, x, xp) -> SensitivityHull:
    """Broken: the hull of all differences except x - x'."""
    v = sensitivity_hull(pts, pad=PAD).vertices
    keep = np.abs(v - (x - xp)).sum(axis=1) > 1e-9
    from scipy.spatial import ConvexHull
    w = v[keep]
    return SensitivityHull(w[ConvexHull(w).vertices])


def _linf_diameter(pts: np.ndarray) -> float:
    """Broken LM 'sensitivity': the L-infinity diameter max(|dx|, |dy|) instead of L1."""
    return float(np.abs(pts[:, None] - pts[None]).max())


PIM_CANARIES = {
    "arc_length_boundary": dict(noise=arc_length_noise),
    "gamma2_radius_interior": dict(noise=gamma2_interior_noise),
    "hull_scaled_half": dict(hull_transform=lambda h, p, x, xp: h.scaled(0.5)),
    "hull_missing_difference": dict(hull_transform=_missing_difference),
}

LM_CANARIES = {
    "scale_halved": dict(noise=_lm_noise(0.5)),
    "linf_sensitivity": dict(sensitivity=_linf_diameter),
}
