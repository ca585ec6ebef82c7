"""Local recoding under diversity constraints: exactness against brute force, Adult.

The brute force enumerates every local recoding of a small table: every
partition of the rows into clusters of at least k rows (a published class is a
set of rows showing the same labels), and in every cluster every level of every
attribute at or above the cluster's lowest common label, with the published text
read from the hierarchy. It is written independently of ``veil.tables``' code
(only ``Hierarchy.generalize`` is used to read labels).
"""

import itertools

import numpy as np
import pandas as pd
import pytest

from veil.tables import DiversityConstraint, check_constraints, diva, parse_constraints
from veil.tables.generalize import GeneralizationInfeasibleError, local_recoding
from veil.tables.hierarchy import Hierarchy

# value -> group -> '*' for 4 values; a flat hierarchy (value -> '*') for 2
H4 = Hierarchy([["v0", "g0", "*"], ["v1", "g0", "*"], ["v2", "g1", "*"], ["v3", "g1", "*"]])
H2 = Hierarchy.flat(["v0", "v1"])


def _partitions(items, k):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for r in range(k - 1, len(rest) + 1):
        for comb in itertools.combinations(rest, r):
            left = [x for x in rest if x not in comb]
            for p in _partitions(left, k):
                yield [[first, *comb]] + p


def brute_force_local(df, qi, H, cs, k):
    """Whether some local recoding (classes of >= k rows showing one label per attribute)
    meets every constraint, counted on the published text."""
    vals = {a: df[a].astype(str).tolist() for a in qi}
    targets = [list(c.target) for c in cs]
    for part in _partitions(list(range(len(df))), k):
        reach = {tuple(0 for _ in cs)}
        for cl in part:
            per_attr = []
            for a in qi:
                h = H[a]
                labs = [[h.generalize(vals[a][i], lev) for i in cl] for lev in range(h.height + 1)]
                per_attr.append([lab[0] for lab in labs if len(set(lab)) == 1])
            opts = set()
            for choice in itertools.product(*per_attr):
                text = dict(zip(qi, choice))
                opts.add(tuple(len(cl) if all(text[a] == v for a, v in t) else 0
                               for t in targets))
            reach = {tuple(x + y for x, y in zip(r, o)) for r in reach for o in opts}
        if any(all(c.lo <= x <= c.hi for c, x in zip(cs, r)) for r in reach):
            return True
    return False


def check_local_output(df, res, qi, H, k, cs):
    """Independent checks of a published local recoding."""
    out = res.table
    assert list(out.columns) == list(df.columns) and len(out) == len(df)
    assert out.groupby(qi).size().min() >= k
    for a in qi:
        for v, p in zip(df[a].astype(str), out[a].astype(str)):
            assert p == "*" or p in {H[a].generalize(v, lev) for lev in range(H[a].height + 1)}
    for c in cs:
        cnt = int(np.all([out[a].astype(str) == v for a, v in c.target], axis=0).sum())
        assert c.holds(cnt), (c, cnt)


def random_instance(rng):
    n, q, k = int(rng.integers(4, 8)), int(rng.integers(2, 4)), int(rng.integers(2, 4))
    H = {f"Q{j}": (H4 if rng.random() < 0.5 else H2) for j in range(q)}
    rows = [tuple(f"v{int(rng.integers(0, 4 if H[f'Q{j}'] is H4 else 2))}" for j in range(q))
            for _ in range(n)]
    df = pd.DataFrame(rows, columns=list(H))
    cs = []
    for _ in range(int(rng.integers(1, 4))):
        attrs = sorted(rng.choice(q, size=int(rng.integers(1, q + 1)), replace=False))
        r = rows[int(rng.integers(n))]
        nt = sum(all(x[a] == r[a] for a in attrs) for x in rows)  # rows with the target
        lo = int(rng.choice([0] + list(range(k, nt + 2))))
        hi = float("inf") if rng.random() < 0.4 else int(rng.integers(lo, max(nt, lo) + 1))
        cs.append(DiversityConstraint({f"Q{a}": r[a] for a in attrs}, lo, hi))
    return df, H, cs, k


