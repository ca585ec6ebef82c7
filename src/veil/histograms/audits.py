"""DP audits of the histogram mechanisms and their broken twins (canaries).

Each entry returns the :class:`veil.audit.AuditResult` of a DP ratio audit with
fixed seeds on worst-case neighbouring histograms (one bin differs by one
record), so tests and users run exactly the same experiment. Canaries must FAIL.

Samplers run the production code paths on many copies at once where the
mechanism allows it (Identity on a tiled histogram, Boost/HB through
:func:`veil.histograms.tree.tree_release_batch`, StructureFirst's structure step
through :func:`veil.histograms.structurefirst.private_structure` with ``size``);
sort-and-group, AHP, NoiseFirst, DAWA and optimized StructureFirst are called once
per sample, end to end (slower, fewer samples; marked slow in the tests).
"""

from __future__ import annotations

import numpy as np

from ..audit import (AuditResult, dp_ratio_audit, events_lr_levels, events_points,
                     events_threshold)
from ..audit.core import Event
from ..mechanisms import geometric_mechanism
from .basic import identity
from .sortgroup import ahp, sort_and_group
from .structurefirst import em_boundaries, private_structure
from .tree import tree_release_batch

__all__ = ["AUDITS", "CANARIES", "SLOW"]

EPS = 1.0
N = 200_000

# --------------------------------------------------------------------------- Identity
_ID_A, _ID_B = np.array([3, 0, 5]), np.array([3, 1, 5])
_ID_EVENTS = (events_points(range(-3, 5), key=lambda v: v[:, 1])
              + events_threshold(lambda v: v[:, 1], range(-2, 4), "bin1"))


def _identity(x, eps=EPS, releases=1):
    def sample(n, g):
        out = identity(np.tile(x, n * releases), epsilon=eps, rng=g).value
        return out.reshape(n, releases, x.size).mean(axis=1)  # releases > 1: averaged (canary)
    return sample


def audit_identity(seed: int = 11) -> AuditResult:
    return dp_ratio_audit(_identity(_ID_A), _identity(_ID_B), _ID_EVENTS, claimed_epsilon=EPS,
                          n=N, seed=seed)


def canary_identity_half_noise(seed: int = 11) -> AuditResult:
    """Broken: noise for 2 eps (scale halved) while claiming eps."""
    return dp_ratio_audit(_identity(_ID_A, 2 * EPS), _identity(_ID_B, 2 * EPS), _ID_EVENTS,
                          claimed_epsilon=EPS, n=N, seed=seed)


def canary_identity_split_over_budget(seed: int = 11) -> AuditResult:
    """Broken: two releases at eps each, averaged (the split sums to 2 eps), claimed eps."""
    ev = events_threshold(lambda v: v[:, 1], np.arange(-2.0, 3.5, 0.5), "bin1")
    return dp_ratio_audit(_identity(_ID_A, EPS, 2), _identity(_ID_B, EPS, 2), ev,
                          claimed_epsilon=EPS, n=N, seed=seed)


# --------------------------------------------------------------------------- Boost / HB
_TR_A, _TR_B = np.array([2, 0, 1, 4]), np.array([3, 0, 1, 4])  # b=2: 3 levels, no padding


def _tree(x, eps_total, branching=2):
    return lambda n, g: tree_release_batch(np.tile(x, (n, 1)), epsilon=eps_total,
                                           branching=branching, rng=g)[0]


def _tree_events():
    stats = {"leaf0": lambda v: v[:, 0], "left-pair": lambda v: v[:, 0] + v[:, 1],
             "left-half": lambda v: v[:, :2].sum(axis=1), "total": lambda v: v.sum(axis=1)}
    ev: list[Event] = []
    for name, f in stats.items():
        ev += events_threshold(f, np.arange(-6.0, 13.0, 1.0), name)
    return ev


def audit_boost(seed: int = 12) -> AuditResult:
    return dp_ratio_audit(_tree(_TR_A, EPS), _tree(_TR_B, EPS), _tree_events(),
                          claimed_epsilon=EPS, n=N, seed=seed)


def audit_hb(seed: int = 13) -> AuditResult:
    """HB's branching for n = 5 is Qardaji's choice; the audit uses that arity."""
    from .tree import qardaji_branching

    b = qardaji_branching(_TR_A.size)
    return dp_ratio_audit(_tree(_TR_A, EPS, b), _tree(_TR_B, EPS, b), _tree_events(),
                          claimed_epsilon=EPS, n=N, seed=seed)


def canary_boost_levels_not_split(seed: int = 12) -> AuditResult:
    """Broken: every level gets the whole eps (the split sums to L eps = 3 eps)."""
    return dp_ratio_audit(_tree(_TR_A, 3 * EPS), _tree(_TR_B, 3 * EPS), _tree_events(),
                          claimed_epsilon=EPS, n=N, seed=seed)


def canary_boost_root_without_noise(seed: int = 12) -> AuditResult:
    """Broken: the root (the total) is published without noise (its level gets no budget)."""
    from .tree import noisy_tree, tree_height, tree_inference

    def s(x):
        def sample(n, g):
            L = tree_height(x.size, 2) + 1
            eps = [EPS / L] * (L - 1) + [1e12]  # exact root: variance 0
            noisy, var, _ = noisy_tree(np.tile(x, (n, 1)), branching=2, level_epsilons=eps,
                                       rng=g)
            return tree_inference(noisy, var, 2)[0][:, :x.size]
        return sample
    return dp_ratio_audit(s(_TR_A), s(_TR_B), _tree_events(), claimed_epsilon=EPS, n=N,
                          seed=seed)


