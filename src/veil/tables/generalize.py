"""Generalization with hierarchies: full-domain (global) recoding, local recoding, Mondrian.

Each quasi-identifier (QI) has a hierarchy (:mod:`veil.tables.hierarchy`): a
published cell is the value's label at some level (level 0 = the value
itself, which is written byte for byte as in the input). Rows that cannot be
published within the privacy requirements are *suppressed*: every QI cell
shows the marker (``*``). The suppressed rows form one class of their own,
so it too must have at least k rows and meet the privacy models, or be
empty; when a solution leaves 1..k-1 rows suppressed, the smallest passing
classes join them (counted against the limit). Otherwise a suppressed group
of one row would single that row out.

**Full-domain (global) recoding**, :func:`global_recoding`: one level per
attribute for the whole table (a node of the generalization lattice, the
product of the hierarchies' levels). At a node the rows of classes with fewer
than k rows or failing a privacy model (:mod:`veil.tables.models`) must be
suppressed. The node is *feasible* when some suppressed set S holding them,
of at most ``max_suppression`` of the rows, empty or of at least k rows,
leaving every class with 0 or at least k rows, makes every diversity
constraint hold on the published text; its loss is that of the least-loss
such S. S is the forced rows when they suffice; otherwise an integer program
over the classes decides (:func:`_extra_suppression`, HiGHS; rows of a class
suppressed cheapest first). With privacy models the extra rows are whole
classes (the smallest passing ones complete fewer than k forced rows) and S
must pass the models, else the node is *undecided* (``proved=False``). The
search returns the feasible node of least loss (``metric``):

* ``"granularity"``: mean over QI cells of ``(leaves(label) - 1) / (leaves - 1)``
  (1 for a suppressed cell);
* ``"nue"``: non-uniform entropy in bits (:mod:`veil.tables.metrics`).

The lattice search (``search="flash"``) is exact, in the spirit of Flash
(Kohlmayer et al. 2012) and OLA: nodes are visited in increasing order of a
lower bound of their loss, the loss of generalizing every row without
suppression (a sum of per-attribute terms, monotone in every level; a
suppressed cell costs at least as much as any label). *Predictive tagging by
monotonicity*: the rows k-anonymity and distinct l-diversity would suppress
can only shrink when a level grows, so a node needing more than the limit
for them proves every specialization (every node below it) infeasible, and
those are never evaluated. The search stops at the first node whose bound is
not below the best loss found: no later node can do better, so the result is
the lattice optimum. ``search="exhaustive"`` evaluates every node (for
checking).

**Local recoding**, :func:`local_recoding`: top-down specialization
(multidimensional, Mondrian-like, over hierarchy levels). A partition starts
with every attribute at its top label; it is split on one attribute by
lowering that attribute one level: rows are grouped by their label one level
down; groups of at least k rows that meet the models become partitions; the
other rows stay together at the parent label (the *residual*; if it is too
small, the smallest groups join it, or, within the suppression budget, its
rows are suppressed). The split with the largest loss reduction is taken,
and partitions are split until no split helps. Different rows with the same
value may end at different levels.

**Mondrian on the same hierarchy**, :func:`mondrian_generalize` (LeFevre,
DeWitt, Ramakrishnan 2006, the baseline): ordered (numeric) attributes are
split at the median, categorical ones into the children of their lowest
common ancestor, every part needing k rows and meeting the privacy models
(a partition is split only then); the attribute of widest normalized range
goes first. Each final partition publishes, per attribute, the lowest common
ancestor of its values in the hierarchy.

Diversity constraints count rows whose *published* text shows the target
values. Global recoding decides them per node (above). Local recoding splits
first the attributes of targets whose lower bound is not met yet, then lowers
counts above an upper bound by generalizing one target attribute in whole
partitions (a subset of partitions whose sizes fit the excess, keeping
every lower bound). When that greedy pass misses a constraint, DIVA's
clusters for the lower bounds (:func:`veil.tables.diverse.diva`, its
clustering phase) are published at their rows' lowest common labels and the
other rows are recoded top-down; so local recoding meets every constraint
set DIVA meets, and reports ``proved=True`` only when no local recoding
exists.

What generalization protects is the k-anonymity (and model) statement on the
published tuples; it is not differential privacy (see ``docs/tables.md``).
"""

from __future__ import annotations

import heapq
import itertools
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import DataError, InfeasibleError, InstanceTooLargeError, ParameterError
from ..validation import check_choice
from .anonymity import Anonymization, anonymity_metrics, prepare
from .constraints import DiversityConstraint, check_constraints_against, parse_constraints
from .hierarchy import EncodedHierarchy, Hierarchy
from .models import PrivacyModel, SensitiveColumn, check_models, class_table, encode_sensitive
from .validate import ConstraintStatus

__all__ = ["global_recoding", "local_recoding", "mondrian_generalize", "METRICS",
           "GeneralizationInfeasibleError", "lattice_size"]

METRICS = ("granularity", "nue")
#: Largest lattice the global search enumerates.
MAX_LATTICE = 5_000_000


class GeneralizationInfeasibleError(InfeasibleError):
    """No generalization meets the requirements (``proved`` as in DIVA)."""

    def __init__(self, message: str, *, proved: bool, stats: dict | None = None):
        self.proved = proved
        self.stats = stats or {}
        super().__init__(message)


# --------------------------------------------------------------------------- set-up

@dataclass
class _Setup:
    table: Any
    cols: dict
    names: list
    codes: np.ndarray
    values: list
    hier: list
    k: int
    models: list
    sens: dict
    constraints: list
    max_supp: int
    metric: str
    marker: str
    gc: list        # gc[j][l]: (n,) label ids of column j at level l
    gran: list      # gran[j][l]: (n,) granularity of each row's cell at level l
    nue: list       # nue[j][l]: (n,) NUE bits of each row's cell at level l
    supp_gran: np.ndarray  # (n, q) cost of a suppressed cell
    supp_nue: np.ndarray

    @property
    def n(self) -> int:
        return self.codes.shape[0]

    @property
    def q(self) -> int:
        return self.codes.shape[1]

    def heights(self) -> list[int]:
        return [h.height for h in self.hier]

    def row_cost(self, j: int, level: int) -> np.ndarray:
        return self.gran[j][level] if self.metric == "granularity" else self.nue[j][level]

    def supp_cost(self) -> np.ndarray:
        return self.supp_gran if self.metric == "granularity" else self.supp_nue

    def scale(self) -> float:
        """Divisor turning summed cell costs into the metric's value."""
        return float(self.n * self.q) if self.metric == "granularity" else 1.0


