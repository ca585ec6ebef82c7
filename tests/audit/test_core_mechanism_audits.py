"""The DP ratio audit (family-wise alpha 1e-6) on the core mechanisms and their canaries."""

import numpy as np
import pytest

from veil.audit import (check_integer_outputs, check_on_grid, check_rejects_nonfinite,
                        clopper_pearson, dp_ratio_audit, events_points)
from veil.audit.core_mechanisms import AUDITS, CANARIES
from veil.errors import ParameterError
from veil.mechanisms import geometric_mechanism, laplace_mechanism


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_correct_mechanism_passes(name):
    res = AUDITS[name]()
    print(name, res.summary())
    assert res.passed, res.summary()
    assert res.eps_lower_bound > 0.5 * res.claimed_epsilon, "audit lost its power"


@pytest.mark.parametrize("name", sorted(CANARIES))
def test_canary_fails(name):
    res = CANARIES[name]()
    print(name, res.summary())
    assert not res.passed, res.summary()


def test_clopper_pearson_is_exact_at_extremes():
    lo, up = clopper_pearson(np.array([0, 10]), 10, 0.05)
    assert lo[0] == 0 and up[1] == 1
    assert up[0] == pytest.approx(1 - 0.05 ** (1 / 10))


def test_audit_rejects_bad_parameters():
    s = lambda n, g: np.zeros(n)  # noqa: E731
    with pytest.raises(ParameterError):
        dp_ratio_audit(s, s, events_points([0]), claimed_epsilon=0)
    with pytest.raises(ParameterError):
        dp_ratio_audit(s, s, [], claimed_epsilon=1)
    with pytest.raises(ParameterError):
        dp_ratio_audit(s, s, events_points([0]), claimed_epsilon=1, correction=0.5)


def test_structure_checks():
    r = geometric_mechanism(np.arange(100), epsilon=0.5, rng=np.random.default_rng(0))
    assert check_integer_outputs(r.value).passed
    assert not check_integer_outputs(np.array([0.5])).passed
    assert check_on_grid(np.array([[0.0, 2.0], [4.0, -2.0]]), (0, 0), 2.0).passed
    assert not check_on_grid(np.array([[0.1, 2.0]]), (0, 0), 2.0).passed
    assert check_rejects_nonfinite(lambda x: laplace_mechanism(x, epsilon=1.0),
                                   np.zeros(3)).passed
    assert check_rejects_nonfinite(lambda x: geometric_mechanism(x, epsilon=1.0),
                                   np.zeros(3)).passed
    assert not check_rejects_nonfinite(lambda x: x + 1, np.zeros(3)).passed