# --------------------------------------------------------------------------- StructureFirst
# One bucket's Boost tree, as StructureFirst publishes it inside the bucket [4, 8) of a public
# structure [0, 4, 8] (parallel composition: the other bucket is independent). The broken twin
# is the behaviour read in the authors' tree code: a node's noise is added only when the node's
# first leaf, as an index into the whole histogram, is below the bucket's length, so every
# internal node of a bucket that starts at or after its own length is published exact (and the
# least squares still treats it as noisy). See bench.structurefirst_authors_tree_check.
_SFT_A, _SFT_B = np.array([1, 0, 2, 1, 2, 0, 1, 4]), np.array([1, 0, 2, 1, 3, 0, 1, 4])
_SFT_BUCKET = (4, 8)


def bucket_tree_release(rows, *, start: int, epsilon: float, rng, exact_padding: bool = True,
                        authors_tree: bool = False):
    """StructureFirst's Boost tree over each row of ``rows`` (shape ``(samples, m)``), the
    values of a bucket that starts at bin ``start``: veil's own code
    (:func:`veil.histograms.structurefirst._bucket_trees` over the rows laid end to end) unless
    a twin is asked for.

    ``exact_padding=False``: the padding nodes keep their noise, as veil did before
    :func:`veil.histograms.tree.zero_padding`. ``authors_tree`` (the broken twin, NOT private):
    an internal node is measured only if ``start`` plus its first leaf's offset is below
    ``m``, else it is the true sum.
    """
    from .structurefirst import _bucket_trees
    from .tree import noisy_tree, tree_height, tree_inference, zero_padding

    rows = np.atleast_2d(rows)
    n, m = rows.shape
    if exact_padding and not authors_tree:
        out, _ = _bucket_trees(rows.ravel(), np.arange(n + 1) * m, epsilon, 2, rng)
        return out.reshape(n, m)
    L = tree_height(m, 2) + 1
    noisy, var, _ = noisy_tree(rows, branching=2, level_epsilons=[epsilon / L] * L, rng=rng)
    if authors_tree:
        zero_padding(noisy, m, 2)
        true = np.zeros((n, 2 ** (L - 1)))
        true[:, :m] = rows
        for lv in range(1, L):
            true = true.reshape(n, -1, 2).sum(axis=2)
            first = np.arange(true.shape[1]) * 2 ** lv  # offset of each node's first leaf
            noisy[lv] = np.where(start + first < m, noisy[lv], true)
    return tree_inference(noisy, var, 2)[0][:, :m]


def _sf_bucket_tree(x, *, authors_tree=False):
    b, e = _SFT_BUCKET
    return lambda n, g: bucket_tree_release(np.tile(x[b:e], (n, 1)), start=b, epsilon=EPS,
                                            rng=g, authors_tree=authors_tree)


def audit_structurefirst_bucket_tree(seed: int = 27) -> AuditResult:
    return dp_ratio_audit(_sf_bucket_tree(_SFT_A), _sf_bucket_tree(_SFT_B), _tree_events(),
                          claimed_epsilon=EPS, n=N, seed=seed)


def canary_structurefirst_authors_bucket_tree(seed: int = 27) -> AuditResult:
    """Broken (as read in the authors' tree code): internal nodes of a bucket that starts at or
    after its own length are published without noise."""
    return dp_ratio_audit(_sf_bucket_tree(_SFT_A, authors_tree=True),
                          _sf_bucket_tree(_SFT_B, authors_tree=True), _tree_events(),
                          claimed_epsilon=EPS, n=N, seed=seed)


# the structure step (k = 2: one exponential-mechanism draw among 3 boundaries)
_SF_F = 20.0
_SF_A, _SF_B = np.array([0, 20, 0, 20]), np.array([0, 20, 0, 19])
_SF_EVENTS = events_points([1, 2, 3], key=lambda e: e[:, 1])


def _sf(x, *, use_em=True, count_bound=_SF_F):
    return lambda n, g: private_structure(x, k=2, epsilon=EPS, count_bound=count_bound, rng=g,
                                          use_em=use_em, size=n)


def audit_structurefirst(seed: int = 14) -> AuditResult:
    return dp_ratio_audit(_sf(_SF_A), _sf(_SF_B), _SF_EVENTS, claimed_epsilon=EPS, n=N,
                          seed=seed)


def canary_structurefirst_no_em(seed: int = 14) -> AuditResult:
    """Broken: the optimal structure is published (no exponential mechanism)."""
    a, b = np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1])  # optimum moves from 2 to 1
    return dp_ratio_audit(_sf(a, use_em=False, count_bound=1.0),
                          _sf(b, use_em=False, count_bound=1.0), _SF_EVENTS,
                          claimed_epsilon=EPS, n=N, seed=seed)


def canary_structurefirst_bound_not_enforced(seed: int = 14) -> AuditResult:
    """Broken: the count bound F = 1 is claimed (sensitivity 3) but counts are not clipped."""
    def s(x):
        return lambda n, g: em_boundaries(x.astype(np.float64), k=2, epsilon=EPS,
                                          sensitivity=3.0, rng=g, size=n)
    return dp_ratio_audit(s(np.array([0, 20, 0, 20])), s(np.array([0, 20, 0, 21])),
                          _SF_EVENTS, claimed_epsilon=EPS, n=N, seed=seed)