def _setup(table, *, k, qi, hierarchies, models, constraints, max_suppression, metric,
           marker) -> _Setup:
    cols, enc, k = prepare(table, k=k, qi=qi, marker=marker)
    metric = check_choice(metric, "metric", METRICS)
    try:
        ms = float(max_suppression)
    except (TypeError, ValueError):
        raise ParameterError(f"max_suppression must be a share of rows in [0, 1], got "
                             f"{max_suppression!r}") from None
    if not 0.0 <= ms <= 1.0:
        raise ParameterError(f"max_suppression must be a share of rows in [0, 1], got {ms}")
    models = check_models(models, enc.names)
    if isinstance(constraints, str):
        constraints = parse_constraints(constraints, columns=list(cols), k=k)
    cs = list(constraints)
    check_constraints_against(cs, k=k, attributes=enc.names, what="quasi-identifiers")
    for c in cs:
        for a, v in c.target:
            if v == marker:
                raise ParameterError(f"constraint {c.to_text()!r} targets the suppression "
                                     f"marker {marker!r}")
    hierarchies = dict(hierarchies or {})
    unknown = sorted(set(hierarchies) - set(enc.names))
    if unknown:
        raise ParameterError(f"hierarchies given for {unknown}, which are not quasi-identifiers "
                             f"({', '.join(enc.names)})")
    hier: list[EncodedHierarchy] = []
    for j, name in enumerate(enc.names):
        h = hierarchies.get(name)
        if h is None:  # no hierarchy: the attribute is kept or suppressed (value -> marker)
            h = Hierarchy.flat(enc.values[j].tolist(), top=marker, name=name)
        elif not isinstance(h, Hierarchy):
            raise ParameterError(f"hierarchies[{name!r}] must be a Hierarchy, got "
                                 f"{type(h).__name__}")
        hier.append(h.encode(list(enc.values[j]), column=name))
    sens: dict[str, SensitiveColumn] = {}
    for m in models:
        key = (m.sensitive, getattr(m, "ordered", False))
        if key not in sens:
            sens[key] = encode_sensitive(cols, m.sensitive, ordered=key[1])
    n, q = enc.codes.shape
    gc, gran, nue = [], [], []
    supp_gran = np.ones((n, q))
    supp_nue = np.empty((n, q))
    for j, h in enumerate(hier):
        cj = enc.codes[:, j]
        n_v = np.bincount(cj, minlength=len(h.gen[0]))
        gc.append([h.gen[lev][cj] for lev in range(h.height + 1)])
        gran.append([h.granularity(lev)[h.gen[lev][cj]] for lev in range(h.height + 1)])
        nue_j = []
        for lev in range(h.height + 1):
            n_g = np.bincount(h.gen[lev][cj], minlength=len(h.text[lev]))
            nue_j.append(np.log2(n_g[h.gen[lev][cj]] / n_v[cj]))
        nue.append(nue_j)
        supp_nue[:, j] = np.log2(n / n_v[cj])
    return _Setup(table, cols, list(enc.names), enc.codes, enc.values, hier, k, models, sens, cs,
                  int(np.floor(ms * n + 1e-9)), metric, marker, gc, gran, nue, supp_gran,
                  supp_nue)


