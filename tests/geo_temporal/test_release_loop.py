"""The release loop: an independent adversary reproduces its posteriors from the released
points alone (so the delta-sets only use public information); drift and surrogate; errors."""

from __future__ import annotations

import numpy as np
import pytest

from veil.errors import DataError, ParameterError
from veil.geo.temporal import (MECHANISMS, MarkovModel, TemporalGrid, brute_force_filter, grid_surrogates,
                               delta_location_set, forward_filter, release_trajectory)
from veil.random import make_rng

G = TemporalGrid(lon_min=116.0, lat_min=39.0, lon_max=116.03, lat_max=39.03, nx=6, ny=6)


def _model(seed=0, grid=G):
    rng = make_rng(seed=seed)
    n = grid.n_cells
    seqs = []
    for _ in range(30):  # random walks on the grid with stays
        c = int(rng.integers(n))
        s = [c]
        for _ in range(30):
            r, col = divmod(c, grid.nx)
            dr, dc = rng.integers(-1, 2, size=2)
            c = int(np.clip(r + dr, 0, grid.ny - 1) * grid.nx + np.clip(col + dc, 0, grid.nx - 1))
            s.append(c)
        seqs.append(s)
    return MarkovModel.from_trajectories(seqs, grid=grid), seqs


def _adversary(z_m, model, eps, delta, mechanism, initial):
    """Independent re-implementation from public data only: released points, model, eps, delta."""
    mech = MECHANISMS[mechanism](epsilon=eps, pad=model.grid.cell_size_m)
    c = model.grid.centers_m
    dense = model.to_dense()
    prior = initial.copy()
    posts = []
    lls = []
    for z in z_m:
        dset = delta_location_set(prior, delta)
        hull = mech.noise_hull(c[dset])
        # density of z if the user were in cell j: around j itself or around its surrogate
        in_set = np.zeros(len(c), bool)
        in_set[dset] = True
        sur = grid_surrogates(model.grid, in_set)  # the public surrogate rule (tested below)
        ll = -eps * hull.norm(z - c[sur])
        post = prior * np.exp(ll - ll.max())
        post /= post.sum()
        posts.append(post)
        lls.append(ll)
        prior = post @ dense
    return np.array(posts), np.array(lls)


@pytest.mark.parametrize("mechanism", ["pim", "lm"])
@pytest.mark.parametrize("seed", [0, 1])
def test_posteriors_reproduced_by_independent_adversary(mechanism, seed):
    model, seqs = _model(seed)
    truth = np.asarray(seqs[seed][:15])
    init = np.full(G.n_cells, 1.0 / G.n_cells)
    r = release_trajectory(truth, model=model, epsilon=1.0, delta=0.05, mechanism=mechanism,
                           rng=make_rng(seed=seed), keep_posteriors=True, keep_likelihoods=True)
    posts, lls = _adversary(r.released_m, model, 1.0, 0.05, mechanism, init)
    np.testing.assert_allclose(r.posteriors, posts, atol=1e-12)
    # and the loop's posteriors are the HMM forward filter of its likelihoods
    _, fposts = forward_filter(init, model.matrix, np.nan_to_num(r.log_likelihoods, neginf=-1e300))
    np.testing.assert_allclose(r.posteriors, fposts, atol=1e-12)
    # the released point is the released cell's centre plus noise of the right size
    assert np.all(r.set_sizes >= 1)
    assert r.release.budget.epsilon == pytest.approx(15.0)


def test_forward_filter_brute_force_on_release_likelihoods():
    g = TemporalGrid(lon_min=0.0, lat_min=0.0, lon_max=0.02, lat_max=0.02, nx=2, ny=2)
    model = MarkovModel.from_trajectories([[0, 1, 3, 2, 0, 0, 1, 1, 3, 3, 2, 0]], grid=g)
    r = release_trajectory(np.array([0, 1, 3, 2]), model=model, epsilon=1.0, delta=0.2,
                           rng=make_rng(seed=3), keep_posteriors=True, keep_likelihoods=True)
    lik = np.exp(r.log_likelihoods)
    want = brute_force_filter(np.full(4, 0.25), model.matrix, lik)
    np.testing.assert_allclose(r.posteriors[-1], want, rtol=1e-9, atol=1e-15)


