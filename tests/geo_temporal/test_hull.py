"""Sensitivity hull, K-norm and isotropic transform against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.path import Path as MplPath

from veil.errors import ParameterError
from veil.geo.temporal import (L1LaplaceMechanism, PlanarIsotropicMechanism, SensitivityHull,
                               sensitivity_hull)
from veil.random import make_rng


def _brute_norm(hull, v, iters=60):
    """Gauge by bisection on membership (matplotlib point-in-polygon)."""
    poly = MplPath(np.vstack((hull.vertices, hull.vertices[:1])))
    lo, hi = np.zeros(len(v)), np.full(len(v), 1e3)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        inside = poly.contains_points(v / mid[:, None], radius=1e-12)
        hi = np.where(inside, mid, hi)
        lo = np.where(inside, lo, mid)
    return hi


@pytest.mark.parametrize("seed", range(5))
def test_hull_contains_all_differences_and_norm_matches_bisection(seed):
    rng = make_rng(seed=seed)
    pts = rng.integers(0, 8, size=(rng.integers(3, 12), 2)).astype(float) * [300.0, 350.0]
    if len({tuple(p) for p in pts}) < 3:
        pts = np.vstack((pts, [[0, 0], [300, 0], [0, 350]]))
    k = sensitivity_hull(pts, pad=(300.0, 350.0))
    diff = (pts[:, None] - pts[None]).reshape(-1, 2)
    assert (k.norm(diff) <= 1 + 1e-9).all()
    if k.degenerate is None:
        # every vertex of K is a difference of two points of the set (K is the smallest hull)
        for v in k.vertices:
            assert np.isclose(np.abs(diff - v).sum(axis=1), 0).any()
        # central symmetry
        np.testing.assert_allclose(k.norm(-diff), k.norm(diff))
    v = rng.normal(size=(50, 2)) * 1000
    np.testing.assert_allclose(k.norm(v), _brute_norm(k, v), rtol=1e-6)


def test_norm_is_a_norm():
    k = sensitivity_hull([[0, 0], [3, 0], [0, 1], [1, 2]])
    rng = make_rng(seed=1)
    a, b = rng.normal(size=(2, 200, 2))
    assert (k.norm(a + b) <= k.norm(a) + k.norm(b) + 1e-12).all()
    np.testing.assert_allclose(k.norm(3.5 * a), 3.5 * k.norm(a))
    assert k.norm([[0.0, 0.0]])[0] == 0.0


def test_area_and_cone_measure_of_rectangle():
    k = sensitivity_hull([[0, 0], [2, 0], [0, 1], [2, 1]])
    assert k.area == pytest.approx(8.0)
    np.testing.assert_allclose(k.cone_measure(), 0.25)


def test_isotropic_transform_gives_identity_covariance():
    k = sensitivity_hull([[0, 0], [5, 0], [0, 1], [2, 3]])
    t = k.isotropic_transform()
    u = k.sample_uniform(50_000, make_rng(seed=3))
    cov = np.cov((u @ t.T).T)
    np.testing.assert_allclose(cov, np.eye(2), atol=0.04)
    mean, cov_exact = k.second_moment()
    np.testing.assert_allclose(mean, 0, atol=1e-12)
    # brute force: midpoint rule on a fine grid restricted to the polygon
    g = np.linspace(-8, 8, 1201)
    mid = 0.5 * (g[1:] + g[:-1])
    gx, gy = np.meshgrid(mid, mid)
    p = np.column_stack((gx.ravel(), gy.ravel()))
    p = p[k.norm(p) <= 1]
    np.testing.assert_allclose(np.cov(p.T, bias=True), cov_exact, rtol=5e-3, atol=5e-3)


def test_degenerate_single_cell_is_padded_box():
    k = sensitivity_hull([[10.0, 20.0]], pad=(3.0, 2.0))
    assert k.degenerate == "single"
    assert k.area == pytest.approx(24.0)
    assert k.norm([[3.0, 2.0]])[0] == pytest.approx(1.0)


@pytest.mark.parametrize("pts", [[[0, 0], [1, 0], [2, 0]], [[0, 0], [1, 1], [3, 3]],
                                 [[0, 0], [0, 4]]])
def test_degenerate_collinear_is_padded_and_covers_differences(pts):
    pts = np.asarray(pts, float)
    k = sensitivity_hull(pts, pad=(0.5, 0.5))
    assert k.degenerate == "collinear"
    diff = (pts[:, None] - pts[None]).reshape(-1, 2)
    assert (k.norm(diff) <= 1 + 1e-9).all()
    assert k.norm([[0.5, 0.5]])[0] <= 1 + 1e-9  # the box is inside
    assert k.area > 0


def test_degenerate_without_pad_is_an_error():
    with pytest.raises(ParameterError, match="degenerate"):
        sensitivity_hull([[0, 0], [1, 0]])


@pytest.mark.parametrize("bad,match", [
    ([[0, 0], [1, 0], [0, np.nan]], "finite"),
    ([[0, 0, 0]], "shape"),
])
def test_bad_points(bad, match):
    with pytest.raises(ParameterError, match=match):
        sensitivity_hull(bad, pad=(1, 1))


@pytest.mark.parametrize("bad", [
    [[1, 1], [2, 1], [1, 2]],             # origin outside
    [[0, 0], [1, 0]],                      # too few
    [[-1, -1], [1, -1], [0, 0.5], [-1, 1], [1, 1]],  # not convex position
])
def test_from_polygon_rejects(bad):
    with pytest.raises(ParameterError):
        SensitivityHull.from_polygon(bad)


def test_lm_sensitivity_is_max_l1_distance():
    rng = make_rng(seed=4)
    pts = rng.integers(0, 10, size=(12, 2)).astype(float)
    lm = L1LaplaceMechanism(epsilon=1.0, pad=(1.0, 1.0))
    s = np.abs(pts[:, None] - pts[None]).sum(axis=2).max()
    assert np.abs(lm.noise_hull(pts).vertices).sum(axis=1).max() == pytest.approx(s)
    assert np.abs(lm.noise_hull(np.array([[4.0, 4.0]])).vertices).sum(axis=1).max() == 2.0


def test_mechanism_release_returns_release_and_validates():
    pim = PlanarIsotropicMechanism(epsilon=0.5, pad=(1.0, 1.0))
    r = pim.release([1.0, 0.0], location_set=[[0, 0], [1, 0], [0, 1]], rng=make_rng(seed=0))
    assert r.value.shape == (2,) and r.budget.epsilon == pytest.approx(0.5, rel=1e-6)
    assert r.budget.epsilon == 0.5 + r.budget_split.get("float64 snapping correction", 0.0)
    with pytest.raises(ParameterError, match="surrogate"):
        pim.release([5.0, 5.0], location_set=[[0, 0], [1, 0], [0, 1]])
    with pytest.raises(ParameterError, match="epsilon"):
        PlanarIsotropicMechanism(epsilon=0.0)
    with pytest.raises(ParameterError, match="pad"):
        PlanarIsotropicMechanism(epsilon=1.0, pad=(0.0, 1.0))


@pytest.mark.parametrize("seed", range(4))
def test_minkowski_difference_body_equals_qhull_of_all_differences(seed):
    from scipy.spatial import ConvexHull

    from veil.geo.temporal.knorm import _ccw_hull, _difference_body

    rng = make_rng(seed=seed)
    for _ in range(200):
        n = int(rng.integers(3, 25))
        p = (rng.integers(0, 8, size=(n, 2)) * [330.3, 349.05] if seed % 2 == 0
             else rng.normal(size=(n, 2)) * 1000)
        try:
            v = _ccw_hull(p.astype(float))
        except Exception:  # flat sample
            continue
        d = (v[:, None] - v[None]).reshape(-1, 2)
        ref = d[ConvexHull(d).vertices]
        got = _difference_body(v)
        assert SensitivityHull(got).area > 0  # counter-clockwise
        assert len(got) == len(ref)
        assert {tuple(x) for x in np.round(got, 6)} == {tuple(x) for x in np.round(ref, 6)}


@pytest.mark.parametrize("pad", [(1.0,), (1.0, np.nan), (1.0, -1.0), (0.0, 1.0), "ab"])
def test_bad_pad(pad):
    with pytest.raises(ParameterError, match="pad"):
        L1LaplaceMechanism(epsilon=1.0, pad=pad)
