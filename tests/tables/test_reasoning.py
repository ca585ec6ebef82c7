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
    assert is_satisfiable(S, method="axioms")
    probe = DiversityConstraint({"A": "a2"}, 1, 1)
    assert not implies(S, probe, method="axioms")
    assert implies_exact(S, probe)  # unsatisfiable, so it implies everything


@pytest.mark.parametrize("seed", range(3))
def test_satisfiability_sound(seed):
    rng = np.random.default_rng(200 + seed)
    for _ in range(80):
        S = rand_set(rng, int(rng.integers(1, 5)))
        sat = satisfiability(S, method="axioms")
        if not sat:
            assert not sem_satisfiable(S)
            assert "empty range" in sat.reason
            assert all(c in S for c in sat.culprits)
        exact = satisfiability(S)  # auto: exact on these multi-attribute sets
        assert exact.satisfiable == sem_satisfiable(S), S
        if not exact:
            assert not sem_satisfiable(list(exact.culprits))  # the culprits alone fail


def test_exact_satisfiability_finds_what_the_axioms_miss():
    """Power: on the brute-force family the axioms call some unsatisfiable sets satisfiable."""
    rng = np.random.default_rng(200)
    misses = 0
    for _ in range(240):
        S = rand_set(rng, int(rng.integers(1, 5)))
        misses += is_satisfiable(S, method="axioms") and not sem_satisfiable(S)
    assert misses > 0


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


# --------------------------------------------------------------------------- exact (defects 5, 6)