def test_drift_uses_surrogate_nearest_cell_of_the_set():
    g = TemporalGrid(lon_min=0.0, lat_min=0.0, lon_max=0.05, lat_max=0.01, nx=5, ny=1)
    # the model says the user always stays in cell 0; the truth jumps to cell 4
    model = MarkovModel.from_trajectories([[0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4]], grid=g)
    init = np.array([1.0, 0, 0, 0, 0])
    r = release_trajectory(np.array([0, 4, 4]), model=model, epsilon=1.0, delta=0.1,
                           initial=init, rng=make_rng(seed=0))
    assert not r.drift[0] and r.drift[1]
    assert r.released_cells[1] in (0, 1)          # the set is {0} or {0, 1}
    assert r.degenerate[0] == "single"
    assert r.drift_ratio == pytest.approx(r.drift.mean())


def test_seeded_runs_are_reproducible_and_unseeded_differ():
    model, seqs = _model(2)
    t = np.asarray(seqs[0][:8])
    a = release_trajectory(t, model=model, epsilon=1.0, delta=0.1, rng=make_rng(seed=9))
    b = release_trajectory(t, model=model, epsilon=1.0, delta=0.1, rng=make_rng(seed=9))
    c = release_trajectory(t, model=model, epsilon=1.0, delta=0.1)
    np.testing.assert_array_equal(a.released_m, b.released_m)
    assert not np.array_equal(a.released_m, c.released_m)


@pytest.mark.parametrize("kw,exc,match", [
    (dict(delta=0.0), ParameterError, "delta"),
    (dict(delta=1.0), ParameterError, "delta"),
    (dict(epsilon=-1.0), ParameterError, "epsilon"),
    (dict(mechanism="gauss"), ParameterError, "mechanism"),
    (dict(initial=np.ones(3)), ParameterError, "initial"),
    (dict(cells=np.array([0, 99])), DataError, "99"),
    (dict(cells=np.array([0.5, 1.0])), ParameterError, "integer"),
    (dict(cells=np.array([], dtype=int)), ParameterError, "non-empty"),
])
def test_bad_input(kw, exc, match):
    model, _ = _model(0)
    args = dict(cells=np.array([0, 1, 2]), model=model, epsilon=1.0, delta=0.1)
    args.update(kw)
    cells = args.pop("cells")
    with pytest.raises(exc, match=match):
        release_trajectory(cells, **args)


