"""Every `veil table anonymize --method` meets --l-diversity / --entropy-l / --t-closeness.

The published table is checked by brute force, from its text alone: rows are grouped by their
published QI tuple and each class's sensitive values are counted with plain Python (independent
of veil.tables.models). A model that the whole table fails is refused by every method (exit 2,
one line on stderr, no output). `mondrian-hierarchy` used to ignore the models entirely (the
sidecar said ``"privacy_models": []`` and classes with one income value were published).
"""

import csv
import json
import math
from collections import Counter, defaultdict

import numpy as np
import pandas as pd
import pytest

from cli_cases import exit_code as run

from veil.tables.diverse import METHODS
from veil.tables.hierarchy import Hierarchy

GENERALIZING = ("global", "local", "mondrian-hierarchy")
MODELS = {"l": ("--l-diversity", "2"), "entropy": ("--entropy-l", "1.6"),
          "t": ("--t-closeness", "0.25")}
ADULT_NAMES = ("age,workclass,fnlwgt,education,education-num,marital-status,occupation,"
               "relationship,race,sex,capital-gain,capital-loss,hours-per-week,native-country,"
               "income")
ADULT_QI = ["age", "education", "marital-status", "race", "sex"]
# income has two values (about 1:3 in these rows): exp(entropy) is at most about 1.76
ADULT_MODELS = dict(MODELS, entropy=("--entropy-l", "1.5"))


def _num(kind, text):
    return int(text) if kind == "l" else float(text)


