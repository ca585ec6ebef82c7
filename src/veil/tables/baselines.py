"""Constraint-free suppression k-anonymizers (the baselines DIVA is measured against).

* :func:`sort_and_cut_clusters`: sort rows lexicographically on the QI codes and
  cut the sorted list into consecutive groups of k (the last takes the rest).
* :func:`optimal_cut_clusters`: the same sort, but the cut points are chosen by
  an exact dynamic program that minimizes the suppressed cells over all
  partitions of the sorted list into consecutive groups (sizes k..2k-1 suffice:
  splitting a larger group never costs more); several column orders are tried
  and the cheapest kept.
* :func:`mondrian_clusters`: Mondrian-style top-down median partitioning
  (LeFevre et al. 2006) on the ordered codes, stopping when no split leaves
  k rows on both sides; each leaf is suppressed like a cluster.

Each returns a cluster label per row; :func:`k_anonymize` turns it into an
:class:`~veil.tables.anonymity.Anonymization`.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from ..validation import check_choice
from .anonymity import Anonymization, build_result, prepare
from .constraints import DiversityConstraint

__all__ = ["sort_and_cut_clusters", "optimal_cut_clusters", "optimal_cut_sorted",
           "mondrian_clusters", "column_orders", "k_anonymize", "BASELINES"]


def column_orders(codes: np.ndarray) -> list[list[int]]:
    """Column orders tried for sorting: by cardinality ascending, descending, and as given."""
    q = codes.shape[1]
    card = [len(np.unique(codes[:, j])) for j in range(q)]
    asc = sorted(range(q), key=lambda j: (card[j], j))
    desc = sorted(range(q), key=lambda j: (-card[j], j))
    out = []
    for o in (asc, desc, list(range(q))):
        if o not in out:
            out.append(o)
    return out


def _lexsort(codes: np.ndarray, order: Sequence[int]) -> np.ndarray:
    return np.lexsort(tuple(codes[:, j] for j in reversed(list(order))))


def sort_and_cut_clusters(codes: np.ndarray, k: int, order: Sequence[int] | None = None
                          ) -> np.ndarray:
    """Sort on the QI codes and cut into consecutive groups of ``k`` (last group larger).

    Examples
    --------
    >>> codes = np.array([[1], [0], [1], [0]])
    >>> sort_and_cut_clusters(codes, 2).tolist()
    [1, 0, 1, 0]
    """
    n = codes.shape[0]
    if order is None:
        order = column_orders(codes)[0]
    perm = _lexsort(codes, order)
    m = max(n // k, 1)
    lab_sorted = np.minimum(np.arange(n) // k, m - 1)
    out = np.empty(n, dtype=np.int64)
    out[perm] = lab_sorted
    return out


#: Entries of the work arrays of one step of the optimal-cut DP (bounds its memory).
_CELL_BUDGET = 1 << 20


def optimal_cut_sorted(sorted_codes: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    """Best partition of an already ordered list into consecutive groups of >= k rows.

    Minimizes the number of suppressed cells ``sum(size * non-constant columns)``
    exactly over all such partitions (vectorized DP over blocks of k end points,
    in chunks so that memory stays O(n q + 2**20) whatever k: 1.39 GB at k = 5000
    before, about 50 MB now).

    Returns
    -------
    labels : ndarray (n,)
        Group label of each position, increasing.
    cost : int
        Suppressed cells of the partition.

    Examples
    --------
    >>> labels, cost = optimal_cut_sorted(np.array([[0], [0], [0], [1], [1]]), 2)
    >>> labels.tolist(), cost
    ([0, 0, 0, 1, 1], 0)
    """
    S = np.asarray(sorted_codes)
    n, q = S.shape
    if n < k:
        raise ValueError(f"cannot cut {n} rows into groups of at least k = {k}")
    change = np.ones((n, q), dtype=bool)
    change[1:] = S[1:] != S[:-1]
    runstart = np.maximum.accumulate(np.where(change, np.arange(n)[:, None], 0), axis=0)
    f = np.full(n + 1, np.inf)
    f[0] = 0.0
    arg = np.zeros(n + 1, dtype=np.int64)
    D = np.arange(k, 2 * k)
    # end points are processed in chunks of `step` so that the work arrays hold about
    # _CELL_BUDGET entries whatever k and q: memory O(k + budget), not O(k^2 q)
    step = max(1, _CELL_BUDGET // k)
    for b in range(k, n + 1, k):
        stop = min(b + k, n + 1)
        for c0 in range(b, stop, step):
            J = np.arange(c0, min(c0 + step, stop))
            I = J[:, None] - D[None, :]
            valid = I >= 0
            Ic = np.maximum(I, 0)
            rs = runstart[J - 1]
            if len(J) * k * q <= _CELL_BUDGET:  # small k: one 3-d comparison
                nc = (rs[:, None, :] > Ic[:, :, None]).sum(axis=2)
            else:  # large k: column by column, (len(J), k) entries at a time
                nc = np.zeros(I.shape, dtype=np.int32)
                for col in range(q):  # columns not constant on rows Ic .. J-1
                    nc += rs[:, col, None] > Ic
            cost = f[Ic] + D[None, :] * nc
            cost[~valid] = np.inf
            best = np.argmin(cost, axis=1)
            f[J] = cost[np.arange(len(J)), best]
            arg[J] = D[best]
    bounds = []
    j = n
    while j > 0:
        d = int(arg[j])
        bounds.append(j - d)
        j -= d
    starts = np.array(sorted(bounds))
    labels = np.searchsorted(starts, np.arange(n), side="right") - 1
    return labels, int(f[n])


def optimal_cut_clusters(codes: np.ndarray, k: int,
                         orders: Sequence[Sequence[int]] | None = None) -> np.ndarray:
    """Sort-and-cut with optimal cut points, best of several column orders."""
    n = codes.shape[0]
    best = None
    for order in (orders or column_orders(codes)):
        perm = _lexsort(codes, order)
        lab, cost = optimal_cut_sorted(codes[perm][:, list(order)], k)
        if best is None or cost < best[0]:
            out = np.empty(n, dtype=np.int64)
            out[perm] = lab
            best = (cost, out)
    return best[1]


def mondrian_clusters(codes: np.ndarray, k: int, *, fewest_first: bool = False) -> np.ndarray:
    """Mondrian-style median partitioning; leaves are clusters of k..(about 2k) rows.

    At each node the attribute with the most distinct values (relative to its
    global count) is split at its median code; ties at the median go to the
    side that keeps both parts at least k rows. A node with no allowable split
    on any attribute becomes a cluster.
    """
    n, q = codes.shape
    glob = np.array([max(len(np.unique(codes[:, j])), 1) for j in range(q)], dtype=float)
    labels = np.empty(n, dtype=np.int64)
    stack = [np.arange(n)]
    g = 0
    while stack:
        idx = stack.pop()
        part = codes[idx]
        m = len(idx)
        done = False
        if m >= 2 * k:
            spread = np.array([len(np.unique(part[:, j])) for j in range(q)]) / glob
            for j in np.argsort(spread if fewest_first else -spread, kind="stable"):
                if spread[j] * glob[j] <= 1.5:
                    continue
                col = part[:, j]
                med = np.sort(col)[m // 2]
                for left in (col < med, col <= med):
                    nl = int(left.sum())
                    if k <= nl <= m - k:
                        stack.append(idx[left])
                        stack.append(idx[~left])
                        done = True
                        break
                if done:
                    break
        if not done:
            labels[idx] = g
            g += 1
    return labels


BASELINES = {
    "optimal-cut": optimal_cut_clusters,
    "sort-cut": sort_and_cut_clusters,
    "mondrian": mondrian_clusters,
}


def k_anonymize(table: Any, *, k: int, qi: Sequence[str] | str, method: str = "optimal-cut",
                constraints: Sequence[DiversityConstraint] = (), marker: str = "*",
                models: Sequence[Any] = ()) -> Anonymization:
    """k-anonymize by suppression, ignoring diversity constraints (a baseline).

    Parameters
    ----------
    table : DataFrame, pyarrow Table or mapping of columns
        Not modified.
    k : int
        Minimum class size (>= 2).
    qi : list of str or comma-separated str
        Quasi-identifier columns.
    method : {"optimal-cut", "sort-cut", "mondrian"}
    constraints : list of DiversityConstraint, optional
        Only evaluated on the output (reported in ``result.constraints``).
    marker : str
        Written in suppressed cells (must not occur in the QI columns).
    models : sequence of PrivacyModel
        l-diversity / t-closeness: failing classes are merged with their
        cheapest neighbours (:func:`veil.tables.anonymity.merge_failing_classes`).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"age": [30, 31, 30, 31], "sex": ["F", "F", "M", "M"],
    ...                    "income": [1, 2, 3, 4]})
    >>> res = k_anonymize(df, k=2, qi=["age", "sex"])
    >>> res.metrics["suppressed_cells"], res.metrics["min_class_size"]
    (4, 2)
    """
    t0 = time.perf_counter()
    method = check_choice(method, "method", tuple(BASELINES))
    cols, enc, k = prepare(table, k=k, qi=qi, marker=marker)
    from .constraints import check_constraints_against

    check_constraints_against(list(constraints), attributes=enc.names, what="quasi-identifiers")
    from .models import check_models

    models = check_models(models, enc.names)
    groups = BASELINES[method](enc.codes, k)
    return build_result(table, cols, enc, k, groups, method, list(constraints), t0=t0,
                        marker=marker, models=models, enforce_constraints=False)
