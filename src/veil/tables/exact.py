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
from typing import Sequence

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
        rows = [j for j in bounds if self.component[j] == comp]
        if not rows:
            return True
        for j in rows:
            lo, hi = bounds[j]
            if lo > hi:
                return False
        cells = [c for c in self.cells if self.component[next(iter(c))] == comp]
        los = [int(bounds[j][0]) for j in rows]
        max_lo = max(los)
        if max_lo == 0:
            return True  # the empty relation
        cap = len(cells) * max_lo  # upper bounds at or above this never bind
        his = [bounds[j][1] for j in rows]
        his = [INF if h == INF or h >= cap else int(h) for h in his]
        big = max([max_lo] + [h for h in his if h != INF])
        if big > MAX_BOUND:
            raise InstanceTooLargeError(
                f"a frequency bound of {big} exceeds 2**40 = {MAX_BOUND}: exact reasoning "
                "solves in double precision; use the axioms (method='axioms', --axioms)")
        index = {j: r for r, j in enumerate(rows)}
        ri, ci = [], []
        for col, c in enumerate(cells):
            for j in c:
                r = index.get(j)
                if r is not None:
                    ri.append(r)
                    ci.append(col)
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import csr_matrix

        A = csr_matrix((np.ones(len(ri)), (ri, ci)), shape=(len(rows), len(cells)))

        res = milp(c=np.zeros(len(cells)),
                   constraints=LinearConstraint(A, np.array(los, dtype=float),
                                                np.array([np.inf if h == INF else float(h)
                                                          for h in his])),
                   integrality=np.ones(len(cells)), bounds=Bounds(0, np.inf))
        if res.status == 2:
            return False
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
        return True


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
    prog, bounds, _ = _program(constraints)
    return prog.feasible(bounds)


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
    prog, bounds, index = _program(constraints, [sigma.items])
    if not prog.feasible(bounds):
        return True
    j = index[sigma.items]
    comp = int(prog.component[j])
    lo0, hi0 = bounds.get(j, (0, INF))
    cases = []
    if sigma.lo > 0:
        cases.append((lo0, min(hi0, sigma.lo - 1)))
    if sigma.hi != INF:
        cases.append((max(lo0, int(sigma.hi) + 1), hi0))
    for lo, hi in cases:
        trial = dict(bounds)
        trial[j] = (lo, hi)
        if lo <= hi and prog.feasible(trial, component=comp):
            return False  # a counterexample relation exists
    return True
