"""Map mechanisms: parameters, limits, budget, structure, rules and the array helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from veil.errors import ParameterError
from veil.maps import METHODS, publish
from veil.maps._blocks import block_order, hilbert_order, prefix2d, rect_sums
from veil.maps.hdmm import PIdentity, optimize_pidentity, range_gram
from veil.maps.mechanisms import (ag, ag_core, ag_sizes, hb2d_branching, hilbert_cells,
                                  quadtree_epsilons, tree2d, ug_size)
from veil.maps.privtree import TREE_FRACTION, privtree, privtree_batch
from veil.random import make_rng

X = np.random.default_rng(1).poisson(3.0, (12, 20)).astype(np.int64)


@pytest.mark.parametrize("counts, match", [
    (np.ones(5), "2-D"), (np.ones((2, 2, 2)), "2-D"), (np.array([[1, -1]]), ">= 0"),
    (np.array([[1.5, 1.0]]), "integer"), (np.array([[np.nan, 1.0]]), "finite"),
    (np.zeros((0, 3)), "empty"), (np.array([["a", "b"]]), "integer counts")])
def test_bad_counts(counts, match):
    with pytest.raises(ParameterError, match=match):
        publish(counts, epsilon=1.0, method="identity")


@pytest.mark.parametrize("kw, match", [
    (dict(epsilon=0), "epsilon"), (dict(epsilon=-1.0), "epsilon"),
    (dict(epsilon=float("nan")), "epsilon"), (dict(epsilon=float("inf")), "epsilon"),
    (dict(epsilon=1.0, sensitivity=0), "sensitivity"),
    (dict(epsilon=1.0, method="privtre"), "did you mean .privtree."),
    (dict(epsilon=1.0, method="quadtree", bogus=1), "quadtree"),
    (dict(epsilon=1.0, method="ug", scale=-5), "scale"),
    (dict(epsilon=1.0, method="privtree", tree_fraction=1.5), "tree_fraction"),
    (dict(epsilon=1.0, method="quadtree", height=99), "height")])
def test_bad_parameters(kw, match):
    kw.setdefault("method", "identity")
    with pytest.raises(ParameterError, match=match):
        publish(X, **kw)


@pytest.mark.parametrize("method", [m for m in METHODS])
def test_budget_split_and_shape(method):
    r = publish(X, epsilon=0.7, method=method, rng=make_rng(seed=2), sensitivity=2)
    assert r.value.shape == X.shape and r.value.dtype == np.float64
    assert r.budget.epsilon == 0.7
    assert math.fsum(r.budget_split.values()) <= 0.7 * (1 + 1e-12)
    assert math.fsum(r.budget_split.values()) == pytest.approx(0.7, rel=1e-9)
    assert r.parameters["sensitivity"] == 2 or method == "dawa2d"


@pytest.mark.parametrize("method, kw", [("identity", {}), ("ug", {"size": 20}),
                                        ("ag", {"scale": 1e12}), ("quadtree", {}),
                                        ("hb2d", {}), ("hdmm", {}), ("privtree", {})])
def test_huge_epsilon_returns_the_counts(method, kw):
    r = publish(X, epsilon=1e9, method=method, rng=make_rng(seed=3), **kw)
    assert np.allclose(r.value, X, atol=1e-3), method


def test_noise_scale_follows_the_contribution_bound():
    for s in (1, 4):
        r = publish(X, epsilon=0.5, method="identity", sensitivity=s)
        assert r.noise_scale == pytest.approx(s / 0.5, rel=1e-6)


def test_grid_size_rules():
    # Qardaji et al.: m = ceil(sqrt(N eps / 10)); AG m1 = max(10, ceil(sqrt(N eps / 10) / 4))
    assert ug_size(10**6, 1.0) == math.ceil(math.sqrt(10**5))
    assert ug_size(10**6, 1.0, sensitivity=10) == math.ceil(math.sqrt(10**4))
    assert ag_sizes(10**4, 0.1) == 10 and ag_sizes(10**8, 1.0) == math.ceil(math.sqrt(10**7) / 4)
    r = publish(np.ones((64, 64), dtype=int), epsilon=1.0, method="ug", scale=4096)
    assert r.parameters["m"] == ug_size(4096, 1.0) and "public" in r.parameters["scale_rule"]
    r = publish(np.ones((64, 64), dtype=int), epsilon=1.0, method="ug")
    assert set(r.budget_split) == {"scale", "blocks"}
    assert r.budget_split["scale"] == pytest.approx(0.05)


def test_quadtree_geometric_budget():
    eps = quadtree_epsilons(5, 1.0)
    assert math.fsum(eps) <= 1.0
    ratios = [eps[i] / eps[i + 1] for i in range(4)]
    assert np.allclose(ratios, 2 ** (1 / 3))   # leaves get the most
    r = publish(np.ones((16, 16), dtype=int), epsilon=1.0, method="quadtree", height=2)
    assert r.parameters["leaf_side"] == 4 and len(r.budget_split) == 3


def test_hb2d_branching_depends_only_on_the_shape():
    assert hb2d_branching(256, 256) == hb2d_branching(256, 256)
    assert 2 <= hb2d_branching(100, 37) <= 16
    r1 = publish(np.zeros((64, 64), dtype=int), epsilon=1.0, method="hb2d")
    r2 = publish(np.full((64, 64), 9), epsilon=1.0, method="hb2d")
    assert r1.parameters == r2.parameters


def test_block_order_nodes_are_contiguous():
    for base, h in ((2, 3), (3, 2), (4, 2)):
        side = base ** h
        order = block_order(base, h)
        assert sorted(order) == list(range(side * side))
        r, c = np.divmod(order, side)
        for lv in range(1, h + 1):
            run = base ** (2 * lv)
            blk = (r // base ** lv) * side + c // base ** lv
            assert (blk.reshape(-1, run) == blk.reshape(-1, run)[:, :1]).all()


def test_hilbert_order_is_a_path_of_neighbours():
    for k in (1, 2, 4):
        order = hilbert_order(k)
        n = 1 << k
        r, c = np.divmod(order, n)
        assert sorted(order) == list(range(n * n))
        assert (np.abs(np.diff(r)) + np.abs(np.diff(c)) == 1).all()
    cells = hilbert_cells(5, 7)
    assert sorted(cells) == list(range(35))


def test_prefix_and_rect_sums():
    P = prefix2d(X)
    for y0, y1, x0, x1 in ((0, 12, 0, 20), (3, 7, 5, 6), (11, 12, 19, 20)):
        assert rect_sums(P, y0, y1, x0, x1) == X[y0:y1, x0:x1].sum()


def test_tree2d_without_noise_is_exact_and_handles_padding():
    from veil.maps.mechanisms import tree_levels

    for base in (2, 3, 5):
        L = tree_levels(*X.shape, base)
        est, var, _ = tree2d(X[None], base=base, level_eps=[1e12] * L, sensitivity=1,
                             rng=make_rng(seed=0))
        assert est.shape == (1, *X.shape) and np.allclose(est[0], X, atol=1e-6)


@pytest.mark.parametrize("shape, base, leaf_side", [((5, 7), 2, 1), ((3, 9), 4, 1),
                                                     ((6, 5), 2, 2)])
def test_tree2d_publishes_padding_nodes_as_zero(monkeypatch, shape, base, leaf_side):
    """Regression: the nodes of a 2-D tree made only of padding cells were measured with noise
    (the quadtree and HB2D on grids that are not a power of the base); they are now their
    known 0, and the nodes holding a real cell keep their noise."""
    import veil.maps.mechanisms as mech
    from veil.maps._blocks import pad_square, side_power

    seen = []
    inner = mech.tree_inference

    def spy(levels, var, b):
        seen.append([lv.copy() for lv in levels])
        return inner(levels, var, b)

    monkeypatch.setattr(mech, "tree_inference", spy)
    x = np.zeros(shape, dtype=np.int64)
    h = side_power(-(-max(shape) // leaf_side), base)
    tree2d(x, base=base, level_eps=[0.05] * (h + 1), sensitivity=1, rng=make_rng(seed=4),
           leaf_side=leaf_side)
    side = leaf_side * base ** h
    real = pad_square(np.ones(shape, dtype=np.int64), side)
    k = side // leaf_side
    real = real.reshape(k, leaf_side, k, leaf_side).sum(axis=(1, 3)).reshape(-1)
    real = real[block_order(base, h)]
    (levels,) = seen
    n_pad = n_real = 0
    for lv in levels:
        cover = real.reshape(lv.size, -1).sum(axis=1)
        assert np.all(lv[cover == 0] == 0)
        n_pad += int(np.sum(cover == 0))
        n_real += int(np.sum(lv[cover > 0] != 0))
    assert n_pad > 0           # the case has padding nodes
    assert n_real > 0          # and noise where the nodes hold real cells (scale 20)


def test_ag_batch_equals_single_release():
    one, _ = ag_core(X, m1=4, e1=0.5, e2=0.5, sensitivity=1, c2=5.0, rng=make_rng(seed=9))
    many, _ = ag_core(np.stack([X, X]), m1=4, e1=0.5, e2=0.5, sensitivity=1, c2=5.0,
                      rng=make_rng(seed=9))
    assert one.shape == X.shape and many.shape == (2, *X.shape)
    r = ag(X, epsilon=1.0, scale=1e4, rng=make_rng(seed=4))
    # consistency: every level-1 block's sub-blocks sum to its inferred total, so the map sums to
    # the inferred total of all blocks (finite and close to the truth at this scale)
    assert np.isfinite(r.value).all() and abs(r.value.sum() - X.sum()) < 200


def test_privtree_batch_equals_release_and_empty_map_is_one_leaf():
    r = privtree(X, epsilon=1.0, rng=make_rng(seed=5))
    split = r.budget_split
    assert split["tree"] == pytest.approx(TREE_FRACTION) and r.parameters["tree_fraction"] == 0.3
    est, info = privtree_batch(X, batch=1, eps_tree=split["tree"], eps_leaf=split["nodes"],
                               sensitivity=1, theta=0.0, rng=make_rng(seed=5))
    assert np.array_equal(r.value, est[0]) and r.parameters["leaves"] == info["leaves"]
    big = np.zeros((64, 64), dtype=int)
    leaves = [privtree(big, epsilon=1.0, rng=make_rng(seed=s)).parameters["leaves"]
              for s in range(20)]
    assert min(leaves) == 1  # an empty map usually stays one leaf (noise may split it)
    dense = np.zeros((64, 64), dtype=int)
    dense[:8, :8] = 1000
    assert privtree(dense, epsilon=1.0, rng=make_rng(seed=6)).parameters["leaves"] > 10


def test_hdmm_strategy_and_pseudo_inverse():
    g = np.random.default_rng(0)
    s = PIdentity(g.random((3, 10)), float("nan"))
    A = s.matrix()
    assert np.allclose(np.abs(A).sum(axis=0), 1.0)           # columns of L1 norm 1
    y = g.random((4, 13))
    assert np.allclose(s.pinv_apply(y, axis=-1), y @ np.linalg.pinv(A).T)
    x = g.random((10, 4))
    assert np.allclose(s.apply(x, axis=0), A @ x)
    opt = optimize_pidentity(64)
    assert opt.error < float(np.trace(range_gram(64)))       # better than Identity
    assert opt.error == pytest.approx(float(np.trace(range_gram(64) @ np.linalg.inv(
        opt.matrix().T @ opt.matrix()))), rel=1e-8)


def test_hdmm_disk_cache_round_trip(tmp_path, monkeypatch):
    import importlib

    H = importlib.import_module("veil.maps.hdmm")  # the module (veil.maps.hdmm is the function)

    monkeypatch.setenv("VEIL_CACHE_DIR", str(tmp_path))
    H.strategy_for.cache_clear()
    try:
        a = H.strategy_for(48)
        files = list(tmp_path.glob("hdmm-pidentity-n48-*.npy"))
        assert len(files) == 1
        H.strategy_for.cache_clear()
        b = H.strategy_for(48)
        assert np.array_equal(a.theta, b.theta) and a.error == pytest.approx(b.error)
        files[0].write_bytes(b"not a numpy file")   # a corrupt cache is ignored
        H.strategy_for.cache_clear()
        c = H.strategy_for(48)
        assert np.allclose(c.theta, a.theta)
    finally:
        H.strategy_for.cache_clear()


def test_privtree_fraction_calibration_runs_the_fractions_on_common_random_numbers():
    """The calibration behind TREE_FRACTION: each recorded error is the error of a PrivTree
    release with that fraction; all fractions of a run share the resampled map and the
    generator state; the table's ratios are against the best fraction (so its minimum is 1)."""
    from veil.maps.bench import privtree_fraction_calibration
    from veil.maps.evaluation import random_rectangles, rectangle_answers, resample_map

    x = np.zeros((16, 16), dtype=int)
    x[:4, :4] = 9
    x[9, 12] = 4
    out = privtree_fraction_calibration({"toy": x}, fractions=(0.2, 0.6), shares=(0.0, 0.5),
                                        epsilons=(1.0,), scales=(500,), runs=2, queries=50,
                                        seed=3, log=lambda s: None)
    assert min(out["overall"].values()) == 1.0 and max(out["overall"].values()) > 1.0
    # replay the first run by hand with the function's own seeding
    g = make_rng(seed=3)
    q = random_rectangles(16, 16, size=50, rng=g)
    m = resample_map(x, 500, rng=g)
    run_seed = int(g.integers(0, 2**63))
    by = {r["setting"]: r["errors"] for r in out["errors"]}
    assert sorted(by) == ["0.2/0", "0.2/0.5", "0.6/0", "0.6/0.5"]
    for f in (0.2, 0.6):
        for h in (0.0, 0.5):
            v = privtree(m, epsilon=1.0, tree_fraction=f, internal_share=h,
                         rng=make_rng(seed=run_seed)).value
            want = float(np.mean(np.abs(rectangle_answers(q, m) - rectangle_answers(q, v)))
                         / 500)
            assert by[f"{f:g}/{h:g}"][0] == pytest.approx(want, rel=1e-12)
    assert len({by[k][0] for k in by}) == 4
