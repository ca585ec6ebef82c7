"""veil.audit suite on planar Laplace and its discretized variant, with canaries that must fail.

Every DP ratio audit uses family-wise alpha 1e-6, n = 2e5 per side, fixed seeds; conformance
KS tests use alpha 1e-6. The canaries (broken twins, same seeds) are the power check.
"""

import pytest

from veil.geo.audits import (AUDITS, CANARIES, CONFORMANCE, CONFORMANCE_CANARIES,
                             audit_discretized, audit_discretized_on_grid)


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_planar_laplace_passes_ratio_audit(name):
    res = AUDITS[name]()
    assert res.passed, res.summary()
    assert res.eps_lower_bound > 0.7 * res.claimed_epsilon, "audit lost its power"


@pytest.mark.parametrize("name", sorted(CANARIES))
def test_canary_fails_ratio_audit(name):
    res = CANARIES[name]()
    assert not res.passed, res.summary()


def test_planar_laplace_conformance_radius_and_angle():
    for r in CONFORMANCE["planar_laplace"]():
        assert r.passed, r


@pytest.mark.parametrize("name", sorted(CONFORMANCE_CANARIES))
def test_conformance_rejects_canaries(name):
    results = CONFORMANCE_CANARIES[name]()
    assert not all(r.passed for r in results), results


@pytest.mark.parametrize("direction", ["north", "diagonal"])
def test_discretized_passes_against_eps_prime(direction):
    res = audit_discretized(direction)
    assert res.passed, res.summary()
    assert res.eps_lower_bound > 0.7 * res.claimed_epsilon


@pytest.mark.parametrize("direction", ["north", "diagonal"])
def test_discretized_half_scale_canary_fails(direction):
    assert not audit_discretized(direction, scale_factor=2.0).passed


def test_discretized_outputs_on_grid_inside_region():
    assert audit_discretized_on_grid().passed
