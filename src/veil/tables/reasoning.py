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
from typing import Callable, Iterable, Sequence

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
    "METHODS",
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


METHODS = ("auto", "exact", "axioms")


def _method(method: str, constraints: Sequence[DiversityConstraint]) -> str:
    """Resolve ``method``: "auto" is exact when a target has several attributes.

    The axioms are complete when every target names one attribute (targets on
    one attribute are disjoint or equal, so their counts never add up); with
    multi-attribute targets they can miss count arguments, and "auto" then
    uses the exact integer program (:mod:`veil.tables.exact`).
    """
    from ..validation import check_choice

    method = check_choice(method, "method", METHODS)
    if method != "auto":
        return method
    return "exact" if any(len(c.target) > 1 for c in constraints) else "axioms"


@dataclass(frozen=True)
class Satisfiability:
    """Result of :func:`satisfiability`: ``satisfiable`` and, if not, the reason.

    ``target``/``lo``/``hi`` give the empty range the axioms derived; an exact
    (integer-programming) proof has ``target = None`` and lists in ``culprits``
    a set of constraints that cannot hold together (minimal when small enough
    to search).
    """

    satisfiable: bool
    target: DiversityConstraint | None = None
    lo: int = 0
    hi: float = INF
    culprits: tuple[DiversityConstraint, ...] = ()
    method: str = "axioms"

    @property
    def reason(self) -> str:
        if self.satisfiable:
            return "satisfiable"
        names = ", ".join(repr(c.to_text()) for c in self.culprits)
        if self.target is None:
            return (f"the constraints {names} cannot hold together: no relation has such "
                    "counts (exact integer program over the cells of their targets)")
        tgt = self.target.to_text().rsplit(":", 1)[0]
        hi = "inf" if self.hi == INF else int(self.hi)
        return f"the constraints {names} imply an empty range [{self.lo}, {hi}] for {tgt}"

    def __bool__(self) -> bool:
        return self.satisfiable


def _axiom_satisfiability(cs: list[DiversityConstraint]) -> Satisfiability:
    for c in cs:
        lo, hi = implied_range(cs, c)
        if lo > hi:
            culprits = tuple(d for d in cs if d.items <= c.items or c.items < d.items)
            return Satisfiability(False, DiversityConstraint(c.target, 0, INF), lo, hi,
                                  culprits)
    return Satisfiability(True)


#: Deletion filters (smallest culprit / witness sets) run up to this many constraints.
_FILTER_LIMIT = 40


def satisfiability(sigma_set: Iterable[DiversityConstraint], *, method: str = "auto"
                   ) -> Satisfiability:
    """Decide whether some relation satisfies every constraint.

    Parameters
    ----------
    sigma_set : iterable of DiversityConstraint
    method : {"auto", "exact", "axioms"}
        ``"axioms"``: Sigma is unsatisfiable iff it implies an empty range on
        some target; it is enough to test the targets that occur in Sigma (an
        empty range on another target ``T`` comes from a sub-target ``U`` and a
        super-target ``S`` of ``T``, and then also shows on ``S``); ``O(|Sigma|^2)``,
        sound, complete for single-attribute targets. ``"exact"``: the integer
        program of :mod:`veil.tables.exact` (after the axioms, which give the
        clearer reason when they suffice). ``"auto"`` (default): exact when some
        target has several attributes.

    Examples
    --------
    >>> from veil.tables import parse_constraints
    >>> S = parse_constraints("A=a: 0..3\\nA=a, B=b1: 2..\\nA=a, B=b2: 2..")
    >>> satisfiability(S, method="axioms").satisfiable, satisfiability(S).satisfiable
    (True, False)
    """
    cs = _check_sigma(sigma_set)
    how = _method(method, cs)
    sat = _axiom_satisfiability(cs)
    if not sat or how == "axioms":
        return sat
    from .exact import exact_satisfiable

    if exact_satisfiable(cs):
        return Satisfiability(True, method="exact")
    culprits = list(cs)
    if len(culprits) <= _FILTER_LIMIT:  # deletion filter: a minimal unsatisfiable subset
        for c in list(culprits):
            trial = [d for d in culprits if d is not c]
            if not exact_satisfiable(trial):
                culprits = trial
    return Satisfiability(False, None, culprits=tuple(culprits), method="exact")