def read_rows(path, names=None, skip_space=False):
    """The published table as text rows (csv module; no typing, no pandas)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, skipinitialspace=skip_space))
    rows = [r for r in rows if r]
    if names is None:
        names, rows = rows[0], rows[1:]
    return [dict(zip(names, r)) for r in rows]


def brute_force_violations(rows, qi, sensitive, kind, value, k):
    """Classes (published QI tuples) failing k or the model, computed from scratch."""
    overall = Counter(r[sensitive] for r in rows)
    n = len(rows)
    classes = defaultdict(list)
    for r in rows:
        classes[tuple(r[a] for a in qi)].append(r[sensitive])
    bad = []
    for key, vals in classes.items():
        cnt = Counter(vals)
        m = len(vals)
        if m < k:
            bad.append((key, "k", m))
        elif kind == "l" and len(cnt) < value:
            bad.append((key, "distinct", len(cnt)))
        elif kind == "entropy":
            h = -sum(c / m * math.log(c / m) for c in cnt.values())
            if h < math.log(value) - 1e-9:
                bad.append((key, "entropy", math.exp(h)))
        elif kind == "t":
            emd = 0.5 * sum(abs(cnt.get(v, 0) / m - overall[v] / n) for v in overall)
            if emd > value + 1e-9:
                bad.append((key, "emd", emd))
    return bad


def write_hierarchy(path, rows):
    path.write_text("".join(";".join(r) + "\n" for r in rows), encoding="utf-8")


def random_people(tmp, seed, n):
    """A small table whose sensitive value depends on a QI (homogeneous classes are likely)."""
    rng = np.random.default_rng(seed)
    edu = rng.choice(list("abcde"), n, p=[0.35, 0.25, 0.15, 0.15, 0.10])
    probs = {"a": [0.85, 0.05, 0.05, 0.05], "b": [0.1, 0.1, 0.7, 0.1],
             "c": [0.1, 0.1, 0.1, 0.7], "d": [0.25, 0.25, 0.25, 0.25],
             "e": [0.05, 0.8, 0.1, 0.05]}
    dis = [rng.choice(["flu", "hiv", "cold", "none"], p=probs[e]) for e in edu]
    df = pd.DataFrame({"age": rng.integers(20, 60, n).astype(str), "edu": edu,
                       "sex": rng.choice(["F", "M"], n), "disease": dis})
    p = tmp / f"people{seed}.csv"
    df.to_csv(p, index=False)
    hdir = tmp / f"h{seed}"
    hdir.mkdir()
    h = Hierarchy.intervals(range(20, 60), [5, 10, 20])
    write_hierarchy(hdir / "age.csv", [[v] + [h.generalize(v, lev) for lev in
                                              range(1, h.height + 1)] for v in h.values])
    write_hierarchy(hdir / "edu.csv", [["a", "ab", "*"], ["b", "ab", "*"], ["c", "cde", "*"],
                                       ["d", "cde", "*"], ["e", "cde", "*"]])
    return p, hdir


def anonymize_args(p, out, method, qi, k, hdir, extra=()):
    args = ["table", "anonymize", str(p), "--k", str(k), "--qi", ",".join(qi), "-m", method,
            "-o", str(out), "--seed", "0", *extra]
    if method in GENERALIZING:
        args += ["--hierarchies", str(hdir)]
    return args


def check_output(out, qi, sensitive, kind, k):
    rows = read_rows(out)
    bad = brute_force_violations(rows, qi, sensitive, kind, _num(kind, MODELS[kind][1]), k)
    assert not bad, bad[:5]
    side = json.loads(out.with_name(out.name + ".meta.json").read_text())
    assert len(side["privacy_models"]) == 1, side["privacy_models"]
    assert side["privacy_models"][0]["satisfied"] is True


@pytest.mark.parametrize("method", [m for m in METHODS if m != "baseline"])
@pytest.mark.parametrize("kind", list(MODELS))
def test_every_method_meets_the_model_on_random_tables(tmp_path, method, kind):
    flag, value = MODELS[kind]
    qi = ["age", "edu", "sex"]
    for seed in (1, 2, 3):
        p, hdir = random_people(tmp_path, seed, 90)
        out = tmp_path / f"out{seed}.csv"
        assert run(anonymize_args(p, out, method, qi, 3, hdir,
                                  ["--sensitive", "disease", flag, value])) == 0
        check_output(out, qi, "disease", kind, 3)


def test_without_the_model_mondrian_hierarchy_publishes_failing_classes(tmp_path):
    """Power: the brute-force check catches Mondrian's classes when no model is asked."""
    qi = ["age", "edu", "sex"]
    failed = {kind: 0 for kind in MODELS}
    for seed in (1, 2, 3):
        p, hdir = random_people(tmp_path, seed, 90)
        out = tmp_path / f"free{seed}.csv"
        assert run(anonymize_args(p, out, "mondrian-hierarchy", qi, 3, hdir)) == 0
        rows = read_rows(out)
        for kind, (_, v) in MODELS.items():
            failed[kind] += bool(brute_force_violations(rows, qi, "disease", kind,
                                                        _num(kind, v), 3))
    assert all(failed.values()), failed


@pytest.fixture(scope="module")
def adult_rows(tmp_path_factory):
    from veil.datasets import shared_data_path

    src = shared_data_path("adult", "adult.data")
    tmp = tmp_path_factory.mktemp("adult")
    p = tmp / "adult1500.csv"
    with open(src, encoding="utf-8", newline="") as f:
        p.write_text("".join(next(f) for _ in range(1500)), encoding="utf-8")
    return p, shared_data_path("adult", "hierarchies")


@pytest.mark.parametrize("method", [m for m in METHODS if m != "baseline"])
def test_every_method_meets_each_model_on_adult_rows(adult_rows, tmp_path, method):
    p, hdir = adult_rows
    names = ADULT_NAMES.split(",")
    for kind, (flag, value) in ADULT_MODELS.items():
        out = tmp_path / f"{kind}.csv"
        assert run(anonymize_args(p, out, method, ADULT_QI, 5, hdir,
                                  ["--names", ADULT_NAMES, "--skip-initial-space",
                                   "--sensitive", "income", flag, value])) == 0
        rows = read_rows(out, names, skip_space=True)
        bad = brute_force_violations(rows, ADULT_QI, "income", kind, _num(kind, value), 5)
        assert not bad, (method, kind, bad[:5])
        side = json.loads(out.with_name(out.name + ".meta.json").read_text())
        assert [m["satisfied"] for m in side["privacy_models"]] == [True]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("model", [("--l-diversity", "5"), ("--entropy-l", "4")])
