"""DIVA: (k, Sigma)-anonymization by suppression under diversity constraints.

Milani, Huang and Chiang (CIKM 2020). The algorithm has two phases.

**DiverseClustering.** For every constraint ``sigma = (X[t], lo, hi)`` with
``lo > 0`` it builds candidate clusterings ``S_sigma``: clusters of at least
``k`` rows taken from the target rows ``I_sigma`` (rows with ``X = t``), of
``lo`` rows in total (at most ``hi``), so that after suppression the
clusters keep ``X[t]`` visible and ``S_sigma |= sigma``. Candidates differ in
which target rows they use (rows outside every neighbour's target first;
clusters pure in neighbour-target membership; simply the cheapest clusters;
random ones) and are listed in ascending order of the number of rows they
share with neighbouring constraints. Two constraints are neighbours when
their targets share rows; choosing one clustering per constraint such that
the merged clustering ``Merge(S_1, ..., S_m)`` (clusters that share a row are
united) still satisfies every constraint after ``Suppress`` is a graph
colouring problem, solved by backtracking. Vertex orders:

* ``"min-choice"``: next the constraint with the fewest candidates still
  pairwise consistent with the clusterings chosen for its neighbours;
* ``"max-fanout"``: constraints in decreasing number of neighbours;
* ``"random"``: the naive DIVA (random vertex and candidate order).

**k-anonymization of the rest.** The rows outside the chosen clusters are
k-anonymized by the optimal-cut baseline. Rows it leaves with ``X = t``
visible may push a count above ``hi``; then one attribute of ``X`` is
suppressed in whole groups of the rest (smallest fitting groups first),
which only lowers counts, so the lower bounds met by the clusters stay met.

DIVA rejects unsatisfiable or non-minimal Sigma (with the reason), proves
infeasibility when a constraint asks for more rows than the table has, and
otherwise reports (``InfeasibleError``) when its search finds no
(k, Sigma)-anonymization within ``max_steps``.

k-anonymity is not differential privacy; see :mod:`veil.tables.anonymity`.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..errors import InfeasibleError, ParameterError
from ..random import make_rng
from ..validation import check_choice, check_int
from .anonymity import Anonymization, build_result, prepare, suppression_mask, target_masks
from .baselines import _lexsort, column_orders, optimal_cut_clusters, optimal_cut_sorted
from .constraints import DiversityConstraint, check_constraints_against, parse_constraints
from .reasoning import redundant_constraints, satisfiability

__all__ = ["diva", "anonymize", "merge_clusterings", "STRATEGIES", "METHODS",
           "DivaInfeasibleError"]

STRATEGIES = ("min-choice", "max-fanout", "random")


class DivaInfeasibleError(InfeasibleError):
    """No (k, Sigma)-anonymization was produced.

    ``proved`` is True when none exists (e.g. a constraint asks for more target
    rows than the table holds), False when the search gave up.
    """

    def __init__(self, message: str, *, proved: bool, stats: dict | None = None):
        self.proved = proved
        self.stats = stats or {}
        super().__init__(message)


# --------------------------------------------------------------------------- clusterings

@dataclass
class Clustering:
    """A candidate clustering for one constraint: row ids and their cluster ids (0..c-1)."""

    rows: np.ndarray
    cid: np.ndarray
    overlap: int = 0
    kind: str = ""

    @property
    def nclusters(self) -> int:
        return int(self.cid.max()) + 1 if self.cid.size else 0


def merge_clusterings(parts: Sequence[tuple[np.ndarray, np.ndarray]], n: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Merge(S_1, ..., S_m): unite clusters that share a row (transitively).

    Parameters
    ----------
    parts : sequence of (rows, cluster ids)
    n : int
        Number of rows of the table.

    Returns
    -------
    rows, labels : ndarrays
        The distinct rows covered and the merged cluster label of each.

    Examples
    --------
    >>> r, l = merge_clusterings([(np.array([5, 6]), np.array([0, 0])),
    ...                           (np.array([6, 7, 8, 9]), np.array([0, 0, 1, 1]))], 10)
    >>> r.tolist(), l.tolist()
    ([5, 6, 7, 8, 9], [0, 0, 0, 1, 1])
    """
    if not parts:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    rows = np.concatenate([p[0] for p in parts]).astype(np.int64)
    offs = np.cumsum([0] + [int(p[1].max()) + 1 if p[1].size else 0 for p in parts])
    cl = np.concatenate([p[1] + offs[i] for i, p in enumerate(parts)]).astype(np.int64)
    urows, rinv = np.unique(rows, return_inverse=True)
    nr, nc = len(urows), int(offs[-1])
    g = coo_matrix((np.ones(len(rows)), (rinv, nr + cl)), shape=(nr + nc, nr + nc))
    _, lab = connected_components(g, directed=False)
    _, lab_r = np.unique(lab[:nr], return_inverse=True)
    return urows, lab_r