def canary_structurefirst_bound_from_data(seed: int = 14) -> AuditResult:
    """Broken: F read from the data (F = the largest count), as the authors' code did.

    The release records its parameters (the sidecar publishes ``count_bound``), so
    the output is the pair (boundary, F); neighbours with different maxima give
    different F with certainty.
    """
    def s(x):
        F = float(x.max())
        return lambda n, g: np.column_stack(
            (private_structure(x, k=2, epsilon=EPS, count_bound=F, rng=g, size=n)[:, 1],
             np.full(n, F)))
    ev = (events_points([1, 2, 3], key=lambda o: o[:, 0])
          + events_points([20.0, 21.0], key=lambda o: o[:, 1]))
    return dp_ratio_audit(s(_SF_A), s(np.array([0, 20, 0, 21])), ev, claimed_epsilon=EPS,
                          n=N, seed=seed)


# --------------------------------------------------------------------------- sort-and-group, AHP
_SG_N = 20_000  # one call per sample: fewer samples (slow audits)
_SG_A, _SG_B = np.array([4, 0, 4]), np.array([4, 1, 4])


def _per_call(fn, x, **kw):
    def sample(n, g):
        return np.stack([fn(x, epsilon=EPS, rng=g, **kw).value for _ in range(n)])
    return sample


def _sg_events():
    ev = events_threshold(lambda v: v[:, 1], np.arange(-2.0, 5.0, 1.0), "bin1")
    ev += events_threshold(lambda v: v.sum(axis=1), np.arange(4.0, 13.0, 2.0), "total")
    ev.append(Event("bin0==bin1", lambda v: np.isclose(v[:, 0], v[:, 1])))
    return ev


def _sg_broken(x, *, epsilon, rng, true_sort=False, second_eps=None):
    """sort-and-group with a broken step (canaries only)."""
    from .partition import sorted_grouping
    from .sortgroup import _publish_groups, randomized_sort

    eps1 = epsilon / 2
    eps2 = epsilon / 2 if second_eps is None else second_eps
    noisy = geometric_mechanism(x, epsilon=eps1, rng=rng).value
    key = x if true_sort else noisy
    order = randomized_sort(key, rng)
    from ._common import dl_variance

    edges, _ = sorted_grouping(key[order].astype(np.float64), size_linear=-dl_variance(eps1),
                               per_group=dl_variance(eps1), size_inverse=dl_variance(eps2))
    value, _, _ = _publish_groups(x, order, edges, eps2, rng)

    class _R:  # minimal stand-in for a Release
        pass

    r = _R()
    r.value = value
    return r


def audit_sort_and_group(seed: int = 15) -> AuditResult:
    return dp_ratio_audit(_per_call(sort_and_group, _SG_A), _per_call(sort_and_group, _SG_B),
                          _sg_events(), claimed_epsilon=EPS, n=_SG_N, seed=seed)


def audit_ahp(seed: int = 16) -> AuditResult:
    return dp_ratio_audit(_per_call(ahp, _SG_A), _per_call(ahp, _SG_B), _sg_events(),
                          claimed_epsilon=EPS, n=_SG_N, seed=seed)


def canary_sort_and_group_second_step_unpaid(seed: int = 15) -> AuditResult:
    """Broken: the group sums are measured with 4 eps not accounted for (split sums to 4.5 eps)."""
    ev = events_threshold(lambda v: v[:, 1], np.arange(-2.0, 5.0, 0.5), "bin1")
    return dp_ratio_audit(_per_call(_sg_broken, _SG_A, second_eps=4 * EPS),
                          _per_call(_sg_broken, _SG_B, second_eps=4 * EPS), ev,
                          claimed_epsilon=EPS, n=_SG_N, seed=seed)


def canary_sort_and_group_true_sort(seed: int = 15) -> AuditResult:
    """Broken: the bins are sorted and grouped by their TRUE counts (structure not private).

    Neighbours [6, 1, 6] and [6, 0, 6] sit on the two sides of the grouping
    decision: the first is published as one group (all bins equal, always), the
    second keeps bin 1 apart (equal only by chance).
    """
    a, b = np.array([6, 1, 6]), np.array([6, 0, 6])
    ev = [Event("bin0==bin1", lambda v: np.isclose(v[:, 0], v[:, 1])),
          Event("bin1==bin2", lambda v: np.isclose(v[:, 1], v[:, 2]))]
    return dp_ratio_audit(_per_call(_sg_broken, a, true_sort=True),
                          _per_call(_sg_broken, b, true_sort=True), ev,
                          claimed_epsilon=EPS, n=_SG_N, seed=seed)


# --------------------------------------------------------------------------- end to end, per call
def _e2e_events():
    ev = events_threshold(lambda v: v[:, 1], np.arange(-3.0, 6.0, 1.0), "bin1")
    ev += events_threshold(lambda v: v[:, :2].sum(axis=1), np.arange(0.0, 12.0, 2.0), "bins01")
    return ev


def audit_noisefirst(seed: int = 17) -> AuditResult:
    from .basic import noise_first

    return dp_ratio_audit(_per_call(noise_first, _SG_A), _per_call(noise_first, _SG_B),
                          _e2e_events(), claimed_epsilon=EPS, n=_SG_N, seed=seed)


def audit_dawa(seed: int = 18) -> AuditResult:
    from .dawa import dawa

    return dp_ratio_audit(_per_call(dawa, _SG_A), _per_call(dawa, _SG_B), _e2e_events(),
                          claimed_epsilon=EPS, n=_SG_N, seed=seed)


