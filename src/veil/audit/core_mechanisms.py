"""Audit definitions for the core mechanisms and their broken twins (canaries).

Each entry is a callable returning the :class:`~veil.audit.AuditResult` of a
DP ratio audit with fixed seeds, so the tests, ``benchmarks/audit.py`` and
users run exactly the same experiment. Canaries must FAIL.
"""

from __future__ import annotations

import numpy as np

from ..mechanisms import exponential_mechanism, geometric_mechanism, laplace_mechanism
from ..samplers import discrete_laplace
from .core import AuditResult, dp_ratio_audit, events_lr_levels, events_points, events_threshold

EPS = 1.0
N = 200_000


# --- geometric (exact discrete Laplace) on one count: neighbours 0 and 1 -------------------
def _geometric(x: int, epsilon: float, sensitivity: float):
    return lambda n, g: geometric_mechanism(np.full(n, x), epsilon=epsilon,
                                            sensitivity=sensitivity, rng=g).value


_GEO_EVENTS = events_points(range(-4, 6)) + events_threshold(lambda z: z, range(-3, 4), "z")


def audit_geometric(seed: int = 1) -> AuditResult:
    return dp_ratio_audit(_geometric(0, EPS, 1), _geometric(1, EPS, 1), _GEO_EVENTS,
                          claimed_epsilon=EPS, n=N, seed=seed)


def canary_geometric_half_noise(seed: int = 1) -> AuditResult:
    """Broken: scale halved (noise for 2 eps while claiming eps)."""
    half = lambda x: (lambda n, g: x + discrete_laplace(0.5 / EPS, n, g))  # noqa: E731
    return dp_ratio_audit(half(0), half(1), _GEO_EVENTS, claimed_epsilon=EPS, n=N, seed=seed)


def canary_geometric_wrong_sensitivity(seed: int = 1) -> AuditResult:
    """Broken: a sum of values clipped to [0, 3] released with sensitivity 1 (true: 3)."""
    return dp_ratio_audit(_geometric(0, EPS, 1), _geometric(3, EPS, 1), _GEO_EVENTS,
                          claimed_epsilon=EPS, n=N, seed=seed)


# --- continuous Laplace: neighbours 0.0 and 1.0 ---------------------------------------------
def _laplace(x: float, scale_factor: float = 1.0):
    return lambda n, g: laplace_mechanism(np.full(n, x), epsilon=EPS / scale_factor,
                                          rng=g).value


def _lap_events():
    llr = lambda z: EPS * (np.abs(z - 1.0) - np.abs(z))  # noqa: E731 ln pA - ln pB
    return (events_threshold(lambda z: z, np.linspace(-2, 3, 11), "z")
            + events_lr_levels(llr, [-0.99, -0.5, 0.0, 0.5, 0.99]))


def audit_laplace(seed: int = 2) -> AuditResult:
    return dp_ratio_audit(_laplace(0.0), _laplace(1.0), _lap_events(), claimed_epsilon=EPS,
                          n=N, seed=seed)


def canary_laplace_half_noise(seed: int = 2) -> AuditResult:
    """Broken: Laplace scale halved."""
    return dp_ratio_audit(_laplace(0.0, 0.5), _laplace(1.0, 0.5), _lap_events(),
                          claimed_epsilon=EPS, n=N, seed=seed)


def canary_laplace_wrong_sensitivity(seed: int = 2) -> AuditResult:
    """Broken: a query of sensitivity 2 released with sensitivity 1."""
    return dp_ratio_audit(_laplace(0.0), _laplace(2.0), _lap_events(), claimed_epsilon=EPS,
                          n=N, seed=seed)


# --- exponential mechanism: one candidate gains 1, all others lose 1 -------------------------
_M = 20
_UA = np.r_[1.0, np.zeros(_M)]
_UB = np.r_[0.0, np.ones(_M)]
_EXP_EVENTS = events_points(range(_M + 1)) + events_threshold(lambda r: r, [0, 1, 5], "r")


def _expmech(u, factor: float = 1.0):
    # factor 2 with monotonic=True removes the factor 2 while claiming the same eps
    return lambda n, g: exponential_mechanism(u * factor, epsilon=EPS, sensitivity=1.0,
                                              size=n, rng=g).value


def audit_exponential(seed: int = 3) -> AuditResult:
    return dp_ratio_audit(_expmech(_UA), _expmech(_UB), _EXP_EVENTS, claimed_epsilon=EPS,
                          n=N, seed=seed)


def canary_exponential_missing_factor_2(seed: int = 3) -> AuditResult:
    """Broken: exp(eps u / sensitivity) (claims monotonic when the scores are not)."""
    f = lambda u: (lambda n, g: exponential_mechanism(  # noqa: E731
        u, epsilon=EPS, sensitivity=1.0, monotonic=True, size=n, rng=g).value)
    return dp_ratio_audit(f(_UA), f(_UB), _EXP_EVENTS, claimed_epsilon=EPS, n=N, seed=seed)


def canary_exponential_wrong_sensitivity(seed: int = 3) -> AuditResult:
    """Broken: scores that move by 3 between neighbours declared with sensitivity 1."""
    return dp_ratio_audit(_expmech(_UA, 3.0), _expmech(_UB, 3.0), _EXP_EVENTS,
                          claimed_epsilon=EPS, n=N, seed=seed)


AUDITS = {
    "geometric": audit_geometric,
    "laplace": audit_laplace,
    "exponential": audit_exponential,
}
CANARIES = {
    "geometric/half-noise": canary_geometric_half_noise,
    "geometric/wrong-sensitivity": canary_geometric_wrong_sensitivity,
    "laplace/half-noise": canary_laplace_half_noise,
    "laplace/wrong-sensitivity": canary_laplace_wrong_sensitivity,
    "exponential/missing-factor-2": canary_exponential_missing_factor_2,
    "exponential/wrong-sensitivity": canary_exponential_wrong_sensitivity,
}
