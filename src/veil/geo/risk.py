"""Re-identification risk of a trajectory set, before and after release.

The attacks follow the background-knowledge model of Pellungrini et al. (and of
scikit-mobility's privacy module, whose ideas, not code, this module implements): the
adversary knows ``k`` points of a target user's *true* trajectory and looks for the users
of the published set that are compatible with that knowledge. If ``M`` users match and the
target is among them, she re-identifies the target with probability ``1 / |M|``; if the
target does not match (noise moved the points), this piece of knowledge does not identify
her (risk 0). A user's risk is the largest over the pieces of knowledge tried.

Attacks (points are compared on a public grid of cells):

* ``"location"``: ``k`` distinct cells the user visited; a user matches if she visited all
  of them.
* ``"sequence"``: ``k`` visits in time order; a user matches if they appear in her
  sequence in that order (a subsequence, not necessarily contiguous).
* ``"frequency"``: ``k`` cells with the number of the user's visits to each; a user
  matches if her visit count of each is within ``tolerance`` (relative) of it.

Trying every ``k``-subset is exponential; ``n_knowledge`` random pieces per user are tried
(the risk reported is therefore a lower bound on the worst case over all subsets, and an
unbiased estimate of the average-case risk when ``aggregate="mean"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..errors import ParameterError
from ..random import make_rng
from ..validation import check_choice, check_int

__all__ = ["ATTACKS", "RiskResult", "reidentification_risk", "risk_before_after",
           "cell_sequences"]

ATTACKS = ("location", "sequence", "frequency")


@dataclass
class RiskResult:
    """Per-user re-identification risk and its summary.

    Attributes
    ----------
    users : array of labels
    risk : array (n_users,) in [0, 1]
    attack, k, n_knowledge, tolerance : the attack's parameters
    """

    users: np.ndarray
    risk: np.ndarray
    attack: str
    k: int
    n_knowledge: int
    tolerance: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        r = self.risk
        return {"attack": self.attack, "k": self.k, "n_knowledge": self.n_knowledge,
                "n_users": int(r.size), "mean_risk": float(r.mean()) if r.size else 0.0,
                "median_risk": float(np.median(r)) if r.size else 0.0,
                "share_unique": float((r >= 1.0).mean()) if r.size else 0.0,
                "share_at_risk_0.5": float((r >= 0.5).mean()) if r.size else 0.0,
                **({"tolerance": self.tolerance} if self.attack == "frequency" else {}),
                **self.extra}


def cell_sequences(users: Any, t: Any, cells: Any) -> dict[Any, np.ndarray]:
    """``{user: cells in time order}`` (cells ``< 0``, outside the grid, are dropped).

    Examples
    --------
    >>> cell_sequences(["a", "a", "b"], [2, 1, 0], [5, 4, 7])
    {'a': array([4, 5]), 'b': array([7])}
    """
    vals = np.asarray(users, dtype=object).ravel()
    vals = np.array([v.item() if isinstance(v, np.generic) else v for v in vals], dtype=object)
    tt = np.asarray(t, dtype=np.float64)
    c = np.asarray(cells, dtype=np.int64)
    if not (vals.shape == tt.shape == c.shape):
        raise ParameterError(f"users, t and cells must have the same length, got {vals.size}, "
                             f"{tt.size}, {c.size}")
    # ids as read: the number 7 and the text "7" (a JSON or Parquet column) are two users
    # (turning ids into text merged them); users in the order of (type, text)
    codes, uniq = pd.factorize(pd.Series(vals, dtype=object), sort=False)
    rank = np.argsort(np.argsort(np.array(
        [f"{type(v).__name__}\x00{v}" for v in uniq.tolist()] if len(uniq) else [], dtype=object),
        kind="stable"), kind="stable")
    r = rank[codes] if codes.size else np.zeros(0, np.int64)
    order = np.lexsort((tt, r))
    r, c = r[order], c[order]
    keys = np.empty(len(uniq), dtype=object)
    keys[rank] = uniq.tolist()
    # one pass over the sorted users (comparing every point with every user was quadratic)
    starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]]) if r.size else np.zeros(0, int)
    out: dict = {}
    for a, b in zip(starts, np.r_[starts[1:], r.size].astype(int)):
        s = c[a:b]
        out[keys[r[a]]] = s[s >= 0]
    return out


def _is_subsequence(seq: np.ndarray, pos: dict[int, np.ndarray], know: np.ndarray) -> bool:
    at = -1
    for c in know:
        p = pos.get(int(c))
        if p is None:
            return False
        j = np.searchsorted(p, at, side="right")
        if j >= p.size:
            return False
        at = int(p[j])
    return True


def reidentification_risk(knowledge: dict[str, np.ndarray], published: dict[str, np.ndarray],
                          *, attack: str = "location", k: int = 2, n_knowledge: int = 20,
                          tolerance: float = 0.1, n_cells: int | None = None,
                          rng: np.random.Generator | None = None) -> RiskResult:
    """Risk of each user of ``knowledge`` against the ``published`` set (see the module).

    Parameters
    ----------
    knowledge : dict user -> cell sequence (time order)
        The true trajectories the adversary's background knowledge is drawn from.
    published : dict user -> cell sequence
        The published trajectories (the same dict for the risk before release; the
        released points mapped to the same public grid after).
    attack : {"location", "sequence", "frequency"}
    k : int
        Points of background knowledge.
    n_knowledge : int
        Random pieces of knowledge tried per user.
    tolerance : float
        Relative tolerance of the frequency attack.
    n_cells : int, optional
        Number of grid cells (default: one more than the largest cell seen).

    Examples
    --------
    >>> seqs = {"a": np.array([1, 2, 3]), "b": np.array([1, 2, 4]), "c": np.array([5, 6])}
    >>> r = reidentification_risk(seqs, seqs, attack="location", k=2, rng=make_rng(seed=0))
    >>> r.risk.tolist()
    [1.0, 1.0, 1.0]
    >>> r = reidentification_risk(seqs, seqs, attack="location", k=1, n_knowledge=50,
    ...                           rng=make_rng(seed=0))
    >>> r.risk.tolist()
    [1.0, 1.0, 1.0]
    """
    attack = check_choice(attack, "attack", ATTACKS)
    k = check_int(k, "k", minimum=1)
    n_knowledge = check_int(n_knowledge, "n_knowledge", minimum=1)
    if not (tolerance >= 0 and np.isfinite(tolerance)):
        raise ParameterError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    rng = make_rng(rng)
    pub_users = list(published)
    index = {u: i for i, u in enumerate(pub_users)}
    if n_cells is None:
        n_cells = 1 + max([int(s.max()) for s in list(knowledge.values())
                           + list(published.values()) if s.size] or [0])
    rows = np.concatenate([np.full(s.size, i) for i, s in enumerate(published.values())]
                          or [np.zeros(0, int)])
    cols = np.concatenate(list(published.values()) or [np.zeros(0, int)]).astype(np.int64)
    B = sp.csc_matrix((np.ones(rows.size), (rows, cols)), shape=(len(pub_users), n_cells))
    B.sum_duplicates()
    positions = None
    if attack == "sequence":
        positions = []
        for s in published.values():
            pos: dict[int, list[int]] = {}
            for j, c in enumerate(s.tolist()):
                pos.setdefault(c, []).append(j)
            positions.append({c: np.array(v) for c, v in pos.items()})
    users = list(knowledge)
    risk = np.zeros(len(users))
    for ui, u in enumerate(users):
        seq = knowledge[u]
        if seq.size == 0:
            continue
        me = index.get(u)
        best = 0.0
        distinct, counts = np.unique(seq, return_counts=True)
        for _ in range(n_knowledge):
            if attack == "sequence":
                if seq.size < k:
                    pick = np.arange(seq.size)
                else:
                    pick = np.sort(rng.choice(seq.size, size=k, replace=False))
                know = seq[pick]
                cand = np.flatnonzero(np.asarray((B[:, np.unique(know)] > 0).sum(axis=1)
                                                 ).ravel() == np.unique(know).size)
                match = [v for v in cand if _is_subsequence(None, positions[v], know)]
            else:
                kk = min(k, distinct.size)
                pick = rng.choice(distinct.size, size=kk, replace=False)
                cells, freq = distinct[pick], counts[pick]
                sub = B[:, cells].toarray()
                if attack == "location":
                    ok = (sub > 0).all(axis=1)
                else:
                    ok = (np.abs(sub - freq[None, :]) <= tolerance * freq[None, :]).all(axis=1)
                match = np.flatnonzero(ok).tolist()
            if me is not None and me in match:
                best = max(best, 1.0 / len(match))
                if best >= 1.0:
                    break
        risk[ui] = best
    return RiskResult(np.asarray(users, dtype=object), risk, attack, k, n_knowledge,
                      tolerance)


def risk_before_after(original: dict[str, np.ndarray], released: dict[str, np.ndarray], *,
                      attack: str = "location", k: int = 2, n_knowledge: int = 20,
                      tolerance: float = 0.1, n_cells: int | None = None,
                      rng: np.random.Generator | None = None
                      ) -> tuple[RiskResult, RiskResult]:
    """The same attack (same pieces of knowledge) against the original and the released set.

    Examples
    --------
    >>> orig = {"a": np.array([1, 2, 3]), "b": np.array([1, 2, 4])}
    >>> rel = {"a": np.array([7, 8, 9]), "b": np.array([7, 8, 9])}
    >>> before, after = risk_before_after(orig, rel, k=2, rng=make_rng(seed=1))
    >>> bool(before.risk.mean() > after.risk.mean())
    True
    """
    rng = make_rng(rng)
    state = rng.bit_generator.state
    before = reidentification_risk(original, original, attack=attack, k=k,
                                   n_knowledge=n_knowledge, tolerance=tolerance,
                                   n_cells=n_cells, rng=rng)
    rng.bit_generator.state = state          # the same knowledge for both
    after = reidentification_risk(original, released, attack=attack, k=k,
                                  n_knowledge=n_knowledge, tolerance=tolerance,
                                  n_cells=n_cells, rng=rng)
    return before, after