def audit_dawa_records_bound(seed: int = 24) -> AuditResult:
    """DAWA end to end with a public records bound that sets the largest scheduled penalty
    (the penalty is a public constant; this checks the wiring spends no more than eps)."""
    from .dawa import PENALTY_SCHEDULE, dawa, selection_penalty

    bound = 0.01  # signal 0.01 / 3: the first step of the schedule
    assert selection_penalty(epsilon=EPS, records_bound=bound, n=_SG_A.size) == \
        PENALTY_SCHEDULE[0][1]
    return dp_ratio_audit(_per_call(dawa, _SG_A, records_bound=bound),
                          _per_call(dawa, _SG_B, records_bound=bound), _e2e_events(),
                          claimed_epsilon=EPS, n=_SG_N, seed=seed)


def audit_optimized_structurefirst(seed: int = 19) -> AuditResult:
    from .structurefirst import optimized_structure_first

    return dp_ratio_audit(_per_call(optimized_structure_first, _SG_A, k=2, count_bound=8.0),
                          _per_call(optimized_structure_first, _SG_B, k=2, count_bound=8.0),
                          _e2e_events(), claimed_epsilon=EPS, n=_SG_N, seed=seed)


# --------------------------------------------------------------------------- DAWA's partition
# two bins: the partition is {[0,2)} (merged) or {[0,1), [1,2)}; the neighbours sit on the two
# sides of the noise-free decision for the bucket cost 1.5: dev([2, 0]) = 2 > 1.5 > dev([2, 1]) = 1
_DP_A, _DP_B = np.array([2, 0]), np.array([2, 1])
_DP_COST = 1.5
_DP_EVENTS = events_points([1, 2], key=lambda v: v)


def _dawa_partition(x, *, use_noise=True, epsilon=EPS):
    from .dawa import l1_partition

    def sample(n, g):
        return np.array([len(l1_partition(x, epsilon=epsilon, bucket_cost=_DP_COST, rng=g,
                                          use_noise=use_noise)) - 1 for _ in range(n)])
    return sample


def audit_dawa_partition(seed: int = 21) -> AuditResult:
    """DAWA's L1 partition alone (noisy costs, Laplace 4/eps1) at eps1 = 1."""
    return dp_ratio_audit(_dawa_partition(_DP_A), _dawa_partition(_DP_B), _DP_EVENTS,
                          claimed_epsilon=EPS, n=_SG_N, seed=seed)


def canary_dawa_partition_from_true_counts(seed: int = 21) -> AuditResult:
    """Broken: the partition is computed from the true costs (no noise).

    Its outputs are deterministic, so 2,000 samples per side already fail clearly."""
    return dp_ratio_audit(_dawa_partition(_DP_A, use_noise=False),
                          _dawa_partition(_DP_B, use_noise=False), _DP_EVENTS,
                          claimed_epsilon=EPS, n=2_000, seed=seed)


def canary_dawa_partition_noise_too_small(seed: int = 21) -> AuditResult:
    """Broken: partition noise for 16 eps1 (scale 1/(4 eps1)) while claiming eps1."""
    return dp_ratio_audit(_dawa_partition(_DP_A, epsilon=16 * EPS),
                          _dawa_partition(_DP_B, epsilon=16 * EPS), _DP_EVENTS,
                          claimed_epsilon=EPS, n=_SG_N, seed=seed)


# --------------------------------------------------------------------------- HDMM
_HD_A, _HD_B = np.array([3, 0, 5, 2]), np.array([3, 1, 5, 2])


def _hdmm_strategy():
    from .hdmm import optimize_strategy

    return optimize_strategy("prefix", _HD_A.size, p=1)


def _hdmm_answers(x, scale_factor=1.0):
    s = _hdmm_strategy()
    return lambda n, g: s.measure(x, EPS, g, scale_factor=scale_factor, size=n)


def _hdmm_llr_events():
    """Likelihood-ratio level sets of the claimed model (Laplace 1/eps on every answer)."""
    s = _hdmm_strategy()
    mu_a, mu_b = s.answers(_HD_A), s.answers(_HD_B)

    def llr(y):
        return (np.abs(y - mu_b).sum(axis=1) - np.abs(y - mu_a).sum(axis=1)) * EPS
    return events_lr_levels(llr, np.linspace(-0.9, 0.9, 7))


def audit_hdmm_answers(seed: int = 22) -> AuditResult:
    """HDMM's noisy strategy answers (the release before least squares), n = 4, p = 1."""
    return dp_ratio_audit(_hdmm_answers(_HD_A), _hdmm_answers(_HD_B), _hdmm_llr_events(),
                          claimed_epsilon=EPS, n=N, seed=seed)


def canary_hdmm_sensitivity_halved(seed: int = 22) -> AuditResult:
    """Broken: the strategy's sensitivity taken as 1/2 (noise scale halved)."""
    return dp_ratio_audit(_hdmm_answers(_HD_A, 0.5), _hdmm_answers(_HD_B, 0.5),
                          _hdmm_llr_events(), claimed_epsilon=EPS, n=N, seed=seed)


def _hdmm_release(x, scale_factor=1.0):
    s = _hdmm_strategy()
    return lambda n, g: s.estimate(s.measure(x, EPS, g, scale_factor=scale_factor, size=n))


