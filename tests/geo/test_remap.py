"""Optimal remapping (Chatzikokolakis, ElSalamouny, Palamidessi, PoPETs 2017): post-processing
with a public prior; utility gain at equal privacy; library and CLI agree."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from veil.cli import main
from veil.distances import haversine_m
from veil.errors import ParameterError
from veil.geo.geoind import planar_laplace
from veil.geo.geometry import LocalProjection
from veil.geo.remap import optimal_remap, weighted_geometric_median
from veil.random import make_rng

# these tests release the same data several times on purpose (see tests/conftest.py)
pytestmark = pytest.mark.usefixtures("repeat_releases")

EPS = 0.005
PROJ = LocalProjection(45.0, 7.0)


def _run(args):
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code or 0
    return 0


def _city(seed=0, n_cells=20, step=250.0):
    """A public prior: a 20 x 20 grid of 250 m cells with a few dense quarters."""
    g = make_rng(seed=seed)
    c = (np.arange(n_cells) + 0.5) * step - n_cells * step / 2
    X = np.array(np.meshgrid(c, c)).reshape(2, -1).T
    hubs = g.uniform(-2000, 2000, size=(4, 2))
    w = 0.02 + sum(np.exp(-np.hypot(*(X - h).T) / 400) for h in hubs)
    return X, w / w.sum()


@pytest.mark.parametrize("seed", range(4))
def test_weighted_geometric_median_is_the_minimizer(seed):
    g = make_rng(seed=seed)
    X = g.normal(size=(12, 2)) * 100
    w = g.random(12)
    got = weighted_geometric_median(w, X, tol=1e-9, max_iter=5000)[0]
    f = lambda p: float(np.sum(w * np.hypot(*(X - p).T)))  # noqa: E731
    best = optimize.minimize(f, X.mean(axis=0), method="Nelder-Mead",
                             options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 20000})
    assert f(got) <= best.fun + 1e-6


def test_remapping_gains_utility_at_equal_privacy():
    """Paired errors of 4000 reports with and without remapping: one-sided t-test at alpha
    1e-6 that remapping helps, and a gain of at least 5 %. Power check: remapping with a
    prior that contradicts the data (all weight far away) must not pass the same test."""
    X, w = _city()
    g = make_rng(seed=3)
    idx = g.choice(len(X), size=4000, p=w)
    truth_xy = X[idx] + g.uniform(-125, 125, size=(4000, 2))
    truth = PROJ.points_to_latlon(truth_xy)
    rel = planar_laplace(truth, epsilon=EPS, rng=g)
    prior_ll = PROJ.points_to_latlon(X)
    rem = optimal_remap(rel, prior_points=prior_ll, prior_weights=w)
    e_raw = haversine_m(truth[:, 0], truth[:, 1], rel.value[:, 0], rel.value[:, 1])
    e_rem = haversine_m(truth[:, 0], truth[:, 1], rem.value[:, 0], rem.value[:, 1])
    t = stats.ttest_rel(e_raw, e_rem, alternative="greater")
    assert t.pvalue < 1e-6 and e_rem.mean() < 0.95 * e_raw.mean()
    # the budget is unchanged (post-processing) and the Release says so
    assert rem.budget == rel.budget and "remap" in rem.parameters
    wrong = np.where(np.hypot(*X.T) > 2300, 1.0, 1e-9)       # mass only on the outer ring
    bad = optimal_remap(rel, prior_points=prior_ll, prior_weights=wrong)
    e_bad = haversine_m(truth[:, 0], truth[:, 1], bad.value[:, 0], bad.value[:, 1])
    assert not stats.ttest_rel(e_raw, e_bad, alternative="greater").pvalue < 1e-6


def test_remap_uses_only_the_report_and_public_prior():
    """Neighbouring inputs (one point moved) with the same seed: every other row of the
    remapped output is identical, and remapping the bare reports gives the same points."""
    X, w = _city()
    prior_ll = PROJ.points_to_latlon(X)
    pts = PROJ.points_to_latlon(make_rng(seed=1).uniform(-2000, 2000, size=(50, 2)))
    nb = pts.copy()
    nb[7] = PROJ.points_to_latlon([[900.0, -400.0]])[0]
    a = planar_laplace(pts, epsilon=EPS, rng=make_rng(seed=8))
    b = planar_laplace(nb, epsilon=EPS, rng=make_rng(seed=8))
    ra = optimal_remap(a, prior_points=prior_ll, prior_weights=w).value
    rb = optimal_remap(b, prior_points=prior_ll, prior_weights=w).value
    same = np.arange(50) != 7
    np.testing.assert_array_equal(ra[same], rb[same])
    bare = optimal_remap(a.value, epsilon=EPS, prior_points=prior_ll, prior_weights=w).value
    np.testing.assert_allclose(bare, ra, atol=1e-9)
    with pytest.raises(ParameterError, match="epsilon"):
        optimal_remap(a.value, prior_points=prior_ll)
    with pytest.raises(ParameterError, match="prior_weights"):
        optimal_remap(a, prior_points=prior_ll, prior_weights=-w)


def test_obfuscate_remap_prior_cli_equals_the_library(tmp_path):
    X, w = _city()
    prior_ll = PROJ.points_to_latlon(X)
    prior = tmp_path / "prior.csv"
    pd.DataFrame({"lat": prior_ll[:, 0], "lon": prior_ll[:, 1], "weight": w}).to_csv(
        prior, index=False)
    pts = PROJ.points_to_latlon(make_rng(seed=2).uniform(-2000, 2000, size=(30, 2)))
    src = tmp_path / "p.csv"
    pd.DataFrame({"id": np.arange(30), "lat": pts[:, 0], "lon": pts[:, 1]}).to_csv(
        src, index=False)
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert _run(["location", "obfuscate", src, "-e", EPS, "-o", a, "--seed", 5]) == 0
    assert _run(["location", "obfuscate", src, "-e", EPS, "-o", b, "--seed", 5,
                 "--remap-prior", prior]) == 0
    raw = pd.read_csv(a)[["lat", "lon"]].to_numpy()
    from veil.geo.snapping import snap_latlon
    want = snap_latlon(optimal_remap(raw, epsilon=EPS, prior_points=prior_ll,
                                     prior_weights=w).value, 1.0)
    np.testing.assert_allclose(pd.read_csv(b)[["lat", "lon"]].to_numpy(), want, atol=1e-9)
    ma = json.loads((tmp_path / "a.csv.meta.json").read_text())
    mb = json.loads((tmp_path / "b.csv.meta.json").read_text())
    assert ma["budget"] == mb["budget"] and mb["parameters"]["remap"]["loss"] == "euclidean"
    assert _run(["location", "obfuscate", src, "-e", EPS, "-o", tmp_path / "c.csv",
                 "--remap-prior", tmp_path / "missing.csv"]) == 2


@pytest.mark.slow
def test_cell_prior_subdivision_and_nearest_support_truncation():
    """A cell prior resolved into sub-points beats remapping onto cell centres when the noise
    is smaller than a cell; truncating the posterior to the nearest support points changes
    the remap by well under a metre."""
    step = 400.0
    c = (np.arange(10) + 0.5) * step - 2000
    X = np.array(np.meshgrid(c, c)).reshape(2, -1).T
    prior_ll = PROJ.points_to_latlon(X)
    g = make_rng(seed=6)
    truth_xy = g.uniform(-2000, 2000, size=(400, 2))
    truth = PROJ.points_to_latlon(truth_xy)
    rel = planar_laplace(truth, epsilon=0.02, rng=g)           # 100 m noise, 400 m cells
    e = lambda r: haversine_m(truth[:, 0], truth[:, 1], r.value[:, 0], r.value[:, 1]).mean()  # noqa: E731
    centres = optimal_remap(rel, prior_points=prior_ll)
    cells = optimal_remap(rel, prior_points=prior_ll, prior_cell_m=step, projection=PROJ)
    assert e(cells) < e(centres) and cells.parameters["remap"]["subdivision"] == 8
    full = optimal_remap(rel, prior_points=prior_ll, prior_cell_m=step, projection=PROJ,
                         max_support=10_000)
    cut = optimal_remap(rel, prior_points=prior_ll, prior_cell_m=step, projection=PROJ,
                        max_support=1500)
    d = haversine_m(full.value[:, 0], full.value[:, 1], cut.value[:, 0], cut.value[:, 1])
    assert cut.parameters["remap"]["support_per_report"] == 1500 and d.max() < 0.5
