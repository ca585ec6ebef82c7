"""Exact reasoning over diversity constraints by integer programming (HiGHS via SciPy).

A relation (a multiset of rows) satisfies ``(X[t], lo, hi)`` when the number
of rows whose attributes ``X`` show the values ``t`` lies in ``[lo, hi]``.
Only which targets a row matches matters, so a relation is described by how
many rows fall in each *cell*: a cell is a set of targets that one row can
match together. Two reductions make the cells few:

* **compression**: a row matches exactly the targets contained in its tuple;
  the tuple's values outside the targets' union are irrelevant, so a cell is a
  *union of consistent targets* (no attribute with two values), the targets
  it matches being all targets contained in that union;
* **splitting**: when the targets contained in a union fall into two groups
  with no attribute in common, a row of that cell can be replaced by one row
  of each group's cell without changing any count. Only unions whose targets
  are *connected* (through shared attributes) are needed, and these are the
  unions built by adding, one at a time, a consistent target sharing an
  attribute with the union so far.

Each constraint then bounds a sum of cell counts; ``Sigma`` is satisfiable iff
this integer program has a solution, and ``Sigma |= sigma`` iff ``Sigma`` plus
"the count of ``sigma`` lies outside ``[lo, hi]``" has none. Cells fall into
independent components (no constraint spans two), solved separately. There is
no big-M constant: every bound is the constraint's own integer. HiGHS works in
floating point, so a solution it returns is re-checked in exact integer
arithmetic, and bounds are limited to ``2**40`` (far above any table's row
count), beyond which double-precision round-off could reach 1.

Why a reduction is exact: an upper bound at or above ``cells * max_lo`` never
binds (a feasible program has a solution with every cell at most the largest
lower bound: lower any cell not needed by a tight lower bound), so such bounds
are dropped before solving.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import InstanceTooLargeError
from .constraints import DiversityConstraint

__all__ = ["ExactProgram", "exact_satisfiable", "exact_implies", "MAX_CELLS", "MAX_BOUND"]

INF = math.inf
#: Largest number of cells (integer variables) of one component.
MAX_CELLS = 200_000
#: Largest finite bound handled exactly (HiGHS computes in double precision).
MAX_BOUND = 2 ** 40

Target = frozenset  # of (attribute, value) pairs


def _consistent(u: dict, t: Target) -> bool:
    return all(u.get(a, v) == v for a, v in t)


@dataclass
class ExactProgram:
    """The compressed cells of a set of targets and the components they form.

    Parameters
    ----------
    targets : sequence of frozenset of (attribute, value)
        Distinct targets.

    Attributes
    ----------
    cells : list of frozenset
        Each cell as the set of target indices it matches.
    component : ndarray
        Component index of each target.
    """

    targets: list
    cells: list
    component: np.ndarray

    @classmethod
    def build(cls, targets: Sequence[Target], *, max_cells: int = MAX_CELLS) -> "ExactProgram":
        targets = list(targets)
        by_attr: dict[str, list[int]] = {}
        for i, t in enumerate(targets):
            for a, _ in t:
                by_attr.setdefault(a, []).append(i)
        seen: set[frozenset] = set()
        cells: list[frozenset] = []
        stack: list[tuple[dict, frozenset]] = []
        for i, t in enumerate(targets):
            u = dict(t)
            key = frozenset(u.items())
            if key not in seen:
                seen.add(key)
                stack.append((u, key))
        while stack:
            u, key = stack.pop()
            cand = {j for a in u for j in by_attr[a]}
            members = frozenset(j for j in cand if targets[j] <= key)
            cells.append(members)
            if len(seen) > max_cells:
                raise InstanceTooLargeError(
                    f"exact reasoning needs more than {max_cells} cells (connected unions of "
                    f"consistent targets) for {len(targets)} targets; use the axioms "
                    "(method='axioms', --axioms) for a sound but incomplete answer")
            for j in cand:
                t = targets[j]
                if j in members or not _consistent(u, t):
                    continue
                w = dict(u)
                w.update(t)
                wkey = frozenset(w.items())
                if wkey not in seen:
                    seen.add(wkey)
                    stack.append((w, wkey))
        # components: targets that share a cell
        parent = list(range(len(targets)))

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for c in cells:
            it = iter(c)
            first = find(next(it))
            for j in it:
                r = find(j)
                if r != first:
                    parent[r] = first
        roots = np.array([find(i) for i in range(len(targets))], dtype=np.int64)
        _, comp = np.unique(roots, return_inverse=True) if len(roots) else (None, roots)
        return cls(targets, cells, np.asarray(comp, dtype=np.int64))

    def feasible(self, bounds: dict[int, tuple[int, float]], component: int | None = None
                 ) -> bool:
        """Whether some relation meets ``lo <= count(target) <= hi`` for every bounded target.

        ``bounds`` maps a target index to (lo, hi); targets without bounds are free.
        Only the given component (default: all, each solved on its own).
        """
        comps = (range(int(self.component.max()) + 1) if len(self.component) else []) \
            if component is None else [component]
        for comp in comps:
            if not self._feasible_component(bounds, comp):
                return False
        return True

    def _feasible_component(self, bounds: dict[int, tuple[int, float]], comp: int) -> bool:
        return self.solve_component(bounds, comp) is not None

    def solve_component(self, bounds: dict[int, tuple[int, float]], comp: int,
                        matrix: Any = None) -> np.ndarray | None:
        """A relation meeting the bounds on one component, or None when none exists.

        Returns the count of every cell of the program (zero outside ``comp``), checked
        against the bounds in exact integer arithmetic, except that upper bounds that never
        bind (at or above ``cells * max_lo``, see the module docstring) are not imposed.
        ``matrix`` is the (targets x cells) incidence matrix of the whole program when the
        caller has it (:meth:`incidence`; built per call otherwise).
        """
        rows = [j for j in bounds if self.component[j] == comp]
        x_all = np.zeros(len(self.cells), dtype=np.int64)
        if not rows:
            return x_all
        for j in rows:
            lo, hi = bounds[j]
            if lo > hi:
                return None
        if matrix is None:
            cols = [i for i, c in enumerate(self.cells) if self.component[next(iter(c))] == comp]
            cells = [self.cells[i] for i in cols]
        else:
            cols = self._component_cells(comp)
            cells = None
        los = [int(bounds[j][0]) for j in rows]
        max_lo = max(los)
        if max_lo == 0:
            return x_all  # the empty relation
        cap = len(cols) * max_lo  # upper bounds at or above this never bind
        his = [bounds[j][1] for j in rows]
        his = [INF if h == INF or h >= cap else int(h) for h in his]
        big = max([max_lo] + [h for h in his if h != INF])
        if big > MAX_BOUND:
            raise InstanceTooLargeError(
                f"a frequency bound of {big} exceeds 2**40 = {MAX_BOUND}: exact reasoning "
                "solves in double precision; use the axioms (method='axioms', --axioms)")
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import csr_matrix

        if matrix is None:
            index = {j: r for r, j in enumerate(rows)}
            ri, ci = [], []
            for col, c in enumerate(cells):
                for j in c:
                    r = index.get(j)
                    if r is not None:
                        ri.append(r)
                        ci.append(col)
            A = csr_matrix((np.ones(len(ri)), (ri, ci)), shape=(len(rows), len(cells)))
        else:
            A = matrix[rows][:, cols].astype(float)

        res = milp(c=np.zeros(len(cols)),
                   constraints=LinearConstraint(A, np.array(los, dtype=float),
                                                np.array([np.inf if h == INF else float(h)
                                                          for h in his])),
                   integrality=np.ones(len(cols)), bounds=Bounds(0, np.inf))
        if res.status == 2:
            return None
        if res.status != 0 or res.x is None:
            raise InstanceTooLargeError(f"HiGHS did not decide the integer program: "
                                        f"{res.message}")
        x = np.rint(res.x).astype(np.int64)
        counts = [int(v) for v in A.astype(np.int64) @ x]
        for cnt, lo, hi in zip(counts, los, his):
            if cnt < lo or cnt > hi:  # pragma: no cover - numerical trouble, never silent
                raise InstanceTooLargeError(
                    "HiGHS returned a solution that fails an exact re-check; the instance is "
                    "numerically too hard")
        x_all[np.asarray(cols, dtype=np.int64)] = x
        return x_all

    # ------------------------------------------------------------ cheap exact witnesses

    def incidence(self):
        """The (targets x cells) 0/1 incidence matrix (CSR, int64): cell c matches target j."""
        cache = self.__dict__.setdefault("_cache", {})
        if "incidence" not in cache:
            from scipy.sparse import csr_matrix

            ri = [j for c in self.cells for j in c]
            ci = [i for i, c in enumerate(self.cells) for _ in c]
            cache["incidence"] = csr_matrix(
                (np.ones(len(ri), dtype=np.int64), (ri, ci)),
                shape=(len(self.targets), len(self.cells)))
        return cache["incidence"]

    def own_cells(self) -> np.ndarray:
        """Per target, the cell of rows showing that target and nothing more: the cell whose
        targets are the target's sub-targets (every target is such a union)."""
        cache = self.__dict__.setdefault("_cache", {})
        if "own" not in cache:
            key = {c: i for i, c in enumerate(self.cells)}
            by_attr: dict[str, list[int]] = {}
            for j, t in enumerate(self.targets):
                for a, _ in t:
                    by_attr.setdefault(a, []).append(j)
            own = []
            for t in self.targets:  # its sub-targets share an attribute with it
                cand = {j for a, _ in t for j in by_attr[a]}
                own.append(key[frozenset(j for j in cand if self.targets[j] <= t)])
            cache["own"] = np.array(own, dtype=np.int64)
        return cache["own"]

    def _component_cells(self, comp: int) -> list[int]:
        cache = self.__dict__.setdefault("_cache", {}).setdefault("cells_of", {})
        if comp not in cache:
            cache[comp] = [i for i, c in enumerate(self.cells)
                           if self.component[next(iter(c))] == comp]
        return cache[comp]

    def cells_of(self, t: int) -> np.ndarray:
        """The cells whose rows match target ``t``."""
        m = self.incidence()
        return m.indices[m.indptr[t]:m.indptr[t + 1]]

    def count(self, t: int, x: np.ndarray) -> int:
        """How many rows of the relation ``x`` (a count per cell) match target ``t``."""
        return int(x[self.cells_of(t)].sum())

    def meets(self, x: np.ndarray, bounds: dict[int, tuple[int, float]],
              rows: Sequence[int] | None = None) -> bool:
        """Exact check that the relation ``x`` meets ``bounds`` (on ``rows``, default all).

        Only for bounds up to :data:`MAX_BOUND` (callers check), so every count stays far
        inside int64 (at most ``MAX_CELLS`` cells of at most ``MAX_BOUND`` rows each).
        """
        if len(x) and (x.min() < 0 or x.max() > MAX_BOUND):
            return False
        rows = bounds if rows is None else rows
        return all(bounds[t][0] <= self.count(t, x) <= bounds[t][1] for t in rows)

    def greedy(self, bounds: dict[int, tuple[int, float]]) -> np.ndarray | None:
        """A relation meeting ``bounds`` built without solving, or None (not a proof).

        Targets in decreasing size take the rows their lower bound still lacks, in their
        own cell (rows showing the target and nothing more, which also count for its
        sub-targets, so a large target's rows may already cover a smaller one's). The
        result is re-checked exactly; when it breaks an upper bound, None.
        """
        if not _small_bounds(bounds):
            return None
        x = np.zeros(len(self.cells), dtype=np.int64)
        own = self.own_cells()
        for t in sorted(bounds, key=lambda t: -len(self.targets[t])):
            deficit = int(bounds[t][0]) - self.count(t, x)
            if deficit > 0:
                x[own[t]] += deficit
        return x if self.meets(x, bounds) else None