def _hdmm_release_events():
    ev = events_threshold(lambda v: v[:, 1], np.arange(-3.0, 5.0, 1.0), "bin1")
    ev += events_threshold(lambda v: v[:, :2].sum(axis=1), np.arange(0.0, 8.0, 1.0), "bins01")
    return ev


def audit_hdmm(seed: int = 23) -> AuditResult:
    """HDMM end to end: the published least-squares histogram."""
    return dp_ratio_audit(_hdmm_release(_HD_A), _hdmm_release(_HD_B), _hdmm_release_events(),
                          claimed_epsilon=EPS, n=N, seed=seed)


def canary_hdmm_release_sensitivity_halved(seed: int = 23) -> AuditResult:
    """Broken: as above, end to end."""
    return dp_ratio_audit(_hdmm_release(_HD_A, 0.5), _hdmm_release(_HD_B, 0.5),
                          _hdmm_release_events(), claimed_epsilon=EPS, n=N, seed=seed)


# --------------------------------------------------------------------------- MWEM, StructureFirst
def _mwem_events():
    """The published histogram's total is MWEM's noisy total (half the budget here)."""
    ev = events_threshold(lambda v: np.rint(v.sum(axis=1)), np.arange(5.0, 13.0, 1.0), "total")
    ev += events_threshold(lambda v: v[:, 1], np.arange(1.0, 6.0, 1.0), "bin1")
    return ev


_MWEM_KW = dict(rounds=1, total_fraction=0.5)


def _mwem_sampler(x, *, noise=True):
    from .mwem import _mwem
    from .workload import prefix_workload

    q = prefix_workload(x.size)

    def sample(n, g):
        out = []
        for _ in range(n):  # the production loop, one release per sample
            eps0 = EPS * _MWEM_KW["total_fraction"]
            A, _ = _mwem(x, q, eps0, (EPS - eps0) / 2, 1, 10, g, noise=noise)
            out.append(A)
        return np.stack(out)
    return sample


def audit_mwem(seed: int = 24) -> AuditResult:
    """MWEM end to end (1 round, half the budget on the total), through ``mwem()`` itself."""
    from .mwem import mwem

    return dp_ratio_audit(_per_call(mwem, _SG_A, **_MWEM_KW), _per_call(mwem, _SG_B, **_MWEM_KW),
                          _mwem_events(), claimed_epsilon=EPS, n=_SG_N, seed=seed)


def canary_mwem_measurement_without_noise(seed: int = 24) -> AuditResult:
    """Broken: the total and the selected query are measured exactly (deterministic total:
    600 samples per side fail clearly)."""
    return dp_ratio_audit(_mwem_sampler(_SG_A, noise=False), _mwem_sampler(_SG_B, noise=False),
                          _mwem_events(), claimed_epsilon=EPS, n=600, seed=seed)


def audit_optimized_structurefirst_averaging(seed: int = 26) -> AuditResult:
    """Optimized StructureFirst on its averaging path (a tiny records bound: low signal)."""
    from .structurefirst import optimized_structure_first

    kw = dict(k=2, count_bound=8.0, records_bound=0.5)
    return dp_ratio_audit(_per_call(optimized_structure_first, _SG_A, **kw),
                          _per_call(optimized_structure_first, _SG_B, **kw),
                          _e2e_events(), claimed_epsilon=EPS, n=_SG_N, seed=seed)


def audit_structurefirst_end_to_end(seed: int = 25) -> AuditResult:
    """StructureFirst with the authors' split (default), Boost trees in the buckets."""
    from .structurefirst import structure_first

    return dp_ratio_audit(_per_call(structure_first, _SG_A, k=2, count_bound=8.0),
                          _per_call(structure_first, _SG_B, k=2, count_bound=8.0),
                          _e2e_events(), claimed_epsilon=EPS, n=_SG_N, seed=seed)


# --------------------------------------------------------------------------- coarse
# two bins; with the noisy-total path their true totals 5 and 6 sit on the two sides of the
# bucket rule's step from 1 to 2 buckets at the measurement's eps (0.95; coarse_buckets: 1 at
# N = 5, 2 at N = 6; _check_coarse_neighbours says so); a public bound of 8 gives 2 buckets
_CO_A, _CO_B = np.array([5, 0]), np.array([5, 1])
_CO_FRACTION = 0.05  # coarse's default total_fraction
_CO_BOUND = 8.0


def _check_coarse_neighbours() -> None:
    """The audits below mean what they say only if the bucket rule puts the neighbours on
    the two sides of a step (and the bound on two buckets); a change of the rule must move
    them, not silently weaken the audits."""
    from .coarse import coarse_buckets

    eps_m = EPS * (1 - _CO_FRACTION)
    counts = [coarse_buckets(epsilon=eps_m, records_bound=float(x.sum()), n=2)
              for x in (_CO_A, _CO_B)]
    bound = coarse_buckets(epsilon=EPS, records_bound=_CO_BOUND, n=2)
    if counts != [1, 2] or bound != 2:
        raise AssertionError(f"coarse's audit neighbours no longer straddle the bucket rule's "
                             f"step: {counts} buckets (want [1, 2]), {bound} with the bound")


def _coarse_events():
    ev = [Event("one bucket (bin0 == bin1)", lambda v: np.isclose(v[:, 0], v[:, 1]))]
    ev += events_threshold(lambda v: v[:, 1], np.arange(-2.0, 5.0, 1.0), "bin1")
    ev += events_threshold(lambda v: v[:, 1] - v[:, 0], np.arange(-8.0, 2.0, 1.0), "bin1-bin0")
    return ev


