"""Minimal cover / redundancy with one shared exact program and cheap counterexamples.

`veil table constraints minimize` on a ring of 80 two-attribute constraints
(`A{i}=a, A{i+1}=a: 2..5`) was killed at 120 s: it solved two HiGHS integer programs per
constraint (and rebuilt the program each time). The results must not change: they are compared
here with a copy of the former algorithm (a fresh program and integer programs only) on random
constraint sets, and the speed-up is checked without timing anything, by counting the integer
programs solved.
"""

import contextlib
import random

import pytest
import scipy.optimize

from cli_cases import exit_code as run

from veil.errors import VeilError
from veil.tables import parse_constraints
from veil.tables.reasoning import (_FILTER_LIMIT, implied_range, implies, is_minimal,
                                   minimal_cover, redundant_constraints, satisfiability)

INF = float("inf")


# --------------------------------------------------------------------------- the former code

def old_exact_implies(constraints, sigma):
    """The former exact_implies: a fresh program, every question an integer program."""
    from veil.tables.exact import _program

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
            return False
    return True


def old_implies(cs, sigma, how):
    lo, hi = implied_range(cs, sigma)
    if lo > hi or (lo >= sigma.lo and hi <= sigma.hi):
        return True
    if how == "exact":
        return old_exact_implies(cs, sigma)
    return not satisfiability(cs, method="axioms")


def old_witnesses(rest, c, how):
    lo, hi = implied_range(rest, c)
    if lo >= c.lo and hi <= c.hi:
        used = []
        if c.lo > 0:
            d = next((d for d in rest if (d.items == c.items or c.items < d.items)
                      and d.lo == lo), None)
            if d is not None:
                used.append(d)
        if c.hi != INF:
            d = next((d for d in rest if d.items <= c.items and d.hi == hi), None)
            if d is not None and d not in used:
                used.append(d)
        return used
    used = list(rest)
    if how == "exact" and len(used) <= _FILTER_LIMIT:
        for d in list(used):
            trial = [e for e in used if e is not d]
            if old_exact_implies(trial, c):
                used = trial
    return used


def old_redundant(cs, how):
    sat = satisfiability(cs, method=how)
    if not sat:
        raise VeilError(f"the constraint set is unsatisfiable: {sat.reason}")
    kept = list(cs)
    out = []
    i = 0
    while i < len(kept):
        rest = kept[:i] + kept[i + 1:]
        c = kept[i]
        if old_implies(rest, c, how):
            out.append((c, old_witnesses(rest, c, how)))
            kept = rest
        else:
            i += 1
    return out


def texts(red):
    return [(c.to_text(), [u.to_text() for u in used]) for c, used in red]


def random_set(rng):
    """Small sets over 2-4 attributes with 1-3 attribute targets: many are redundant, some
    unsatisfiable, and the count arguments of multi-attribute targets occur."""
    attrs = ["A", "B", "C", "D"][:rng.randint(2, 4)]
    lines = []
    for _ in range(rng.randint(1, 7)):
        tgt = sorted(rng.sample(attrs, rng.randint(1, min(3, len(attrs)))))
        lo = rng.choice([0, 0, 1, 2, 3, 4, 6])
        hi = rng.choice([None, lo, lo + 1, lo + 3, lo + 8])
        lines.append(", ".join(f"{a}={rng.choice('ab')}" for a in tgt)
                     + f": {lo}.." + ("" if hi is None else str(hi)))
    return parse_constraints("\n".join(lines))


def gadget_set(rng):
    """Count arguments: `X=a: 0..N` with disjoint sub-targets whose lower bounds fill it."""
    lines = []
    for g in range(rng.randint(1, 3)):
        n = rng.randint(4, 12)
        lines.append(f"X{g}=a: 0..{n}")
        used = 0
        for v in "bcd":
            lo = rng.randint(0, 4)
            hi = rng.choice([None, max(lo, n - used), lo + 2])
            lines.append(f"X{g}=a, Y{g}={v}: {lo}.." + ("" if hi is None else str(hi)))
            used += lo
    for i in range(rng.randint(0, 5)):
        lines.append(f"R{i}=a, R{i + 1}=a: {rng.randint(0, 3)}..{rng.choice(['', '6'])}")
    rng.shuffle(lines)
    return parse_constraints("\n".join(lines))


