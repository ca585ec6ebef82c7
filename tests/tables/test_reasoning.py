"""Axioms, implication (Algorithm 1), satisfiability and minimal cover against brute force.

The brute-force semantic check enumerates relations: over attributes A (values
a1, a2, other) and B (values b1, other) a relation is a vector of row counts
per cell; with every finite bound <= BMAX, capping each cell at BMAX + 1 keeps
any counterexample a counterexample, so enumerating multiplicities 0..BMAX+1
decides implication exactly.
"""

import itertools
import math

import numpy as np
import pytest

from veil.errors import InfeasibleError, ParameterError
from veil.tables import (DiversityConstraint, axiom_extend, axiom_intersect, axiom_reduce,
                         axiom_relax, implied_range, implies, implies_exact, is_minimal,
                         is_satisfiable, minimal_cover, parse_constraints,
                         redundant_constraints, satisfiability)

INF = math.inf
BMAX = 3
A_VALS = ["a1", "a2", None]  # None = some other value
B_VALS = ["b1", None]
CELLS = [(a, b) for a in A_VALS for b in B_VALS if not (a is None and b is None)]
MULT = np.array(list(itertools.product(range(BMAX + 2), repeat=len(CELLS))), dtype=np.int64)
TARGETS = [{"A": "a1"}, {"A": "a2"}, {"B": "b1"}, {"A": "a1", "B": "b1"},
           {"A": "a2", "B": "b1"}]


def _match(c):
    t = dict(c.target)
    return np.array([all((a if attr == "A" else b) == v for attr, v in t.items())
                     for a, b in CELLS], dtype=np.int64)


def _models(sigma_set):
    ok = np.ones(len(MULT), dtype=bool)
    for c in sigma_set:
        cnt = MULT @ _match(c)
        ok &= (cnt >= c.lo) & (cnt <= c.hi)
    return ok


def sem_implies(sigma_set, sigma):
    ok = _models(sigma_set)
    cnt = MULT @ _match(sigma)
    return not np.any(ok & ((cnt < sigma.lo) | (cnt > sigma.hi)))


def sem_satisfiable(sigma_set):
    return bool(_models(sigma_set).any())


def rand_constraint(rng, targets=TARGETS):
    t = targets[rng.integers(len(targets))]
    lo = int(rng.integers(0, BMAX + 1))
    hi = INF if rng.random() < 0.3 else int(rng.integers(lo, BMAX + 1))
    return DiversityConstraint(t, lo, hi)


def rand_set(rng, m, targets=TARGETS):
    return [rand_constraint(rng, targets) for _ in range(m)]


def test_brute_force_harness_has_power():
    s = parse_constraints("A=a1: 2..3")
    assert sem_implies(s, parse_constraints("A=a1: 1..3")[0])
    assert not sem_implies(s, parse_constraints("A=a1: 3..3")[0])
    assert not sem_satisfiable(parse_constraints("A=a1: 0..1\nA=a1, B=b1: 2..3"))


def test_paper_examples():
    s = parse_constraints("GEN=Female: 2..4")
    assert implies(s, parse_constraints("GEN=Female: 1..5")[0])
    assert implied_range(parse_constraints("GEN=Female: 1..5\nGEN=Female: 3..7"),
                         {"GEN": "Female"}) == (3, 5)
    s = parse_constraints("GEN=Female, ETH=Caucasian: 1..5")
    assert implied_range(s, {"GEN": "Female"}) == (1, INF)
    s = parse_constraints("GEN=Female: 1..5")
    assert implied_range(s, {"GEN": "Female", "ETH": "Caucasian"}) == (0, 5)


def test_axiom_functions():
    c = DiversityConstraint({"A": "a"}, 2, 4)
    assert axiom_relax(c, 1, 5).to_text() == "A=a: 1..5"
    with pytest.raises(ParameterError):
        axiom_relax(c, 3, 5)
    assert axiom_extend(c, {"B": "b"}).to_text() == "A=a, B=b: 0..4"
    with pytest.raises(ParameterError):
        axiom_extend(c, {"A": "x"})
    d = DiversityConstraint({"A": "a", "B": "b"}, 2, 4)
    assert axiom_reduce(d, ["A"]).to_text() == "A=a: 2..inf"
    with pytest.raises(ParameterError):
        axiom_reduce(d, ["A", "B"])
    assert axiom_intersect(c, DiversityConstraint({"A": "a"}, 3, 9)) == (3, 4)
    assert axiom_intersect(c, DiversityConstraint({"A": "a"}, 5, 9)) == (5, 4)
    with pytest.raises(ParameterError):
        axiom_intersect(c, d)