def test_brute_force_harness_has_power():
    """The brute force finds a solution that needs a generalized label and rejects a set that
    no recoding meets."""
    df = pd.DataFrame({"Q0": ["v0", "v1", "v2", "v3"], "Q1": ["v0", "v0", "v1", "v1"]})
    H = {"Q0": H4, "Q1": H2}
    assert brute_force_local(df, ["Q0", "Q1"], H, parse_constraints("Q0=v0: 0..0\nQ1=v0: 2.."), 2)
    assert not brute_force_local(df, ["Q0", "Q1"], H, parse_constraints("Q0=v0: 2.."), 2)
    # each constraint alone is met, both together are not: the rows showing Q0=v0 form a
    # class whose Q1 varies, and the 3 Q1=v0 rows cannot all stay in Q1-constant classes
    df6 = pd.DataFrame({"Q0": ["v0", "v0", "v1", "v0", "v2", "v3"], "Q1": ["v0"] * 3 + ["v1"] * 3})
    for one in ("Q1=v0: 3..", "Q0=v0: 3.."):
        assert brute_force_local(df6, ["Q0", "Q1"], H, parse_constraints(one), 3)
    assert not brute_force_local(df6, ["Q0", "Q1"], H,
                                 parse_constraints("Q1=v0: 3..\nQ0=v0: 3.."), 3)


def test_local_recoding_against_brute_force_on_small_instances():
    """proved=True only when no local recoding exists, and every feasible instance is solved
    (on main the top-down greedy alone gave up on feasible instances)."""
    rng = np.random.default_rng(31)
    feasible = solved = infeasible = proved = needed_diva = 0
    for _ in range(160):
        df, H, cs, k = random_instance(rng)
        if len(df) < k:
            continue
        qi = list(H)
        feas = brute_force_local(df, qi, H, cs, k)
        try:
            res = local_recoding(df, k=k, qi=qi, hierarchies=H, constraints=cs, seed=0)
        except GeneralizationInfeasibleError as exc:
            assert not (exc.proved and feas), (df.values.tolist(), cs)
            feasible += feas
            infeasible += not feas
            proved += exc.proved
            continue
        assert feas, (df.values.tolist(), cs)
        check_local_output(df, res, qi, H, k, cs)
        assert all(s.satisfied for s in res.constraints)
        needed_diva += res.stats["strategy"] != "top-down"
        feasible += 1
        solved += 1
    assert feasible >= 20 and infeasible >= 20  # both kinds occur (the test has power)
    assert needed_diva >= 3  # instances where the top-down greedy alone misses a constraint
    assert proved >= 10
    assert solved == feasible


def test_local_recoding_hides_inside_a_lower_bound_cluster():
    """DIVA's defect-7 instance: the Q0=v0 rows must stay visible (5..) but only 3 may show
    Q1=v0; the top-down greedy alone cannot, local recoding now does (Q1 generalized in a
    2-row cluster of each Q0 value)."""
    rows = [("v0", "v0")] * 5 + [("v1", "v0")] * 2
    df = pd.DataFrame(rows, columns=["Q0", "Q1"])
    cs = parse_constraints("Q1=v0: 3..3\nQ0=v0: 5..\nQ0=v1: 2..")
    H = {"Q0": H2, "Q1": H2}
    assert brute_force_local(df, ["Q0", "Q1"], H, cs, 2)
    res = local_recoding(df, k=2, qi=["Q0", "Q1"], hierarchies=H, constraints=cs, seed=0)
    check_local_output(df, res, ["Q0", "Q1"], H, 2, cs)
    assert [s.count for s in check_constraints(res.table, cs)] == [3, 5, 2]
    assert res.stats["strategy"] == "diva-clusters+top-down"


def test_local_recoding_proves_only_true_infeasibility():
    df = pd.DataFrame({"Q0": ["v0", "v0", "v1", "v1", "v1"], "Q1": ["v0"] * 5})
    H = {"Q0": H2, "Q1": H2}
    with pytest.raises(GeneralizationInfeasibleError) as e:  # 3 rows needed, 2 exist
        local_recoding(df, k=2, qi=["Q0", "Q1"], hierarchies=H, constraints="Q0=v0: 3..")
    assert e.value.proved
    with pytest.raises(GeneralizationInfeasibleError, match="unsatisfiable") as e:
        local_recoding(df, k=2, qi=["Q0", "Q1"], hierarchies=H,
                       constraints="Q0=v1: 0..2\nQ0=v1, Q1=v0: 3..")
    assert e.value.proved
    # a generalized label equal to a target value: counting target rows proves nothing
    Hc = {"Q0": Hierarchy([["v0", "v1"], ["v1", "v1"]]), "Q1": H2}
    df2 = df.assign(Q0=["v0", "v0", "v0", "v0", "v1"])
    assert brute_force_local(df2, ["Q0", "Q1"], Hc, parse_constraints("Q0=v1: 3.."), 2)
    try:
        res = local_recoding(df2, k=2, qi=["Q0", "Q1"], hierarchies=Hc, constraints="Q0=v1: 3..")
    except GeneralizationInfeasibleError as exc:
        assert not exc.proved
    else:
        assert int((res.table.Q0 == "v1").sum()) >= 3


