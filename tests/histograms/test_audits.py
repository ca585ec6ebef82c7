"""DP ratio audits (family-wise alpha 1e-6) of the histogram mechanisms and their canaries."""

import numpy as np
import pytest

from veil.audit import check_integer_outputs, check_rejects_nonfinite, conformance_chi2
from veil.histograms import identity, publish
from veil.histograms.audits import AUDITS, CANARIES, SLOW
from veil.samplers import discrete_laplace_pmf


def _mark(name):
    return pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name


@pytest.mark.parametrize("name", [_mark(n) for n in sorted(AUDITS)])
def test_mechanism_passes_audit(name):
    res = AUDITS[name]()
    print(name, res.summary())
    assert res.passed, res.summary()


@pytest.mark.parametrize("name", [_mark(n) for n in sorted(CANARIES)])
def test_canary_fails_audit(name):
    res = CANARIES[name]()
    print(name, res.summary())
    assert not res.passed, res.summary()


def test_identity_audit_has_power():
    """The pair and events are tight enough to see most of the claimed epsilon."""
    res = AUDITS["identity"]()
    assert res.eps_lower_bound > 0.7 * res.claimed_epsilon, res.summary()


def test_identity_noise_conforms_to_discrete_laplace():
    """Conformance (alpha 1e-6) with a power check: the wrong scale is rejected."""
    x = np.full(100_000, 7)
    noise = identity(x, epsilon=0.5, rng=np.random.default_rng(5)).value - x
    support = np.arange(-15, 16)
    assert conformance_chi2(noise, lambda z: discrete_laplace_pmf(z, 2.0), support).passed
    assert not conformance_chi2(noise, lambda z: discrete_laplace_pmf(z, 2.0 * 1.3),
                                support).passed


def test_structural_checks():
    x = np.array([3, 0, 5, 9])
    assert check_integer_outputs(identity(x, epsilon=1.0).value).passed
    assert check_rejects_nonfinite(lambda v: identity(v, epsilon=1.0),
                                   np.zeros(3)).passed
    # the published bins (shape) never depend on the data
    for m in ("hb", "dawa", "noisefirst", "sort-and-group"):
        assert publish(x, epsilon=1.0, method=m).value.shape == x.shape


def test_hdmm_audit_has_power():
    """Likelihood-ratio events of the claimed model see most of the claimed epsilon, on the
    noisy strategy answers and on the published least-squares histogram."""
    for name in ("hdmm/answers", "hdmm"):
        res = AUDITS[name]()
        assert res.eps_lower_bound > 0.7 * res.claimed_epsilon, res.summary()