@pytest.mark.parametrize("seed", range(4))
def test_same_results_as_the_former_algorithm(seed):
    rng = random.Random(seed)
    for trial in range(40):
        cs = random_set(rng) if trial % 2 else gadget_set(rng)
        for how in ("exact", "axioms"):
            try:
                want = texts(old_redundant(cs, how))
            except VeilError as exc:
                with pytest.raises(VeilError) as got:
                    redundant_constraints(cs, method=how)
                assert str(got.value) == str(exc)
                continue
            assert texts(redundant_constraints(cs, method=how)) == want, (cs, how)
            assert is_minimal(cs, method=how) == (not want)
            cover = [c.to_text() for c in cs]
            for c, _ in want:
                cover.remove(c)
            assert [c.to_text() for c in minimal_cover(cs, method=how)] == cover
            for i, c in enumerate(cs):
                rest = cs[:i] + cs[i + 1:]
                assert implies(rest, c, method=how) == old_implies(rest, c, how)


def test_count_argument_still_needs_and_gets_the_integer_program():
    cs = parse_constraints("A=a: 0..10\nA=a, B=b: 3..\nA=a, B=c: 3..\nA=a, B=d: 0..4\n"
                           "A=a, B=d: 0..5")
    red = redundant_constraints(cs)
    assert texts(red) == texts(old_redundant(cs, "exact"))
    assert [c.to_text() for c, _ in red] == ["A=a, B=d: 0..4", "A=a, B=d: 0..5"]
    assert [u.to_text() for u in red[0][1]] == ["A=a: 0..10", "A=a, B=b: 3..inf",
                                                "A=a, B=c: 3..inf"]


def ring(n):
    return parse_constraints("\n".join(f"A{i}=a, A{(i + 1) % n}=a: 2..5" for i in range(n)))


@contextlib.contextmanager
def counting_milp(monkeypatch):
    calls = []
    real = scipy.optimize.milp

    def milp(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(scipy.optimize, "milp", milp)
    yield calls


@pytest.mark.parametrize("n", [16, 80])
def test_ring_is_minimal_without_solving_integer_programs(monkeypatch, n):
    """Each ring constraint is shown non-redundant by a counterexample built from a known
    relation (the former code solved two integer programs per constraint: 2n)."""
    cs = ring(n)
    with counting_milp(monkeypatch) as calls:
        assert redundant_constraints(cs) == []
        assert is_minimal(cs)
        assert satisfiability(cs).satisfiable
    assert len(calls) == 0


def test_progress_callback():
    seen = []
    cs = ring(6) + parse_constraints("A0=a, A1=a: 1..9")
    red = redundant_constraints(cs, progress=lambda done, total: seen.append((done, total)))
    assert [c.to_text() for c, _ in red] == ["A0=a, A1=a: 1..9"]
    assert seen[0] == (0, 7) and seen[-1] == (7, 7)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_cli_minimize_reports_progress(monkeypatch, tmp_path, capsys):
    shown = []

    @contextlib.contextmanager
    def fake_stages():
        yield shown.append

    import veil.cli.table as table_cli

    monkeypatch.setattr(table_cli, "stages", fake_stages)
    p = tmp_path / "ring.txt"
    p.write_text("".join(f"A{i}=a, A{(i + 1) % 12}=a: 2..5\n" for i in range(12)))
    assert run(["table", "constraints", "minimize", str(p)]) == 0
    assert capsys.readouterr().out.count("\n") == 12
    assert any("12 constraints" in s and "satisfiable" in s for s in shown)
    assert "minimize: 12 of 12 constraints examined" in shown