def test_local_and_diva_on_the_same_random_tables():
    """Wherever DIVA meets a constraint set, local recoding meets it too (medium tables)."""
    rng = np.random.default_rng(7)
    both = 0
    for _ in range(12):
        n = 80
        df = pd.DataFrame({"a": rng.choice(["v0", "v1"], n), "b": rng.choice(["v0", "v1", "v2",
                                                                                 "v3"], n),
                           "c": rng.choice(["v0", "v1"], n)})
        H = {"a": H2, "b": H4, "c": H2}
        na = int((df.a == "v0").sum())
        nb = int(((df.a == "v0") & (df.b == "v1")).sum())
        if na < 8 or nb < 4:
            continue
        cs = [DiversityConstraint({"a": "v0"}, 4, na - 3),
              DiversityConstraint({"a": "v0", "b": "v1"}, 4, nb),
              DiversityConstraint({"c": "v1"}, 0, int((df.c == "v1").sum()) - 5)]
        try:
            diva(df, k=4, qi=list(H), constraints=cs, seed=0)
        except Exception:
            continue
        res = local_recoding(df, k=4, qi=list(H), hierarchies=H, constraints=cs, seed=0)
        check_local_output(df, res, list(H), H, 4, cs)
        both += 1
    assert both >= 6


# --------------------------------------------------------------------------- global recoding

def brute_force_global(df, qi, H, cs, k, max_rows):
    """(feasible, least loss): every lattice node, every set S of suppressed rows (all QIs
    '*'): S empty or >= k rows and at most max_rows, every other class 0 or >= k rows, the
    constraints counted on the rows not in S. Loss: granularity, '*' costs 1."""
    n = len(df)
    vals = {a: df[a].astype(str).tolist() for a in qi}
    best = None
    for node in itertools.product(*[range(H[a].height + 1) for a in qi]):
        lab = [tuple(H[a].generalize(vals[a][i], node[j]) for j, a in enumerate(qi))
               for i in range(n)]
        cost = [sum((H[a].leaves(lab[i][j], node[j]) - 1) / (len(H[a].values) - 1)
                    for j, a in enumerate(qi)) for i in range(n)]
        for size in [0] + list(range(k, max_rows + 1)):
            for S in itertools.combinations(range(n), size):
                inS = set(S)
                kept = [lab[i] for i in range(n) if i not in inS]
                cnt = {}
                for t in kept:
                    cnt[t] = cnt.get(t, 0) + 1
                if any(v < k for v in cnt.values()):
                    continue
                ok = all(c.holds(sum(all(t[qi.index(a)] == v for a, v in c.target) for t in kept))
                         for c in cs)
                if ok:
                    loss = (sum(cost[i] for i in range(n) if i not in inS) + len(S) * len(qi)
                            ) / (n * len(qi))
                    best = loss if best is None else min(best, loss)
    return best is not None, best