def _classes(keys: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Class id of each row for the tuple of label-id columns, and class sizes."""
    key = np.zeros(len(keys[0]), dtype=np.int64)
    span = 1
    for col in keys:
        m = int(col.max()) + 1 if col.size else 1
        if span * m >= 2 ** 62:
            _, key = np.unique(key, return_inverse=True)
            key = key.reshape(-1).astype(np.int64)
            span = int(key.max()) + 1 if key.size else 1
        key = key * m + col
        span *= m
    _, inv, sizes = np.unique(key, return_inverse=True, return_counts=True)
    return inv.reshape(-1), sizes


def _failing(st: _Setup, cls: np.ndarray, sizes: np.ndarray, *, monotone_only: bool = False
             ) -> np.ndarray:
    """Per class: fails k or a privacy model (only the monotone ones if asked)."""
    bad = sizes < st.k
    for m in st.models:
        if monotone_only and not m.monotone:
            continue
        s = st.sens[(m.sensitive, getattr(m, "ordered", False))]
        ok = m.check_table(class_table(cls, len(sizes), s.codes, s.size), s.overall)
        bad |= ~ok
    return bad


def _group_ok(st: _Setup, rows: np.ndarray) -> bool:
    """Whether one group of rows (a class) has k rows and meets every model."""
    if len(rows) < st.k:
        return False
    for m in st.models:
        s = st.sens[(m.sensitive, getattr(m, "ordered", False))]
        t = np.bincount(s.codes[rows], minlength=s.size)[None, :]
        if not m.check_table(t, s.overall)[0]:
            return False
    return True


def _complete_suppression(st: _Setup, supp: np.ndarray, cls: np.ndarray, sizes: np.ndarray,
                          bad: np.ndarray) -> np.ndarray | None:
    """Make the suppressed group empty or a passing class: add the smallest passing classes.

    Returns the final suppressed-row mask, or None when no passing group can be formed.
    """
    if not supp.any():
        return supp
    if _group_ok(st, np.flatnonzero(supp)):
        return supp
    supp = supp.copy()
    order = [c for c in np.argsort(sizes, kind="stable") if not bad[c]]
    for c in order:
        supp |= cls == c
        if _group_ok(st, np.flatnonzero(supp)):
            return supp
    return None


def _published_match(st: _Setup, levels_of, supp: np.ndarray, c: DiversityConstraint
                     ) -> np.ndarray:
    """Rows whose published text shows the constraint's target (suppressed rows never do)."""
    m = ~supp
    for a, v in c.target:
        j = st.names.index(a)
        lev = levels_of(j)
        if np.isscalar(lev):
            texts = st.hier[j].text[int(lev)]
            hit = np.asarray(texts == v, dtype=bool)
            m &= hit[st.gc[j][int(lev)]]
        else:
            ok = np.zeros(st.n, dtype=bool)
            for l_ in np.unique(lev):
                sel = lev == l_
                hit = np.asarray(st.hier[j].text[int(l_)] == v, dtype=bool)
                ok[sel] = hit[st.gc[j][int(l_)][sel]]
            m &= ok
    return m


def lattice_size(heights: Sequence[int]) -> int:
    """Number of nodes of the generalization lattice."""
    return int(np.prod([h + 1 for h in heights])) if heights else 1


# --------------------------------------------------------------------------- global

@dataclass
class _NodeResult:
    node: tuple
    feasible: bool
    mono_fail: bool
    loss: float
    suppressed: np.ndarray | None
    reason: str = ""
    milp: bool = False        # extra suppression decided by the integer program
    undecided: bool = False   # the program's answer could not be confirmed (models)


def _loss_with(st: _Setup, node: tuple, base: list, supp: np.ndarray) -> float:
    total = sum(base[j][node[j]] for j in range(st.q))
    if supp.any():
        rows = np.flatnonzero(supp)
        total += float(st.supp_cost()[rows].sum()) - sum(float(st.row_cost(j, node[j])[rows].sum())
                                                         for j in range(st.q))
    return total / st.scale()


def _constraints_hold(st: _Setup, node: tuple, supp: np.ndarray) -> str:
    """The first constraint failing on the node's published text, or ''."""
    for c in st.constraints:
        cnt = int(_published_match(st, lambda j: node[j], supp, c).sum())
        if not c.holds(cnt):
            return f"constraint {c.to_text()}"
    return ""


def _evaluate(st: _Setup, node: tuple, base: list) -> _NodeResult:
    none = np.zeros(st.n, dtype=bool)
    for c in st.constraints:  # suppression only lowers counts: a lower bound short already fails
        if c.lo > 0 and int(_published_match(st, lambda j: node[j], none, c).sum()) < c.lo:
            return _NodeResult(node, False, False, np.inf, None, f"constraint {c.to_text()}")
    keys = [st.gc[j][node[j]] for j in range(st.q)]
    cls, sizes = _classes(keys)
    bad_mono = _failing(st, cls, sizes, monotone_only=True)
    mono_rows = int(sizes[bad_mono].sum())
    if mono_rows > st.max_supp:
        return _NodeResult(node, False, True, np.inf, None, "suppression limit (monotone)")
    bad = _failing(st, cls, sizes) if len(st.models) else bad_mono
    forced = bad[cls]
    if int(forced.sum()) > st.max_supp:
        return _NodeResult(node, False, False, np.inf, None, "suppression limit")
    complete = not forced.any() or _group_ok(st, np.flatnonzero(forced))
    if complete or st.models:  # forced rows alone, or completed by the smallest classes
        supp = forced if complete else _complete_suppression(st, forced, cls, sizes, bad)
        if supp is not None and int(supp.sum()) <= st.max_supp:
            why = _constraints_hold(st, node, supp)
            if not why:
                return _NodeResult(node, True, False, _loss_with(st, node, base, supp), supp)
        else:
            why = "suppression limit"
        if not st.constraints:
            return _NodeResult(node, False, False, np.inf, supp, why)
    else:
        why = "completion of the suppressed class"
    # the least-loss suppressed set holding the forced rows and meeting the constraints
    # (without models: also the least-loss completion of fewer than k forced rows)
    got, undecided = _extra_suppression(st, node, cls, sizes, bad)
    if got is None:
        return _NodeResult(node, False, False, np.inf, None, why, milp=True, undecided=undecided)
    return _NodeResult(node, True, False, _loss_with(st, node, base, got), got, milp=True)


def _extra_suppression(st: _Setup, node: tuple, cls: np.ndarray, sizes: np.ndarray,
                       bad: np.ndarray) -> tuple[np.ndarray | None, bool]:
    """The least-loss suppressed rows S of a node meeting the constraints: (S or None, undecided).

    S holds the rows of the classes failing k or a model, at most the limit of
    rows, and is empty or has k rows; every other class keeps 0 or at least k
    rows (without privacy models rows may be taken from a class, the cheapest
    first; with models only whole classes, so the classes left still pass, and S
    is checked against the models afterwards: if it fails, ``undecided``). An
    integer program over the classes (HiGHS): ``s_c`` rows suppressed in class
    c, ``z_c`` whether all of them; each constraint bounds the rows kept in the
    classes whose labels show its target; the loss of suppressing s rows of a
    class is the sum of its s cheapest rows' costs (convex, as the maximum of
    its segments). The answer is re-checked on the rows in exact arithmetic.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix

    n, q, k = st.n, st.q, st.k
    P = np.flatnonzero(~bad)
    p = len(P)
    F = int(sizes[bad].sum())
    budget = st.max_supp - F
    if p == 0:
        return None, False
    f = sizes[P].astype(np.int64)
    pos = np.full(len(sizes), -1, dtype=np.int64)
    pos[P] = np.arange(p)
    extra = st.supp_cost().sum(axis=1) - sum(st.row_cost(j, node[j]) for j in range(q))
    order = np.lexsort((extra, cls))          # rows by class, cheapest first
    shows = []
    for c in st.constraints:
        m = _published_match(st, lambda j: node[j], np.zeros(n, dtype=bool), c)
        sc = np.zeros(len(sizes), dtype=bool)
        sc[cls[m]] = True
        shows.append(sc[P])
    whole = bool(st.models)
    nv = 3 * p + 1                             # s (p), z (p), w, t (p)
    S, Z, W, T = 0, p, 2 * p, 2 * p + 1
    rows, cols, vals, lb, ub = [], [], [], [], []

    def add(entries, lo, hi):
        r = len(lb)
        for col, v in entries:
            rows.append(r)
            cols.append(col)
            vals.append(v)
        lb.append(lo)
        ub.append(hi)

    for i in range(p):
        if whole:
            add([(S + i, 1.0), (Z + i, -float(f[i]))], 0.0, 0.0)
        else:
            add([(S + i, 1.0), (Z + i, -float(k))], -np.inf, float(f[i] - k))
            add([(S + i, 1.0), (Z + i, -float(f[i]))], 0.0, np.inf)
    allS = [(S + i, 1.0) for i in range(p)]
    add(allS, -np.inf, float(budget))
    add(allS + [(W, -float(k))], -float(F), np.inf)
    add(allS + [(W, -float(n))], -np.inf, -float(F))
    for c, sh in zip(st.constraints, shows):
        idx = np.flatnonzero(sh)
        tot = int(f[idx].sum())
        if tot < c.lo:
            return None, False                 # suppression only lowers counts
        hi = np.inf if c.hi == np.inf else float(tot - c.hi)
        add([(S + int(i), 1.0) for i in idx], max(hi, 0.0) if hi != np.inf else 0.0,
            float(tot - c.lo))
    # the cost of s suppressed rows of a class: max over segments of equal row cost
    ecls = extra[order]
    ccls = cls[order]
    starts = np.flatnonzero(np.r_[True, ccls[1:] != ccls[:-1]])
    for a, b in zip(starts, np.r_[starts[1:], n]):
        i = pos[ccls[a]]
        if i < 0:
            continue
        e = ecls[a:b]
        pref = np.r_[0.0, np.cumsum(e)]
        seg = np.flatnonzero(np.r_[True, e[1:] != e[:-1]])
        for s0 in seg:  # t >= pref[s0] + e[s0] (s - s0)
            add([(T + int(i), 1.0), (S + int(i), -float(e[s0]))],
                float(pref[s0] - e[s0] * s0), np.inf)
    A = csr_matrix((vals, (rows, cols)), shape=(len(lb), nv))
    cost = np.zeros(nv)
    cost[T:] = 1.0
    lo_b = np.zeros(nv)
    hi_b = np.r_[f.astype(float), np.ones(p), 1.0, np.full(p, np.inf)]
    integ = np.r_[np.ones(2 * p + 1), np.zeros(p)]
    res = milp(c=cost, constraints=LinearConstraint(A, np.array(lb), np.array(ub)),
               integrality=integ, bounds=Bounds(lo_b, hi_b),
               options={"time_limit": 60.0})
    if res.status == 2:
        return None, False                     # proved: no such suppression
    if res.status != 0 or res.x is None:
        return None, True
    s_int = np.rint(res.x[S:S + p]).astype(np.int64)
    supp = bad[cls].copy()
    for a, b in zip(starts, np.r_[starts[1:], n]):
        i = pos[ccls[a]]
        if i >= 0 and s_int[i] > 0:
            supp[order[a:a + int(s_int[i])]] = True
    # exact re-check on the rows
    kept = np.bincount(cls[~supp], minlength=len(sizes))
    ok = (int(supp.sum()) <= st.max_supp and (not supp.any() or int(supp.sum()) >= k)
          and bool(np.all((kept[P] == 0) | (kept[P] >= k))) and not _constraints_hold(
              st, node, supp))
    if ok and supp.any() and st.models and not _group_ok(st, np.flatnonzero(supp)):
        return None, True
    return (supp, False) if ok else (None, True)


def _search(st: _Setup, search: str) -> tuple[_NodeResult | None, dict]:
    heights = st.heights()
    size = lattice_size(heights)
    if size > MAX_LATTICE:
        raise InstanceTooLargeError(f"the generalization lattice has {size} nodes (limit "
                                    f"{MAX_LATTICE}); use coarser hierarchies or fewer QIs")
    base = [[float(st.row_cost(j, lev).sum()) for lev in range(heights[j] + 1)]
            for j in range(st.q)]
    scale = st.scale()

    def bound(node):
        return sum(base[j][node[j]] for j in range(st.q)) / scale

    stats = {"lattice_nodes": size, "evaluated": 0, "pruned_by_tagging": 0,
             "feasible_evaluated": 0, "suppression_programs": 0, "undecided": 0}
    best: _NodeResult | None = None
    if search == "exhaustive":
        for node in itertools.product(*[range(h + 1) for h in heights]):
            r = _evaluate(st, node, base)
            stats["evaluated"] += 1
            stats["suppression_programs"] += r.milp
            stats["undecided"] += r.undecided
            if r.feasible:
                stats["feasible_evaluated"] += 1
                if best is None or r.loss < best.loss - 1e-12:
                    best = r
        return best, stats
    # predictive tagging: `failed` holds nodes failing the monotone criteria (so does every
    # node below them); before evaluating a node, a binary search along a path from it to the
    # top finds the highest failing node of that path, which tags a whole cone at once
    failed = np.empty((0, st.q), dtype=np.int64)
    mono_cache: dict[tuple, bool] = {}

    def mono_fails(node):
        if node not in mono_cache:
            keys = [st.gc[j][node[j]] for j in range(st.q)]
            cls, sizes = _classes(keys)
            bad = _failing(st, cls, sizes, monotone_only=True)
            mono_cache[node] = int(sizes[bad].sum()) > st.max_supp
            stats["monotone_checks"] += 1
        return mono_cache[node]

    def tagged(arr):
        return failed.shape[0] and bool(np.any(np.all(arr[None, :] <= failed, axis=1)))

    def add_failed(node):
        nonlocal failed
        arr = np.asarray(node)
        if tagged(arr):
            return
        keep = ~np.all(failed <= arr[None, :], axis=1) if failed.shape[0] else None
        failed = np.vstack([failed[keep] if keep is not None else failed, arr[None, :]])

    def path_up(node):
        """Nodes from `node` to the top, raising the attribute whose bound grows least."""
        out = [node]
        cur = list(node)
        while any(cur[j] < heights[j] for j in range(st.q)):
            j = min((j for j in range(st.q) if cur[j] < heights[j]),
                    key=lambda j: base[j][cur[j] + 1] - base[j][cur[j]])
            cur[j] += 1
            out.append(tuple(cur))
        return out

    stats["monotone_checks"] = 0
    start = tuple(0 for _ in heights)
    heap = [(bound(start), start)]
    seen = {start}
    while heap:
        lb, node = heapq.heappop(heap)
        if best is not None and lb >= best.loss - 1e-12:
            stats["stopped_at_bound"] = lb
            break
        for j in range(st.q):
            if node[j] < heights[j]:
                nxt = node[:j] + (node[j] + 1,) + node[j + 1:]
                if nxt not in seen:
                    seen.add(nxt)
                    heapq.heappush(heap, (bound(nxt), nxt))
        arr = np.asarray(node)
        if tagged(arr):
            stats["pruned_by_tagging"] += 1
            continue
        if mono_fails(node):
            path = path_up(node)
            lo_i, hi_i = 0, len(path) - 1  # path[lo_i] fails; find the last failing index
            if mono_fails(path[hi_i]):
                add_failed(path[hi_i])
                break  # the top fails: so does every node
            while hi_i - lo_i > 1:
                mid = (lo_i + hi_i) // 2
                if mono_fails(path[mid]):
                    lo_i = mid
                else:
                    hi_i = mid
            add_failed(path[lo_i])
            stats["pruned_by_tagging"] += 1
            continue
        r = _evaluate(st, node, base)
        stats["evaluated"] += 1
        stats["suppression_programs"] += r.milp
        stats["undecided"] += r.undecided
        if r.feasible:
            stats["feasible_evaluated"] += 1
            if best is None or r.loss < best.loss - 1e-12:
                best = r
    stats["queued"] = len(seen)
    return best, stats


def _result(st: _Setup, method: str, levels: np.ndarray, supp_rows: np.ndarray,
            stats: dict, t0: float, extra: dict | None = None) -> Anonymization:
    """The published table and its metrics from a level per cell and suppressed rows."""
    from .data import cell_text, replace_columns
    from .metrics import utility_metrics

    n, q = st.n, st.q
    out_codes = np.empty((n, q), dtype=np.int64)
    new = {}
    for j, name in enumerate(st.names):
        text = cell_text(st.cols[name], name=name).copy()
        off = 0
        col = np.empty(n, dtype=np.int64)
        for lev in range(st.hier[j].height + 1):
            m = levels[:, j] == lev
            if m.any():
                lab = st.gc[j][lev][m]
                if lev > 0:
                    text[m] = st.hier[j].text[lev][lab]
                col[m] = lab + off
            off += len(st.hier[j].text[lev])
        text[supp_rows] = st.marker
        col[supp_rows] = -1
        out_codes[:, j] = col
        new[name] = text
    out_table = replace_columns(st.table, new)
    sup_cells = np.repeat(supp_rows[:, None], q, axis=1)
    metrics = anonymity_metrics(out_codes)
    metrics["suppressed_rows"] = int(supp_rows.sum())
    metrics["generalized_cells"] = int(((levels > 0) & ~sup_cells).sum())
    util = utility_metrics(st.codes, st.hier, levels=levels, suppressed=sup_cells,
                           names=st.names)
    status = []
    for c in st.constraints:
        cnt = int(_published_match(st, lambda j: levels[:, j], supp_rows, c).sum())
        status.append(ConstraintStatus(c, cnt))
    cls, sizes = _classes([out_codes[:, j] + 1 for j in range(q)])
    privacy = []
    for m in st.models:
        s = st.sens[(m.sensitive, getattr(m, "ordered", False))]
        tab = class_table(cls, len(sizes), s.codes, s.size)
        vals = m.measure(tab, s.overall)
        privacy.append({**m.to_dict(), "satisfied": bool(m.check_table(tab, s.overall).all()),
                        "worst": float(vals.max() if isinstance(m, _TC) else vals.min())})
    st_ = dict(stats)
    st_["runtime_s"] = time.perf_counter() - t0
    st_["utility"] = util
    if extra:
        st_.update(extra)
    res = Anonymization(table=out_table, k=st.k, qi=list(st.names), method=method,
                        groups=cls, suppressed=sup_cells, metrics=metrics, constraints=status,
                        stats=st_, marker=st.marker)
    res.levels = levels
    res.privacy = privacy
    return res


from .models import TCloseness as _TC  # noqa: E402  (used in _result)


def global_recoding(table: Any, *, k: int, qi: Sequence[str] | str,
                    hierarchies: Mapping[str, Hierarchy] | None = None,
                    max_suppression: float = 0.0, metric: str = "granularity",
                    models: Sequence[PrivacyModel] = (),
                    constraints: Sequence[DiversityConstraint] | str = (),
                    search: str = "flash", marker: str = "*") -> Anonymization:
    """Full-domain generalization: the optimal node of the hierarchy lattice.

    Parameters
    ----------
    table : DataFrame, pyarrow Table, TextTable or mapping of columns
        Not modified; the result has the same kind.
    k : int
        Minimum class size (>= 2).
    qi : list of str or comma-separated str
    hierarchies : mapping of QI name to :class:`~veil.tables.hierarchy.Hierarchy`
        A QI without one can only be kept or replaced by the marker (flat hierarchy).
    max_suppression : float
        Largest share of rows that may be suppressed (every QI cell ``*``).
    metric : {"granularity", "nue"}
        The loss minimized (module docstring).
    models : sequence of PrivacyModel
        l-diversity / t-closeness every published class must meet.
    constraints : diversity constraints (or their text)
        Counted on the published text; every node reported must meet them.
    search : {"flash", "exhaustive"}
        Bound-ordered search with predictive tagging, or every node.
    marker : str

    Returns
    -------
    Anonymization
        ``stats["node"]`` is the chosen level per QI, ``stats["loss"]`` its loss;
        ``stats["evaluated"]`` how many nodes were evaluated.

    Raises
    ------
    GeneralizationInfeasibleError
        No node of the lattice meets the requirements (``proved=True``: every
        node was evaluated or excluded by a monotonicity argument).

    Examples
    --------
    >>> import pandas as pd
    >>> from veil.tables.hierarchy import Hierarchy
    >>> df = pd.DataFrame({"age": ["31", "32", "33", "34"], "sex": ["F", "F", "M", "M"]})
    >>> h = {"age": Hierarchy.intervals(range(30, 40), [2, 10])}
    >>> r = global_recoding(df, k=2, qi=["age", "sex"], hierarchies=h)
    >>> r.table["age"].tolist(), r.table["sex"].tolist(), r.stats["node"], r.stats["loss"]
    (['30~39', '30~39', '30~39', '30~39'], ['F', 'F', 'M', 'M'], [2, 0], 0.5)
    """
    t0 = time.perf_counter()
    search = check_choice(search, "search", ("flash", "exhaustive"))
    st = _setup(table, k=k, qi=qi, hierarchies=hierarchies, models=models,
                constraints=constraints, max_suppression=max_suppression, metric=metric,
                marker=marker)
    best, stats = _search(st, search)
    if best is None:
        raise GeneralizationInfeasibleError(
            f"no node of the generalization lattice ({stats['lattice_nodes']} nodes) meets "
            f"k = {st.k}" + (", the privacy models" if st.models else "")
            + (", the constraints" if st.constraints else "")
            + f" with at most {st.max_supp} suppressed rows"
            + ("" if not stats["undecided"] else f" ({stats['undecided']} nodes undecided: "
               "this does not prove that none exists)"), proved=not stats["undecided"],
            stats=stats)
    levels = np.repeat(np.asarray(best.node, dtype=np.int64)[None, :], st.n, axis=0)
    stats.update(node=list(best.node), loss=best.loss, metric=st.metric, search=search,
                 extra_suppression=best.milp,
                 max_suppressed_rows=st.max_supp)
    return _result(st, f"global/{search}", levels, best.suppressed, stats, t0)


# --------------------------------------------------------------------------- local

@dataclass
class _Part:
    rows: np.ndarray
    levels: np.ndarray   # (q,) current level of every attribute
    frozen: frozenset    # attributes this partition may not lower any further


def _split_plan(st: _Setup, p: _Part, j: int, budget: int):
    """How lowering attribute j splits partition p: (gain, parts, residual, suppressed) or None.

    ``parts`` are row arrays that go one level down on j; ``residual`` keeps the
    parent label (and j frozen); ``suppressed`` rows are suppressed (within ``budget``).
    """
    lev = int(p.levels[j])
    child = st.gc[j][lev - 1][p.rows]
    uniq, inv, cnt = np.unique(child, return_inverse=True, return_counts=True)
    if len(uniq) < 2:  # one child: a free step down (a child never costs more)
        gain = float(st.row_cost(j, lev)[p.rows].sum() - st.row_cost(j, lev - 1)[p.rows].sum())
        return gain, [p.rows], np.empty(0, np.int64), np.empty(0, np.int64)
    groups = [p.rows[inv.reshape(-1) == g] for g in range(len(uniq))]
    ok = [_group_ok(st, g) for g in groups]
    good = [g for g, o in zip(groups, ok) if o]
    rest = [g for g, o in zip(groups, ok) if not o]
    residual = np.concatenate(rest) if rest else np.empty(0, np.int64)
    suppressed = np.empty(0, np.int64)
    if residual.size and not _group_ok(st, residual):
        if residual.size <= budget:
            suppressed, residual = residual, np.empty(0, np.int64)
        else:
            good.sort(key=len)
            while good and not _group_ok(st, residual):
                residual = np.concatenate([residual, good.pop(0)])
            if not _group_ok(st, residual):
                return None
    if not good:
        return None
    cur = st.row_cost(j, lev)
    low = st.row_cost(j, lev - 1)
    gain = sum(float(cur[g].sum() - low[g].sum()) for g in good)
    if suppressed.size:
        sc = st.supp_cost()
        gain -= float(sc[suppressed].sum()) - sum(float(st.row_cost(a, int(p.levels[a]))
                                                        [suppressed].sum()) for a in range(st.q))
    return gain, good, residual, suppressed


def _match_rows(st: _Setup, c: DiversityConstraint, rows: np.ndarray, levels: np.ndarray
                ) -> np.ndarray:
    """Whether each of ``rows`` (not suppressed) shows the constraint's target now."""
    m = np.ones(len(rows), dtype=bool)
    for a, v in c.target:
        j = st.names.index(a)
        lv = levels[rows, j]
        ok = np.zeros(len(rows), dtype=bool)
        for l_ in np.unique(lv):
            sel = lv == l_
            hit = np.asarray(st.hier[j].text[int(l_)] == v, dtype=bool)
            ok[sel] = hit[st.gc[j][int(l_)][rows[sel]]]
        m &= ok
    return m


def _targets_of_rows(st: _Setup, c: DiversityConstraint) -> np.ndarray:
    """Rows whose input values show the target (the rows that could count for it)."""
    return _match_rows(st, c, np.arange(st.n), np.zeros((st.n, st.q), dtype=np.int64))


def local_recoding(table: Any, *, k: int, qi: Sequence[str] | str,
                   hierarchies: Mapping[str, Hierarchy] | None = None,
                   max_suppression: float = 0.0, metric: str = "granularity",
                   models: Sequence[PrivacyModel] = (),
                   constraints: Sequence[DiversityConstraint] | str = (),
                   marker: str = "*", seed: int | None = None, rng: Any = None) -> Anonymization:
    """Local recoding by top-down specialization over the hierarchies (module docstring).

    Parameters are those of :func:`global_recoding` (no ``search``), and:

    seed, rng
        Randomness of DIVA's random candidate clusterings, used only when the
        constraints need DIVA's clusters (default: OS entropy; ``seed`` makes
        runs reproducible, for experiments).

    With constraints, the top-down specialization runs first; when it misses a
    constraint, the rows of DIVA's clusters for the lower bounds are published
    at their clusters' lowest common ancestors and the other rows are recoded
    top-down (``stats["strategy"]``). Local recoding therefore meets every
    constraint set DIVA meets on the same table.

    Raises
    ------
    GeneralizationInfeasibleError
        ``proved=True`` when no local recoding exists: the whole table (at the
        top labels) fails k or a model beyond the suppression limit, Sigma is
        unsatisfiable, or a constraint asks for more rows than show its target
        (when no generalized label equals a target value). ``proved=False``
        when the search gave up (DIVA found no clustering, or a privacy model
        failed on the clusters it needs).

    Examples
    --------
    >>> import pandas as pd
    >>> from veil.tables.hierarchy import Hierarchy
    >>> df = pd.DataFrame({"age": ["31", "32", "33", "34"], "sex": ["F", "F", "M", "M"]})
    >>> h = {"age": Hierarchy.intervals(range(30, 40), [2, 10])}
    >>> r = local_recoding(df, k=2, qi=["age", "sex"], hierarchies=h)
    >>> r.table["age"].tolist(), r.table["sex"].tolist()
    (['30~39', '30~39', '30~39', '30~39'], ['F', 'F', 'M', 'M'])

    Here only 3 rows may show ``Q1=x`` but the 5 ``Q0=a`` and 2 ``Q0=b`` rows must
    stay visible: the top-down pass misses it, DIVA's clusters do not (``Q1``
    generalized in a 2-row cluster of each ``Q0`` value):

    >>> df = pd.DataFrame({"Q0": ["a"] * 5 + ["b"] * 2, "Q1": ["x"] * 7})
    >>> r = local_recoding(df, k=2, qi=["Q0", "Q1"], seed=0,
    ...                    constraints="Q1=x: 3..3\\nQ0=a: 5..\\nQ0=b: 2..")
    >>> r.table["Q1"].tolist(), r.stats["strategy"], [s.count for s in r.constraints]
    (['x', 'x', 'x', '*', '*', '*', '*'], 'diva-clusters+top-down', [3, 5, 2])
    """
    t0 = time.perf_counter()
    st = _setup(table, k=k, qi=qi, hierarchies=hierarchies, models=models,
                constraints=constraints, max_suppression=max_suppression, metric=metric,
                marker=marker)
    n, q = st.n, st.q
    heights = np.array(st.heights(), dtype=np.int64)
    levels = np.repeat(heights[None, :], n, axis=0)
    supp = np.zeros(n, dtype=bool)
    stats: dict = {"strategy": "top-down"}
    try:
        leaves, splits = _top_down(st, np.arange(n), levels, supp, chase_lower=True,
                                   proved=True)
        coarsened, bad = _finish(st, leaves, levels, supp)
    except GeneralizationInfeasibleError as exc:
        if exc.proved or not st.constraints:
            raise
        bad = [str(exc)]
    if bad:
        if not st.constraints:  # pragma: no cover - _finish only reports constraints
            raise AssertionError(f"internal error: {bad}")
        stats["top_down_missed"] = bad
        levels, supp, leaves, splits, coarsened, extra = _hybrid(st, seed, rng)
        stats.update(extra)
        stats["strategy"] = "diva-clusters+top-down"
    levels[supp] = 0
    stats.update({"splits": splits, "partitions": len(leaves), "metric": st.metric,
                  "max_suppressed_rows": st.max_supp, "coarsened_partitions": coarsened})
    res = _result(st, "local", levels, supp, stats, t0)
    if any(not s.satisfied for s in res.constraints):  # pragma: no cover - checked above
        raise AssertionError("internal error: local recoding output fails a constraint")
    failed = [p for p in res.privacy if not p["satisfied"]]
    if failed:  # classes of equal published tuples merged into one failing a model
        raise GeneralizationInfeasibleError(
            f"local recoding could not meet {failed[0]['model']} on every published class (this "
            "does not prove that none exists)", proved=False)
    res.stats["loss"] = _loss(st, levels, supp)
    return res


def _loss(st: _Setup, levels: np.ndarray, supp: np.ndarray) -> float:
    """The metric's value of a recoding (levels per cell, suppressed rows)."""
    total = 0.0
    for j in range(st.q):
        for lev in np.unique(levels[~supp, j]):
            m = (~supp) & (levels[:, j] == lev)
            total += float(st.row_cost(j, int(lev))[m].sum())
    total += float(st.supp_cost()[supp].sum())
    return total / st.scale()


def _top_down(st: _Setup, rows: np.ndarray, levels: np.ndarray, supp: np.ndarray, *,
              chase_lower: bool, proved: bool) -> tuple[list, int]:
    """Top-down specialization of ``rows`` (at their top labels in ``levels``).

    Updates ``levels`` and ``supp`` in place and returns the leaf partitions and
    the number of splits. With ``chase_lower``, attributes of targets whose lower
    bound is not met yet are split first. A root group (rows sharing every top
    label) failing k beyond the budget raises (``proved`` says whether that is a
    proof: it is for the whole table).
    """
    q = st.q
    heights = np.array(st.heights(), dtype=np.int64)
    budget = st.max_supp - int(supp.sum())
    cls, sizes = _classes([st.gc[j][heights[j]][rows] for j in range(q)])
    stack: list[_Part] = []
    for c in range(len(sizes)):
        part = rows[cls == c]
        if _group_ok(st, part):
            stack.append(_Part(part, heights.copy(), frozenset()))
        elif len(part) <= budget:
            supp[part] = True
            budget -= len(part)
        else:
            raise GeneralizationInfeasibleError(
                f"{len(part)} rows share the top labels of every hierarchy and fail k = {st.k}"
                + (" or a privacy model" if st.models else "") + " beyond the suppression "
                "limit" + (": no generalization exists" if proved else ""), proved=proved)
    splits = 0
    leaves: list[_Part] = []
    cs = st.constraints if chase_lower else []
    cattr = [[st.names.index(a) for a, _ in c.target] for c in cs]
    could = [_targets_of_rows(st, c) for c in cs]
    shows = [_match_rows(st, c, np.arange(st.n), levels) & ~supp for c in cs]
    counts = [int(m.sum()) for m in shows]
    while stack:
        p = stack.pop()
        # attributes of unmet lower bounds whose target rows are in this partition and
        # not yet shown: split those first (before other splits fragment the partition)
        need: dict[int, int] = {}
        for i, c in enumerate(cs):
            if counts[i] < c.lo:
                waiting = int((could[i][p.rows] & ~shows[i][p.rows]).sum())
                if waiting:
                    for j in cattr[i]:
                        need[j] = need.get(j, 0) + waiting
        best = None
        for j in range(q):
            if p.levels[j] == 0 or j in p.frozen:
                continue
            plan = _split_plan(st, p, j, budget)
            if plan is None:
                continue
            free = len(plan[1]) == 1 and not plan[2].size and not plan[3].size
            key = (need.get(j, 0), plan[0], free)
            if plan[0] <= 0 and not free and j not in need:
                continue
            if best is None or key > best[0]:
                best = (key, j, plan)
        if best is None:
            leaves.append(p)
            continue
        _, j, (gain, good, residual, suppressed) = best
        splits += 1
        moved = []
        for g in good:
            lv = p.levels.copy()
            lv[j] -= 1
            levels[g, j] = lv[j]
            moved.append(g)
            stack.append(_Part(g, lv, p.frozen))
        if residual.size:
            stack.append(_Part(residual, p.levels.copy(), p.frozen | {j}))
        if suppressed.size:
            supp[suppressed] = True
            budget -= len(suppressed)
            moved.append(suppressed)
        if cs and moved:
            mrows = np.concatenate(moved)
            for i, c in enumerate(cs):
                if j in cattr[i] or suppressed.size:
                    new_m = _match_rows(st, c, mrows, levels) & ~supp[mrows]
                    counts[i] += int(new_m.sum()) - int(shows[i][mrows].sum())
                    shows[i][mrows] = new_m
    return leaves, splits


def _finish(st: _Setup, leaves: list, levels: np.ndarray, supp: np.ndarray
            ) -> tuple[int, list[str]]:
    """Complete the suppressed class, repair upper bounds; (coarsened, constraints missed)."""
    # the suppressed rows form one class: empty or passing (add the smallest leaves)
    if supp.any() and not _group_ok(st, np.flatnonzero(supp)):
        leaves.sort(key=lambda lp: len(lp.rows))
        while leaves and not _group_ok(st, np.flatnonzero(supp)):
            supp[leaves.pop(0).rows] = True
        if not _group_ok(st, np.flatnonzero(supp)) or int(supp.sum()) > st.max_supp:
            raise GeneralizationInfeasibleError(
                "the suppressed rows cannot form a class of k rows meeting the models within "
                "the suppression limit", proved=False)
    coarsened = _repair_upper_bounds(st, leaves, levels, supp)
    bad = []
    for c in st.constraints:
        cnt = int(_published_match(st, lambda j: levels[:, j], supp, c).sum())
        if not c.holds(cnt):
            bad.append(f"{c.to_text()!r} (count {cnt})")
    return coarsened, bad


def _target_values(st: _Setup) -> list[set]:
    """Per QI: the values constraints target on it."""
    out: list[set] = [set() for _ in range(st.q)]
    for c in st.constraints:
        for a, v in c.target:
            out[st.names.index(a)].add(v)
    return out


def _cluster_levels(st: _Setup, rows: np.ndarray, hidden: np.ndarray, tvals: list[set]
                    ) -> np.ndarray | None:
    """Levels publishing a cluster as one class: per attribute its lowest common ancestor.

    An attribute DIVA suppresses although it is constant (``hidden``) goes at
    least one level up; an attribute above level 0 goes up further while its
    label's text is a target value (it must not count, as a suppressed cell
    would not). None when the rows have no common label.
    """
    lev = np.zeros(st.q, dtype=np.int64)
    for j in range(st.q):
        h = st.hier[j].height
        l_ = 0
        while l_ <= h and not (st.gc[j][l_][rows] == st.gc[j][l_][rows[0]]).all():
            l_ += 1
        if l_ > h:
            return None
        if hidden[j] and l_ == 0:
            l_ = min(1, h)
        while 0 < l_ < h and st.hier[j].text[l_][st.gc[j][l_][rows[0]]] in tvals[j]:
            l_ += 1
        lev[j] = l_
    return lev


def _label_collision(st: _Setup) -> bool:
    """Whether a generalized label's text equals a value a constraint targets."""
    tv = _target_values(st)
    return any(bool(set(st.hier[j].text[lev].tolist()) & tv[j])
               for j in range(st.q) for lev in range(1, st.hier[j].height + 1))


def _hybrid(st: _Setup, seed, rng):
    """DIVA's clusters for the lower bounds at their common ancestors, top-down for the rest.

    Returns ``(levels, supp, leaves, splits, coarsened, stats)``.
    """
    from .diverse import DivaInfeasibleError, _diva_plan, diva
    from .reasoning import minimal_cover, satisfiability

    sat = satisfiability(st.constraints)
    if not sat:  # no relation at all satisfies Sigma, so no published table does
        raise GeneralizationInfeasibleError(f"the constraint set is unsatisfiable: {sat.reason}",
                                            proved=True)
    cover = minimal_cover(st.constraints)
    try:
        plan = _diva_plan(st.table, k=st.k, qi=st.names, constraints=cover, seed=seed, rng=rng,
                          marker=st.marker)
    except DivaInfeasibleError as exc:
        # DIVA's proof: a constraint needs more rows than show its target; a generalized
        # label never shows a target value unless its text is one (then no proof)
        raise GeneralizationInfeasibleError(
            f"local recoding cannot meet the constraints: {exc}",
            proved=exc.proved and not _label_collision(st), stats=exc.stats) from None
    n = st.n
    heights = np.array(st.heights(), dtype=np.int64)
    levels = np.repeat(heights[None, :], n, axis=0)
    supp = np.zeros(n, dtype=bool)
    tvals = _target_values(st)
    extra = {"diva": {k_: v for k_, v in plan.stats.items() if not k_.endswith("_s")},
             "phase1_rows": int(plan.phase1.sum()), "cover": [c.to_text() for c in cover]}

    def place(groups, mask, sel):
        for g in np.unique(groups[sel]):
            r = np.flatnonzero(groups == g)
            lev = _cluster_levels(st, r, mask[r[0]] & (st.codes[r] == st.codes[r[0]]).all(axis=0),
                                  tvals)
            if lev is None:
                raise GeneralizationInfeasibleError(
                    "local recoding cannot meet the constraints: a cluster DIVA needs has no "
                    "common label in the hierarchies (this does not prove that none exists)",
                    proved=False)
            levels[r] = lev[None, :]

    p1 = plan.phase1
    place(plan.groups, plan.mask, p1)
    ok = all(_group_ok(st, np.flatnonzero(plan.groups == g)) for g in np.unique(plan.groups[p1]))
    if not ok:  # a privacy model fails on a cluster: DIVA's model merges, everything as classes
        try:
            res = diva(st.table, k=st.k, qi=st.names, constraints=cover, seed=seed, rng=rng,
                       marker=st.marker, models=st.models)
        except InfeasibleError as exc:
            raise GeneralizationInfeasibleError(
                f"local recoding cannot meet the constraints and the models: {exc}",
                proved=False) from None
        levels[:] = heights[None, :]
        place(np.asarray(res.groups), res.suppressed, np.ones(n, dtype=bool))
        leaves, splits = [], 0
        extra["model_fallback"] = True
    else:
        rest = np.flatnonzero(~p1)
        leaves, splits = ([], 0) if not rest.size else _top_down(
            st, rest, levels, supp, chase_lower=False, proved=False)
    coarsened, bad = _finish(st, leaves, levels, supp)
    if bad:
        raise GeneralizationInfeasibleError(
            f"local recoding could not meet {', '.join(bad)} (this does not prove that no "
            "generalization exists)", proved=False)
    return levels, supp, leaves, splits, coarsened, extra


def _repair_upper_bounds(st: _Setup, leaves: list, levels: np.ndarray, supp: np.ndarray) -> int:
    """Generalize one target attribute in whole partitions while a count exceeds its bound."""
    from .diverse import _subset_with_sum

    done = 0
    for _ in range(4 * max(len(st.constraints), 1)):
        counts = [int(_published_match(st, lambda j: levels[:, j], supp, c).sum())
                  for c in st.constraints]
        over = [i for i, c in enumerate(st.constraints) if counts[i] > c.hi]
        if not over:
            return done
        i = over[0]
        c = st.constraints[i]
        excess, room = counts[i] - int(c.hi), counts[i] - c.lo
        fixed = False
        for a, v in c.target:
            j = st.names.index(a)
            # partitions showing the target on every target attribute
            hit = _published_match(st, lambda jj: levels[:, jj], supp, c)
            cand = [lp for lp in leaves if hit[lp.rows].all() and lp.levels[j] < st.hier[j].height]
            if not cand:
                continue
            pick = _subset_with_sum(np.array([len(lp.rows) for lp in cand]), excess, room)
            if pick is None:
                continue
            trial = levels.copy()
            for idx in pick:
                lp = cand[int(idx)]
                trial[lp.rows, j] = lp.levels[j] + 1
            ok = all(int(_published_match(st, lambda jj: trial[:, jj], supp, d).sum()) >= d.lo
                     for d in st.constraints)
            if ok:
                for idx in pick:
                    lp = cand[int(idx)]
                    lp.levels[j] += 1
                    levels[lp.rows, j] = lp.levels[j]
                done += len(pick)
                fixed = True
                break
        if not fixed:
            return done
    return done


# --------------------------------------------------------------------------- Mondrian

def _ordered(values: np.ndarray) -> np.ndarray | None:
    try:
        return np.array([float(v) for v in values])
    except ValueError:
        return None


def _root_failure(st: _Setup, rows: np.ndarray, *, whole: bool) -> str:
    """Why the rows sharing every top label cannot be one class (Mondrian does not suppress)."""
    what = "the whole table" if whole else f"{len(rows)} rows sharing the top labels"
    if len(rows) < st.k:
        return (f"{what} has fewer than k = {st.k} rows: no generalization exists without "
                "suppression")
    for m in st.models:
        s = st.sens[(m.sensitive, getattr(m, "ordered", False))]
        t = np.bincount(s.codes[rows], minlength=s.size)[None, :]
        if not m.check_table(t, s.overall)[0]:
            return (f"{what} fails {m.to_dict()}: no anonymization of it can meet that model "
                    f"({m.to_dict()['model']} measures {float(m.measure(t, s.overall)[0]):g} on "
                    + ("it)" if whole else "them)"))
    return f"{what} fails k = {st.k}"  # pragma: no cover - _group_ok said it fails


def mondrian_generalize(table: Any, *, k: int, qi: Sequence[str] | str,
                        hierarchies: Mapping[str, Hierarchy] | None = None,
                        metric: str = "granularity", models: Sequence[PrivacyModel] = (),
                        marker: str = "*") -> Anonymization:
    """Mondrian (LeFevre et al. 2006) publishing hierarchy labels: the baseline.

    Numeric attributes (every value parses as a number) are split at the median
    (ties tried both ways), categorical ones into the children of their lowest
    common ancestor in the hierarchy; a split is taken only when every part has
    at least k rows and meets every privacy model in ``models`` (as Mondrian
    does for l-diversity: LeFevre et al. 2006, section 5). The attribute with
    the widest normalized range (numeric: value range over the table's;
    categorical: hierarchy leaves under the common ancestor over all leaves) is
    tried first. Each partition publishes, per attribute, the lowest common
    ancestor of its values. No suppression.

    Partitions start from the rows sharing every top label (the whole table when
    each hierarchy has a single top label, as ARX's ``*``). Two partitions that
    publish the same tuple form one class; it still meets k and the models,
    since k-anonymity, distinct and entropy l-diversity and t-closeness all hold
    on a union of classes that meet them (a mixture has at least the distinct
    values and at least the smallest entropy of its parts, and the EMD is convex).

    Raises
    ------
    GeneralizationInfeasibleError
        ``proved=True`` when the rows sharing the top labels (the whole table)
        have fewer than k rows or fail a model: no generalization without
        suppression exists.

    Examples
    --------
    >>> import pandas as pd
    >>> from veil.tables.hierarchy import Hierarchy
    >>> df = pd.DataFrame({"age": ["31", "32", "33", "34"], "sex": ["F", "F", "M", "M"]})
    >>> h = {"age": Hierarchy.intervals(range(30, 40), [2, 10])}
    >>> mondrian_generalize(df, k=2, qi=["age", "sex"], hierarchies=h).table["age"].tolist()
    ['30~39', '30~39', '30~39', '30~39']
    """
    t0 = time.perf_counter()
    st = _setup(table, k=k, qi=qi, hierarchies=hierarchies, models=models, constraints=(),
                max_suppression=0.0, metric=metric, marker=marker)
    n, q = st.n, st.q
    nums = [_ordered(v) for v in st.values]
    glob_range = [float(x.max() - x.min()) if x is not None and len(x) else 0.0 for x in nums]

    def lca_level(j, rows):
        for lev in range(st.hier[j].height + 1):
            g = st.gc[j][lev][rows]
            if (g == g[0]).all():
                return lev
        return st.hier[j].height  # pragma: no cover - rows of one root share the top label

    heights = st.heights()
    roots, root_sizes = _classes([st.gc[j][heights[j]] for j in range(q)])
    stack = []
    for c in range(len(root_sizes)):
        rows = np.flatnonzero(roots == c)
        if not _group_ok(st, rows):
            why = _root_failure(st, rows, whole=len(root_sizes) == 1)
            raise GeneralizationInfeasibleError(why, proved=True)
        stack.append(rows)
    levels = np.zeros((n, q), dtype=np.int64)
    parts = 0
    while stack:
        rows = stack.pop()
        widths = []
        for j in range(q):
            if nums[j] is not None:
                v = nums[j][st.codes[rows, j]]
                widths.append((v.max() - v.min()) / glob_range[j] if glob_range[j] else 0.0)
            else:
                lev = lca_level(j, rows)
                lab = st.gc[j][lev][rows[0]]
                w = (st.hier[j].leaves[lev][lab] - 1) / max(st.hier[j].domain - 1, 1)
                widths.append(w)
        done = False
        if len(rows) >= 2 * st.k:
            for j in np.argsort(-np.asarray(widths), kind="stable"):
                if widths[j] <= 0:
                    break
                if nums[j] is not None:
                    v = nums[j][st.codes[rows, j]]
                    med = np.median(v)
                    for left in (v <= med, v < med):
                        nl = int(left.sum())
                        if st.k <= nl <= len(rows) - st.k and _group_ok(st, rows[left]) \
                                and _group_ok(st, rows[~left]):
                            stack += [rows[left], rows[~left]]
                            done = True
                            break
                else:
                    lev = lca_level(j, rows)
                    if lev == 0:
                        continue
                    child = st.gc[j][lev - 1][rows]
                    uniq, inv, cnt = np.unique(child, return_inverse=True, return_counts=True)
                    if len(uniq) >= 2 and cnt.min() >= st.k:
                        kids = [rows[inv.reshape(-1) == g] for g in range(len(uniq))]
                        if all(_group_ok(st, r) for r in kids):
                            stack += kids
                            done = True
                if done:
                    break
        if not done:
            parts += 1
            for j in range(q):
                levels[rows, j] = lca_level(j, rows)
    supp = np.zeros(n, dtype=bool)
    res = _result(st, "mondrian-hierarchy", levels, supp, {"partitions": parts,
                                                           "metric": st.metric}, t0)
    failed = [p for p in res.privacy if not p["satisfied"]]
    if failed or res.metrics["min_class_size"] < st.k:  # pragma: no cover - unions of passing
        raise AssertionError(  # partitions pass (docstring); a bug if this is ever reached
            f"internal error: a Mondrian class fails k = {st.k} or {failed}")
    total = sum(float(st.row_cost(j, int(lev))[levels[:, j] == lev].sum())
                for j in range(q) for lev in np.unique(levels[:, j]))
    res.stats["loss"] = total / st.scale()
    return res
