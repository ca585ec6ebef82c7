"""DP ratio audits (veil.audit, family-wise alpha 1e-6, n = 2e5 per side) of PIM and LM on
fixed delta-sets, and their canaries, which must FAIL with the same seeds."""

from __future__ import annotations

import numpy as np
import pytest

from veil.audit import check_rejects_nonfinite, conformance_chi2, conformance_ks
from veil.geo.temporal import L1LaplaceMechanism, PlanarIsotropicMechanism
from veil.geo.temporal.audit import (AUDIT_SETS, LM_CANARIES, PAD, PIM_CANARIES,
                                     arc_length_noise, audit_lm, audit_pim)
from veil.random import make_rng
from scipy import stats


@pytest.mark.parametrize("set_name", sorted(AUDIT_SETS))
def test_pim_passes_dp_ratio_audit(set_name):
    res = audit_pim(set_name)
    print(set_name, res.summary())
    assert res.passed, res.summary()
    assert res.eps_lower_bound > 0.8 * res.claimed_epsilon, "audit lost its power"


@pytest.mark.parametrize("set_name", sorted(AUDIT_SETS))
def test_lm_passes_dp_ratio_audit(set_name):
    res = audit_lm(set_name)
    print(set_name, res.summary())
    assert res.passed, res.summary()
    assert res.eps_lower_bound > 0.8 * res.claimed_epsilon


@pytest.mark.parametrize("set_name", ["elongated", "triangular"])
@pytest.mark.parametrize("canary", sorted(PIM_CANARIES))
def test_pim_canaries_fail(set_name, canary):
    res = audit_pim(set_name, **PIM_CANARIES[canary])
    print(set_name, canary, res.summary())
    assert not res.passed, res.summary()


@pytest.mark.parametrize("set_name", ["elongated", "triangular"])
@pytest.mark.parametrize("canary", sorted(LM_CANARIES))
def test_lm_canaries_fail(set_name, canary):
    res = audit_lm(set_name, **LM_CANARIES[canary])
    assert not res.passed, res.summary()


def test_arc_length_sampler_is_exact_on_a_square():
    """Why the audit sets are rectangular/triangular: on a square hull the bug is invisible."""
    assert audit_pim("square", noise=arc_length_noise).passed


@pytest.mark.parametrize("set_name", sorted(AUDIT_SETS))
def test_pim_conformance_on_audit_sets(set_name):
    """Norm law Gamma(2, 1/eps) (KS) and exit edges by the cone measure (chi-square)."""
    pts, x, _ = AUDIT_SETS[set_name]
    mech = PlanarIsotropicMechanism(epsilon=1.0, pad=PAD)
    hull = mech.noise_hull(pts)
    z = x + mech.noise(hull, 50_000, make_rng(seed=21))
    assert conformance_ks(hull.norm(z - x), stats.gamma(a=2).cdf).passed
    m = hull.vertices.shape[0]
    assert conformance_chi2(hull.exit_edge(z - x), lambda s: hull.cone_measure()[s],
                            range(m)).passed


@pytest.mark.parametrize("set_name", sorted(AUDIT_SETS))
def test_lm_conformance_on_audit_sets(set_name):
    pts, x, _ = AUDIT_SETS[set_name]
    mech = L1LaplaceMechanism(epsilon=1.0, pad=PAD)
    hull = mech.noise_hull(pts)
    s = np.abs(pts[:, None] - pts[None]).sum(axis=2).max() if len(pts) > 1 else 2.0
    z = x + mech.noise(hull, 50_000, make_rng(seed=22))
    assert conformance_ks((z - x).ravel(), stats.laplace(scale=s).cdf).passed
    assert not conformance_ks((z - x).ravel(), stats.laplace(scale=0.7 * s).cdf).passed


def test_mechanisms_reject_nonfinite_input():
    pim = PlanarIsotropicMechanism(epsilon=1.0, pad=PAD)
    pts = AUDIT_SETS["triangular"][0]
    assert check_rejects_nonfinite(lambda x: pim.release(x, location_set=pts),
                                   np.array([0.0, 0.0])).passed
    assert check_rejects_nonfinite(lambda p: pim.release([0.0, 0.0], location_set=p),
                                   pts).passed