def test_a_model_the_whole_table_fails_is_refused_by_every_method(tmp_path, capsys, method,
                                                                  model):
    p = tmp_path / "small.csv"
    p.write_text("age,sex,zip,disease\n30,M,1000,flu\n30,M,1000,cold\n31,F,1001,flu\n"
                 "31,F,1001,hiv\n32,M,1002,flu\n32,F,1002,cancer\n")
    out = tmp_path / "p.csv"
    capsys.readouterr()
    assert run(["table", "anonymize", str(p), "--k", "2", "--qi", "age,sex,zip", "-m", method,
                "--sensitive", "disease", *model, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("veil: error:"), err
    assert not out.exists() and not (tmp_path / "p.csv.meta.json").exists()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["small.csv"]


def test_mondrian_hierarchy_message_names_the_model(tmp_path, capsys):
    p = tmp_path / "small.csv"
    p.write_text("age,sex,zip,disease\n30,M,1000,flu\n30,M,1000,cold\n31,F,1001,flu\n"
                 "31,F,1001,hiv\n32,M,1002,flu\n32,F,1002,cancer\n")
    assert run(["table", "anonymize", str(p), "--k", "2", "--qi", "age,sex,zip", "-m",
                "mondrian-hierarchy", "--sensitive", "disease", "--l-diversity", "5",
                "-o", str(tmp_path / "p.csv")]) == 2
    err = capsys.readouterr().err
    assert "the whole table fails" in err and "'l': 5" in err


def test_mondrian_hierarchy_library_records_the_models():
    from veil.tables import anonymize
    from veil.tables.generalize import GeneralizationInfeasibleError, mondrian_generalize
    from veil.tables.models import DistinctLDiversity, TCloseness

    df = pd.DataFrame({"age": ["30", "30", "31", "31", "32", "32"],
                       "sex": ["M", "M", "F", "F", "M", "F"],
                       "disease": ["flu", "cold", "flu", "hiv", "flu", "cancer"]})
    res = anonymize(df, k=2, qi=["age", "sex"], method="mondrian-hierarchy",
                    models=[DistinctLDiversity("disease", 2), TCloseness("disease", 0.6)])
    assert [m["model"] for m in res.privacy] == ["distinct-l-diversity", "t-closeness"]
    assert all(m["satisfied"] for m in res.privacy)
    assert res.published()["privacy_models"] == res.privacy
    with pytest.raises(GeneralizationInfeasibleError) as ei:
        mondrian_generalize(df, k=2, qi=["age", "sex"], models=[DistinctLDiversity("disease", 5)])
    assert ei.value.proved


def test_mondrian_hierarchy_with_several_top_labels_keeps_k():
    """A hierarchy with two top labels: rows under different tops never share a class, so
    each top group must itself have k rows (it used to publish a class of one row)."""
    from veil.tables.generalize import GeneralizationInfeasibleError, mondrian_generalize

    h = {"a": Hierarchy([["x", "X"], ["y", "Y"]])}
    df = pd.DataFrame({"a": ["x", "x", "x", "y"], "b": ["1", "2", "3", "4"]})
    with pytest.raises(GeneralizationInfeasibleError, match="fewer than k = 2"):
        mondrian_generalize(df, k=2, qi=["a", "b"], hierarchies=h)
    df = pd.DataFrame({"a": ["x", "x", "x", "y", "y"], "b": ["1", "2", "3", "4", "5"]})
    res = mondrian_generalize(df, k=2, qi=["a", "b"], hierarchies=h)
    sizes = res.table.groupby(["a", "b"]).size()
    assert sizes.min() >= 2 and res.metrics["min_class_size"] >= 2