def test_exact_implication_large_bounds_defect5():
    """A finite bound above 10^6 was capped at 10^6: 0..3000000 'implied' 0..2000000."""
    S = parse_constraints("A=a: 0..3000000")
    assert not implies_exact(S, parse_constraints("A=a: 0..2000000")[0])
    assert not implies(S, parse_constraints("A=a, B=b: 0..2000000")[0])
    for hi in (10**6, 10**9, 2**40 - 1):
        S = [DiversityConstraint({"A": "a"}, 0, hi), DiversityConstraint({"A": "a", "B": "b"},
                                                                          hi // 2, INF)]
        assert implies_exact(S, DiversityConstraint({"A": "a", "B": "b"}, 0, hi))
        assert not implies_exact(S, DiversityConstraint({"A": "a", "B": "b"}, 0, hi - 1))
        assert implies_exact(S, DiversityConstraint({"A": "a"}, hi // 2, hi))
        assert not implies_exact(S, DiversityConstraint({"A": "a"}, hi // 2 + 1, hi))


def test_exact_bound_limit_is_an_error_not_a_wrong_answer():
    from veil.errors import InstanceTooLargeError

    S = [DiversityConstraint({"A": "a"}, 2**41, INF),
         DiversityConstraint({"A": "a", "B": "b"}, 0, 5)]
    with pytest.raises(InstanceTooLargeError, match="2\\*\\*40"):
        implies_exact(S, DiversityConstraint({"A": "a", "C": "c"}, 1, INF))


def test_satisfiability_and_cover_exact_by_default_defect6():
    S = parse_constraints("A=a: 0..3\nA=a, B=b1: 2..\nA=a, B=b2: 2..")
    sat = satisfiability(S)
    assert not sat and sat.method == "exact" and set(sat.culprits) == set(S)
    assert "cannot hold together" in sat.reason
    assert satisfiability(S, method="axioms")
    with pytest.raises(InfeasibleError):
        minimal_cover(S)
    # minimal cover: the count argument makes 'A=a: 4..' implied (2 + 2 rows)
    S = parse_constraints("A=a: 0..5\nA=a, B=b1: 2..\nA=a, B=b2: 2..\nA=a: 4..")
    assert minimal_cover(S, method="axioms") == S
    red = redundant_constraints(S)
    assert [c.to_text() for c, _ in red] == ["A=a: 4..inf"]
    assert {c.to_text() for c in red[0][1]} == {"A=a, B=b1: 2..inf", "A=a, B=b2: 2..inf"}
    assert not is_minimal(S) and is_minimal(minimal_cover(S))


def _full_product_feasible(constraints, attrs_vals):
    """Independent check: integer program over every cell of the full attribute product."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    names = sorted(attrs_vals)
    grid = list(itertools.product(*[attrs_vals[a] + [None] for a in names]))
    if not constraints:
        return True
    A = np.array([[all(dict(zip(names, cell)).get(a) == v for a, v in c.target) for cell in grid]
                  for c in constraints], dtype=float)
    res = milp(np.zeros(len(grid)), integrality=np.ones(len(grid)), bounds=Bounds(0, np.inf),
               constraints=LinearConstraint(A, [c.lo for c in constraints],
                                            [np.inf if c.hi == INF else c.hi
                                             for c in constraints]))
    return res.status == 0


def _full_product_implies(S, s, attrs_vals):
    cases = []
    if s.lo > 0:
        cases.append(DiversityConstraint(s.target, 0, s.lo - 1))
    if s.hi != INF:
        cases.append(DiversityConstraint(s.target, s.hi + 1, INF))
    return not any(_full_product_feasible(S + [c], attrs_vals) for c in cases)


@pytest.mark.parametrize("seed", range(3))
def test_compressed_cells_match_full_product(seed):
    """The compressed program (connected unions of targets) decides like the full product."""
    rng = np.random.default_rng(500 + seed)
    vals = {"A": ["a1", "a2"], "B": ["b1", "b2"], "C": ["c1"]}
    names = sorted(vals)
    disagreements = checked = 0
    for _ in range(40):  # random sets (bounds up to 23)
        S = []
        for _ in range(int(rng.integers(1, 6))):
            attrs = [a for a in names if rng.random() < 0.55] or [names[int(rng.integers(3))]]
            tgt = {a: vals[a][int(rng.integers(len(vals[a])))] for a in attrs}
            lo = int(rng.integers(0, 12))
            hi = INF if rng.random() < 0.4 else lo + int(rng.integers(0, 12))
            S.append(DiversityConstraint(tgt, lo, hi))
        s = S.pop()
        checked += 1
        want_sat = _full_product_feasible(S, vals)
        assert is_satisfiable(S, method="exact") == want_sat, S
        assert implies(S, s, method="exact") == _full_product_implies(S, s, vals), (S, s)
        disagreements += is_satisfiable(S, method="axioms") != want_sat
    # sums over disjoint super-targets (what the axioms miss), against the full product
    for lo1, lo2, hi in itertools.product(range(0, 4), range(0, 4), range(0, 7)):
        S = [DiversityConstraint({"A": "a1"}, 0, hi),
             DiversityConstraint({"A": "a1", "B": "b1"}, lo1, INF),
             DiversityConstraint({"A": "a1", "B": "b2", "C": "c1"}, lo2, INF)]
        want = _full_product_feasible(S, vals)
        assert want == (lo1 + lo2 <= hi)
        assert is_satisfiable(S) == want
        disagreements += is_satisfiable(S, method="axioms") != want
    assert checked == 40 and disagreements > 0


def test_exact_is_fast_on_many_attributes():
    """32 s at 10 attributes before: the compressed program has one cell per overlap."""
    from veil.tables.exact import ExactProgram

    cs = [DiversityConstraint({f"A{i}": "x", f"A{(i + 1) % 10}": "y"}, 1, 5) for i in range(10)]
    prog = ExactProgram.build([c.items for c in cs] + [frozenset({("A0", "x")})])
    assert len(prog.cells) < 40  # the full product has 3**10 = 59049 cells
    assert not implies_exact(cs, DiversityConstraint({"A0": "x"}, 1, 10))
    assert implies_exact(cs, DiversityConstraint({"A0": "x", "A1": "y"}, 1, 5))


def test_method_parameter_checked():
    with pytest.raises(ParameterError, match="method must be one of"):
        implies([], DiversityConstraint({"a": 1}, 0, 1), method="fast")
