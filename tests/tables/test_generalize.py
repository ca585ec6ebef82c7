"""Generalization with hierarchies: lattice optimum against exhaustive search, local recoding,
Mondrian, privacy models recomputed independently per class, constraints on published text."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from veil.errors import DataError, ParameterError
from veil.tables import DiversityConstraint, diva, k_anonymize
from veil.tables.generalize import (GeneralizationInfeasibleError, global_recoding,
                                    local_recoding, mondrian_generalize)
from veil.tables.hierarchy import Hierarchy, load_hierarchies
from veil.tables.models import DistinctLDiversity, EntropyLDiversity, TCloseness


# --------------------------------------------------------------------------- fixtures

def hier_age(lo=20, hi=60):
    return Hierarchy.intervals(range(lo, hi), [5, 10, 20])


def hier_cat(values, groups):
    """Two levels above the values: value -> group -> '*'."""
    return Hierarchy([[v, groups[i % len(groups)], "*"] for i, v in enumerate(values)])


def random_table(rng, n=120):
    ages = rng.integers(20, 60, n)
    edu = rng.choice(["a", "b", "c", "d", "e"], n, p=[0.4, 0.25, 0.15, 0.12, 0.08])
    sex = rng.choice(["F", "M"], n)
    # the disease depends on education (classes by education tend to be homogeneous)
    table = {"a": [0.85, 0.05, 0.05, 0.05], "b": [0.1, 0.1, 0.7, 0.1], "c": [0.1, 0.1, 0.1, 0.7],
             "d": [0.25, 0.25, 0.25, 0.25], "e": [0.05, 0.8, 0.1, 0.05]}
    dis = np.array([rng.choice(["flu", "hiv", "cold", "none"], p=table[e]) for e in edu])
    inc = rng.integers(1, 6, n)
    df = pd.DataFrame({"age": ages.astype(str), "edu": edu, "sex": sex, "disease": dis,
                       "income": inc.astype(str)})
    H = {"age": hier_age(), "edu": hier_cat(["a", "b", "c", "d", "e"], ["ab", "cde"]),
         "sex": Hierarchy.flat(["F", "M"])}
    return df, H


QI = ["age", "edu", "sex"]


# --------------------------------------------------------------------------- independent checks

def published_levels(df, out, H, qi):
    """The level of every published cell, found independently from the text (or None: '*')."""
    levels = np.full((len(df), len(qi)), -1)
    for j, a in enumerate(qi):
        for i, (v, p) in enumerate(zip(df[a].astype(str), out[a].astype(str))):
            for lev in range(H[a].height + 1):
                if H[a].generalize(v, lev) == p:
                    levels[i, j] = lev
                    break
            else:
                assert p == "*", (a, v, p)
    return levels


def independent_granularity(df, out, H, qi):
    """Mean over QI cells of (leaves(label) - 1) / (leaves - 1); '*' (suppressed) costs 1."""
    tot = 0.0
    for a in qi:
        dom = len(H[a].values)
        for v, p in zip(df[a].astype(str), out[a].astype(str)):
            lev = next((lev for lev in range(H[a].height + 1) if H[a].generalize(v, lev) == p),
                       None)
            tot += 1.0 if lev is None else (H[a].leaves(p, lev) - 1) / (dom - 1)
    return tot / (len(df) * len(qi))


def class_stats(out, qi, sensitive, overall, ordered=False):
    """Per published class: size, distinct count, exp(entropy), EMD to the table's distribution
    (plain Python, not the library's code)."""
    values = sorted(overall, key=(lambda x: float(x)) if ordered else None)
    total = sum(overall.values())
    q = [overall[v] / total for v in values]
    res = []
    for _, g in out.groupby(qi, dropna=False):
        cnt = g[sensitive].astype(str).value_counts().to_dict()
        n = len(g)
        p = [cnt.get(v, 0) / n for v in values]
        ent = -sum(x * math.log(x) for x in p if x > 0)
        if ordered:
            acc, emd = 0.0, 0.0
            for pi, qi_ in zip(p[:-1], q[:-1]):
                acc += pi - qi_
                emd += abs(acc)
            emd /= max(len(values) - 1, 1)
        else:
            emd = 0.5 * sum(abs(a - b) for a, b in zip(p, q))
        res.append((n, sum(1 for x in p if x > 0), math.exp(ent), emd))
    return res


def check_published(df, res, qi, k, max_supp_rows=None):
    out = res.table
    assert list(out.columns) == list(df.columns) and len(out) == len(df)
    sizes = out.groupby(qi, dropna=False).size()
    assert sizes.min() >= k  # every published tuple, the all-'*' one included
    for c in df.columns:
        if c not in qi:
            assert out[c].equals(df[c])
    if max_supp_rows is not None:
        assert int((out[qi] == "*").all(axis=1).sum()) <= max_supp_rows


# --------------------------------------------------------------------------- hierarchies

def test_hierarchy_csv_and_errors(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("1;0~4;*\n2;0~4;*\n7;5~9;*\n")
    h = Hierarchy.from_csv(p)
    assert h.height == 2 and h.generalize("7", 1) == "5~9" and h.leaves("0~4", 1) == 2
    p.write_text("1;0~4;*\n2;0~4\n")
    with pytest.raises(DataError, match="line 2: 2 levels but line 1 has 3"):
        Hierarchy.from_csv(p)
    p.write_text("1;a;*\n1;a;*\n")
    with pytest.raises(DataError, match="value '1' appears twice"):
        Hierarchy.from_csv(p)
    p.write_text("1;a;x\n2;a;y\n")
    with pytest.raises(DataError, match="must be a tree"):
        Hierarchy.from_csv(p)
    (tmp_path / "ok.csv").write_text("1;*\n")
    df = pd.DataFrame({"age": ["1", "3"], "x": ["a", "b"]})
    with pytest.raises(DataError, match="column 'age'.*'3'"):
        global_recoding(df, k=2, qi=["age"],
                        hierarchies={"age": Hierarchy.from_csv(tmp_path / "ok.csv")})


def test_adult_hierarchies_load():
    from veil.datasets import shared_data_path

    qi = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex",
          "native-country"]
    H = load_hierarchies(shared_data_path("adult", "hierarchies"), qi)
    assert sorted(H) == sorted(qi)
    assert {c: h.height for c, h in H.items()} == {
        "age": 4, "workclass": 2, "education": 3, "marital-status": 2, "occupation": 2,
        "race": 1, "sex": 1, "native-country": 2}


# --------------------------------------------------------------------------- global recoding

CONFIGS = [dict(max_suppression=0.0, metric="granularity"),
           dict(max_suppression=0.1, metric="granularity"),
           dict(max_suppression=0.05, metric="nue"),
           dict(max_suppression=0.1, metric="granularity",
                models=[DistinctLDiversity("disease", 2)]),
           dict(max_suppression=0.1, metric="nue", models=[EntropyLDiversity("disease", 1.8)]),
           dict(max_suppression=0.2, metric="granularity", models=[TCloseness("disease", 0.3)]),
           dict(max_suppression=0.1, metric="granularity",
                constraints=[DiversityConstraint({"sex": "F"}, 20)])]


@pytest.mark.parametrize("cfg", range(len(CONFIGS)))
def test_flash_finds_the_exhaustive_optimum(cfg):
    kw = CONFIGS[cfg]
    rng = np.random.default_rng(40 + cfg)
    for _ in range(3):
        df, H = random_table(rng)
        try:
            ex = global_recoding(df, k=4, qi=QI, hierarchies=H, search="exhaustive", **kw)
        except GeneralizationInfeasibleError:
            with pytest.raises(GeneralizationInfeasibleError):
                global_recoding(df, k=4, qi=QI, hierarchies=H, **kw)
            continue
        fl = global_recoding(df, k=4, qi=QI, hierarchies=H, **kw)
        assert fl.stats["loss"] == pytest.approx(ex.stats["loss"], abs=1e-9)
        assert fl.stats["evaluated"] <= ex.stats["evaluated"]
        check_published(df, fl, QI, 4, int(kw["max_suppression"] * len(df)))
        if kw["metric"] == "granularity":  # the reported loss, recomputed from the text
            assert independent_granularity(df, fl.table, H, QI) == pytest.approx(
                fl.stats["loss"], abs=1e-9)
        for c in kw.get("constraints", []):
            cnt = int(np.all([fl.table[a].astype(str) == v for a, v in c.target], axis=0).sum())
            assert c.holds(cnt)


def test_exhaustive_comparison_has_power():
    """A plausible non-optimal search (first feasible node by total level) is caught."""
    rng = np.random.default_rng(3)
    worse = 0
    for _ in range(6):
        df, H = random_table(rng)
        ex = global_recoding(df, k=4, qi=QI, hierarchies=H, search="exhaustive",
                             max_suppression=0.1)
        heights = [H[a].height for a in QI]
        for node in sorted(itertools.product(*[range(h + 1) for h in heights]), key=sum):
            try:
                one = global_recoding(df, k=4, qi=QI, search="exhaustive", max_suppression=0.1,
                                      hierarchies={a: _fixed(H[a], lv) for a, lv in
                                                   zip(QI, node)})
            except GeneralizationInfeasibleError:
                continue
            worse += independent_granularity(df, one.table, H, QI) > ex.stats["loss"] + 1e-9
            break
    assert worse > 0


def _fixed(h, level):
    """A hierarchy with only one level: the original's ``level`` (forces that level)."""
    return Hierarchy([[r[0], r[level]] if level else [r[0], r[0]] for r in h.rows])


def test_suppressed_rows_form_a_class_of_k():
    """One outlier row and a limit allowing it: it is not published alone as all-'*'."""
    df = pd.DataFrame({"age": ["21", "22", "23", "24", "25", "59"],
                       "sex": ["F"] * 6, "x": list("abcdef")})
    res = global_recoding(df, k=3, qi=["age", "sex"], hierarchies={"age": hier_age()},
                          max_suppression=0.9)
    check_published(df, res, ["age", "sex"], 3)
    stars = (res.table[["age", "sex"]] == "*").all(axis=1).sum()
    assert stars == 0 or stars >= 3


def test_bad_parameters():
    df, H = random_table(np.random.default_rng(0), 40)
    with pytest.raises(ParameterError, match="max_suppression"):
        global_recoding(df, k=2, qi=QI, hierarchies=H, max_suppression=1.5)
    with pytest.raises(ParameterError, match="metric must be one of"):
        global_recoding(df, k=2, qi=QI, hierarchies=H, metric="dm")
    with pytest.raises(ParameterError, match="not quasi-identifiers"):
        global_recoding(df, k=2, qi=["age"], hierarchies=H)
    with pytest.raises(ParameterError, match="also a quasi-identifier"):
        global_recoding(df, k=2, qi=QI, hierarchies=H, models=[DistinctLDiversity("sex", 2)])
    with pytest.raises(GeneralizationInfeasibleError, match="no node") as ei:
        global_recoding(df, k=2, qi=QI, hierarchies=H, models=[DistinctLDiversity("disease", 9)])
    assert ei.value.proved


# --------------------------------------------------------------------------- local, Mondrian

@pytest.mark.parametrize("seed", range(4))
def test_local_recoding_is_valid_and_beats_mondrian(seed):
    rng = np.random.default_rng(60 + seed)
    df, H = random_table(rng, 400)
    loc = local_recoding(df, k=5, qi=QI, hierarchies=H)
    mon = mondrian_generalize(df, k=5, qi=QI, hierarchies=H)
    glo = global_recoding(df, k=5, qi=QI, hierarchies=H)
    for r in (loc, mon, glo):
        check_published(df, r, QI, 5)
        assert independent_granularity(df, r.table, H, QI) == pytest.approx(r.stats["loss"])
        lv = published_levels(df, r.table, H, QI)
        assert (lv >= 0).all()  # every cell is a hierarchy label of its own value
    assert loc.stats["loss"] <= mon.stats["loss"] + 1e-12
    assert loc.stats["loss"] <= glo.stats["loss"] + 1e-12  # local refines the global levels


def test_local_recoding_constraints():
    rng = np.random.default_rng(5)
    df, H = random_table(rng, 400)
    nf = int((df.sex == "F").sum())
    na = int((df.edu == "a").sum())
    cs = [DiversityConstraint({"sex": "F"}, nf - 40, nf - 20),
          DiversityConstraint({"edu": "a"}, 30)]
    res = local_recoding(df, k=5, qi=QI, hierarchies=H, constraints=cs)
    check_published(df, res, QI, 5)
    for c in cs:
        cnt = int(np.all([res.table[a] == v for a, v in c.target], axis=0).sum())
        assert c.holds(cnt), (c, cnt, na)
    assert all(s.satisfied for s in res.constraints)
    free = local_recoding(df, k=5, qi=QI, hierarchies=H)
    assert int((free.table.sex == "F").sum()) > nf - 20  # the upper bound needed work


# --------------------------------------------------------------------------- privacy models

MODELS = [DistinctLDiversity("disease", 2), EntropyLDiversity("disease", 1.8),
          TCloseness("disease", 0.25), TCloseness("income", 0.2, ordered=True)]


def _model_holds(df, out, qi, m):
    overall = df[m.sensitive].astype(str).value_counts().to_dict()
    ordered = getattr(m, "ordered", False)
    for n, distinct, eff, emd in class_stats(out, qi, m.sensitive, overall, ordered):
        if isinstance(m, DistinctLDiversity) and distinct < m.l:
            return False
        if isinstance(m, EntropyLDiversity) and eff < m.l - 1e-9:
            return False
        if isinstance(m, TCloseness) and emd > m.t + 1e-9:
            return False
    return True


@pytest.mark.parametrize("mi", range(len(MODELS)))
def test_models_recomputed_per_class_on_every_anonymizer(mi):
    m = MODELS[mi]
    rng = np.random.default_rng(80 + mi)
    df, H = random_table(rng, 300)
    runs = {
        "global": lambda ms: global_recoding(df, k=4, qi=QI, hierarchies=H, models=ms,
                                             max_suppression=0.2),
        "local": lambda ms: local_recoding(df, k=4, qi=QI, hierarchies=H, models=ms,
                                           max_suppression=0.05),
        "optimal-cut": lambda ms: k_anonymize(df, k=4, qi=QI, models=ms),
        "diva": lambda ms: diva(df, k=4, qi=QI, models=ms, seed=0,
                                constraints=[DiversityConstraint({"sex": "F"}, 40)]),
    }
    broken = 0
    for name, run in runs.items():
        res = run([m])
        check_published(df, res, QI, 4)
        assert _model_holds(df, res.table, QI, m), name
        assert res.privacy and res.privacy[0]["satisfied"]
        broken += not _model_holds(df, run([]).table, QI, m)  # power: without the model
    assert broken == len(runs)  # power: every anonymizer without the model fails the check


def test_model_parameter_checks():
    with pytest.raises(ParameterError, match="l must be"):
        DistinctLDiversity("d", 0)
    with pytest.raises(ParameterError, match="t must be"):
        TCloseness("d", 1.5)
    df, H = random_table(np.random.default_rng(1), 30)
    with pytest.raises(ParameterError, match="sensitive column 'zz'"):
        k_anonymize(df, k=2, qi=QI, models=[DistinctLDiversity("zz", 2)])
