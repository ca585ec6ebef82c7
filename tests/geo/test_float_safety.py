"""Float-safe releases (issue 16, defect 2): every continuous release API snaps its output to
a public lattice by default, with the float64 correction stated in the budget.

The float attack is a veil.audit DP ratio audit (family-wise alpha 1e-6, 2e5 samples per
side) whose events see floating-point patterns (the inversion test fl(fl(z - v) + v) == z
and mantissa parities). Power check: the raw float outputs (resolution 0, the explicit
opt-in) of LM, PIM and planar Laplace in the plane must FAIL the same audit; standalone LM
reached an eps lower bound of 8.6 against a claimed 1 on main.
"""

from __future__ import annotations

import numpy as np
import pytest

from veil.budget import GeoDP, PureDP
from veil.errors import ParameterError
from veil.geo.audits import FLOAT_ATTACK_KINDS, float_attack
from veil.geo.geoind import ConsistentObfuscator, planar_laplace, planar_laplace_xy
from veil.geo.snapping import latlon_step_deg
from veil.geo.temporal import L1LaplaceMechanism, PlanarIsotropicMechanism
from veil.random import make_rng


@pytest.mark.parametrize("kind", FLOAT_ATTACK_KINDS)
def test_float_attack_finds_nothing_with_the_default_lattice(kind):
    res = float_attack(kind)
    assert res.passed, res.summary()
    assert res.eps_lower_bound <= res.claimed_epsilon


@pytest.mark.parametrize("kind", ["planar_xy", "pim", "lm"])
def test_float_attack_breaks_the_raw_float_output(kind):
    res = float_attack(kind, resolution=0.0)
    assert not res.passed and res.eps_lower_bound > 3 * res.claimed_epsilon, res.summary()


def _on_lattice(v, step):
    k = np.round(v / step)
    return bool(np.all(k * step == v))


def test_every_continuous_api_publishes_lattice_points_by_default():
    g = make_rng(seed=2)
    pts = np.column_stack((g.uniform(-80, 80, 500), g.uniform(-179, 179, 500)))
    step = latlon_step_deg(1.0)
    assert _on_lattice(planar_laplace(pts, epsilon=0.01, rng=g).value, step)
    assert _on_lattice(planar_laplace_xy(pts * 1000, epsilon=0.01, rng=g).value, 1.0)
    ob = ConsistentObfuscator(epsilon=0.01, window_s=60.0, key=b"k" * 32)
    assert _on_lattice(ob.obfuscate(pts, t=0.0).value, step)
    s = [[0.0, 0.0], [300.0, 0.0], [0.0, 300.0]]
    for cls in (PlanarIsotropicMechanism, L1LaplaceMechanism):
        m = cls(epsilon=1.0, pad=(300.0, 300.0))
        r = m.release([300.0, 0.0], location_set=s, rng=g)
        assert _on_lattice(r.value, 1.0) and r.parameters["resolution"] == 1.0
        assert 0 < r.budget_split["float64 snapping correction"] < 1e-6
        assert r.budget.epsilon == pytest.approx(1.0 + r.budget_split[
            "float64 snapping correction"], rel=1e-15)
        assert _on_lattice(m.sample([0.0, 0.0], location_set=s, size=100, rng=g), 1.0)
    raw = L1LaplaceMechanism(epsilon=1.0, pad=(300.0, 300.0), resolution=0)
    r = raw.release([0.0, 0.0], location_set=s, rng=g)
    assert r.budget.epsilon == 1.0 and any("Mironov" in n for n in r.notes)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "x"])
def test_resolution_is_validated(bad):
    with pytest.raises(ParameterError, match="resolution"):
        planar_laplace([[45.0, 7.0]], epsilon=0.01, resolution=bad)
    with pytest.raises(ParameterError, match="resolution"):
        PlanarIsotropicMechanism(epsilon=1.0, resolution=bad)


def test_budget_objects_accepted_like_histograms_publish():
    """epsilon=GeoDP(...) / PureDP(...) as in histograms.publish (issue 17, defect 7)."""
    a = planar_laplace([[45.0, 7.0]], epsilon=GeoDP(0.01), rng=make_rng(seed=1))
    b = planar_laplace([[45.0, 7.0]], epsilon=0.01, rng=make_rng(seed=1))
    np.testing.assert_array_equal(a.value, b.value)
    assert a.budget == b.budget
    with pytest.raises(ParameterError, match="per metre"):
        planar_laplace([[45.0, 7.0]], epsilon=PureDP(1.0))
    p = PlanarIsotropicMechanism(epsilon=PureDP(0.5), pad=(1.0, 1.0))
    assert p.epsilon == 0.5
    with pytest.raises(ParameterError, match="PureDP"):
        PlanarIsotropicMechanism(epsilon=GeoDP(0.01))


def test_a_tiny_epsilon_is_named_not_the_resolution():
    """With a tiny epsilon the float64 sampler's largest displacement is huge and its rounding
    passes any lattice: the error said "resolution 1 m is too coarse ... use a smaller
    resolution" (a smaller one makes it worse); it now names the epsilon."""
    import pytest

    from veil.errors import ParameterError
    from veil.geo.snapping import snapping_correction

    with pytest.raises(ParameterError, match="too small for the float64 sampler.*larger epsilon"):
        snapping_correction(1e-10, 1.0, 3e6 / 1e-10)
    with pytest.raises(ParameterError, match="too coarse"):  # a large eps u is still that
        snapping_correction(50.0, 1.0, 3e6 / 50.0)
    assert 0 < snapping_correction(0.01, 1.0, 111 / 0.01) < 1e-9