def is_satisfiable(sigma_set: Iterable[DiversityConstraint], *, method: str = "auto") -> bool:
    """Whether Sigma is satisfiable (see :func:`satisfiability`)."""
    return satisfiability(sigma_set, method=method).satisfiable


def implies(sigma_set: Iterable[DiversityConstraint], sigma: DiversityConstraint, *,
            method: str = "auto") -> bool:
    """Whether ``sigma_set |= sigma``.

    ``method="axioms"`` is Algorithm 1 (sound; complete for single-attribute
    targets); ``"exact"`` the integer program (:func:`implies_exact`);
    ``"auto"`` (default) is exact when a target of Sigma or sigma has several
    attributes. An unsatisfiable Sigma implies every constraint.

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
    how = _method(method, cs + [sigma])
    lo, hi = implied_range(cs, sigma)
    if lo > hi or (lo >= sigma.lo and hi <= sigma.hi):
        return True  # the axioms are sound
    if how == "exact":
        from .exact import exact_implies

        return exact_implies(cs, sigma)
    return not _axiom_satisfiability(cs)


def redundant_constraints(sigma_set: Iterable[DiversityConstraint], *, method: str = "auto",
                          progress: Callable[[int, int], None] | None = None
                          ) -> list[tuple[DiversityConstraint, list[DiversityConstraint]]]:
    """Constraints implied by the others, greedily in order, with what implies them.

    Returns ``(redundant constraint, the remaining constraints used)`` pairs; an
    empty list means Sigma is minimal. ``method`` as in :func:`implies`.
    ``progress(done, total)``, if given, is called before each constraint is
    examined (``done`` of the ``total`` constraints examined so far).

    With the exact method, every implication is decided on one integer program
    built over all of Sigma's targets (:class:`veil.tables.exact.ImplicationOracle`),
    and a cheap search for a counterexample relation runs before each integer
    program is solved; the answers are those of :func:`implies`.
    """
    cs = _check_sigma(sigma_set)
    how = _method(method, cs)
    oracle = _oracle(cs) if how == "exact" else None
    if oracle is None or not oracle.satisfiable:
        sat = satisfiability(cs, method=method)
        if not sat:
            raise InfeasibleError(f"the constraint set is unsatisfiable: {sat.reason}")
    kept = list(cs)
    out = []
    i = 0
    examined = 0
    while i < len(kept):
        if progress is not None:
            progress(examined, len(cs))
        rest = kept[:i] + kept[i + 1:]
        c = kept[i]
        if _implies_with(rest, c, how, oracle):
            out.append((c, _witnesses(rest, c, how, oracle)))
            kept = rest
        else:
            i += 1
        examined += 1
    if progress is not None:
        progress(examined, len(cs))
    return out


def _oracle(cs: list[DiversityConstraint]):
    """The shared exact program of ``cs``, or None when the axioms already find it
    unsatisfiable (:func:`satisfiability` then gives their reason)."""
    if not _axiom_satisfiability(cs):
        return None
    from .exact import ImplicationOracle

    return ImplicationOracle(cs)


def _implies_with(rest: list[DiversityConstraint], c: DiversityConstraint, how: str,
                  oracle) -> bool:
    """:func:`implies` for ``rest`` a subset of a satisfiable Sigma holding ``c``'s target,
    deciding exact cases on ``oracle`` (the shared program of Sigma)."""
    if oracle is None:
        return implies(rest, c, method=how)
    lo, hi = implied_range(rest, c)
    if lo > hi or (lo >= c.lo and hi <= c.hi):
        return True  # the axioms are sound
    return oracle.implies(rest, c)


def _witnesses(rest: list[DiversityConstraint], c: DiversityConstraint, how: str,
               oracle=None) -> list[DiversityConstraint]:
    """Constraints of ``rest`` that imply ``c``: Algorithm 1's steps, else a deletion filter."""
    lo, hi = implied_range(rest, c)
    if lo >= c.lo and hi <= c.hi:
        used: list[DiversityConstraint] = []
        if c.lo > 0:  # the lower bound comes from the same target or a super-target
            d = next((d for d in rest if (d.items == c.items or c.items < d.items)
                      and d.lo == lo), None)
            if d is not None:
                used.append(d)
        if c.hi != INF:  # the upper bound comes from the same target or a sub-target
            d = next((d for d in rest if d.items <= c.items and d.hi == hi), None)
            if d is not None and d not in used:
                used.append(d)
        return used
    used = list(rest)
    if how == "exact" and len(used) <= _FILTER_LIMIT:
        from .exact import exact_implies

        for d in list(used):
            trial = [e for e in used if e is not d]
            if (oracle.implies(trial, c) if oracle is not None else exact_implies(trial, c)):
                used = trial
    return used


