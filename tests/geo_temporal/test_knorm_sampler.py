"""The K-norm sampler: norm distribution and exit-edge (direction) distribution.

Statistical tests use fixed seeds and alpha = 1e-6; every test has a power check
(the same test, same seed, rejects a deliberately wrong sampler).

The trap (DESIGN.md section 7): Gamma(2) radius times a boundary point chosen by arc
length has exactly the right distribution of ||z - x||_K, so only the direction test
(exit edge against the cone measure) catches it; on a square hull the wrong sampler is
exact, so the tests use rectangular and triangular hulls.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from veil.geo.temporal import SensitivityHull, knorm_noise, sensitivity_hull
from veil.random import make_rng

from . import canaries

ALPHA = 1e-6
N = 40_000
EPS = 0.7

HULLS = {
    # sensitivity hull of a 3 x 1 rectangular block of cells: K = [-2,2] x [-1,1]
    "rectangle": sensitivity_hull([[0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [2, 1]]),
    # a triangle containing 0, edges at different distances from 0
    "triangle": SensitivityHull.from_polygon([[-1.0, -0.5], [3.0, -0.5], [-1.0, 1.5]]),
    # sensitivity hull (a hexagon) of a triangular delta-set
    "hexagon": sensitivity_hull([[0, 0], [3, 0], [0, 1]]),
}


def _norm_pvalue(hull, noise):
    return stats.kstest(hull.norm(noise), stats.gamma(a=2, scale=1 / EPS).cdf).pvalue


def _edge_pvalue(hull, noise):
    counts = np.bincount(hull.exit_edge(noise), minlength=hull.vertices.shape[0])
    return stats.chisquare(counts, hull.cone_measure() * counts.sum()).pvalue


def test_cone_measure_differs_from_arc_length():
    for name in ("rectangle", "triangle", "hexagon"):
        k = HULLS[name]
        arc = k.edge_lengths() / k.edge_lengths().sum()
        assert np.abs(arc - k.cone_measure()).max() > 0.05, name
    sq = sensitivity_hull([[0, 0], [1, 0], [0, 1], [1, 1]])
    arc = sq.edge_lengths() / sq.edge_lengths().sum()
    np.testing.assert_allclose(arc, sq.cone_measure())  # why squares cannot catch the bug


@pytest.mark.parametrize("name", sorted(HULLS))
def test_norm_is_gamma2(name):
    k = HULLS[name]
    noise = knorm_noise(k, EPS, N, make_rng(seed=11))
    assert _norm_pvalue(k, noise) > ALPHA


@pytest.mark.parametrize("name", sorted(HULLS))
def test_exit_edge_follows_cone_measure(name):
    k = HULLS[name]
    noise = knorm_noise(k, EPS, N, make_rng(seed=12))
    assert _edge_pvalue(k, noise) > ALPHA


@pytest.mark.parametrize("name", sorted(HULLS))
def test_alternative_correct_sampler_passes(name):
    """Gamma(2) radius + cone-measure boundary point is also exact: both tests pass."""
    k = HULLS[name]
    noise = canaries.cone_boundary_noise(k, EPS, N, make_rng(seed=13))
    assert _norm_pvalue(k, noise) > ALPHA
    assert _edge_pvalue(k, noise) > ALPHA


@pytest.mark.parametrize("name", sorted(HULLS))
def test_power_arc_length_sampler_rejected_by_direction_only(name):
    k = HULLS[name]
    noise = canaries.arc_length_noise(k, EPS, N, make_rng(seed=12))
    assert _norm_pvalue(k, noise) > ALPHA        # the norm test cannot see it ...
    assert _edge_pvalue(k, noise) < ALPHA        # ... the exit-edge test must


@pytest.mark.parametrize("name", sorted(HULLS))
@pytest.mark.parametrize("wrong", ["gamma3_boundary_noise", "gamma2_interior_noise",
                                   "halved_hull_noise"])
def test_power_wrong_norm_rejected(name, wrong):
    k = HULLS[name]
    noise = getattr(canaries, wrong)(k, EPS, N, make_rng(seed=11))
    assert _norm_pvalue(k, noise) < ALPHA


@pytest.mark.parametrize("factor", [0.7, 1.3])
def test_power_wrong_scale_rejected(factor):
    k = HULLS["triangle"]
    noise = knorm_noise(k, EPS * factor, N, make_rng(seed=11))
    assert _norm_pvalue(k, noise) < ALPHA


def test_density_matches_histogram():
    """Empirical mass of small boxes vs the integrated closed-form density (chi-square)."""
    k = HULLS["hexagon"]
    noise = knorm_noise(k, 1.0, N, make_rng(seed=5))
    edges = np.linspace(-4, 4, 9)
    h, _, _ = np.histogram2d(noise[:, 0], noise[:, 1], bins=[edges, edges])
    # integrate the density on each bin by a fine midpoint rule
    f = np.linspace(-4, 4, 8 * 40 + 1)
    mid = 0.5 * (f[1:] + f[:-1])
    gx, gy = np.meshgrid(mid, mid, indexing="ij")
    dens = np.exp(k.log_density(np.column_stack((gx.ravel(), gy.ravel())), 1.0))
    cell = (f[1] - f[0]) ** 2
    p = (dens.reshape(320, 320) * cell).reshape(8, 40, 8, 40).sum(axis=(1, 3))
    expected = p.ravel() * N
    observed = h.ravel()
    keep = expected > 20
    outside = N - observed[keep].sum()
    exp_out = N - expected[keep].sum()
    chi2 = stats.chisquare(np.append(observed[keep], outside),
                           np.append(expected[keep], exp_out) * N / (expected[keep].sum()
                                                                     + exp_out))
    assert chi2.pvalue > ALPHA