def _small_bounds(bounds: dict[int, tuple[int, float]]) -> bool:
    """Every bound at most MAX_BOUND (beyond, the integer program raises as it always did)."""
    return all(lo <= MAX_BOUND and (hi == INF or hi <= MAX_BOUND) for lo, hi in bounds.values())


def _program(constraints: Sequence[DiversityConstraint], extra: Sequence[Target] = ()
             ) -> tuple[ExactProgram, dict[int, tuple[int, float]], dict[Target, int]]:
    index: dict[Target, int] = {}
    for t in [c.items for c in constraints] + list(extra):
        index.setdefault(t, len(index))
    prog = ExactProgram.build(list(index))
    bounds: dict[int, tuple[int, float]] = {}
    for c in constraints:
        j = index[c.items]
        lo, hi = bounds.get(j, (0, INF))
        bounds[j] = (max(lo, c.lo), min(hi, c.hi))
    return prog, bounds, index


def exact_satisfiable(constraints: Sequence[DiversityConstraint]) -> bool:
    """Whether some relation satisfies every constraint (exact).

    A relation built greedily (:meth:`ExactProgram.greedy`, checked exactly) settles
    most satisfiable sets without solving; otherwise the integer program decides.

    Examples
    --------
    >>> from veil.tables import parse_constraints
    >>> exact_satisfiable(parse_constraints("A=a: 0..3\\nA=a, B=b1: 2..\\nA=a, B=b2: 2.."))
    False
    >>> exact_satisfiable(parse_constraints("A=a: 0..4\\nA=a, B=b1: 2..\\nA=a, B=b2: 2.."))
    True
    """
    if not constraints:
        return True
    return ImplicationOracle(constraints).satisfiable