def _coarse_broken(x, *, true_total=False, scale_factor=1.0, records_bound=None):
    """coarse's steps with one broken (canaries only), on many samples at once: the bucket
    count from the true total (``true_total``) or the measurement noise times
    ``scale_factor``. The least-squares step is linear in the noisy node totals, so it is
    applied as a matrix (built with :func:`tree_gls` on unit vectors)."""
    from ._common import split_edges
    from .coarse import coarse_buckets
    from .workload import RangeWorkload

    frac = _CO_FRACTION
    w = RangeWorkload.from_spec("prefix", x.size)
    _check_coarse_neighbours()

    def sample(n, g):
        if records_bound is not None:
            eps_m = EPS
            counts = np.full(n, coarse_buckets(epsilon=EPS, records_bound=records_bound,
                                               n=x.size))
        else:
            eps_m = EPS * (1 - frac)
            if true_total:
                tot = np.full(n, float(x.sum()))
            else:
                tot = geometric_mechanism(np.full(n, int(x.sum())), epsilon=EPS * frac,
                                          rng=g).value.astype(float)
            counts = np.array([coarse_buckets(epsilon=eps_m, records_bound=max(t, 1.0),
                                              n=x.size) for t in tot])
        out = np.empty((n, x.size))
        for B in np.unique(counts):
            rows = np.flatnonzero(counts == B)
            out[rows] = _greedy_h_batch(x, split_edges(x.size, int(B)), w, eps_m, rows.size, g,
                                        scale_factor)
        return out
    return sample


def _greedy_h_batch(x, edges, w, eps, size, g, scale_factor=1.0):
    """``size`` releases of the bucket totals of ``x`` over ``edges``, measured on GreedyH's
    hierarchy with Laplace ``scale_factor / (w eps)`` and spread (the samplers' batch form of
    coarse's and privtree's measurement). The least-squares step is linear in the noisy node
    totals, so it is applied as a matrix built with :func:`tree_gls` on unit vectors."""
    from .dawa import greedy_h, tree_gls

    strat = greedy_h(edges, w)
    P = np.concatenate(([0], np.cumsum(x)))
    node_tot = (P[edges[strat.hi]] - P[edges[strat.lo]]).astype(float)
    on = strat.weight > 0
    scale = np.zeros(strat.weight.size)
    scale[on] = scale_factor / (strat.weight[on] * eps)
    var = np.where(on, 2.0 * scale ** 2, np.inf)
    M = np.stack([tree_gls(strat, e, var) for e in np.eye(strat.weight.size)], axis=1)
    Y = np.where(on, node_tot + g.laplace(0.0, 1.0, (size, on.size)) * scale, 0.0)
    lengths = np.diff(edges)
    return np.repeat((Y @ M.T) / lengths, lengths, axis=1)


def audit_coarse(seed: int = 28) -> AuditResult:
    """coarse end to end through ``coarse()``, its bucket count from a noisy total."""
    from .coarse import coarse

    _check_coarse_neighbours()
    return dp_ratio_audit(_per_call(coarse, _CO_A), _per_call(coarse, _CO_B), _coarse_events(),
                          claimed_epsilon=EPS, n=_SG_N, seed=seed)


def audit_coarse_records_bound(seed: int = 29) -> AuditResult:
    """coarse end to end with a public records bound (two buckets: the totals measured)."""
    from .coarse import coarse

    _check_coarse_neighbours()
    return dp_ratio_audit(_per_call(coarse, _CO_A, records_bound=_CO_BOUND),
                          _per_call(coarse, _CO_B, records_bound=_CO_BOUND), _coarse_events(),
                          claimed_epsilon=EPS, n=_SG_N, seed=seed)


def canary_coarse_buckets_from_true_total(seed: int = 28) -> AuditResult:
    """Broken: the bucket count from the true number of records (no noisy total)."""
    return dp_ratio_audit(_coarse_broken(_CO_A, true_total=True),
                          _coarse_broken(_CO_B, true_total=True), _coarse_events(),
                          claimed_epsilon=EPS, n=2_000, seed=seed)


def canary_coarse_half_noise(seed: int = 29) -> AuditResult:
    """Broken: the bucket totals measured with half the noise (records bound 8: 2 buckets)."""
    return dp_ratio_audit(_coarse_broken(_CO_A, scale_factor=0.5, records_bound=_CO_BOUND),
                          _coarse_broken(_CO_B, scale_factor=0.5, records_bound=_CO_BOUND),
                          _coarse_events(), claimed_epsilon=EPS, n=N, seed=seed)


def audit_coarse_batch(seed: int = 30) -> AuditResult:
    """The canaries' batch sampler with nothing broken (noisy total): it passes, so the
    canaries fail because of what they break, not because of the sampler."""
    return dp_ratio_audit(_coarse_broken(_CO_A), _coarse_broken(_CO_B), _coarse_events(),
                          claimed_epsilon=EPS, n=N, seed=seed)


# --------------------------------------------------------------------------- privtree (1-D)
# the tree alone at eps_tree = 1 on four bins: an extra record in an empty histogram is the
# pair of largest exact loss among small histograms (0.58 of eps_tree, enumerated in
# tests/histograms/test_privtree.py); with the split decided on the true counts the root
# splits for [1, 0, 0, 0] and never for [0, 0, 0, 0]
_PT_A, _PT_B = np.array([0, 0, 0, 0]), np.array([1, 0, 0, 0])
_PT_FRACTION = 0.15  # privtree's default tree_fraction


