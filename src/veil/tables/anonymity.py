"""Suppression k-anonymity: clusters to suppressed tables, equivalence classes, metrics.

A clustering of the rows becomes a k-anonymous table by suppression: inside
each cluster, every quasi-identifier (QI) column whose values differ is
replaced by the suppression marker (``*``) for all rows of the cluster, so the
rows of a cluster are identical on the QI tuple. Equivalence classes are the
groups of rows with the same full QI tuple after suppression (two clusters
that end up identical form one class). Non-QI columns are never changed.

What k-anonymity protects, and what it does not: each published QI tuple is
shared by at least k rows, so linking a person's QI values to the table finds
at least k candidate rows. It is *not* differential privacy: it gives no
guarantee against background knowledge, does not hide sensitive values when a
class is homogeneous (use diversity constraints or l-diversity on the
sensitive attribute for that), is not preserved under composition of several
releases, and the choice of which cells to suppress depends on the data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import DataError, ParameterError
from ..release import TabularMixin
from ..validation import check_k
from .constraints import DiversityConstraint
from .data import EncodedQI, as_columns, cell_text, encode_qi, num_rows, replace_columns
from .validate import SUPPRESSED, ConstraintStatus

__all__ = [
    "Anonymization",
    "suppression_mask",
    "suppressed_codes",
    "equivalence_classes",
    "anonymity_metrics",
    "target_masks",
    "visible_counts",
    "prepare",
]


def prepare(table: Any, *, k: Any, qi: Sequence[str] | str, marker: str = SUPPRESSED
            ) -> tuple[dict, EncodedQI, int]:
    """Validate ``k``, ``qi`` and the table; return (columns, encoded QI, k)."""
    k = check_k(k, "k", minimum=2)
    if isinstance(qi, str):
        qi = [s.strip() for s in qi.split(",") if s.strip()]
    qi = [str(a) for a in qi]
    if not qi:
        raise ParameterError("qi must name at least one quasi-identifier column, got none")
    if len(set(qi)) != len(qi):
        dup = sorted({a for a in qi if qi.count(a) > 1})
        raise ParameterError(f"qi lists a column twice: {dup}")
    cols = as_columns(table)
    missing = [a for a in qi if a not in cols]
    if missing:
        import difflib

        hints = [difflib.get_close_matches(a, list(cols), n=1) for a in missing]
        extra = "".join(f"; did you mean {h[0]!r}?" for h in hints if h)
        raise ParameterError(f"qi columns {missing} are not in the table (columns: "
                             f"{', '.join(cols)}){extra}")
    n = num_rows(cols)
    if n == 0:
        raise DataError("the table is empty: nothing to anonymize")
    if n < k:
        raise DataError(f"the table has {n} rows, fewer than k = {k}: no k-anonymous "
                        "release exists (except suppressing every row, which veil does not do)")
    enc = encode_qi(cols, qi)
    for j, name in enumerate(enc.names):
        if np.any(enc.values[j] == marker):
            raise DataError(f"the value {marker!r} occurs in the data; it is the suppression "
                            "marker (choose another marker)", column=name)
    return cols, enc, k


def suppression_mask(codes: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Cells to suppress: ``True`` where a column is not constant inside the row's group.

    Parameters
    ----------
    codes : ndarray (n, q) of int
    groups : ndarray (n,) of int
        Cluster label of each row.

    Examples
    --------
    >>> codes = np.array([[0, 1], [0, 2], [1, 1]])
    >>> suppression_mask(codes, np.array([0, 0, 1])).tolist()
    [[False, True], [False, True], [False, False]]
    """
    codes = np.asarray(codes)
    groups = np.asarray(groups)
    _, g = np.unique(groups, return_inverse=True)
    ng = int(g.max()) + 1 if g.size else 0
    q = codes.shape[1]
    mn = np.full((ng, q), np.iinfo(np.int64).max, dtype=np.int64)
    mx = np.full((ng, q), np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(mn, g, codes)
    np.maximum.at(mx, g, codes)
    return (mn != mx)[g]


def suppressed_codes(codes: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Codes with suppressed cells set to -1."""
    return np.where(mask, -1, codes)


def equivalence_classes(out_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Class label of each row (rows with equal full QI tuples) and class sizes."""
    _, inv, counts = np.unique(out_codes, axis=0, return_inverse=True, return_counts=True)
    return inv.reshape(-1), counts


def anonymity_metrics(out_codes: np.ndarray) -> dict[str, Any]:
    """Suppressed cells (the paper's loss), discernibility, class count and sizes.

    ``discernibility`` is the sum over equivalence classes of the squared class size.
    """
    n, q = out_codes.shape
    stars = int((out_codes < 0).sum())
    _, sizes = equivalence_classes(out_codes)
    return {
        "rows": int(n),
        "qi_columns": int(q),
        "suppressed_cells": stars,
        "suppressed_share": stars / (n * q) if n * q else 0.0,
        "rows_with_suppression": int((out_codes < 0).any(axis=1).sum()),
        "discernibility": int((sizes.astype(np.int64) ** 2).sum()),
        "classes": int(sizes.size),
        "min_class_size": int(sizes.min()) if sizes.size else 0,
        "mean_class_size": float(sizes.mean()) if sizes.size else 0.0,
        "max_class_size": int(sizes.max()) if sizes.size else 0,
    }


def target_masks(enc: EncodedQI, constraints: Sequence[DiversityConstraint]) -> np.ndarray:
    """(m, n) boolean: row i matches constraint j's target in the input."""
    out = np.ones((len(constraints), enc.n), dtype=bool)
    for j, c in enumerate(constraints):
        for a, v in c.target:
            col = enc.names.index(a)
            out[j] &= enc.codes[:, col] == enc.code_of(a, v)
    return out


def visible_counts(enc: EncodedQI, out_codes: np.ndarray,
                   constraints: Sequence[DiversityConstraint]) -> np.ndarray:
    """Count of each constraint's target among rows whose target cells are visible."""
    res = np.empty(len(constraints), dtype=np.int64)
    for j, c in enumerate(constraints):
        m = np.ones(enc.n, dtype=bool)
        for a, v in c.target:
            col = enc.names.index(a)
            m &= out_codes[:, col] == enc.code_of(a, v)
        res[j] = int(m.sum())
    return res


@dataclass
class Anonymization(TabularMixin):
    """A k-anonymous table produced by suppression, with its clustering and metrics.

    Attributes
    ----------
    table : same kind as the input
        The anonymized table: QI columns with a suppressed cell as text with
        ``marker`` in suppressed cells; every other column (a QI column with no
        suppressed cell included) unchanged, dtype kept; rows in input order.
    k, qi, method, marker
    groups : ndarray (n,)
        The cluster of each row (classes on the full QI tuple may join clusters).
    suppressed : ndarray (n, q) of bool
    metrics : dict
        See :func:`anonymity_metrics`.
    constraints : list of ConstraintStatus
        Each constraint's count in the output and whether it holds.
    stats : dict
        Runtime and algorithm-specific counters (search steps, backtracks ...).
    levels : ndarray (n, q) of int, optional
        Generalization level of every QI cell (generalization methods only).
    privacy : list of dict
        Each privacy model (l-diversity, t-closeness) with whether every class
        meets it and the worst class's figure.
    """

    table: Any
    k: int
    qi: list[str]
    method: str
    groups: np.ndarray
    suppressed: np.ndarray
    metrics: dict[str, Any]
    constraints: list[ConstraintStatus] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    marker: str = SUPPRESSED
    levels: np.ndarray | None = None
    privacy: list = field(default_factory=list)

    def to_arrow(self):
        """The anonymized table as a :class:`pyarrow.Table` (whatever kind the input was)."""
        from ..io.write import to_arrow

        return to_arrow(self.table)

    def to_pandas(self):
        """The anonymized table as a :class:`pandas.DataFrame` (the input's dtypes where they
        are kept: see :func:`veil.tables.diverse.diva`)."""
        if type(self.table).__name__ == "DataFrame":
            return self.table.copy()
        return self.to_arrow().to_pandas()

    @property
    def constraints_satisfied(self) -> int:
        return sum(s.satisfied for s in self.constraints)

    @property
    def all_constraints_hold(self) -> bool:
        return all(s.satisfied for s in self.constraints)

    def guarantee(self) -> str:
        """The statement the published table supports, in words (from its parameters)."""
        how = ("by generalization (hierarchy labels) and suppression" if self.levels is not None
               else "by suppression")
        text = (f"k-anonymity {how}: every combination of published quasi-identifier values "
                f"is shared by at least k = {self.k} rows.")
        for m in self.privacy:
            if m["model"] == "t-closeness":
                text += (f" Every class is {m['t']:g}-close ({m['distance']}) on "
                         f"{m['sensitive']!r}.")
            else:
                text += f" Every class is {m['l']:g}-diverse ({m['model']}) on {m['sensitive']!r}."
        return text + " This is not differential privacy."

    def published(self) -> dict[str, Any]:
        """What may be published next to the table: parameters and figures of the output only.

        Every value here is a public parameter or can be recomputed from the
        published table itself (class sizes, suppressed cells, constraint counts
        on the output), so publishing it reveals nothing the table does not.
        Input-dependent figures (search statistics, runtimes, anything measured
        on the input) are only in :meth:`report`.
        """
        from ..release import to_jsonable

        return to_jsonable({
            "method": self.method, "k": self.k, "qi": self.qi, "marker": self.marker,
            "guarantee": self.guarantee(),
            "metrics": self.metrics,
            "constraints": [s.to_dict() for s in self.constraints],
            "constraints_satisfied": self.constraints_satisfied,
            "constraints_total": len(self.constraints),
            "privacy_models": self.privacy,
        })

    def report(self) -> dict[str, Any]:
        """The custodian's report: :meth:`published` plus input-dependent statistics.

        Not for publication: the search counters and runtimes depend on the
        input, including on the values that were suppressed.
        """
        from ..release import to_jsonable

        doc = self.published()
        doc["stats"] = to_jsonable(self.stats)
        doc["publishable"] = False
        return doc


def privacy_status(out_codes: np.ndarray, cols: dict, models: Sequence) -> list[dict]:
    """Each privacy model on the classes of ``out_codes``: satisfied, and the worst class."""
    from .models import TCloseness, encode_sensitive

    if not models:
        return []
    cls, sizes = equivalence_classes(out_codes)
    out = []
    for m in models:
        sc = encode_sensitive(cols, m.sensitive, ordered=getattr(m, "ordered", False))
        from .models import class_table

        tab = class_table(cls, len(sizes), sc.codes, sc.size)
        vals = m.measure(tab, sc.overall)
        out.append({**m.to_dict(), "satisfied": bool(m.check_table(tab, sc.overall).all()),
                    "worst": float(vals.max() if isinstance(m, TCloseness) else vals.min())})
    return out


def merge_failing_classes(codes: np.ndarray, groups: np.ndarray, mask: np.ndarray, cols: dict,
                          models: Sequence, enc: EncodedQI | None = None,
                          constraints: Sequence[DiversityConstraint] = ()
                          ) -> tuple[np.ndarray, np.ndarray, int]:
    """Merge classes failing a privacy model into others until every class meets them.

    Suppression outputs publish classes of identical QI tuples; a class failing
    l-diversity or t-closeness is merged with the class whose union costs the
    fewest newly suppressed cells (columns where the two tuples differ become
    ``*``), preferring unions that pass and keeping every constraint's lower
    bound. Merging only makes classes larger, so k-anonymity is kept.

    Returns
    -------
    (groups, mask, merges)

    Raises
    ------
    InfeasibleError
        The whole table fails a model, or no merge keeps the constraints.
    """
    from ..errors import InfeasibleError
    from .models import class_table, encode_sensitive

    if not models:
        return groups, mask, 0
    sens = [(m, encode_sensitive(cols, m.sensitive, ordered=getattr(m, "ordered", False)))
            for m in models]
    for m, sc in sens:
        whole = class_table(np.zeros(len(sc.codes), dtype=np.int64), 1, sc.codes, sc.size)
        if not m.check_table(whole, sc.overall)[0]:
            raise InfeasibleError(f"the whole table fails {m.to_dict()}: no anonymization of it "
                                  "can meet that model")
    out = suppressed_codes(codes, mask)
    cls, sizes = equivalence_classes(out)
    nc = len(sizes)
    first = np.zeros(nc, dtype=np.int64)
    first[cls[::-1]] = np.arange(len(cls))[::-1]
    rep = out[first].astype(np.int64)           # the published tuple of each class
    size = sizes.astype(np.int64)
    tabs = [class_table(cls, nc, sc.codes, sc.size).astype(np.int64) for _, sc in sens]
    alive = np.ones(nc, dtype=bool)
    owner = np.arange(nc)                       # class -> the class it was merged into
    cs = list(constraints)
    if cs and enc is not None:
        tgt = [[(enc.names.index(a), enc.code_of(a, v)) for a, v in c.target] for c in cs]
        lo = np.array([c.lo for c in cs], dtype=np.int64)

        def shows(r):  # (m,) or (nc, m): whether tuples show each target
            r = np.atleast_2d(r)
            return np.stack([np.all([r[:, j] == v for j, v in t], axis=0) for t in tgt], axis=1)

        vis = shows(rep)
        counts = (vis * size[:, None]).sum(axis=0)
    else:
        tgt = None

    def bad_of(idx):
        ok = np.ones(len(idx), dtype=bool)
        for (m, sc), t in zip(sens, tabs):
            ok &= m.check_table(t[idx], sc.overall)
        return ~ok

    merges = 0
    failing = set(np.flatnonzero(bad_of(np.arange(nc))).tolist())
    while failing:
        c = min(failing, key=lambda x: (size[x], x))
        live = np.flatnonzero(alive)
        live = live[live != c]
        if not live.size:  # pragma: no cover - the whole table passes, checked above
            raise InfeasibleError("no class left to merge with")
        R = rep[live]
        diff = (R != rep[c][None, :]) | (R < 0) | (rep[c][None, :] < 0)
        cost = (size[live] * ((R >= 0) & diff).sum(axis=1)
                + size[c] * ((rep[c] >= 0)[None, :] & diff).sum(axis=1)).astype(float)
        passes = np.ones(len(live), dtype=bool)
        for (m, sc), t in zip(sens, tabs):
            passes &= m.check_table(t[live] + t[c][None, :], sc.overall)
        order = np.lexsort((cost, ~passes))
        chosen = None
        for i in order:
            d = int(live[i])
            new = np.where(diff[i], -1, rep[c])
            if tgt is not None:
                nv = shows(new)[0]
                delta = nv * (size[c] + size[d]) - vis[c] * size[c] - vis[d] * size[d]
                if np.any((counts + delta < lo) & (delta < 0)):
                    continue
            chosen = (d, new)
            break
        if chosen is None:
            raise InfeasibleError("no merge of a class failing a privacy model keeps every "
                                  "constraint's lower bound")
        d, new = chosen
        # merge c into d, then any other class that now publishes the same tuple
        group = [c, d]
        same = np.flatnonzero(alive & np.all(rep == new[None, :], axis=1))
        group += [int(e) for e in same if e not in group]
        keep = d
        for e in group:
            if e == keep:
                continue
            size[keep] += size[e]
            for t in tabs:
                t[keep] += t[e]
            alive[e] = False
            owner[e] = keep
            failing.discard(e)
        rep[keep] = new
        if tgt is not None:
            vis[keep] = shows(new)[0]
            counts = (vis[alive] * size[alive][:, None]).sum(axis=0)
        merges += 1
        if bad_of(np.array([keep]))[0]:
            failing.add(keep)
        else:
            failing.discard(keep)
    # resolve owners (chains of merges) and write back rows
    root = owner.copy()
    for _ in range(nc):
        nxt = owner[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    final = root[cls]
    mask = mask | (rep[final] < 0)
    groups = final.astype(np.int64)
    return groups, mask, merges


def build_result(table: Any, cols: dict, enc: EncodedQI, k: int, groups: np.ndarray,
                 method: str, constraints: Sequence[DiversityConstraint] = (),
                 mask: np.ndarray | None = None, stats: dict | None = None,
                 marker: str = SUPPRESSED, t0: float | None = None,
                 models: Sequence = (), enforce_constraints: bool = True) -> Anonymization:
    """Assemble an :class:`Anonymization` from a clustering (and optional extra suppression).

    With privacy ``models``, classes failing them are merged first
    (:func:`merge_failing_classes`), keeping the constraints' lower bounds when
    ``enforce_constraints`` (DIVA; the baselines only report the constraints).
    """
    if mask is None:
        mask = suppression_mask(enc.codes, groups)
    st = dict(stats or {})
    if models:
        groups, mask, merges = merge_failing_classes(
            enc.codes, groups, mask, cols, models, enc,
            constraints if enforce_constraints else ())
        st["model_merges"] = merges
    out_codes = suppressed_codes(enc.codes, mask)
    sizes = np.bincount(np.unique(groups, return_inverse=True)[1])
    if sizes.size and sizes.min() < k:
        raise AssertionError(f"internal error: a cluster has {sizes.min()} < k = {k} rows")
    new = {}
    for j, name in enumerate(enc.names):
        if not mask[:, j].any():
            continue  # nothing suppressed: the column is published as it is (its dtype kept)
        s = cell_text(cols[name], name=name).copy()
        s[mask[:, j]] = marker
        new[name] = s
    out_table = replace_columns(table, new)
    counts = visible_counts(enc, out_codes, constraints)
    status = [ConstraintStatus(c, int(n)) for c, n in zip(constraints, counts)]
    if t0 is not None:
        st["runtime_s"] = time.perf_counter() - t0
    return Anonymization(table=out_table, k=k, qi=list(enc.names), method=method,
                         groups=np.asarray(groups), suppressed=mask,
                         metrics=anonymity_metrics(out_codes), constraints=status, stats=st,
                         marker=marker, privacy=privacy_status(out_codes, cols, models))
