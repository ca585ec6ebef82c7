"""Reasoning over diversity constraints: axioms, implication, satisfiability, minimal cover.

The four axioms of Milani et al. (CIKM 2020), for constraints over
unrestricted relations (attribute domains are not bounded by a table):

1. *range relaxation*: ``(X[t], lo, hi)`` gives ``(X[t], lo', hi')`` when
   ``[lo, hi]`` is inside ``[lo', hi']``;
2. *target extension*: ``(X[t], lo, hi)`` gives ``(XY[t, s], 0, hi)`` (more
   target values: at most as many rows, maybe none);
3. *target reduction*: ``(X[t], lo, hi)`` gives ``(X'[t'], lo, inf)`` for
   ``X'[t'] ⊂ X[t]`` (fewer target values: at least as many rows);
4. *intersection*: ``(X[t], lo, hi)`` and ``(X[t], lo', hi')`` give
   ``(X[t], max(lo, lo'), min(hi, hi'))``.

:func:`implied_range` is the paper's Algorithm 1 (one pass over Sigma, linear
time). These axioms are sound; they are complete when the constraints on
sub- and super-targets do not add up. They cannot derive count arguments such
as ``(A[a], 0, 3)``, ``(AB[a, b1], 2, inf)``, ``(AB[a, b2], 2, inf)`` being
unsatisfiable (two disjoint groups of at least 2 rows inside at most 3 rows).
:func:`implies_exact` decides implication exactly by integer programming over
the cells of the attribute domains for such cases (exponential in the number
of attributes; meant for small constraint sets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from ..errors import InfeasibleError, ParameterError
from .constraints import DiversityConstraint

__all__ = [
    "axiom_relax",
    "axiom_extend",
    "axiom_reduce",
    "axiom_intersect",
    "implied_range",
    "implies",
    "Satisfiability",
    "satisfiability",
    "is_satisfiable",
    "redundant_constraints",
    "minimal_cover",
    "is_minimal",
    "implies_exact",
]

INF = math.inf


def _check_sigma(sigma: Iterable[DiversityConstraint], name: str = "sigma_set"
                 ) -> list[DiversityConstraint]:
    out = list(sigma)
    for i, c in enumerate(out):
        if not isinstance(c, DiversityConstraint):
            raise ParameterError(f"{name}[{i}] must be a DiversityConstraint, got {c!r}")
    return out


# --------------------------------------------------------------------------- axioms

def axiom_relax(c: DiversityConstraint, lo: int, hi: float) -> DiversityConstraint:
    """Axiom 1: widen the range of ``c`` to ``[lo, hi]`` (which must contain ``c``'s)."""
    if lo > c.lo or hi < c.hi:
        raise ParameterError(f"[{lo}, {hi}] does not contain the range of {c.to_text()!r}")
    return DiversityConstraint(c.target, lo, hi)


def axiom_extend(c: DiversityConstraint, extra: dict[str, str]) -> DiversityConstraint:
    """Axiom 2: add target values ``extra`` (new attributes); the range becomes ``[0, hi]``."""
    clash = set(extra) & set(c.attributes)
    if clash:
        raise ParameterError(f"attributes {sorted(clash)} are already in the target of "
                             f"{c.to_text()!r}")
    return DiversityConstraint(list(c.target) + list(extra.items()), 0, c.hi)


def axiom_reduce(c: DiversityConstraint, keep: Sequence[str]) -> DiversityConstraint:
    """Axiom 3: keep only the attributes ``keep`` (a non-empty proper subset); ``[lo, inf]``."""
    keep_set = set(keep)
    if not keep_set or not keep_set < set(c.attributes):
        raise ParameterError(f"keep={sorted(keep_set)} must be a non-empty proper subset of "
                             f"{list(c.attributes)}")
    return DiversityConstraint([(a, v) for a, v in c.target if a in keep_set], c.lo, INF)


def axiom_intersect(a: DiversityConstraint, b: DiversityConstraint) -> tuple[int, float]:
    """Axiom 4: the intersection of the ranges of two constraints on the same target.

    Returns ``(lo, hi)``, possibly empty (``lo > hi``: the two are contradictory).
    """
    if a.target != b.target:
        raise ParameterError(f"{a.to_text()!r} and {b.to_text()!r} have different targets")
    return max(a.lo, b.lo), min(a.hi, b.hi)


# --------------------------------------------------------------------------- Algorithm 1

def implied_range(sigma_set: Iterable[DiversityConstraint],
                  target: DiversityConstraint | dict | Iterable[tuple[str, str]]
                  ) -> tuple[int, float]:
    """The tightest range for ``target`` derivable from ``sigma_set`` by the axioms.

    Algorithm 1 of the paper: start from ``[0, inf)``; each constraint on the
    same target narrows both ends (axioms 1, 4), on a sub-target narrows the
    upper end (axiom 2), on a super-target narrows the lower end (axiom 3).
    One pass: ``O(|Sigma| * |X|)``.

    Returns
    -------
    (lo, hi)
        ``lo > hi`` means Sigma implies the false constraint on this target.

    Examples
    --------
    >>> from veil.tables import parse_constraints
    >>> S = parse_constraints("sex=F: 1..5\\nsex=F, race=W: 2..9")
    >>> implied_range(S, {"sex": "F"}), implied_range(S, {"sex": "F", "race": "W"})
    ((2, 5), (2, 5))
    """
    if isinstance(target, DiversityConstraint):
        t = target.items
    elif isinstance(target, dict):
        t = frozenset((str(a), str(v)) for a, v in target.items())
    else:
        t = frozenset((str(a), str(v)) for a, v in target)
    lo, hi = 0, INF
    for c in sigma_set:
        ci = c.items
        if ci == t:
            lo, hi = max(lo, c.lo), min(hi, c.hi)
        elif ci < t:
            hi = min(hi, c.hi)
        elif t < ci:
            lo = max(lo, c.lo)
    return lo, hi


@dataclass(frozen=True)
class Satisfiability:
    """Result of :func:`satisfiability`: ``satisfiable`` and, if not, the reason."""

    satisfiable: bool
    target: DiversityConstraint | None = None
    lo: int = 0
    hi: float = INF
    culprits: tuple[DiversityConstraint, ...] = ()

    @property
    def reason(self) -> str:
        if self.satisfiable:
            return "satisfiable"
        tgt = self.target.to_text().rsplit(":", 1)[0] if self.target else "?"
        hi = "inf" if self.hi == INF else int(self.hi)
        return (f"the constraints {', '.join(repr(c.to_text()) for c in self.culprits)} "
                f"imply an empty range [{self.lo}, {hi}] for {tgt}")

    def __bool__(self) -> bool:
        return self.satisfiable


def satisfiability(sigma_set: Iterable[DiversityConstraint]) -> Satisfiability:
    """Decide (by the axioms) whether some relation satisfies every constraint.

    Sigma is unsatisfiable iff it implies an empty range on some target; it is
    enough to test the targets that occur in Sigma (an empty range on another
    target ``T`` comes from a sub-target ``U`` and a super-target ``S`` of
    ``T``, and then also shows on ``S``). ``O(|Sigma|^2)``.
    """
    cs = _check_sigma(sigma_set)
    for c in cs:
        lo, hi = implied_range(cs, c)
        if lo > hi:
            culprits = tuple(d for d in cs if d.items <= c.items or c.items < d.items)
            return Satisfiability(False, DiversityConstraint(c.target, 0, INF), lo, hi,
                                  culprits)
    return Satisfiability(True)


def is_satisfiable(sigma_set: Iterable[DiversityConstraint]) -> bool:
    """Whether Sigma is satisfiable (by the axioms; see :func:`satisfiability`)."""
    return satisfiability(sigma_set).satisfiable


def implies(sigma_set: Iterable[DiversityConstraint], sigma: DiversityConstraint) -> bool:
    """Whether ``sigma_set |= sigma`` by the axioms (Algorithm 1).

    An unsatisfiable Sigma implies every constraint.

    Examples
    --------
    >>> from veil.tables import parse_constraints
    >>> S = parse_constraints("sex=F: 2..4")
    >>> implies(S, parse_constraints("sex=F: 1..5")[0])
    True
    >>> implies(S, parse_constraints("sex=F, race=W: 0..4")[0])
    True
    >>> implies(S, parse_constraints("sex=F, race=W: 1..4")[0])
    False
    """
    cs = _check_sigma(sigma_set)
    if not isinstance(sigma, DiversityConstraint):
        raise ParameterError(f"sigma must be a DiversityConstraint, got {sigma!r}")
    lo, hi = implied_range(cs, sigma)
    if lo > hi or not is_satisfiable(cs):
        return True
    return lo >= sigma.lo and hi <= sigma.hi


def redundant_constraints(sigma_set: Iterable[DiversityConstraint]
                          ) -> list[tuple[DiversityConstraint, list[DiversityConstraint]]]:
    """Constraints implied by the others, greedily in order, with what implies them.

    Returns ``(redundant constraint, the remaining constraints used)`` pairs; an
    empty list means Sigma is minimal.
    """
    cs = _check_sigma(sigma_set)
    sat = satisfiability(cs)
    if not sat:
        raise InfeasibleError(f"the constraint set is unsatisfiable: {sat.reason}")
    kept = list(cs)
    out = []
    i = 0
    while i < len(kept):
        rest = kept[:i] + kept[i + 1:]
        if implies(rest, kept[i]):
            c = kept[i]
            out.append((c, _witnesses(rest, c)))
            kept = rest
        else:
            i += 1
    return out


def _witnesses(rest: list[DiversityConstraint], c: DiversityConstraint
               ) -> list[DiversityConstraint]:
    """The constraints of ``rest`` that give the bounds implying ``c`` (Algorithm 1's steps)."""
    lo, hi = implied_range(rest, c)
    used: list[DiversityConstraint] = []
    if c.lo > 0:  # the lower bound comes from the same target or a super-target
        d = next((d for d in rest if (d.items == c.items or c.items < d.items) and d.lo == lo),
                 None)
        if d is not None:
            used.append(d)
    if c.hi != INF:  # the upper bound comes from the same target or a sub-target
        d = next((d for d in rest if d.items <= c.items and d.hi == hi), None)
        if d is not None and d not in used:
            used.append(d)
    return used


def minimal_cover(sigma_set: Iterable[DiversityConstraint]) -> list[DiversityConstraint]:
    """An equivalent subset of Sigma in which no constraint is implied by the others.

    Removes implied constraints one at a time (in order); raises
    :class:`InfeasibleError` for an unsatisfiable Sigma.

    Examples
    --------
    >>> from veil.tables import parse_constraints
    >>> minimal_cover(parse_constraints("sex=F: 2..4\\nsex=F: 1..5\\nsex=F, race=W: 0..9"))
    [DiversityConstraint('sex=F: 2..4')]
    """
    cs = _check_sigma(sigma_set)
    drop = redundant_constraints(cs)
    out = list(cs)
    for c, _ in drop:
        out.remove(c)
    return out


def is_minimal(sigma_set: Iterable[DiversityConstraint]) -> bool:
    """Whether no constraint of Sigma is implied by the others."""
    cs = _check_sigma(sigma_set)
    return all(not implies(cs[:i] + cs[i + 1:], c) for i, c in enumerate(cs))


# --------------------------------------------------------------------------- exact (ILP)

def _cells(constraints: Sequence[DiversityConstraint]):
    attrs = sorted({a for c in constraints for a in c.attributes})
    doms = {a: sorted({v for c in constraints for b, v in c.target if b == a}) for a in attrs}
    # each attribute: its mentioned values plus one "other" value (index len(dom))
    sizes = [len(doms[a]) + 1 for a in attrs]
    ncell = int(np.prod(sizes)) if sizes else 1
    if ncell > 200_000:
        from ..errors import InstanceTooLargeError

        raise InstanceTooLargeError(f"exact implication would need {ncell} cells (limit 200000)")
    grid = np.indices(sizes).reshape(len(sizes), -1).T  # (ncell, nattr)

    def match(c: DiversityConstraint) -> np.ndarray:
        m = np.ones(len(grid), dtype=bool)
        for a, v in c.target:
            j = attrs.index(a)
            m &= grid[:, j] == doms[a].index(v)
        return m

    return match, len(grid)


def implies_exact(sigma_set: Iterable[DiversityConstraint], sigma: DiversityConstraint) -> bool:
    """Exact semantic implication by integer programming (small instances).

    A relation is described by how many rows fall in each cell of the product
    of the mentioned values (plus one "other" value per attribute); each
    constraint bounds a sum of cells. ``Sigma |= sigma`` iff no non-negative
    integer cell vector satisfies Sigma and violates sigma. Solved with
    HiGHS (``scipy.optimize.milp``).
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    cs = _check_sigma(sigma_set)
    match, ncell = _cells(cs + [sigma])
    rows, lo, hi = [], [], []
    for c in cs:
        rows.append(match(c).astype(float))
        lo.append(float(c.lo))
        hi.append(float(c.hi))
    ms = match(sigma).astype(float)
    big = 1e6
    cases = []
    if sigma.lo > 0:
        cases.append((0.0, sigma.lo - 1.0))
    if sigma.hi != INF:
        cases.append((sigma.hi + 1.0, INF))
    for a, b in cases:
        A = np.array(rows + [ms]) if rows else ms[None, :]
        lb = np.array(lo + [a])
        ub = np.array([min(h, big) if h != INF else np.inf for h in hi] + [b])
        res = milp(c=np.zeros(ncell), constraints=LinearConstraint(A, lb, ub),
                   integrality=np.ones(ncell), bounds=Bounds(0, np.inf))
        if res.status == 0:  # a counterexample relation exists
            return False
    return True