def exact_implies(constraints: Sequence[DiversityConstraint], sigma: DiversityConstraint) -> bool:
    """Whether every relation satisfying ``constraints`` satisfies ``sigma`` (exact).

    An unsatisfiable set implies every constraint.

    Examples
    --------
    >>> from veil.tables import parse_constraints
    >>> S = parse_constraints("A=a: 0..3000000")
    >>> exact_implies(S, parse_constraints("A=a: 0..2000000")[0])
    False
    >>> exact_implies(S, parse_constraints("A=a: 0..3000000")[0])
    True
    """
    oracle = ImplicationOracle(constraints, extra=[sigma.items])
    if not oracle.satisfiable:
        return True
    return oracle.implies(constraints, sigma)


class ImplicationOracle:
    """Exact satisfiability of a constraint set, and implication by its subsets, on one program.

    ``redundant_constraints`` and its witnesses ask, many times, whether a subset
    of Sigma implies one constraint of Sigma. Every such question is answered
    on the program built once over all the targets of Sigma (and ``extra``
    targets): a program over more targets describes the same relations (each
    cell of a subset's program is a cell here, matching the same targets of the
    subset; each cell here is a row some relation can hold), and the targets no
    constraint of the subset bounds are free.

    ``satisfiable`` says whether Sigma is (a greedy relation checked exactly,
    else the integer program of each component). When it is, every subset is
    too, so "the subset implies sigma" is "no relation meets the subset with
    the count of sigma's target below ``sigma.lo`` (or above ``sigma.hi``)", and
    only the component of sigma's target matters. Before solving either
    integer program, a cheap search for such a relation runs: relations found
    so far (the one meeting Sigma, and every counterexample) are tried as they
    are, with rows added to the cell of sigma's target alone (its count rises,
    and only those of its sub-targets), or with rows removed from cells matching
    sigma's target and the lower bounds this breaks restored by adding rows to
    those targets' own cells. A candidate counts only after an exact integer
    check of every bound of the subset in the component, so the answers are
    those of the integer programs; the search only saves solving them (a ring of
    80 two-attribute constraints: each is found non-redundant without any).
    """

    #: Relations kept for the cheap search (the most recent ones first).
    POOL = 8

    def __init__(self, constraints: Sequence[DiversityConstraint],
                 extra: Sequence[Target] = ()):
        self.constraints = list(constraints)
        prog, bounds, index = _program(self.constraints, extra)
        self.prog, self.index = prog, index
        self.pool: list[np.ndarray] = []
        self.milps = 0
        x = prog.greedy(bounds)
        if x is None:
            x = np.zeros(len(prog.cells), dtype=np.int64)
            ncomp = int(prog.component.max()) + 1 if len(prog.component) else 0
            for comp in range(ncomp):
                xc = prog.solve_component(bounds, comp, matrix=prog.incidence())
                self.milps += 1
                if xc is None:
                    self.satisfiable = False
                    return
                x += xc
        self.satisfiable = True
        self.pool.append(x)

    def _bounds(self, subset: Sequence[DiversityConstraint]) -> dict[int, tuple[int, float]]:
        bounds: dict[int, tuple[int, float]] = {}
        for c in subset:
            j = self.index[c.items]
            lo, hi = bounds.get(j, (0, INF))
            bounds[j] = (max(lo, c.lo), min(hi, c.hi))
        return bounds

    def implies(self, subset: Sequence[DiversityConstraint], sigma: DiversityConstraint) -> bool:
        """Whether ``subset`` (constraints of Sigma) implies ``sigma`` (whose target is one of
        the program's); Sigma must be satisfiable."""
        if not self.satisfiable:  # pragma: no cover - callers check first
            raise ValueError("the constraint set is unsatisfiable")
        bounds = self._bounds(subset)
        j = self.index[sigma.items]
        comp = int(self.prog.component[j])
        lo0, hi0 = bounds.get(j, (0, INF))
        cases = []
        if sigma.lo > 0:
            cases.append((lo0, min(hi0, sigma.lo - 1)))
        if sigma.hi != INF:
            cases.append((max(lo0, int(sigma.hi) + 1), hi0))
        for lo, hi in cases:
            if lo > hi:
                continue
            trial = dict(bounds)
            trial[j] = (lo, hi)
            if self._cheap_counterexample(trial, comp, j):
                return False
            x = self.prog.solve_component(trial, comp, matrix=self.prog.incidence())
            self.milps += 1
            if x is not None:
                self._remember(x)
                return False  # a counterexample relation exists
        return True

    def _remember(self, x: np.ndarray) -> None:
        self.pool.insert(1 if self.pool else 0, x)  # keep Sigma's relation first
        del self.pool[self.POOL:]

    def _cheap_counterexample(self, bounds: dict[int, tuple[int, float]], comp: int, j: int
                              ) -> bool:
        """A known relation, possibly adjusted, meeting ``bounds`` on ``comp`` (exact check)."""
        prog = self.prog
        rows = [t for t in bounds if prog.component[t] == comp]
        if not _small_bounds({t: bounds[t] for t in rows}):
            return False
        tlo, thi = bounds[j]
        for base in self.pool:
            x = base.copy()
            cnt = prog.count(j, x)
            if cnt < tlo:  # rows in the cell of j's target alone: j and its sub-targets rise
                x[prog.own_cells()[j]] += tlo - cnt
            elif cnt > thi:
                x = self._lower(x, j, cnt - int(thi), rows, bounds)
                if x is None:
                    continue
            if prog.meets(x, bounds, rows):
                self._remember(x)
                return True
        return False

    def _lower(self, x: np.ndarray, j: int, excess: int, rows: list[int],
               bounds: dict[int, tuple[int, float]]) -> np.ndarray | None:
        """Remove ``excess`` rows matching target j (from the cells matching the fewest
        targets first), then restore the lower bounds this broke by adding rows to the
        broken targets' own cells (larger targets first: their rows also count for their
        sub-targets)."""
        prog = self.prog
        cells = prog.cells_of(j)
        cells = cells[x[cells] > 0]
        sizes = np.array([len(prog.cells[c]) for c in cells], dtype=np.int64)
        for c in cells[np.argsort(sizes, kind="stable")]:
            take = min(int(x[c]), excess)
            x[c] -= take
            excess -= take
            if excess == 0:
                break
        tj = prog.targets[j]
        for t in sorted(rows, key=lambda t: -len(prog.targets[t])):
            if t == j:
                continue
            deficit = int(bounds[t][0]) - prog.count(t, x)
            if deficit > 0:
                if tj <= prog.targets[t]:  # t's rows match j: its count would rise again
                    return None
                x[prog.own_cells()[t]] += deficit
        return x