def _counts_of(urows: np.ndarray, labels: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """For each constraint: rows in merged clusters lying entirely inside its target."""
    if urows.size == 0:
        return np.zeros(masks.shape[0], dtype=np.int64)
    nl = int(labels.max()) + 1
    size = np.bincount(labels, minlength=nl)
    out = np.empty(masks.shape[0], dtype=np.int64)
    for j in range(masks.shape[0]):
        inside = np.bincount(labels, weights=masks[j, urows], minlength=nl)
        full = inside == size
        out[j] = int(size[full].sum())
    return out


def _inside(urows: np.ndarray, labels: np.ndarray, masks: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Cluster sizes and ``inside[j, c]``: cluster c lies entirely in constraint j's target."""
    nl = int(labels.max()) + 1 if labels.size else 0
    size = np.bincount(labels, minlength=nl)
    inside = np.empty((masks.shape[0], nl), dtype=bool)
    for j in range(masks.shape[0]):
        inside[j] = np.bincount(labels, weights=masks[j, urows], minlength=nl) == size
    return size, inside


def _subset_with_sum(sizes: np.ndarray, lo: int, hi: int) -> np.ndarray | None:
    """Indices of a subset of ``sizes`` with the smallest sum in ``[lo, hi]``, or None.

    Bounded knapsack reachability over the distinct sizes (multiplicities split
    in powers of two), then a backtrack. O(items * hi) with few items: cluster
    sizes take few distinct values.

    Examples
    --------
    >>> _subset_with_sum(np.array([3, 2, 2]), 4, 4).tolist()
    [1, 2]
    >>> _subset_with_sum(np.array([3, 3]), 4, 5) is None
    True
    """
    if lo > hi or hi < 0:
        return None
    if lo <= 0:
        return np.empty(0, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    single = np.flatnonzero((sizes >= lo) & (sizes <= hi))
    if single.size:
        return single[[int(np.argmin(sizes[single]))]]
    fit = sizes[sizes <= hi]
    if fit.sum() < lo:
        return None
    vals, mult = np.unique(fit, return_counts=True)
    items = []  # (size, how many clusters of that size)
    for v, mlt in zip(vals.tolist(), mult.tolist()):
        b = 1
        while mlt > 0:
            t = min(b, mlt)
            items.append((v, t))
            mlt -= t
            b *= 2
    reach = np.zeros(hi + 1, dtype=bool)
    reach[0] = True
    history = []
    for v, t in items:
        history.append(reach)
        w = v * t
        nxt = reach.copy()
        if w <= hi:
            nxt[w:] |= reach[:hi + 1 - w]
        reach = nxt
    ok = np.flatnonzero(reach[lo:]) + lo
    if not ok.size:
        return None
    target = int(ok[0])
    use: dict[int, int] = {}
    for (v, t), before in zip(reversed(items), reversed(history)):
        if not before[target]:
            use[v] = use.get(v, 0) + t
            target -= v * t
    out = []
    for v, cnt in use.items():
        out.extend(np.flatnonzero(sizes == v)[:cnt].tolist())
    return np.array(sorted(out), dtype=np.int64)


def _hide_plan(urows: np.ndarray, labels: np.ndarray, masks: np.ndarray, lo: np.ndarray,
               hi: np.ndarray, cattrs: Sequence[Sequence[int]], amask: np.ndarray,
               check: Sequence[int] | None = None):
    """Counts after hiding, to bring every count down to its upper bound; None if it cannot.

    A cluster inside a target counts for it; when a count exceeds ``hi``, some
    such clusters *hide* one attribute of the target (suppress it although it is
    constant in the cluster): the cluster stays a class of >= k rows and stops
    counting for every constraint on that attribute. A hide is allowed only if
    every constraint in ``check`` (default: all) keeps at least ``lo``. Greedy:
    the smallest cluster that covers the remaining excess, else the largest.

    ``amask[a, j]`` says whether attribute a is in constraint j's target.

    Returns
    -------
    (counts, hidden) or None
        ``hidden`` maps a cluster label to the attribute columns it hides.
    """
    m = masks.shape[0]
    if urows.size == 0 or m == 0:
        return np.zeros(m, dtype=np.int64), {}
    size, counted = _inside(urows, labels, masks)
    cnt = (counted * size[None, :]).sum(axis=1).astype(np.int64)
    hidden: dict[int, set[int]] = {}
    if np.all(cnt <= hi):
        return cnt, hidden
    need = np.zeros(m, dtype=np.int64)
    chk = np.arange(m) if check is None else np.asarray(list(check), dtype=np.int64)
    need[chk] = lo[chk]

    def hide(c: int, a: int) -> None:
        hidden.setdefault(c, set()).add(int(a))
        hit = amask[a] & counted[:, c]
        cnt[hit] -= size[c]
        counted[hit, c] = False

    for _ in range(int(counted.sum()) + 1):
        over = np.flatnonzero(cnt > hi)
        if not over.size:
            return cnt, hidden
        j = int(over[np.argmax((cnt - hi)[over])])
        excess = int(cnt[j] - hi[j])
        room = int(cnt[j] - need[j])
        done = False
        for a in cattrs[j]:  # 1. a set of clusters whose hiding touches no other lower bound
            aff = amask[a].copy()
            aff[j] = False
            clean = counted[j] & ~(aff[:, None] & counted & (need[:, None] > 0)).any(axis=0)
            cand = np.flatnonzero(clean)
            pick = _subset_with_sum(size[cand], excess, room)
            if pick is not None:
                for c in cand[pick]:
                    hide(int(c), a)
                done = True
                break
        if done:
            continue
        best = None
        for a in cattrs[j]:  # 2. one cluster at a time, keeping every lower bound
            aff = amask[a]
            ok = counted[j].copy()
            low = aff[:, None] & counted & ((cnt[:, None] - size[None, :]) < need[:, None])
            ok &= ~low.any(axis=0)
            cand = np.flatnonzero(ok)
            if not cand.size:
                continue
            sz = size[cand]
            cover = cand[sz >= excess]
            c = int(cover[np.argmin(size[cover])]) if cover.size else int(cand[np.argmax(sz)])
            key = (0 if size[c] >= excess else 1, size[c] if size[c] >= excess else -size[c])
            if best is None or key < best[0]:
                best = (key, c, a)
        if best is None:
            return None
        hide(best[1], best[2])
    return None  # pragma: no cover - each step removes a counted (constraint, cluster) pair


# --------------------------------------------------------------------------- candidates

def _segments(rows: np.ndarray, codes: np.ndarray, k: int, order: Sequence[int]
              ) -> list[tuple[np.ndarray, float]]:
    """Cut ``rows`` (sorted on ``order``) optimally into clusters; (rows, cost per row) each."""
    if len(rows) < k:
        return []
    sub = codes[rows]
    perm = _lexsort(sub, order)
    blk = sub[perm]
    lab, _ = optimal_cut_sorted(blk[:, list(order)], k)
    srows = rows[perm]
    starts = np.flatnonzero(np.r_[True, lab[1:] != lab[:-1]])
    ends = np.r_[starts[1:], len(lab)]
    diff = np.zeros((len(blk), blk.shape[1]), dtype=np.int64)
    diff[1:] = blk[1:] != blk[:-1]
    csum = np.cumsum(diff, axis=0)
    ncons = ((csum[ends - 1] - csum[starts]) > 0).sum(axis=1)
    return [(srows[s:e], int(c)) for s, e, c in zip(starts, ends, ncons)]


def _pick(segs: list[tuple[np.ndarray, float]], lo: int, hi: float, k: int
          ) -> list[np.ndarray] | None:
    """Choose clusters (in the given priority order) totalling lo..hi rows."""
    chosen: list[np.ndarray] = []
    total = 0
    for seg, _ in segs:
        if total >= lo:
            break
        if total + len(seg) <= hi:
            chosen.append(seg)
            total += len(seg)
            continue
        need = lo - total
        if need >= k:
            chosen.append(seg[:need])
            total += need
        elif chosen:
            chosen[-1] = np.concatenate([chosen[-1], seg[:need]])
            total += need
        else:
            continue
    if total < lo or total > hi:
        return None
    return chosen


def _candidates(j: int, masks: np.ndarray, lo: np.ndarray, hi: np.ndarray, nbrs: list[int],
                codes: np.ndarray, k: int, order: Sequence[int], max_candidates: int,
                rng: np.random.Generator, sub_attr: np.ndarray | None = None
                ) -> list[Clustering]:
    T = np.flatnonzero(masks[j])
    # clusters pure in I_j lie inside every target containing I_j: respect the upper bounds
    # of those that hiding cannot lower without hiding j too (attributes within j's)
    sup = ~np.any(masks[j][None, :] & ~masks, axis=1)
    if sub_attr is not None:
        sup &= sub_attr[j]
    hi = hi.copy()
    hi[j] = hi[sup].min()
    nb_any = masks[nbrs].any(axis=0) if nbrs else np.zeros(masks.shape[1], dtype=bool)
    cands: list[tuple[str, list[np.ndarray]]] = []

    def score(segs):  # cheapest clusters first
        return sorted(segs, key=lambda s: s[1])

    # 1. rows outside every neighbour's target first, then the others
    out_rows, in_rows = T[~nb_any[T]], T[nb_any[T]]
    if len(out_rows) >= k and len(in_rows) >= k:
        segs = score(_segments(out_rows, codes, k, order)) + \
            score(_segments(in_rows, codes, k, order))
        cands.append(("avoid", _pick(segs, lo[j], hi[j], k)))
    # 2. clusters pure in neighbour-target membership
    if nbrs:
        sig = np.zeros(len(T), dtype=np.int64)
        for b, nb in enumerate(nbrs[:62]):
            sig |= masks[nb, T].astype(np.int64) << b
        segs = []
        small = []
        for s in np.unique(sig):
            rs = T[sig == s]
            if len(rs) >= k:
                segs += _segments(rs, codes, k, order)
            else:
                small.append(rs)
        if small:
            rest = np.concatenate(small)
            if len(rest) >= k:
                segs += _segments(rest, codes, k, order)
        cands.append(("pure", _pick(score(segs), lo[j], hi[j], k)))
    # 3. cheapest clusters of all target rows
    base = _segments(T, codes, k, order)
    cands.append(("cheap", _pick(score(base), lo[j], hi[j], k)))
    # 4. random selections of the cheapest-cut clusters
    for r in range(max(0, max_candidates - len(cands))):
        perm = rng.permutation(len(base))
        cands.append((f"random{r}", _pick([base[i] for i in perm], lo[j], hi[j], k)))
    out: list[Clustering] = []
    seen = set()
    for kind, chosen in cands:
        if chosen is None:
            continue
        rows = np.concatenate(chosen)
        cid = np.concatenate([np.full(len(c), i) for i, c in enumerate(chosen)])
        key = (tuple(np.sort(rows).tolist()), len(chosen))
        if key in seen:
            continue
        seen.add(key)
        out.append(Clustering(rows, cid, int(nb_any[rows].sum()), kind))
    out.sort(key=lambda c: c.overlap)
    return out[:max_candidates]


# --------------------------------------------------------------------------- search

class _Search:
    def __init__(self, masks, lo, hi, verts, nbrs, cands, strategy, rng, max_steps, n,
                 codes=None, k=2, order=(), dynamic=True, cattrs=None, amask=None,
                 sub_attr=None):
        self.codes, self.k, self.order, self.dynamic = codes, k, order, dynamic
        self.cattrs, self.amask, self.sub_attr = cattrs, amask, sub_attr
        self.dynamic_made = 0
        tot = masks.sum(axis=1)
        self.slack = {v: (tot[v] - lo[v]) / max(tot[v], 1) for v in verts}
        self.masks, self.lo, self.hi = masks, lo, hi
        self.verts, self.nbrs, self.cands = verts, nbrs, cands
        self.strategy, self.rng, self.max_steps, self.n = strategy, rng, max_steps, n
        self.assign: dict[int, int] = {}
        self.steps = 0
        self.backtracks = 0
        self.checks = 0
        self.pair_cache: dict[tuple[int, int, int, int], bool] = {}
        self.exhausted = False

    def _ok(self, parts_idx: list[tuple[int, int]], check: Sequence[int]) -> bool:
        parts = [(self.cands[v][c].rows, self.cands[v][c].cid) for v, c in parts_idx]
        urows, lab = merge_clusterings(parts, self.n)
        self.checks += 1
        assigned = {v for v, _ in parts_idx}
        chk = [j for j in check if j in assigned]
        plan = _hide_plan(urows, lab, self.masks, self.lo, self.hi, self.cattrs, self.amask,
                          check=chk)
        if plan is None:  # some count stays above its upper bound
            return False
        cnt = plan[0]
        return all(cnt[j] >= self.lo[j] for j in chk)

    def pair_ok(self, u: int, cu: int, v: int, cv: int) -> bool:
        key = (u, cu, v, cv) if u < v else (v, cv, u, cu)
        if key not in self.pair_cache:
            self.pair_cache[key] = self._ok([(u, cu), (v, cv)], (u, v))
        return self.pair_cache[key]

    def options(self, v: int) -> list[int]:
        opts = []
        for c in range(len(self.cands[v])):
            if all(self.pair_ok(v, c, u, self.assign[u]) for u in self.nbrs[v] if u in self.assign):
                opts.append(c)
        return opts

    def next_vertex(self, order: list[int]) -> tuple[int, list[int]]:
        free = [v for v in order if v not in self.assign]
        if self.strategy == "min-choice":
            best = None
            if self.dynamic:  # remaining freedom: free target rows beyond what is still needed
                parts = [(self.cands[u][c].rows, self.cands[u][c].cid)
                         for u, c in self.assign.items()]
                urows, lab = merge_clusterings(parts, self.n)
                cnt = _counts_of(urows, lab, self.masks)
                used = np.zeros(self.n, dtype=bool)
                used[urows] = True
            for v in free:
                o = self.options(v)
                if self.dynamic:
                    nfree = int((self.masks[v] & ~used).sum())
                    room = (nfree - max(self.lo[v] - cnt[v], 0)) / max(self.masks[v].sum(), 1)
                    key = (len(o) > 0, room, len(o))
                else:
                    key = (len(o), self.slack[v])
                if best is None or key < best[0]:
                    best = (key, v, o)
                    if not o:
                        break
            return best[1], best[2]
        v = free[0]
        opts = self.options(v)
        if self.strategy == "random":
            opts = [opts[i] for i in self.rng.permutation(len(opts))]
        return v, opts

    def run(self) -> dict[int, int] | None:
        if self.strategy == "max-fanout":
            order = sorted(self.verts, key=lambda v: (-len(self.nbrs[v]), len(self.cands[v]), v))
        elif self.strategy == "random":
            order = [self.verts[i] for i in self.rng.permutation(len(self.verts))]
        else:
            order = list(self.verts)
        return self.assign if self._dfs(order) else None

    def _complete(self, v: int) -> Clustering | None:
        """A colour built for the current partial assignment: free target rows only.

        Counts what the clusters already chosen give ``v``, adds the cheapest
        clusters of free target rows for the rest, and swaps one row into a
        cluster that would push a neighbour above its upper bound.
        """
        parts = [(self.cands[u][c].rows, self.cands[u][c].cid) for u, c in self.assign.items()]
        urows, lab = merge_clusterings(parts, self.n)
        cnt = _counts_of(urows, lab, self.masks)
        if cnt[v] > self.hi[v]:
            return None
        need = int(self.lo[v] - cnt[v])
        sup = ~np.any(self.masks[v][None, :] & ~self.masks, axis=1) & self.sub_attr[v]
        room = float((self.hi - cnt)[sup].min())
        if need <= 0:
            return Clustering(np.empty(0, np.int64), np.empty(0, np.int64), 0, "complete")
        used = np.zeros(self.n, dtype=bool)
        used[urows] = True
        free = np.flatnonzero(self.masks[v] & ~used)
        segs = self._pure_segments(v, free, cnt)
        chosen = _pick(segs, need, room, self.k)
        if chosen is None:
            return None
        taken = np.zeros(self.n, dtype=bool)
        for c in chosen:
            taken[c] = True
        spare = free[~taken[free]]
        slack = self.hi - cnt
        final: list[np.ndarray] = []
        # clusters that fit under every upper bound first, so later ones can merge into them
        chosen.sort(key=lambda c: bool((self.masks[:, c].all(axis=1)
                                        & (np.arange(len(slack)) != v)
                                        & np.isfinite(self.hi)).any()))
        for c in chosen:
            inside = self.masks[:, c].all(axis=1)
            inside[v] = False
            over = inside & (slack < len(c))
            if not over.any():
                final.append(c)
                slack = slack - inside * len(c)
                continue
            # 1. swap one row for a spare target row outside the saturated targets
            cand = spare[~self.masks[over][:, spare].any(axis=0)]
            if cand.size:
                sim = (self.codes[cand] == self.codes[c[0]]).sum(axis=1)
                r = cand[int(np.argmax(sim))]
                c = c.copy()
                back = c[-1]
                c[-1] = r
                spare = np.r_[spare[spare != r], back]
                inside = self.masks[:, c].all(axis=1)
                inside[v] = False
                final.append(c)
                slack = slack - inside * len(c)
                continue
            # 2. merge into a chosen cluster that is not inside the saturated targets
            for i, d in enumerate(final):
                if self.masks[over][:, d].all(axis=1).any():
                    continue
                ins_d = self.masks[:, d].all(axis=1)
                ins_d[v] = False
                m = np.concatenate([d, c])
                ins_m = self.masks[:, m].all(axis=1)
                ins_m[v] = False
                slack = slack + ins_d * len(d) - ins_m * len(m)
                final[i] = m
                break
            else:  # keep it: hiding an attribute in some cluster may still fit the bound
                final.append(c)
                slack = slack - inside * len(c)
        chosen = final
        rows = np.concatenate(chosen)
        cid = np.concatenate([np.full(len(c), i) for i, c in enumerate(chosen)])
        return Clustering(rows, cid, 0, "complete")

    def _pure_segments(self, v: int, free: np.ndarray, cnt: np.ndarray):
        """Clusters of ``free`` rows pure in neighbour-target membership, helpful ones first.

        A cluster inside a neighbour's target counts for that neighbour instead
        of wasting its rows; clusters inside targets of constraints that still
        need rows come first, then the cheapest.
        """
        nb = [u for u in self.nbrs[v]]
        if not nb:
            return sorted(_segments(free, self.codes, self.k, self.order), key=lambda s: s[1])
        sig = np.zeros(len(free), dtype=np.int64)
        for b, u in enumerate(nb[:62]):
            sig |= self.masks[u, free].astype(np.int64) << b
        segs, small = [], []
        for sv in np.unique(sig):
            rs = free[sig == sv]
            (segs.extend(_segments(rs, self.codes, self.k, self.order)) if len(rs) >= self.k
             else small.append(rs))
        if small:
            rest = np.concatenate(small)
            segs.extend(_segments(rest, self.codes, self.k, self.order))
        needy = np.array([u for u in nb if u not in self.assign and cnt[u] < self.lo[u]],
                         dtype=np.int64)

        def key(seg):
            if not needy.size:
                return (True, 0, seg[1])
            m = self.masks[needy][:, seg[0]]
            inside = m.all(axis=1)
            waste = int(m[~inside].sum())  # rows a needy neighbour can no longer use
            return (not inside.any(), waste, seg[1])

        return sorted(segs, key=key)

    def _dfs(self, order: list[int]) -> bool:
        if len(self.assign) == len(self.verts):
            return self._ok(list(self.assign.items()), list(self.verts))
        v, opts = self.next_vertex(order)
        if self.dynamic:
            dyn = self._complete(v)
            if dyn is not None:
                self.dynamic_made += 1
                self.cands[v].append(dyn)
                opts = [len(self.cands[v]) - 1] + list(opts)
        for c in opts:
            if self.steps >= self.max_steps:
                self.exhausted = True
                return False
            self.steps += 1
            self.assign[v] = c
            if self._ok(list(self.assign.items()), list(self.assign)) and self._dfs(order):
                return True
            del self.assign[v]
        self.backtracks += 1
        return False


# --------------------------------------------------------------------------- DIVA

def diva(table: Any, *, k: int, qi: Sequence[str] | str,
         constraints: Sequence[DiversityConstraint] | str, strategy: str = "min-choice",
         max_candidates: int = 6, max_steps: int = 2000, rng: Any = None,
         seed: int | None = None, marker: str = "*", dynamic: bool = True,
         models: Sequence[Any] = ()) -> Anonymization:
    """(k, Sigma)-anonymize ``table`` by suppression with DIVA.

    Parameters
    ----------
    table : DataFrame, pyarrow Table or mapping of columns
        Not modified; the result has the same kind.
    k : int
        Minimum equivalence-class size on the full QI tuple (>= 2).
    qi : list of str or comma-separated str
        Quasi-identifier columns; constraint attributes must be among them.
    constraints : list of DiversityConstraint or constraint text
        Sigma; must be satisfiable and minimal, and ``0 < lo < k`` is rejected.
    strategy : {"min-choice", "max-fanout", "random"}
        Vertex order of the colouring search ("random" is the naive DIVA).
    max_candidates : int
        Candidate clusterings per constraint (colours).
    max_steps : int
        Budget of colour assignments tried before giving up.
    rng, seed
        Randomness for the random candidates and the "random" strategy
        (k-anonymity does not depend on secret randomness; ``seed`` makes runs
        reproducible).
    marker : str
        Written in suppressed cells (must not occur in the QI columns).
    dynamic : bool
        Also try, first at each vertex, a colour built for the current partial
        assignment from rows no chosen cluster uses (see ``_Search._complete``);
        ``False`` restricts the search to the precomputed colours, as in the paper.
    models : sequence of PrivacyModel
        l-diversity / t-closeness on a sensitive attribute (:mod:`veil.tables.models`):
        classes failing them are merged with their cheapest neighbours at the end,
        keeping every constraint's lower bound.

    Returns
    -------
    Anonymization
        ``result.constraints`` lists every constraint's count (all hold);
        ``result.stats`` holds the search counters.

    Raises
    ------
    ParameterError
        Bad k, QI, constraint (unknown attribute, ``0 < lo < k``) or a
        non-minimal Sigma (the message names the redundant constraint).
    InfeasibleError (DivaInfeasibleError)
        Sigma is unsatisfiable, a constraint needs more rows than exist
        (``proved=True``), or the search found no solution (``proved=False``).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"sex": ["F"] * 4 + ["M"] * 4, "age": [30, 30, 31, 31] * 2})
    >>> res = diva(df, k=2, qi=["sex", "age"], constraints="sex=F: 4..4")
    >>> res.constraints[0].count, res.metrics["min_class_size"] >= 2
    (4, True)
    """
    t0 = time.perf_counter()
    plan = _diva_plan(table, k=k, qi=qi, constraints=constraints, strategy=strategy,
                      max_candidates=max_candidates, max_steps=max_steps, rng=rng, seed=seed,
                      marker=marker, dynamic=dynamic, models=models)
    res = build_result(table, plan.cols, plan.enc, plan.k, plan.groups, f"diva/{plan.strategy}",
                       plan.constraints, mask=plan.mask, stats=plan.stats, t0=t0, marker=marker,
                       models=plan.models)
    bad = [s for s in res.constraints if not s.satisfied]
    if bad:  # pragma: no cover - guarded by construction
        raise AssertionError(f"internal error: DIVA output violates {bad[0].constraint}")
    return res


@dataclass
class DivaPlan:
    """DIVA's clustering before the result is assembled (used by local recoding).

    ``groups`` is every row's cluster, ``phase1`` marks the rows of the clusters
    built for lower bounds (DiverseClustering), ``mask`` the suppressed cells
    (varying attributes of a cluster, hidden attributes, upper-bound repairs).
    """

    cols: dict
    enc: Any
    k: int
    constraints: list
    groups: np.ndarray
    phase1: np.ndarray
    mask: np.ndarray
    stats: dict
    strategy: str
    models: list


def _diva_plan(table: Any, *, k: int, qi: Sequence[str] | str,
               constraints: Sequence[DiversityConstraint] | str, strategy: str = "min-choice",
               max_candidates: int = 6, max_steps: int = 2000, rng: Any = None,
               seed: int | None = None, marker: str = "*", dynamic: bool = True,
               models: Sequence[Any] = ()) -> DivaPlan:
    """DIVA's clusters and suppression mask before privacy models (checked only)."""
    strategy = check_choice(strategy, "strategy", STRATEGIES)
    max_candidates = check_int(max_candidates, "max_candidates", minimum=1)
    max_steps = check_int(max_steps, "max_steps", minimum=1)
    cols, enc, k = prepare(table, k=k, qi=qi, marker=marker)
    from .models import check_models

    models = check_models(models, enc.names)
    if isinstance(constraints, str):
        constraints = parse_constraints(constraints, columns=list(cols), k=k)
    cs = list(constraints)
    check_constraints_against(cs, k=k, attributes=enc.names, what="quasi-identifiers")
    sat = satisfiability(cs)
    if not sat:
        raise DivaInfeasibleError(f"the constraint set is unsatisfiable: {sat.reason}",
                                  proved=True)
    red = redundant_constraints(cs)
    if red:
        c, used = red[0]
        why = ", ".join(repr(u.to_text()) for u in used) or "nothing (it always holds)"
        raise ParameterError(
            f"the constraint set is not minimal: {c.to_text()!r} is implied by "
            f"{why}; remove it "
            "(veil.tables.minimal_cover or `veil table constraints minimize`)")
    gen = make_rng(rng, seed=seed)
    n = enc.n
    codes = enc.codes
    masks = target_masks(enc, cs) if cs else np.zeros((0, n), dtype=bool)
    lo = np.array([c.lo for c in cs], dtype=np.int64)
    hi = np.array([c.hi for c in cs], dtype=float)
    sizes = masks.sum(axis=1)
    for j, c in enumerate(cs):
        if sizes[j] < c.lo:
            raise DivaInfeasibleError(
                f"no ({k}, Sigma)-anonymization exists: constraint {c.to_text()!r} needs at "
                f"least {c.lo} rows with {c.to_text().rsplit(':', 1)[0]} but the table has "
                f"{int(sizes[j])} (suppression can only lower counts)", proved=True)
    order = column_orders(codes)[0]
    # attributes of each target (QI column indices); amask[a, j]: attribute a in target j;
    # sub_attr[j, l]: l's attributes are among j's (hiding cannot lower l without j)
    cattrs = [[enc.names.index(a) for a in c.attributes] for c in cs]
    amask = np.zeros((enc.q, len(cs)), dtype=bool)
    for j, at in enumerate(cattrs):
        amask[at, j] = True
    sub_attr = np.array([[set(cattrs[l]) <= set(cattrs[j]) for l in range(len(cs))]
                         for j in range(len(cs))], dtype=bool).reshape(len(cs), len(cs))
    hide = (cattrs, amask)
    verts = [j for j in range(len(cs)) if cs[j].lo > 0]
    inter = (masks.astype(np.int32) @ masks.T.astype(np.int32)) if cs else np.zeros((0, 0))
    nbrs = {j: [i for i in verts if i != j and inter[i, j] > 0] for j in verts}
    t_cand = time.perf_counter()
    cands = {j: _candidates(j, masks, lo, hi, nbrs[j], codes, k, order, max_candidates, gen,
                            sub_attr) for j in verts}
    t_cand = time.perf_counter() - t_cand
    for j in verts:
        if not cands[j]:
            raise DivaInfeasibleError(
                f"no clustering satisfies {cs[j].to_text()!r} on its own: its "
                f"{int(sizes[j])} target rows cannot form clusters of >= {k} rows totalling "
                f"{cs[j].lo}..{cs[j].hi}", proved=False)
    search = _Search(masks, lo, hi, verts, nbrs, cands, strategy, gen, max_steps, n,
                     codes=codes, k=k, order=order, dynamic=dynamic, cattrs=cattrs, amask=amask,
                     sub_attr=sub_attr)
    t_s = time.perf_counter()
    assign = search.run() if verts else {}
    t_s = time.perf_counter() - t_s
    stats = {"strategy": strategy, "constraints": len(cs), "vertices": len(verts),
             "edges": sum(len(v) for v in nbrs.values()) // 2, "search_steps": search.steps,
             "backtracks": search.backtracks, "consistency_checks": search.checks,
             "dynamic_colours": search.dynamic_made,
             "candidates_s": t_cand, "search_s": t_s}
    if assign is None:
        why = "the search budget max_steps was exhausted" if search.exhausted else \
            "every combination of candidate clusterings was inconsistent"
        raise DivaInfeasibleError(
            f"no ({k}, Sigma)-anonymization found: {why} (this does not prove that none "
            "exists; try more max_candidates / max_steps)", proved=False, stats=stats)
    parts = [(cands[v][c].rows, cands[v][c].cid) for v, c in sorted(assign.items())]
    urows, lab = merge_clusterings(parts, n)
    groups = np.full(n, -1, dtype=np.int64)
    groups[urows] = lab
    ng = int(lab.max()) + 1 if lab.size else 0
    rest = np.flatnonzero(groups < 0)
    phase1 = groups >= 0
    if len(rest) >= k:
        groups[rest] = optimal_cut_clusters(codes[rest], k) + ng
    elif len(rest) > 0:
        pulled = _pull_rows(groups, len(rest), masks, lo, hi, k, ng, hide)
        if pulled is not None:
            groups = pulled
            rest = np.flatnonzero(groups < 0)
            phase1 = groups >= 0
            groups[rest] = ng
        else:
            groups = _attach_rest(groups, rest, masks, lo, hi, ng, hide)
            if groups is not None:
                phase1 = groups >= 0  # the attached rows are now part of a phase-1 cluster
        if groups is None:
            raise DivaInfeasibleError(
                f"no ({k}, Sigma)-anonymization found: {len(rest)} rows are left over and "
                "joining them to any cluster breaks a constraint", proved=False, stats=stats)
    mask = suppression_mask(codes, groups)
    hidden = _apply_hiding(groups, phase1, mask, masks, lo, hi, hide)
    repaired = _repair_upper(groups, phase1, mask, codes, masks, enc, cs)
    stats["hidden_cells"] = hidden
    stats["repair_suppressed_cells"] = repaired
    stats["phase1_rows"] = int(phase1.sum())
    return DivaPlan(cols, enc, k, cs, groups, phase1, mask, stats, strategy, models)


def _phase1_plan(groups, masks, lo, hi, hide):
    """The hiding plan of the phase-1 clusters (rows with ``groups >= 0``), or None."""
    rows = np.flatnonzero(groups >= 0)
    _, lab = np.unique(groups[rows], return_inverse=True)
    plan = _hide_plan(rows, lab.reshape(-1), masks, lo, hi, hide[0], hide[1])
    if plan is None or np.any(plan[0] < lo):
        return None
    return rows, lab.reshape(-1), plan[1]


def _pull_rows(groups, nrest, masks, lo, hi, k, ng, hide):
    """Move surplus rows (beyond k) out of phase-1 clusters until k rows are left over.

    Accepted only if every constraint still holds on the phase-1 clusters
    (removing a row can lower a count, or raise one when the removed row was
    the only one outside a target); the left-over group is repaired later.
    When the clusters have too little surplus, two clusters lying inside the
    same targets are merged (they keep counting for those targets) and the
    pull is tried again.
    """
    trial = groups.copy()
    for _ in range(max(ng, 1)):
        got = _pull_once(trial, nrest, masks, lo, hi, k, hide)
        if got is not None:
            return got
        rows = np.flatnonzero(trial >= 0)
        if rows.size == 0:
            return None
        labs, lab = np.unique(trial[rows], return_inverse=True)
        size, inside = _inside(rows, lab.reshape(-1), masks)
        by_sig: dict[bytes, list[int]] = {}
        for c in np.argsort(size, kind="stable"):
            by_sig.setdefault(inside[:, c].tobytes(), []).append(int(c))
        pairs = [(size[v[0]] + size[v[1]], v[0], v[1]) for v in by_sig.values() if len(v) > 1]
        if not pairs:
            return None
        _, a, b = min(pairs)
        trial[trial == labs[b]] = labs[a]
    return None


def _pull_once(groups, nrest, masks, lo, hi, k, hide):
    need = k - nrest
    trial = groups.copy()
    labs, sizes = np.unique(groups[groups >= 0], return_counts=True)
    for g in np.argsort(-sizes, kind="stable"):
        if need <= 0:
            break
        surplus = int(sizes[g]) - k
        if surplus <= 0:
            break
        take = np.flatnonzero(trial == labs[g])[-min(surplus, need):]
        trial[take] = -1
        need -= len(take)
    if need > 0:
        return None
    return trial if _phase1_plan(trial, masks, lo, hi, hide) is not None else None


def _attach_rest(groups, rest, masks, lo, hi, ng, hide):
    """Join fewer than k leftover rows to a phase-1 cluster without breaking a constraint."""
    sizes = np.bincount(groups[groups >= 0], minlength=ng)
    for g in np.argsort(sizes):
        trial = groups.copy()
        trial[rest] = g
        if _phase1_plan(trial, masks, lo, hi, hide) is not None:
            return trial
    return None


def _apply_hiding(groups, phase1, mask, masks, lo, hi, hide) -> int:
    """Suppress the attributes the hiding plan of the phase-1 clusters hides; cells added."""
    p1 = np.where(phase1, groups, -1)
    got = _phase1_plan(p1, masks, lo, hi, hide)
    if got is None:  # pragma: no cover - the search accepted this clustering
        raise AssertionError("internal error: the chosen clusters exceed an upper bound")
    rows, lab, hidden = got
    added = 0
    for c, attrs in hidden.items():
        r = rows[lab == c]
        for a in attrs:
            added += int((~mask[r, a]).sum())
            mask[r, a] = True
    return added


def _repair_upper(groups, phase1, mask, codes, masks, enc, cs) -> int:
    """Suppress a target attribute in whole rest-groups while a count exceeds hi."""
    added = 0
    sizes = np.bincount(groups)
    for j, c in enumerate(cs):
        if c.hi == np.inf:
            continue
        cols = [enc.names.index(a) for a in c.attributes]
        vis = masks[j] & ~mask[:, cols].any(axis=1)
        excess = int(vis.sum()) - int(c.hi)
        if excess <= 0:
            continue
        cand = np.unique(groups[vis & ~phase1])
        sz = sizes[cand]
        order = np.argsort(sz, kind="stable")
        pool_g, pool_s = cand[order].tolist(), sz[order].tolist()
        chosen = []
        while excess > 0 and pool_s:
            i = bisect.bisect_left(pool_s, excess)  # smallest group that covers the excess
            i = i if i < len(pool_s) else len(pool_s) - 1  # else the largest, and go on
            chosen.append(pool_g.pop(i))
            taken = pool_s.pop(i)
            added += taken
            excess -= taken
        mask[np.isin(groups, chosen), cols[0]] = True
        if excess > 0:  # pragma: no cover - phase-1 counts are <= hi by construction
            raise AssertionError(f"internal error: cannot lower the count of {c.to_text()}")
    return added


#: Every ``method`` of :func:`anonymize`.
METHODS = ("diva", "baseline", "optimal-cut", "sort-cut", "mondrian", "global", "local",
           "mondrian-hierarchy")


def anonymize(table: Any, *, k: int, qi: Sequence[str] | str,
              constraints: Sequence[DiversityConstraint] | str = (), method: str = "diva",
              **kwargs: Any) -> Anonymization:
    """k-anonymize ``table`` with one of :data:`METHODS`.

    * ``"diva"``: suppression honouring the constraints (:func:`diva`);
    * ``"baseline"`` (= ``"optimal-cut"``), ``"sort-cut"``, ``"mondrian"``:
      constraint-free suppression (constraints only evaluated on the output);
    * ``"global"``: full-domain generalization, the lattice optimum
      (:func:`veil.tables.generalize.global_recoding`);
    * ``"local"``: local recoding (:func:`veil.tables.generalize.local_recoding`);
    * ``"mondrian-hierarchy"``: Mondrian publishing hierarchy labels (baseline,
      constraints only evaluated; the privacy ``models`` are met: a partition is split
      only when every part meets k and the models).

    ``kwargs`` go to the method (``models`` for every method; ``hierarchies``,
    ``max_suppression``, ``metric`` for the generalizations, ``search`` for
    ``"global"``; ``strategy``, ``seed`` ... for DIVA, ``seed``/``rng`` for ``"local"``
    (DIVA's clusters when the constraints need them); ``marker`` for all).
    """
    from .baselines import k_anonymize
    from .generalize import global_recoding, local_recoding, mondrian_generalize

    method = check_choice(method, "method", METHODS)
    if isinstance(constraints, str):
        cols, _, kk = prepare(table, k=k, qi=qi)
        constraints = parse_constraints(constraints, columns=list(cols), k=kk)
    marker = kwargs.get("marker", "*")
    models = kwargs.get("models", ())
    gen = {a: kwargs[a] for a in ("hierarchies", "max_suppression", "metric") if a in kwargs}
    if method == "diva":
        return diva(table, k=k, qi=qi, constraints=constraints, **kwargs)
    if method == "global":
        return global_recoding(table, k=k, qi=qi, constraints=constraints, models=models,
                               marker=marker, search=kwargs.get("search", "flash"), **gen)
    if method == "local":
        return local_recoding(table, k=k, qi=qi, constraints=constraints, models=models,
                              marker=marker, seed=kwargs.get("seed"), rng=kwargs.get("rng"),
                              **gen)
    if method == "mondrian-hierarchy":
        res = mondrian_generalize(table, k=k, qi=qi, marker=marker, models=models,
                                  hierarchies=gen.get("hierarchies"),
                                  metric=gen.get("metric", "granularity"))
        if constraints:
            from .validate import ConstraintStatus, count_targets

            counts = count_targets(res.table, list(constraints), marker=marker)
            res.constraints = [ConstraintStatus(c, n) for c, n in zip(constraints, counts)]
        return res
    base = "optimal-cut" if method == "baseline" else method
    return k_anonymize(table, k=k, qi=qi, method=base, constraints=constraints, marker=marker,
                       models=models)
