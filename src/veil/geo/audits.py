"""Audits of the planar Laplace mechanisms and their broken twins (canaries).

Each entry returns a result with fixed seeds so tests, benchmarks and users
run the same experiment. Correct mechanisms must PASS; canaries must FAIL:

* ``gamma1``: radius drawn as Gamma(1, 1/eps) (a common bug: "Laplace radius");
* ``per_axis``: independent Laplace on x and y (an L1 mechanism; fails on the diagonal);
* ``degrees``: noise converted to degrees without the cos(latitude) factor
  (east-west distances shrink at high latitude);
* ``half_scale``: radius Gamma(2, 1/(2 eps)) while claiming eps.

The pairs are 100 m apart, north and on the diagonal (north-east), at
latitude 60 degrees, eps = 0.01 per metre (claimed eps for the pair: 1.0).
Outputs are mapped to a fixed public plane around input A for the events.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..audit import (AuditResult, Event, TestResult, check_on_grid, conformance_ks,
                     dp_ratio_audit, events_balls, events_lr_levels)
from ..distances import EARTH_RADIUS_M
from .geoind import (discretization_epsilon, discretized_planar_laplace_xy, planar_laplace,
                     planar_laplace_xy)
from .geometry import Box, LocalProjection, aeqd_forward, destination
from .metrics import laplace_radius_cdf

__all__ = ["EPS", "N", "A", "POLE", "pair", "audit_pole", "float_attack", "float_events",
           "FLOAT_ATTACK_KINDS", "AUDITS", "CANARIES", "CONFORMANCE", "CONFORMANCE_CANARIES",
           "audit_discretized_on_grid"]

EPS = 0.01
N = 200_000
A = (60.0, 10.0)
DIST = 100.0
_PROJ = LocalProjection(*A)


def pair(direction: str) -> tuple[tuple[float, float], tuple[float, float]]:
    """Inputs A and B (lat, lon) 100 m apart: ``north`` or ``diagonal`` (north-east)."""
    if direction == "north":
        dx, dy = 0.0, DIST
    else:
        dx = dy = DIST / math.sqrt(2)
    la, lo = destination(A[0], A[1], dx, dy)
    return A, (float(la), float(lo))


# --- the mechanism and its broken twins, all as (lat, lon, n, rng) -> (n, 2) lat/lon ---------
def _correct(lat, lon, n, g):
    return planar_laplace(np.tile([lat, lon], (n, 1)), epsilon=EPS, rng=g).value


def _polar(lat, lon, r, theta):
    la, lo = destination(np.full(r.size, lat), np.full(r.size, lon), r * np.cos(theta),
                         r * np.sin(theta))
    return np.column_stack((la, lo))


def _gamma1(lat, lon, n, g):
    theta = g.uniform(0, 2 * np.pi, n)
    return _polar(lat, lon, g.gamma(1.0, 1 / EPS, n), theta)


def _half_scale(lat, lon, n, g):
    theta = g.uniform(0, 2 * np.pi, n)
    return _polar(lat, lon, g.gamma(2.0, 0.5 / EPS, n), theta)


def _per_axis(lat, lon, n, g):
    dx, dy = g.laplace(0, 1 / EPS, n), g.laplace(0, 1 / EPS, n)
    la, lo = destination(np.full(n, lat), np.full(n, lon), dx, dy)
    return np.column_stack((la, lo))


def _degrees(lat, lon, n, g):
    theta = g.uniform(0, 2 * np.pi, n)
    r = g.gamma(2.0, 1 / EPS, n)
    m_per_deg = EARTH_RADIUS_M * math.pi / 180
    return np.column_stack((lat + r * np.sin(theta) / m_per_deg,
                            lon + r * np.cos(theta) / m_per_deg))  # missing / cos(lat)


MECHS: dict[str, Callable] = {"correct": _correct, "gamma1": _gamma1, "half_scale": _half_scale,
                              "per_axis": _per_axis, "degrees": _degrees}


def _to_plane(ll: np.ndarray, centre: tuple[float, float] = A) -> np.ndarray:
    x, y = aeqd_forward(centre[0], centre[1], ll[:, 0], ll[:, 1])
    return np.column_stack((x, y))


def _events(b_xy: np.ndarray) -> list[Event]:
    """Fixed before sampling: claimed-model LR levels, balls, and quadrant/half-plane events."""
    a_xy = np.zeros(2)
    d = float(np.hypot(*b_xy))
    llr = lambda z: EPS * (np.hypot(*(z - b_xy).T) - np.hypot(*(z - a_xy).T))  # noqa: E731
    ev = events_lr_levels(llr, [c * EPS * d for c in (-0.95, -0.7, -0.4, 0.0, 0.4, 0.7, 0.95)])
    ev += events_balls([a_xy, b_xy, b_xy * 2, -b_xy], [10.0, 30.0, 60.0])
    u = b_xy / d
    for t in (-150.0, 0.0, 150.0, 250.0):  # half-planes along the pair's direction
        ev.append(Event(f"proj>{t:g}", lambda z, t=t: z @ u > t))
    for c in (120.0, 200.0):                # quadrants beyond B and behind A
        ev.append(Event(f"quad++>{c:g}", lambda z, c=c: (z[:, 0] > c) & (z[:, 1] > c)))
        ev.append(Event(f"quad--<{-c + 100:g}",
                        lambda z, c=c: (z[:, 0] < -c + 100) & (z[:, 1] < -c + 100)))
    for c in (150.0, 300.0):                # east-west tails
        ev.append(Event(f"|x|>{c:g}", lambda z, c=c: np.abs(z[:, 0]) > c))
    return ev


def _ratio_audit(kind: str, direction: str, seed: int) -> AuditResult:
    mech = MECHS[kind]
    a, b = pair(direction)
    b_xy = _to_plane(np.array([b]))[0]
    d = float(np.hypot(*b_xy))
    return dp_ratio_audit(lambda n, g: _to_plane(mech(a[0], a[1], n, g)),
                          lambda n, g: _to_plane(mech(b[0], b[1], n, g)),
                          _events(b_xy), claimed_epsilon=EPS * d, n=N, seed=seed)


#: The exact north pole (validation accepts it) and a point 100 m south of it.
POLE = (90.0, 0.0)


def audit_pole(kind: str = "correct", seed: int = 13) -> AuditResult:
    """DP ratio audit between the north pole and a point 100 m away (issue 16, defect 1).

    At ``lat = 90`` every bearing is a meridian; a destination formula that loses the
    bearing there puts every output on two meridians, which the events (balls and
    half-planes in the pole's own plane) see as an unbounded privacy loss.
    """
    mech = MECHS[kind]
    la, lo = destination(POLE[0], POLE[1], 0.0, -DIST)   # 100 m down the reference meridian
    b = (float(la), float(lo))
    b_xy = _to_plane(np.array([b]), POLE)[0]
    d = float(np.hypot(*b_xy))
    return dp_ratio_audit(lambda n, g: _to_plane(mech(POLE[0], POLE[1], n, g), POLE),
                          lambda n, g: _to_plane(mech(b[0], b[1], n, g), POLE),
                          _events(b_xy), claimed_epsilon=EPS * d, n=N, seed=seed)


AUDITS: dict[str, Callable[[], AuditResult]] = {
    "planar_laplace_pole": lambda: audit_pole("correct"),
    "planar_laplace_north": lambda: _ratio_audit("correct", "north", 11),
    "planar_laplace_diagonal": lambda: _ratio_audit("correct", "diagonal", 12),
}
# per-axis Laplace and the missing cos(latitude) are exact along the north axis (the L1 and
# L2 norms agree there; north-south degrees are right): they fail on the diagonal, which is
# why the audit uses both pairs.
CANARIES: dict[str, Callable[[], AuditResult]] = {
    "gamma1_north": lambda: _ratio_audit("gamma1", "north", 11),
    "gamma1_diagonal": lambda: _ratio_audit("gamma1", "diagonal", 12),
    "half_scale_north": lambda: _ratio_audit("half_scale", "north", 11),
    "half_scale_diagonal": lambda: _ratio_audit("half_scale", "diagonal", 12),
    "per_axis_diagonal": lambda: _ratio_audit("per_axis", "diagonal", 12),
    "degrees_diagonal": lambda: _ratio_audit("degrees", "diagonal", 12),
}


# --- conformance of radius and angle ----------------------------------------------------------
def conformance(kind: str, seed: int = 5, n: int = N, alpha: float = 1e-6) -> list[TestResult]:
    """KS of the noise length against Gamma(2, 1/eps) and of the bearing against uniform."""
    g = np.random.default_rng(seed)
    out = MECHS[kind](A[0], A[1], n, g)
    xy = _to_plane(out)
    r = np.hypot(xy[:, 0], xy[:, 1])
    bearing = np.mod(np.arctan2(xy[:, 0], xy[:, 1]), 2 * np.pi)
    return [conformance_ks(r, lambda x: laplace_radius_cdf(x, EPS), alpha, "radius"),
            conformance_ks(bearing, lambda x: np.clip(x / (2 * np.pi), 0, 1), alpha, "angle")]


CONFORMANCE = {"planar_laplace": lambda: conformance("correct")}
CONFORMANCE_CANARIES = {k: (lambda k=k: conformance(k)) for k in ("gamma1", "per_axis", "degrees",
                                                                  "half_scale")}


# --- the discretized, truncated variant --------------------------------------------------------
GRID_STEP = 20.0
REGION = Box(-3000.0, -3000.0, 3000.0, 3000.0)


def _disc_sampler(b_xy, scale_factor: float = 1.0):
    def run(n, g):
        return discretized_planar_laplace_xy(np.tile(b_xy, (n, 1)), epsilon=EPS * scale_factor,
                                             grid_step=GRID_STEP, region=REGION, rng=g).value
    return run


def audit_discretized(direction: str = "north", *, scale_factor: float = 1.0,
                      seed: int = 21) -> AuditResult:
    """DP ratio audit of the discretized variant against eps' (inputs are grid centres).

    ``scale_factor = 2`` is the scale-halved canary (noise for 2 eps, claims eps').
    """
    a_xy = np.array([GRID_STEP / 2, GRID_STEP / 2])          # a grid centre
    off = np.array([0.0, 100.0]) if direction == "north" else np.array([80.0, 80.0])
    b_xy = a_xy + off
    d = float(np.hypot(*off))
    eps_prime = discretization_epsilon(EPS, GRID_STEP, REGION.diameter)
    llr = lambda z: EPS * (np.hypot(*(z - b_xy).T) - np.hypot(*(z - a_xy).T))  # noqa: E731
    ev = events_lr_levels(llr, [c * EPS * d for c in (-0.9, -0.5, 0.0, 0.5, 0.9)])
    ev += events_balls([a_xy, b_xy], [1.0, 15.0, 45.0])
    return dp_ratio_audit(_disc_sampler(a_xy, scale_factor), _disc_sampler(b_xy, scale_factor),
                          ev, claimed_epsilon=eps_prime * d, n=N, seed=seed)


def audit_discretized_on_grid(seed: int = 3, n: int = 20_000) -> TestResult:
    """Structure: every output is a grid centre inside the region."""
    g = np.random.default_rng(seed)
    xy = _disc_sampler(np.array([GRID_STEP / 2, GRID_STEP / 2]))(n, g)
    on = check_on_grid(xy, (REGION.x0 + GRID_STEP / 2, REGION.y0 + GRID_STEP / 2), GRID_STEP,
                       atol=1e-6)
    inside = bool(REGION.contains(xy).all())
    return TestResult(on.passed and inside, "on-grid-in-region", on.statistic)


# --- float attack: what a float64 output reveals beyond the mechanism's law -----------------
def float_events(a: np.ndarray, b: np.ndarray) -> list[Event]:
    """Events that see floating-point patterns (fixed before sampling).

    ``reach(v)``: every coordinate of ``z`` satisfies ``fl(fl(z - v) + v) == z``, the test
    by which an attacker rules out inputs ``v`` that cannot have produced ``z`` with a
    float64 ``v + noise`` (Mironov 2012); its complement; and the parity of the last
    mantissa bit of each coordinate. A lattice output makes them all functions of the
    lattice point, whose law is the mechanism's.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)

    def reach(v):
        return lambda z: np.all((z - v) + v == z, axis=1)

    ev = []
    for name, v in (("A", a), ("B", b)):
        ev.append(Event(f"reach({name})", reach(v)))
        ev.append(Event(f"not reach({name})", lambda z, f=reach(v): ~f(z)))
    for j in (0, 1):
        ev.append(Event(f"lsb{j} even", lambda z, j=j: (np.ascontiguousarray(z[:, j]).view(
            np.int64) & 1) == 0))
        ev.append(Event(f"lsb{j} odd", lambda z, j=j: (np.ascontiguousarray(z[:, j]).view(
            np.int64) & 1) == 1))
    return ev


def _float_samplers(kind: str, resolution: float):
    """(sample_a, sample_b, a, b, claimed eps) for one continuous release API."""
    from .temporal.audit import AUDIT_SETS
    from .temporal.knorm import L1LaplaceMechanism, PlanarIsotropicMechanism

    if kind in ("pim", "lm"):
        cell = 100.0                                  # metres: the default 1 m lattice
        pts, x, xp = (v * cell for v in AUDIT_SETS["elongated"])
        cls = PlanarIsotropicMechanism if kind == "pim" else L1LaplaceMechanism
        mech = cls(epsilon=1.0, pad=(cell, cell), resolution=resolution)
        claimed = float(mech.noise_hull(pts).norm(x - xp)[0])
        return (lambda n, g: mech.sample(x, location_set=pts, size=n, rng=g),
                lambda n, g: mech.sample(xp, location_set=pts, size=n, rng=g), x, xp, claimed)
    if kind == "planar_xy":
        a, b = np.array([1234.5678, -987.654321]), np.array([1234.5678, -887.654321])
        return (lambda n, g: planar_laplace_xy(np.tile(a, (n, 1)), epsilon=EPS, rng=g,
                                               resolution=resolution).value,
                lambda n, g: planar_laplace_xy(np.tile(b, (n, 1)), epsilon=EPS, rng=g,
                                               resolution=resolution).value, a, b, EPS * DIST)
    if kind == "planar_latlon":
        pa, pb = pair("north")
        return (lambda n, g: planar_laplace(np.tile(pa, (n, 1)), epsilon=EPS, rng=g,
                                            resolution=resolution).value,
                lambda n, g: planar_laplace(np.tile(pb, (n, 1)), epsilon=EPS, rng=g,
                                            resolution=resolution).value,
                np.array(pa), np.array(pb), EPS * DIST)
    raise ValueError(f"unknown kind {kind!r}")


FLOAT_ATTACK_KINDS = ("planar_latlon", "planar_xy", "pim", "lm")


def float_attack(kind: str, *, resolution: float = 1.0, n: int = N, seed: int = 31
                 ) -> AuditResult:
    """DP ratio audit of a continuous release API with the float events (issue 16, defect 2).

    With the default public output lattice the attack must find nothing (PASS: eps lower
    bound at most the claim); with ``resolution=0`` (raw float output) the raw ``x + numpy
    Laplace`` of LM, PIM and planar Laplace in the plane must FAIL.
    """
    sa, sb, a, b, claimed = _float_samplers(kind, resolution)
    return dp_ratio_audit(sa, sb, float_events(a, b), claimed_epsilon=claimed, n=n, seed=seed)