@pytest.mark.parametrize("seed", range(8))
def test_grid_surrogates_are_nearest_cells(seed):
    rng = make_rng(seed=seed)
    g = TemporalGrid(lon_min=116.0, lat_min=39.0, lon_max=116.1, lat_max=39.03,
                     nx=int(rng.integers(1, 12)), ny=int(rng.integers(1, 12)))
    in_set = rng.random(g.n_cells) < rng.uniform(0.02, 0.6)
    in_set[rng.integers(g.n_cells)] = True
    sur = grid_surrogates(g, in_set)
    c = g.centers_m
    assert in_set[sur].all()
    np.testing.assert_array_equal(sur[in_set], np.flatnonzero(in_set))
    d2 = ((c[:, None] - c[in_set][None]) ** 2).sum(axis=2).min(axis=1)
    np.testing.assert_allclose(((c - c[sur]) ** 2).sum(axis=1), d2, rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("mechanism", ["pim", "lm"])
def test_row_extreme_prefilter_gives_the_same_hull(seed, mechanism):
    """The loop builds the hull from each grid row's first and last cell of the set."""
    from veil.geo.temporal import ReleaseStepper

    model, _ = _model(0)
    st = ReleaseStepper(model=model, epsilon=1.0, delta=0.1, mechanism=mechanism)
    rng = make_rng(seed=seed)
    for _ in range(20):
        dset = rng.choice(G.n_cells, size=int(rng.integers(1, 20)), replace=False)
        full = st.mech.noise_hull(G.centers_m[dset])
        pre = st.mech.noise_hull(G.centers_m[st._hull_candidates(dset)])
        assert full.degenerate == pre.degenerate
        np.testing.assert_allclose(pre.area, full.area, rtol=1e-12)
        assert {tuple(v) for v in np.round(pre.vertices, 6)} == \
            {tuple(v) for v in np.round(full.vertices, 6)}


def test_release_bucket_matches_per_user_release_and_validates():
    from veil.geo.temporal.batch import release_bucket, validate_params
    from veil.random import spawn

    model, seqs = _model(3)
    latlon = [G.to_latlon(G.centers_m[np.asarray(s[:12])]) for s in seqs[:3]]
    arrays = {"user": np.repeat(np.arange(3), 12), "t": np.tile(np.arange(12.0), 3),
              "lat": np.concatenate([x[:, 0] for x in latlon]),
              "lon": np.concatenate([x[:, 1] for x in latlon])}
    p = validate_params({"model": model, "epsilon": 1.0, "delta": 0.05, "mechanism": "lm"})
    out = release_bucket(arrays, p, make_rng(seed=4))
    streams = spawn(make_rng(seed=4), 3)
    for u in range(3):
        r = release_trajectory(np.asarray(seqs[u][:12]), model=model, epsilon=1.0, delta=0.05,
                               mechanism="lm", rng=streams[u])
        np.testing.assert_allclose(out["lat"][out["user"] == u], r.released_latlon[:, 0])
        np.testing.assert_allclose(out["lon"][out["user"] == u], r.released_latlon[:, 1])
    arrays["lat"][5] = np.nan
    with pytest.raises(DataError, match="on_invalid"):
        release_bucket(arrays, p, make_rng(seed=4))
    out = release_bucket(arrays, dict(p, on_invalid="drop"), make_rng(seed=4))
    assert out["user"].size == 35
    with pytest.raises(ParameterError, match="delta"):
        validate_params({"model": model, "epsilon": 1.0, "delta": 1.5})
    with pytest.raises(ParameterError, match="model"):
        validate_params({"epsilon": 1.0, "delta": 0.5})


def test_release_trajectory_accepts_a_pure_dp_budget():
    """epsilon=PureDP(...) as in histograms.publish (issue 17, defect 7); GeoDP is refused."""
    from veil.budget import GeoDP, PureDP

    model, seqs = _model(3)
    cells = np.asarray(seqs[0][:10])
    a = release_trajectory(cells, model=model, epsilon=PureDP(0.5), delta=0.05,
                           rng=make_rng(seed=3))
    b = release_trajectory(cells, model=model, epsilon=0.5, delta=0.05, rng=make_rng(seed=3))
    np.testing.assert_array_equal(a.released_m, b.released_m)
    assert a.release.budget == b.release.budget
    assert a.release.budget.epsilon == pytest.approx(5.0, rel=1e-6)
    with pytest.raises(ParameterError, match="PureDP"):
        release_trajectory(cells, model=model, epsilon=GeoDP(0.01), delta=0.05)


# ----------------------------------------------------------------- public budget bound
@pytest.mark.parametrize("mechanism", ["pim", "lm"])
@pytest.mark.parametrize("eps", [0.05, 1.0, 8.0])
def test_budget_never_exceeds_its_public_bound(mechanism, eps):
    """The ledger reserves ``trajectory_budget_bound`` before a release: every Release's
    budget (T x eps + the data-dependent float64 correction) stays below it, and the bound
    is not loose by orders of magnitude (half of its correction part is exceeded somewhere:
    the check can fail)."""
    from veil.geo.temporal.release import trajectory_budget_bound

    worst = 0.0
    for seed, grid in ((1, G), (2, TemporalGrid(lon_min=10.0, lat_min=50.0, lon_max=10.4,
                                                lat_max=50.1, nx=12, ny=3))):
        model, seqs = _model(seed, grid)
        for s in seqs[:6]:
            r = release_trajectory(np.asarray(s), model=model, epsilon=eps, delta=0.05,
                                   mechanism=mechanism, rng=make_rng(seed=seed))
            bound = trajectory_budget_bound(grid, epsilon=eps, n_steps=len(s),
                                            mechanism=mechanism)
            spent = r.release.budget.epsilon
            assert eps * len(s) <= spent <= bound
            worst = max(worst, (spent - eps * len(s)) / (bound - eps * len(s)))
    assert worst > 0.5 / 100  # within two orders of magnitude of the actual corrections