def _pt_code(starts):
    """One integer per tree: its leaf starts as bits."""
    return starts.astype(np.int64) @ (1 << np.arange(starts.shape[1], dtype=np.int64))


def _pt_tree(x, **kw):
    from .privtree import privtree_leaves

    def sample(n, g):
        return _pt_code(privtree_leaves(x, eps_tree=EPS, rng=g, batch=n, **kw)[0])
    return sample


_PT_TREE_CODES = (1, 5, 7, 13, 15)  # every 4-bin leaf set ({0}, {0,2}, {0,1,2}, {0,2,3}, all)
_PT_TREE_EVENTS = events_points(_PT_TREE_CODES, key=lambda v: v)


def audit_privtree_tree(seed: int = 31) -> AuditResult:
    """privtree's leaves alone (the batch tree grower of ``privtree()``) at eps_tree = 1."""
    return dp_ratio_audit(_pt_tree(_PT_A), _pt_tree(_PT_B), _PT_TREE_EVENTS,
                          claimed_epsilon=EPS, n=N, seed=seed)


def canary_privtree_split_on_true_counts(seed: int = 31) -> AuditResult:
    """Broken: the tree split on the true biased counts (no noise). Deterministic, so 2,000
    samples per side fail clearly."""
    return dp_ratio_audit(_pt_tree(_PT_A, split_on_true=True),
                          _pt_tree(_PT_B, split_on_true=True), _PT_TREE_EVENTS,
                          claimed_epsilon=EPS, n=2_000, seed=seed)


def canary_privtree_tree_noise_too_small(seed: int = 31) -> AuditResult:
    """Broken: split noise of a quarter of lambda = 3 / eps_tree."""
    return dp_ratio_audit(_pt_tree(_PT_A, lambda_factor=0.25),
                          _pt_tree(_PT_B, lambda_factor=0.25), _PT_TREE_EVENTS,
                          claimed_epsilon=EPS, n=N, seed=seed)


_PT_VA, _PT_VB = np.array([3, 0, 5, 2]), np.array([3, 1, 5, 2])


def _hdmm_leaves_batch(x, edges, w, eps, size, g, scale_factor=1.0):
    """``size`` releases of the leaf totals of ``x`` over ``edges`` measured with HDMM's
    strategy over the leaves (:func:`veil.histograms.privtree.leaf_strategy`), Laplace
    ``scale_factor / eps`` per answer, least squares and spread (privtree's default
    measurement in batch form)."""
    from ._common import bucket_sums
    from .privtree import leaf_strategy

    strat = leaf_strategy(w, edges.size - 1)
    y = strat.measure(bucket_sums(x, edges).astype(float), eps, g, scale_factor=scale_factor,
                      size=size)
    lengths = np.diff(edges)
    return np.repeat(strat.estimate(y) / lengths, lengths, axis=1)


def _privtree_batch(x, *, scale_factor=1.0, measure="least-error"):
    """privtree's two steps on many samples at once: the batch tree grower, then each leaf
    set's measurement in batch, chosen as ``privtree()`` chooses it
    (:func:`veil.histograms.privtree.leaf_measurement`: :func:`_hdmm_leaves_batch` or
    :func:`_greedy_h_batch`); ``scale_factor`` < 1 under-noises the leaf totals (canary
    only)."""
    from .privtree import leaf_measurement, privtree_leaves
    from .workload import RangeWorkload

    w = RangeWorkload.from_spec("prefix", x.size)

    def sample(n, g):
        starts, _ = privtree_leaves(x, eps_tree=EPS * _PT_FRACTION, rng=g, batch=n)
        codes = _pt_code(starts)
        out = np.empty((n, x.size))
        for c in np.unique(codes):
            rows = np.flatnonzero(codes == c)
            edges = np.r_[np.flatnonzero(starts[rows[0]]), x.size]
            name = leaf_measurement(w, edges, measure)[0]
            batch = _hdmm_leaves_batch if name == "hdmm" else _greedy_h_batch
            out[rows] = batch(x, edges, w, EPS * (1 - _PT_FRACTION), rows.size, g,
                              scale_factor)
        return out
    return sample


def audit_privtree(seed: int = 32) -> AuditResult:
    """privtree end to end through ``privtree()`` (default tree fraction, eps 1)."""
    from .privtree import privtree

    return dp_ratio_audit(_per_call(privtree, _PT_VA), _per_call(privtree, _PT_VB),
                          _e2e_events(), claimed_epsilon=EPS, n=_SG_N, seed=seed)


def audit_privtree_greedy_h(seed: int = 34) -> AuditResult:
    """privtree end to end through ``privtree(measure='greedy-h')`` (the leaves measured on
    GreedyH's hierarchy, as before HDMM measured them)."""
    from .privtree import privtree

    return dp_ratio_audit(_per_call(privtree, _PT_VA, measure="greedy-h"),
                          _per_call(privtree, _PT_VB, measure="greedy-h"), _e2e_events(),
                          claimed_epsilon=EPS, n=_SG_N, seed=seed)


def audit_privtree_hdmm(seed: int = 36) -> AuditResult:
    """privtree end to end through ``privtree(measure='hdmm')`` (HDMM's strategy always)."""
    from .privtree import privtree

    return dp_ratio_audit(_per_call(privtree, _PT_VA, measure="hdmm"),
                          _per_call(privtree, _PT_VB, measure="hdmm"), _e2e_events(),
                          claimed_epsilon=EPS, n=_SG_N, seed=seed)