def test_axioms_are_sound_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(200):
        c = rand_constraint(rng)
        if len(c.target) == 1:
            extra = {"B": "b1"} if c.attributes == ("A",) else {"A": "a1"}
            assert sem_implies([c], axiom_extend(c, extra))
        else:
            assert sem_implies([c], axiom_reduce(c, ["A"]))
            assert sem_implies([c], axiom_reduce(c, ["B"]))
        assert sem_implies([c], axiom_relax(c, max(c.lo - 1, 0), INF))
        d = DiversityConstraint(c.target, int(rng.integers(0, 4)), INF)
        lo, hi = axiom_intersect(c, d)
        if lo <= hi:
            assert sem_implies([c, d], DiversityConstraint(c.target, lo, hi))
        else:
            assert not sem_satisfiable([c, d])


@pytest.mark.parametrize("seed", range(4))
def test_implication_sound_always_and_exact_matches(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        S = rand_set(rng, int(rng.integers(0, 4)))
        s = rand_constraint(rng)
        sem = sem_implies(S, s)
        if implies(S, s):
            assert sem, (S, s)  # soundness
        assert implies_exact(S, s) == sem, (S, s)


@pytest.mark.parametrize("seed", range(4))
def test_implication_complete_for_single_attribute_sigma(seed):
    """Where sub- and super-target counts cannot add up, Algorithm 1 is complete."""
    rng = np.random.default_rng(100 + seed)
    single = [t for t in TARGETS if len(t) == 1]
    for _ in range(80):
        S = rand_set(rng, int(rng.integers(0, 4)), single)
        s = rand_constraint(rng)
        assert implies(S, s) == sem_implies(S, s), (S, s)
        assert is_satisfiable(S) == sem_satisfiable(S)


def test_axioms_incomplete_case_documented():
    """Two disjoint super-targets add up: the axioms miss it, the exact test does not."""
    S = [DiversityConstraint({"A": "a1"}, 0, 3),
         DiversityConstraint({"A": "a1", "B": "b1"}, 2, INF),
         DiversityConstraint({"A": "a1", "B": "b2"}, 2, INF)]
    assert is_satisfiable(S)
    probe = DiversityConstraint({"A": "a2"}, 1, 1)
    assert not implies(S, probe)
    assert implies_exact(S, probe)  # unsatisfiable, so it implies everything


@pytest.mark.parametrize("seed", range(3))
def test_satisfiability_sound(seed):
    rng = np.random.default_rng(200 + seed)
    for _ in range(80):
        S = rand_set(rng, int(rng.integers(1, 5)))
        sat = satisfiability(S)
        if not sat:
            assert not sem_satisfiable(S)
            assert "empty range" in sat.reason
            assert all(c in S for c in sat.culprits)


@pytest.mark.parametrize("seed", range(3))
def test_minimal_cover_equivalent_and_minimal(seed):
    rng = np.random.default_rng(300 + seed)
    single = [t for t in TARGETS if len(t) == 1]
    done = 0
    for i in range(120):
        targets = single if i % 2 else TARGETS
        S = rand_set(rng, int(rng.integers(1, 5)), targets)
        if not is_satisfiable(S):
            with pytest.raises(InfeasibleError):
                minimal_cover(S)
            continue
        M = minimal_cover(S)
        assert set(M) <= set(S)
        assert all(sem_implies(M, c) for c in S)  # equivalent
        assert is_minimal(M)
        if targets is single and sem_satisfiable(S):  # semantically minimal too
            for j, c in enumerate(M):
                assert not sem_implies(M[:j] + M[j + 1:], c)
        done += 1
    assert done > 50


def test_redundant_reports_reason():
    S = parse_constraints("sex=F: 2..4\nsex=F, race=W: 0..9\nrace=W: 5..9")
    red = redundant_constraints(S)
    assert red[0][0].to_text() == "race=W, sex=F: 0..9"
    assert red[0][1][0].to_text() == "sex=F: 2..4"
    assert not is_minimal(S) and is_minimal(minimal_cover(S))


def test_bad_inputs():
    with pytest.raises(ParameterError, match="DiversityConstraint"):
        implies(["sex=F: 1..2"], DiversityConstraint({"a": 1}, 0, 1))
    with pytest.raises(ParameterError, match="sigma must be"):
        implies([], "x")