def test_global_recoding_against_brute_force_on_small_instances():
    """A lattice node breaking an upper bound is fixed by suppressing rows within the limit
    when that is possible, and fewer than k forced rows are completed at the least loss
    (exact integer program): global recoding finds a solution exactly when one exists
    (proved=True otherwise), and its loss is the brute-force optimum over every node and
    every suppressed set (on main, such nodes were infeasible or completed by whole
    classes)."""
    from veil.tables.generalize import global_recoding

    rng = np.random.default_rng(41)
    feasible = infeasible = extra = 0
    for _ in range(200):
        df, H, cs, k = random_instance(rng)
        if len(df) < k:
            continue
        qi = list(H)
        if rng.random() < 0.6:  # an upper bound below the target's rows: suppression can help
            v = df.Q0.iloc[0]
            nt = int((df.Q0 == v).sum())
            cs.append(DiversityConstraint({"Q0": v}, 0, max(nt - int(rng.integers(1, 3)), 0)))
        ms = float(rng.choice([0.0, 0.3, 0.6]))
        max_rows = int(np.floor(ms * len(df) + 1e-9))
        feas, best = brute_force_global(df, qi, H, cs, k, max_rows)
        runs = []
        for search in ("flash", "exhaustive"):
            try:
                runs.append(global_recoding(df, k=k, qi=qi, hierarchies=H, constraints=cs,
                                            max_suppression=ms, search=search))
            except GeneralizationInfeasibleError as exc:
                assert exc.proved and not feas, (df.values.tolist(), cs, ms)
                runs.append(None)
        if not feas:
            infeasible += 1
            assert runs == [None, None]
            continue
        feasible += 1
        assert runs[0] is not None and runs[1] is not None, (df.values.tolist(), cs, ms)
        assert runs[0].stats["loss"] == pytest.approx(runs[1].stats["loss"])
        for r in runs:
            out = r.table
            assert out.groupby(qi).size().min() >= k
            assert r.metrics["suppressed_rows"] <= max_rows
            assert all(c.holds(int(np.all([out[a] == v for a, v in c.target], axis=0).sum()))
                       for c in cs)
            assert r.stats["loss"] == pytest.approx(best, abs=1e-12)  # the exact optimum
        extra += runs[1].stats["extra_suppression"]
    assert feasible >= 20 and infeasible >= 20
    assert extra >= 3  # nodes that only extra suppression makes feasible were needed


def test_global_extra_suppression_fixes_an_upper_bound():
    """6 rows of sex=F, k = 2, sex=F: 0..4 with 2 rows of suppression allowed: the node that
    keeps sex (loss 0.25) needs two F rows suppressed; formerly that node was infeasible and
    the search returned sex generalized in every row (loss 0.5)."""
    from veil.tables.generalize import global_recoding

    df = pd.DataFrame({"sex": ["F"] * 6 + ["M"] * 2, "age": ["v0"] * 8})
    H = {"sex": Hierarchy.flat(["F", "M"]), "age": H2}
    r = global_recoding(df, k=2, qi=["sex", "age"], hierarchies=H, constraints="sex=F: 0..4",
                        max_suppression=0.25)
    assert int((r.table.sex == "F").sum()) == 4
    assert int((r.table[["sex", "age"]] == "*").all(axis=1).sum()) == 2
    assert r.stats["extra_suppression"] and r.stats["node"] == [0, 0]
    assert r.stats["loss"] == pytest.approx(0.25)
    with pytest.raises(GeneralizationInfeasibleError) as e:  # 1 row allowed: not enough
        global_recoding(df, k=2, qi=["sex", "age"], hierarchies=H, constraints="sex=F: 2..4",
                        max_suppression=0.125)
    assert e.value.proved


def test_cli_local_with_constraints_matches_the_library(tmp_path):
    """`veil table anonymize --method local --constraints` (DIVA's clusters needed) writes the
    library's table byte for byte; the sidecar holds no search statistics."""
    import json

    from veil.cli import main
    from veil.tables.data import read_table

    rows = [("v0", "v0")] * 5 + [("v1", "v0")] * 2
    p = tmp_path / "t.csv"
    pd.DataFrame(rows, columns=["Q0", "Q1"]).to_csv(p, index=False)
    (tmp_path / "c.txt").write_text("Q1=v0: 3..3\nQ0=v0: 5..\nQ0=v1: 2..\n")
    out = tmp_path / "out.csv"
    try:
        main(["table", "anonymize", str(p), "--k", "2", "--qi", "Q0,Q1", "-m", "local",
              "--constraints", str(tmp_path / "c.txt"), "--seed", "0", "-o", str(out)])
    except SystemExit as exc:
        assert not exc.code
    lib = local_recoding(read_table(p), k=2, qi=["Q0", "Q1"], seed=0,
                         constraints=parse_constraints((tmp_path / "c.txt").read_text()))
    assert lib.stats["strategy"] == "diva-clusters+top-down"
    lib.table.write(tmp_path / "lib.csv")
    assert out.read_bytes() == (tmp_path / "lib.csv").read_bytes()
    side = json.loads((tmp_path / "out.csv.meta.json").read_text())
    assert "stats" not in side and "strategy" not in json.dumps(side)
    got = pd.read_csv(out, dtype=str)
    assert [int(np.all([got[a] == v for a, v in c.target], axis=0).sum())
            for c in parse_constraints((tmp_path / "c.txt").read_text())] == [3, 5, 2]