def canary_privtree_hdmm_half_noise(seed: int = 37) -> AuditResult:
    """Broken: the leaf totals measured with HDMM's strategy and half the noise."""
    return dp_ratio_audit(_privtree_batch(_PT_VA, scale_factor=0.5, measure="hdmm"),
                          _privtree_batch(_PT_VB, scale_factor=0.5, measure="hdmm"),
                          _e2e_events(), claimed_epsilon=EPS, n=N, seed=seed)


def audit_privtree_batch(seed: int = 33) -> AuditResult:
    """The canary's batch sampler with nothing broken: it passes, so the canary fails
    because of what it breaks, not because of the sampler."""
    return dp_ratio_audit(_privtree_batch(_PT_VA), _privtree_batch(_PT_VB), _e2e_events(),
                          claimed_epsilon=EPS, n=N, seed=seed)


def canary_privtree_half_noise(seed: int = 33) -> AuditResult:
    """Broken: the leaf totals measured with half the noise (the default measurement)."""
    return dp_ratio_audit(_privtree_batch(_PT_VA, scale_factor=0.5),
                          _privtree_batch(_PT_VB, scale_factor=0.5), _e2e_events(),
                          claimed_epsilon=EPS, n=N, seed=seed)


def canary_privtree_greedy_h_half_noise(seed: int = 35) -> AuditResult:
    """Broken: the leaf totals measured on GreedyH's hierarchy with half the noise."""
    return dp_ratio_audit(_privtree_batch(_PT_VA, scale_factor=0.5, measure="greedy-h"),
                          _privtree_batch(_PT_VB, scale_factor=0.5, measure="greedy-h"),
                          _e2e_events(), claimed_epsilon=EPS, n=N, seed=seed)


AUDITS = {
    "identity": audit_identity,
    "boost": audit_boost,
    "hb": audit_hb,
    "structurefirst/structure": audit_structurefirst,
    "structurefirst/bucket-tree": audit_structurefirst_bucket_tree,
    "sort-and-group": audit_sort_and_group,
    "ahp": audit_ahp,
    "noisefirst": audit_noisefirst,
    "dawa": audit_dawa,
    "dawa/records-bound": audit_dawa_records_bound,
    "optimized-structurefirst": audit_optimized_structurefirst,
    "dawa/partition": audit_dawa_partition,
    "hdmm/answers": audit_hdmm_answers,
    "hdmm": audit_hdmm,
    "mwem": audit_mwem,
    "structurefirst": audit_structurefirst_end_to_end,
    "optimized-structurefirst/averaging": audit_optimized_structurefirst_averaging,
    "coarse": audit_coarse,
    "coarse/records-bound": audit_coarse_records_bound,
    "coarse/batch-sampler": audit_coarse_batch,
    "privtree/tree": audit_privtree_tree,
    "privtree": audit_privtree,
    "privtree/greedy-h": audit_privtree_greedy_h,
    "privtree/hdmm": audit_privtree_hdmm,
    "privtree/batch-sampler": audit_privtree_batch,
}
CANARIES = {
    "identity/half-noise": canary_identity_half_noise,
    "identity/split-over-budget": canary_identity_split_over_budget,
    "boost/levels-not-split": canary_boost_levels_not_split,
    "boost/root-without-noise": canary_boost_root_without_noise,
    "structurefirst/no-exponential-mechanism": canary_structurefirst_no_em,
    "structurefirst/bound-not-enforced": canary_structurefirst_bound_not_enforced,
    "structurefirst/bound-from-data": canary_structurefirst_bound_from_data,
    "structurefirst/authors-bucket-tree": canary_structurefirst_authors_bucket_tree,
    "sort-and-group/second-step-unpaid": canary_sort_and_group_second_step_unpaid,
    "sort-and-group/true-sort": canary_sort_and_group_true_sort,
    "dawa/partition-from-true-counts": canary_dawa_partition_from_true_counts,
    "dawa/partition-noise-too-small": canary_dawa_partition_noise_too_small,
    "hdmm/sensitivity-halved": canary_hdmm_sensitivity_halved,
    "hdmm/release-sensitivity-halved": canary_hdmm_release_sensitivity_halved,
    "mwem/measurement-without-noise": canary_mwem_measurement_without_noise,
    "coarse/buckets-from-true-total": canary_coarse_buckets_from_true_total,
    "coarse/half-noise": canary_coarse_half_noise,
    "privtree/split-on-true-counts": canary_privtree_split_on_true_counts,
    "privtree/tree-noise-too-small": canary_privtree_tree_noise_too_small,
    "privtree/half-noise": canary_privtree_half_noise,
    "privtree/greedy-h-half-noise": canary_privtree_greedy_h_half_noise,
    "privtree/hdmm-half-noise": canary_privtree_hdmm_half_noise,
}
#: audits that call the mechanism once per sample (tens of seconds): pytest.mark.slow
SLOW = {"sort-and-group", "ahp", "sort-and-group/second-step-unpaid",
        "sort-and-group/true-sort", "noisefirst", "dawa", "dawa/records-bound",
        "optimized-structurefirst",
        "dawa/partition", "dawa/partition-noise-too-small", "mwem", "structurefirst",
        "optimized-structurefirst/averaging", "coarse", "coarse/records-bound", "privtree",
        "privtree/greedy-h", "privtree/hdmm"}
