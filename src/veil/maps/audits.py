"""DP ratio audits of the map mechanisms and their broken twins (canaries).

Every entry returns the :class:`veil.audit.AuditResult` of a DP ratio audit (family-wise alpha
1e-6, fixed seeds) on worst-case neighbouring maps: the protected unit is a person with at most
``M = 3`` points, so the neighbour adds 3 points to one cell (the largest L1 change), and the
claimed epsilon is the person-level epsilon. Samplers run the production code paths on many
copies at once (a batch dimension through Identity, UG, AG, the 2-D trees, PrivTree and HDMM);
DAWA-2D calls the 1-D DAWA once per sample (slow).

Two audits go through the whole pipeline from points: a person with 10^4 points is added to a
small point file, the counts are computed in DuckDB with the per-person bound (many salts: the
sampler draws from the resulting mixture), and Identity / PrivTree must pass; the same people
counted *without* the bound (``protects='record'`` while claiming the person-level epsilon) are
canaries that must FAIL, as must a PrivTree that splits on the true counts, and the other broken
twins below. Canaries use the same seeds as the audits (the power check of the audit).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..audit import AuditResult, dp_ratio_audit, events_threshold
from ..audit.core import Event

__all__ = ["AUDITS", "CANARIES", "SLOW", "EPS", "M"]

EPS = 1.0
M = 3          # points per person (the sensitivity the audits claim)
N = 200_000    # samples per side (vectorized samplers)
N_SLOW = 20_000

_A = np.array([[2, 0, 1, 0],
               [0, 3, 0, 0],
               [1, 0, 0, 0],
               [0, 0, 0, 4]], dtype=np.int64)
_B = _A.copy()
_B[0, 0] += M


def _events(values_range=(-12.0, 18.0), step=1.0) -> list[Event]:
    stats = {"cell00": lambda v: v[:, 0, 0],
             "block00": lambda v: v[:, :2, :2].sum(axis=(1, 2)),
             "row0": lambda v: v[:, 0, :].sum(axis=1),
             "total": lambda v: v.sum(axis=(1, 2))}
    ev: list[Event] = []
    grid = np.arange(values_range[0], values_range[1] + step / 2, step)
    for name, f in stats.items():
        ev += events_threshold(f, grid, name)
    return ev


def _audit(sa, sb, *, n=None, seed, events=None, default=N) -> AuditResult:
    return dp_ratio_audit(sa, sb, events if events is not None else _events(),
                          claimed_epsilon=EPS, n=default if n is None else n, seed=seed)


def _tile(x, n):
    return np.broadcast_to(x, (n, *x.shape))


# --------------------------------------------------------------------------- Identity
def _identity(x, eps=EPS, s=M):
    from .mechanisms import identity

    return lambda n, g: identity(_tile(x, n), epsilon=eps, sensitivity=s, rng=g).value


def audit_identity(seed: int = 31, n: int | None = None) -> AuditResult:
    return _audit(_identity(_A), _identity(_B), seed=seed, n=n)


def canary_identity_half_noise(seed: int = 31, n: int | None = None) -> AuditResult:
    """Broken: noise for 2 eps (scale halved) while claiming eps."""
    return _audit(_identity(_A, 2 * EPS), _identity(_B, 2 * EPS), seed=seed, n=n)


def canary_identity_sensitivity_one(seed: int = 31, n: int | None = None) -> AuditResult:
    """Broken: calibrated to one point while a person adds M points."""
    return _audit(_identity(_A, s=1), _identity(_B, s=1), seed=seed, n=n)


# --------------------------------------------------------------------------- UG
def _ug(x, size=2, eps=EPS):
    from .mechanisms import ug

    return lambda n, g: ug(_tile(x, n), epsilon=eps, sensitivity=M, size=size, rng=g).value


def _ug_events():
    return _events() + [Event("cell00==cell33", lambda v: np.isclose(v[:, 0, 0], v[:, 3, 3]))]


def audit_ug(seed: int = 32, n: int | None = None) -> AuditResult:
    return _audit(_ug(_UG_A), _ug(_UG_B), seed=seed, events=_ug_events(), n=n)


_UG_A = np.zeros((4, 4), dtype=np.int64)
_UG_A[3, 3] = 10
_UG_B = _UG_A.copy()
_UG_B[0, 0] += M


def canary_ug_size_from_true_count(seed: int = 32, n: int | None = None) -> AuditResult:
    """Broken: the grid size from the TRUE number of points (a public parameter read from the
    private data): neighbours with 10 and 13 points get 1 and 2 blocks per side."""
    from .mechanisms import ug_size

    sa = _ug(_UG_A, size=ug_size(_UG_A.sum(), EPS, 1, 10.0))
    sb = _ug(_UG_B, size=ug_size(_UG_B.sum(), EPS, 1, 10.0))
    return _audit(sa, sb, seed=seed, events=_ug_events(), n=n)


# --------------------------------------------------------------------------- AG
# block (0, 0) of a 2 x 2 level-1 grid (2 x 2 cells each) is empty or holds the person's M
# points; with c2 = 0.1 AG's level-2 size is 1 x 1 at 0 points and 2 x 2 at 3
_AG_A = np.zeros((4, 4), dtype=np.int64)
_AG_A[2:4, 2:4] = 4
_AG_B = _AG_A.copy()
_AG_B[0, 0] += M


def _ag(x, *, from_true=False):
    from .mechanisms import ag_core

    def sample(n, g):
        v, _ = ag_core(_tile(x, n), m1=2, e1=EPS / 2, e2=EPS / 2, sensitivity=M, c2=0.1,
                       rng=g, level2_from_true=from_true)
        return v
    return sample


def _ag_events():
    stats = {"cell00": lambda v: v[:, 0, 0], "cell01": lambda v: v[:, 0, 1],
             "block00": lambda v: v[:, :2, :2].sum(axis=(1, 2))}
    ev: list[Event] = []
    for name, f in stats.items():
        ev += events_threshold(f, np.arange(-10.0, 30.5, 1.0), name)
    ev.append(Event("cell00==cell11", lambda v: np.isclose(v[:, 0, 0], v[:, 1, 1])))
    return ev


def audit_ag(seed: int = 33, n: int | None = None) -> AuditResult:
    return _audit(_ag(_AG_A), _ag(_AG_B), seed=seed, events=_ag_events(), n=n)


def canary_ag_level2_from_true_counts(seed: int = 33, n: int | None = None) -> AuditResult:
    """Broken: the level-2 sizes read from the TRUE block counts: 1 x 1 sub-block (all four
    cells equal) without the person, 2 x 2 with them, deterministically."""
    return _audit(_ag(_AG_A, from_true=True), _ag(_AG_B, from_true=True), seed=seed,
                  events=_ag_events(), n=n)


# --------------------------------------------------------------------------- quadtree, HB2D
def _tree(x, *, base=2, level_eps=None, levels=None):
    from .mechanisms import quadtree_epsilons, tree2d

    eps = level_eps if level_eps is not None else quadtree_epsilons(levels, EPS)
    return lambda n, g: tree2d(_tile(x, n), base=base, level_eps=eps, sensitivity=M,
                               rng=g)[0]


def audit_quadtree(seed: int = 34, n: int | None = None) -> AuditResult:
    return _audit(_tree(_A, levels=3), _tree(_B, levels=3), seed=seed, n=n)


def canary_quadtree_levels_not_split(seed: int = 34, n: int | None = None) -> AuditResult:
    """Broken: every level gets the whole epsilon (the split sums to 3 eps)."""
    return _audit(_tree(_A, level_eps=[EPS] * 3), _tree(_B, level_eps=[EPS] * 3), seed=seed, n=n)


def audit_hb2d(seed: int = 35, n: int | None = None) -> AuditResult:
    """HB2D's branching for a 4 x 4 grid is the rule's choice (2 x 2 per node here)."""
    from .mechanisms import hb2d_branching, tree_levels

    br = hb2d_branching(4, 4)
    L = tree_levels(4, 4, br)
    eps = [EPS / L] * L
    return _audit(_tree(_A, base=br, level_eps=eps), _tree(_B, base=br, level_eps=eps),
                  seed=seed, n=n)


def canary_hb2d_root_without_noise(seed: int = 35, n: int | None = None) -> AuditResult:
    """Broken: the root (the total) is published almost exactly (its level gets 10^9 eps)."""
    eps = [EPS / 2, EPS / 2, 1e9]
    return _audit(_tree(_A, level_eps=eps), _tree(_B, level_eps=eps), seed=seed, n=n)


# --------------------------------------------------------------------------- PrivTree
# PrivTree with the default eps_tree = 0.3 and M = 3 has delta = 32.35: the quarter [0, 2) x
# [0, 2) holds 31 points (biased count -1.35 at depth 1: a leaf on the true counts) or 34 (+1.65:
# split); the pair follows TREE_FRACTION (_pt_maps)
def _pt_maps():
    """PrivTree's worst-case pair: the top-left quarter holds just under ``delta`` points (the
    depth-1 bias of the default tree budget) in A and just over it in B, so a tree split on the
    true counts keeps that quarter a leaf in A and splits it in B (the canary's leak)."""
    from .privtree import TREE_FRACTION, privtree_parameters

    _, delta = privtree_parameters(EPS * TREE_FRACTION, M)
    quarter = int(math.floor(delta)) - 1  # A: quarter - delta < 0 <= quarter + M - delta
    a = np.zeros((4, 4), dtype=np.int64)
    a[:2, :2] = quarter // 4
    a[1, 1] += quarter - 4 * (quarter // 4)
    a[3, 3] = 2
    b = a.copy()
    b[0, 0] += M
    return a, b


_PT_A, _PT_B = _pt_maps()


def _privtree(x, *, split_on_true=False, meas_factor=1.0):
    """PrivTree with the default split of the budget (TREE_FRACTION to the tree) and the
    default measurement of the internal nodes (INTERNAL_SHARE)."""
    from .privtree import TREE_FRACTION, privtree_batch

    def sample(n, g):
        est, _ = privtree_batch(x, batch=n, eps_tree=EPS * TREE_FRACTION,
                                eps_leaf=EPS * (1 - TREE_FRACTION), sensitivity=M, theta=0.0,
                                rng=g, split_on_true=split_on_true,
                                leaf_eps_override=meas_factor * EPS * (1 - TREE_FRACTION))
        return est
    return sample


def _pt_events():
    stats = {"cell00": lambda v: v[:, 0, 0], "block00": lambda v: v[:, :2, :2].sum(axis=(1, 2)),
             "row0": lambda v: v[:, 0, :].sum(axis=1), "total": lambda v: v.sum(axis=(1, 2))}
    ev: list[Event] = []
    for name, f in stats.items():
        ev += events_threshold(f, np.arange(-10.0, 40.5, 1.0), name)
    # structure: is cell (0,0) a leaf of its own (differs from its neighbour)?
    ev.append(Event("cell00==cell01", lambda v: np.isclose(v[:, 0, 0], v[:, 0, 1])))
    ev.append(Event("cell00==cell22", lambda v: np.isclose(v[:, 0, 0], v[:, 2, 2])))
    return ev


def audit_privtree(seed: int = 36, n: int | None = None) -> AuditResult:
    return _audit(_privtree(_PT_A), _privtree(_PT_B), seed=seed, events=_pt_events(), n=n)


def canary_privtree_split_on_true_counts(seed: int = 36, n: int | None = None) -> AuditResult:
    """Broken: the tree is split on the TRUE biased counts (no noise in the decisions)."""
    return _audit(_privtree(_PT_A, split_on_true=True), _privtree(_PT_B, split_on_true=True),
                  seed=seed, events=_pt_events(), n=n)


def canary_privtree_half_noise(seed: int = 36, n: int | None = None) -> AuditResult:
    """Broken: the tree's nodes measured with twice the claimed measurement budget (half the
    noise; the power check of the measurement stage: internal nodes and leaves)."""
    return _audit(_privtree(_PT_A, meas_factor=2.0), _privtree(_PT_B, meas_factor=2.0),
                  seed=seed, events=_pt_events(), n=n)


# --------------------------------------------------------------------------- HDMM
def _hdmm(x, *, normalized=True):
    from .hdmm import PIdentity, hdmm_measure, hdmm_reconstruct

    # a fixed non-trivial p-Identity strategy (one extra row: the total) on each axis:
    # the optimizer's choice at n = 4 is the identity itself, which would hide the canary
    ar = PIdentity(np.full((1, x.shape[0]), 1.0), float("nan"))
    ac = PIdentity(np.full((1, x.shape[1]), 1.0), float("nan"))

    def sample(n, g):
        xt = _tile(x, n).astype(np.float64)
        if not normalized:
            # Broken: the measurements of [I; Theta] without the column scaling D (column L1
            # norms 1 + sum Theta > 1) with noise calibrated to norm 1
            xt = xt * np.multiply.outer(ar.d, ac.d)
        y = hdmm_measure(xt, ar, ac, epsilon=EPS, sensitivity=M, rng=g)
        return hdmm_reconstruct(y, ar, ac)
    return sample


def audit_hdmm(seed: int = 37, n: int | None = None) -> AuditResult:
    return _audit(_hdmm(_A), _hdmm(_B), seed=seed, events=_events(step=0.5), n=n)


def canary_hdmm_strategy_not_normalized(seed: int = 37, n: int | None = None) -> AuditResult:
    """Broken: the strategy's columns are not scaled to L1 norm 1 (sensitivity understated)."""
    return _audit(_hdmm(_A, normalized=False), _hdmm(_B, normalized=False), seed=seed,
                  events=_events(step=0.5), n=n)


# --------------------------------------------------------------------------- DAWA-2D (per call)
def _dawa2d(x, *, group_privacy=True):
    from ..histograms import dawa
    from .mechanisms import dawa2d, hilbert_cells

    idx = hilbert_cells(*x.shape)

    def sample(n, g):
        out = np.empty((n, *x.shape))
        for i in range(n):
            if group_privacy:
                out[i] = dawa2d(x, epsilon=EPS, sensitivity=M, rng=g).value
            else:  # Broken: the 1-D DAWA run with eps, not eps / M
                v = np.empty(x.size)
                v[idx] = dawa(x.ravel()[idx], epsilon=EPS, rng=g).value
                out[i] = v.reshape(x.shape)
        return out
    return sample


def audit_dawa2d(seed: int = 38, n: int | None = None) -> AuditResult:
    return _audit(_dawa2d(_A), _dawa2d(_B), n=n, default=N_SLOW, seed=seed, events=_events(step=2.0))


def canary_dawa2d_no_group_privacy(seed: int = 38, n: int | None = None) -> AuditResult:
    """Broken: 1-D DAWA at eps for a person of M points (group privacy forgotten)."""
    return _audit(_dawa2d(_A, group_privacy=False), _dawa2d(_B, group_privacy=False),
                  n=n, default=N_SLOW, seed=seed, events=_events(step=2.0))


# --------------------------------------------------------------------------- auto's selection
# a 4 x 4 map seen through a 2 x 2 feature grid (blocks of 50, 16, 10 and 40 points, the cut
# at 3 noise scales = 18 points): the person's M points lift block (0, 1) from 16 to 19, across
# the cut; the selection stage (noisy count, then the coarse-entropy feature) is audited at its
# own epsilon, half for the count and half for the feature
_AU_A = np.array([[20, 10, 6, 4],
                  [10, 10, 3, 3],
                  [5, 0, 10, 10],
                  [5, 0, 10, 10]], dtype=np.int64)
_AU_B = _AU_A.copy()
_AU_B[0, 2] += M
_AU_RULE = {"hdmm_above": 1e9, "privtree_min_signal": 0.0, "privtree_entropy": 0.3,
            "hdmm_mid_signal": 0.0, "hdmm_entropy": 0.7}


def _auto_sel(x, *, from_true=False, feature_sensitivity=None):
    from .auto import auto_selection

    def sample(n, g):
        sel = auto_selection(x, epsilon=EPS, sensitivity=M, rng=g, batch=n, rule=_AU_RULE,
                             scale_fraction=0.5, feature_fraction=0.5, side=2,
                             feature_from_true=from_true,
                             feature_sensitivity=feature_sensitivity)
        code = np.select([sel["method"] == "ag", sel["method"] == "privtree"], [0.0, 1.0], 2.0)
        return np.column_stack((sel["n"], sel["entropy"], code))
    return sample


def _auto_events():
    ev: list[Event] = []
    ev += events_threshold(lambda v: v[:, 0], np.arange(90.0, 136.0, 1.0), "n")
    ev += events_threshold(lambda v: v[:, 1], np.arange(0.0, 1.001, 0.02), "entropy")
    ev.append(Event("chose privtree", lambda v: v[:, 2] == 1.0))
    ev.append(Event("chose hdmm", lambda v: v[:, 2] == 2.0))
    return ev


def audit_auto_selection(seed: int = 41, n: int | None = None) -> AuditResult:
    """``auto``'s DP part: the noisy count and the concentration feature (and the choice)."""
    return _audit(_auto_sel(_AU_A), _auto_sel(_AU_B), seed=seed, events=_auto_events(), n=n)


def canary_auto_feature_from_true_counts(seed: int = 41, n: int | None = None
                                         ) -> AuditResult:
    """Broken: the feature computed from the TRUE block counts (no noise)."""
    return _audit(_auto_sel(_AU_A, from_true=True), _auto_sel(_AU_B, from_true=True),
                  seed=seed, events=_auto_events(), n=n)


def canary_auto_feature_sensitivity_one(seed: int = 41, n: int | None = None
                                        ) -> AuditResult:
    """Broken: the feature's noise calibrated to one point while a person adds M points."""
    return _audit(_auto_sel(_AU_A, feature_sensitivity=1),
                  _auto_sel(_AU_B, feature_sensitivity=1), seed=seed, events=_auto_events(),
                  n=n)


# auto's high-signal branch: the noisy count, then the occupancy feature (noisy number of
# non-empty cells); the person's M points land one each in M empty cells, which moves the count
# and the number of non-empty cells by M each (the worst case of both); half of the selection's
# epsilon for each
_OC_A = np.array([[5, 0, 3, 0],
                  [0, 4, 0, 2],
                  [6, 0, 0, 0],
                  [0, 0, 7, 3]], dtype=np.int64)
_OC_B = _OC_A.copy()
_OC_B[0, 1] += 1
_OC_B[0, 3] += 1
_OC_B[1, 0] += 1
_OC_RULE = {**_AU_RULE, "hdmm_above": -1.0, "dawa_occupancy": 0.5}


def _auto_occ(x, *, from_true=False, feature_sensitivity=None):
    from .auto import auto_selection

    def sample(n, g):
        sel = auto_selection(x, epsilon=EPS, sensitivity=M, rng=g, batch=n, rule=_OC_RULE,
                             scale_fraction=0.5, feature_fraction=0.5,
                             feature_from_true=from_true,
                             feature_sensitivity=feature_sensitivity)
        code = (sel["method"] == "dawa2d").astype(np.float64)
        return np.column_stack((sel["n"], sel["occupancy"] * x.size, code))
    return sample


def _occ_events():
    ev: list[Event] = []
    ev += events_threshold(lambda v: v[:, 0], np.arange(10.0, 56.0, 1.0), "n")
    ev += events_threshold(lambda v: v[:, 1], np.arange(-0.5, 16.6, 1.0), "non-empty cells")
    ev.append(Event("chose dawa2d", lambda v: v[:, 2] == 1.0))
    return ev


def audit_auto_occupancy(seed: int = 42, n: int | None = None) -> AuditResult:
    """``auto``'s DP part above the signal threshold: the noisy count and the occupancy."""
    return _audit(_auto_occ(_OC_A), _auto_occ(_OC_B), seed=seed, events=_occ_events(), n=n)


def canary_auto_occupancy_from_true_counts(seed: int = 42, n: int | None = None
                                           ) -> AuditResult:
    """Broken: the number of non-empty cells taken from the TRUE counts (no noise)."""
    return _audit(_auto_occ(_OC_A, from_true=True), _auto_occ(_OC_B, from_true=True),
                  seed=seed, events=_occ_events(), n=n)


def canary_auto_occupancy_sensitivity_one(seed: int = 42, n: int | None = None
                                          ) -> AuditResult:
    """Broken: the occupancy's noise calibrated to one point while a person fills M cells."""
    return _audit(_auto_occ(_OC_A, feature_sensitivity=1),
                  _auto_occ(_OC_B, feature_sensitivity=1), seed=seed, events=_occ_events(),
                  n=n)


# --------------------------------------------------------------------------- from points
@functools.lru_cache(maxsize=4)
def _point_maps(bounded: bool, salts: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Count grids of a small point file without and with a person of 10^4 points.

    Five ordinary people (at most 3 points each) and, in the neighbour, a person whose 10^4
    points fall in three cells of the 4 x 4 grid. ``bounded``: per-person bound M = 3 in DuckDB
    (``salts`` draws of the secret salt: the neighbour is a mixture); else record level (no
    bound: the canary). Returns ``(maps of A (1, 4, 4), maps of B (k, 4, 4))``.
    """
    import tempfile
    from pathlib import Path

    from ..random import make_rng
    from .grid import MapGrid
    from .points import grid_counts

    g = np.random.default_rng(2016)  # the points are fixed test data, not noise
    rows = []
    for u in range(5):
        for _ in range(1 + u % 3):
            rows.append((f"p{u}", *g.uniform(0.0, 1.0, 2)))
    heavy = [("heavy", 0.1 + 0.05 * g.random(), 0.1 + 0.05 * g.random()) for _ in range(6000)]
    heavy += [("heavy", 0.6 + 0.05 * g.random(), 0.1 + 0.05 * g.random()) for _ in range(3000)]
    heavy += [("heavy", 0.9 + 0.05 * g.random(), 0.9 + 0.05 * g.random()) for _ in range(1000)]
    grid = MapGrid(0.0, 0.0, 1.0, 1.0, rows=4, cols=4)
    kw = dict(user="user", protects="user", max_points=M) if bounded else \
        dict(protects="record")
    k = salts if bounded else 1
    with tempfile.TemporaryDirectory(prefix="veil-maps-audit-") as tmp:  # removed afterwards
        d = Path(tmp)
        for name, data in (("a.csv", rows), ("b.csv", rows + heavy)):
            (d / name).write_text("user,lat,lon\n" + "".join(
                f"{u},{float(la)!r},{float(lo)!r}\n" for u, la, lo in data))
        ma = grid_counts(d / "a.csv", grid, rng=make_rng(seed=1), **kw).counts[None]
        mb = np.stack([grid_counts(d / "b.csv", grid, rng=make_rng(seed=100 + i), **kw).counts
                       for i in range(k)])
    return ma, mb


def _mixture_identity(maps: np.ndarray):
    from .mechanisms import identity

    def sample(n, g):
        pick = maps[g.integers(0, maps.shape[0], size=n)]
        return identity(pick, epsilon=EPS, sensitivity=M, rng=g).value
    return sample


def _mixture_privtree(maps: np.ndarray):
    from .privtree import TREE_FRACTION, privtree_batch

    def sample(n, g):
        pick = g.integers(0, maps.shape[0], size=n)
        out = np.empty((n, *maps.shape[1:]))
        for j in np.unique(pick):
            sel = np.flatnonzero(pick == j)
            out[sel], _ = privtree_batch(maps[j], batch=sel.size,
                                         eps_tree=EPS * TREE_FRACTION,
                                         eps_leaf=EPS * (1 - TREE_FRACTION), sensitivity=M,
                                         theta=0.0, rng=g)
        return out
    return sample


def audit_points_identity(seed: int = 39, n: int | None = None) -> AuditResult:
    ma, mb = _point_maps(True)
    return _audit(_mixture_identity(ma), _mixture_identity(mb), seed=seed, n=n)


def audit_points_privtree(seed: int = 40, n: int | None = None) -> AuditResult:
    ma, mb = _point_maps(True)
    return _audit(_mixture_privtree(ma), _mixture_privtree(mb), seed=seed,
                  events=_pt_events(), n=n)


def canary_points_identity_unbounded(seed: int = 39, n: int | None = None) -> AuditResult:
    """Broken: the person's 10^4 points are counted without the per-person bound."""
    ma, mb = _point_maps(False)
    return _audit(_mixture_identity(ma), _mixture_identity(mb), seed=seed, n=n)


def canary_points_privtree_unbounded(seed: int = 40, n: int | None = None) -> AuditResult:
    """Broken: PrivTree on counts without the per-person bound."""
    ma, mb = _point_maps(False)
    return _audit(_mixture_privtree(ma), _mixture_privtree(mb), seed=seed,
                  events=_pt_events(), n=n)


AUDITS = {
    "identity": audit_identity,
    "ug": audit_ug,
    "ag": audit_ag,
    "quadtree": audit_quadtree,
    "hb2d": audit_hb2d,
    "privtree": audit_privtree,
    "hdmm": audit_hdmm,
    "dawa2d": audit_dawa2d,
    "auto/selection": audit_auto_selection,
    "auto/occupancy": audit_auto_occupancy,
    "points/identity": audit_points_identity,
    "points/privtree": audit_points_privtree,
}
CANARIES = {
    "identity/half-noise": canary_identity_half_noise,
    "identity/sensitivity-one": canary_identity_sensitivity_one,
    "ug/size-from-true-count": canary_ug_size_from_true_count,
    "ag/level2-from-true-counts": canary_ag_level2_from_true_counts,
    "quadtree/levels-not-split": canary_quadtree_levels_not_split,
    "hb2d/root-without-noise": canary_hb2d_root_without_noise,
    "privtree/split-on-true-counts": canary_privtree_split_on_true_counts,
    "privtree/half-noise": canary_privtree_half_noise,
    "hdmm/strategy-not-normalized": canary_hdmm_strategy_not_normalized,
    "dawa2d/no-group-privacy": canary_dawa2d_no_group_privacy,
    "auto/feature-from-true-counts": canary_auto_feature_from_true_counts,
    "auto/feature-sensitivity-one": canary_auto_feature_sensitivity_one,
    "auto/occupancy-from-true-counts": canary_auto_occupancy_from_true_counts,
    "auto/occupancy-sensitivity-one": canary_auto_occupancy_sensitivity_one,
    "points/identity-unbounded": canary_points_identity_unbounded,
    "points/privtree-unbounded": canary_points_privtree_unbounded,
}
#: one call of the 1-D DAWA per sample (tens of seconds): pytest.mark.slow
SLOW = {"dawa2d", "dawa2d/no-group-privacy"}
