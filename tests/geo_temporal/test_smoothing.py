"""Mobility models that generalize to unseen users (issue 16, defect 6).

Learned from some users, a model treats every cell those users never left as absorbing; a
held-out user who walks into one is predicted to stay, the delta-set collapses there and the
release drifts. The public distance-decay prior (``prior_weight``) removes the absorbing rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from veil.geo.temporal import MarkovModel, TemporalGrid, release_trajectory
from veil.geo.temporal.markov import distance_decay_prior
from veil.random import make_rng

G = TemporalGrid(lat_min=39.9, lon_min=116.3, lat_max=39.95, lon_max=116.365, nx=12, ny=12)


def _walks(n, length, seed, cols):
    """Random walks with inertia restricted to the given grid columns."""
    g = make_rng(seed=seed)
    out = []
    for _ in range(n):
        r, c = int(g.integers(0, 12)), int(g.choice(cols))
        seq = []
        for _ in range(length):
            if g.random() < 0.5:
                dr, dc = [(0, 1), (1, 0), (0, -1), (-1, 0)][g.integers(0, 4)]
                r = int(np.clip(r + dr, 0, 11))
                c = int(np.clip(c + dc, min(cols), max(cols)))
            seq.append(r * 12 + c)
        out.append(np.array(seq))
    return out


def test_prior_is_public_sparse_and_row_stochastic():
    P = distance_decay_prior(G)
    np.testing.assert_allclose(np.asarray(P.sum(axis=1)).ravel(), 1.0)
    assert P.nnz < G.n_cells ** 2 / 4
    assert P[0, 0] > P[0, 1] > P[0, 2] > 0


def test_unseen_cells_are_not_absorbing_with_the_prior():
    train = _walks(30, 200, seed=1, cols=range(0, 6))          # users of the west half
    raw = MarkovModel.from_trajectories(train, grid=G)
    smooth = MarkovModel.from_trajectories(train, grid=G, prior_weight=0.2)
    unseen = 5 * 12 + 9                                          # a cell in the east half
    assert raw.matrix[unseen, unseen] == 1.0                     # absorbing
    row = smooth.matrix[unseen].toarray().ravel()
    assert row[unseen] < 0.5 and row[unseen + 1] > 0 and row[unseen - 12] > 0
    assert smooth.meta["prior_weight"] == 0.2 and smooth.meta["n_unseen_cells"] > 0
    # rows with plenty of data keep their shape
    seen = 5 * 12 + 2
    a = raw.matrix[seen].toarray().ravel()
    b = smooth.matrix[seen].toarray().ravel()
    assert np.abs(a - b).sum() <= 2 * 0.2 + 1e-12   # at most the mixture weight moves


def test_held_out_drift_drops_with_the_prior():
    """Drift on held-out users who cross into cells the training users never left; paired
    seeds, 8 users x 3 runs; the smoothed model must more than halve the drift ratio."""
    train = _walks(40, 300, seed=2, cols=range(0, 7))
    test = _walks(8, 120, seed=3, cols=range(0, 12))
    raw = MarkovModel.from_trajectories(train, grid=G)
    smooth = MarkovModel.from_trajectories(train, grid=G, prior_weight=0.2)
    drift = {}
    for name, m in (("raw", raw), ("smooth", smooth)):
        d = []
        for i, cells in enumerate(test):
            for r in range(3):
                res = release_trajectory(cells, model=m, epsilon=1.0, delta=0.05,
                                         rng=make_rng(seed=100 * i + r))
                d.append(res.drift_ratio)
        drift[name] = float(np.mean(d))
    assert drift["smooth"] < 0.5 * drift["raw"], drift


def test_prior_weight_is_validated():
    with pytest.raises(Exception, match="prior_weight"):
        MarkovModel.from_trajectories([[0, 1]], grid=G, prior_weight=-1.0)
    with pytest.raises(Exception, match="prior_weight"):
        MarkovModel.from_trajectories([[0, 1]], grid=G, prior_weight=1.0)