def minimal_cover(sigma_set: Iterable[DiversityConstraint], *, method: str = "auto"
                  ) -> list[DiversityConstraint]:
    """An equivalent subset of Sigma in which no constraint is implied by the others.

    Removes implied constraints one at a time (in order); raises
    :class:`InfeasibleError` for an unsatisfiable Sigma. ``method`` as in
    :func:`implies` (with ``"auto"``, exact when a target has several attributes).

    Examples
    --------
    >>> from veil.tables import parse_constraints
    >>> minimal_cover(parse_constraints("sex=F: 2..4\\nsex=F: 1..5\\nsex=F, race=W: 0..9"))
    [DiversityConstraint('sex=F: 2..4')]
    >>> S = parse_constraints("A=a: 0..4\\nA=a, B=b1: 2..\\nA=a, B=b2: 2..\\nA=a: 4..")
    >>> minimal_cover(S, method="axioms") == S, minimal_cover(S)[-1]
    (True, DiversityConstraint('A=a, B=b2: 2..inf'))
    """
    cs = _check_sigma(sigma_set)
    drop = redundant_constraints(cs, method=method)
    out = list(cs)
    for c, _ in drop:
        out.remove(c)
    return out


def is_minimal(sigma_set: Iterable[DiversityConstraint], *, method: str = "auto") -> bool:
    """Whether no constraint of Sigma is implied by the others (``method`` as in :func:`implies`)."""
    cs = _check_sigma(sigma_set)
    how = _method(method, cs)
    oracle = _oracle(cs) if how == "exact" and cs else None
    if oracle is not None and oracle.satisfiable:  # one shared program (as in minimal_cover)
        return all(not _implies_with(cs[:i] + cs[i + 1:], c, how, oracle)
                   for i, c in enumerate(cs))
    return all(not implies(cs[:i] + cs[i + 1:], c, method=how) for i, c in enumerate(cs))


# --------------------------------------------------------------------------- exact (ILP)

def implies_exact(sigma_set: Iterable[DiversityConstraint], sigma: DiversityConstraint) -> bool:
    """Exact semantic implication by integer programming (:mod:`veil.tables.exact`).

    ``Sigma |= sigma`` iff no relation (a non-negative integer count per
    compressed cell of the targets) satisfies Sigma and violates sigma.
    Exact for any integer bounds up to ``2**40``; the cells are the connected
    unions of consistent targets, so the size grows with how targets overlap,
    not with the number of attributes.

    Examples
    --------
    >>> from veil.tables import parse_constraints
    >>> implies_exact(parse_constraints("A=a: 0..3000000"), parse_constraints("A=a: 0..2000000")[0])
    False
    """
    from .exact import exact_implies

    cs = _check_sigma(sigma_set)
    if not isinstance(sigma, DiversityConstraint):
        raise ParameterError(f"sigma must be a DiversityConstraint, got {sigma!r}")
    return exact_implies(cs, sigma)
