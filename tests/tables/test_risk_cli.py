"""Re-identification risk (ARX definitions) and the generalization / risk commands end to end."""

import json

import numpy as np
import pandas as pd
import pytest

from veil.cli import main
from veil.errors import DataError, ParameterError
from veil.tables import (DistinctLDiversity, global_recoding, local_recoding,
                         reidentification_risk)
from veil.tables.data import read_table
from veil.tables.hierarchy import Hierarchy


def run(argv):
    try:
        main(argv)
    except SystemExit as exc:
        return exc.code or 0
    return 0


def direct_risk(df, qi, threshold=0.2, marker="*", pop=None):
    """Risk straight from class sizes with pandas (independent of veil's code)."""
    keep = ~(df[qi].astype(str) == marker).all(axis=1)
    g = df[keep].astype(str).groupby(qi).size()
    n, J = int(g.sum()), len(g)
    if pop is None:
        F = g
    else:
        P = pop.astype(str).groupby(qi).size()
        F = P.reindex(g.index)
    rec_p = np.repeat(1 / g.to_numpy(), g.to_numpy())
    rec_j = np.repeat(1 / F.to_numpy(), g.to_numpy())
    return {"prosecutor": (1 / g.min(), J / n, (rec_p > threshold).mean()),
            "journalist": (1 / F.min(), max(J / F.sum(), (g / F).sum() / n),
                           (rec_j > threshold).mean()),
            "marketer": (g / F).sum() / n,
            "sample_uniques": (g == 1).sum() / n}


def test_risk_matches_direct_computation_with_and_without_population():
    rng = np.random.default_rng(0)
    pop = pd.DataFrame({"a": rng.integers(0, 6, 2000).astype(str),
                        "b": rng.choice(["x", "y", "z"], 2000)})
    sample = pop.sample(frac=0.1, random_state=1).reset_index(drop=True)
    for p in (None, pop):
        r = reidentification_risk(sample, ["a", "b"], population=p, threshold=0.05)
        d = direct_risk(sample, ["a", "b"], 0.05, pop=p)
        for who in ("prosecutor", "journalist"):
            got = r[who]
            assert (got["highest"], got["success_rate"], got["records_at_risk"]) == \
                pytest.approx(d[who])
        assert r["marketer"]["success_rate"] == pytest.approx(d["marketer"])
        assert r["uniqueness"]["sample_uniques"] == pytest.approx(d["sample_uniques"])
    # journalist risk is below prosecutor risk once the population is larger
    r = reidentification_risk(sample, ["a", "b"], population=pop)
    assert r["journalist"]["highest"] < r["prosecutor"]["highest"] + 1e-12
    assert r["uniqueness"]["population_uniques"] == pytest.approx(
        (pop.groupby(["a", "b"]).size() == 1).sum() / len(pop))


def test_zayatz_uniqueness():
    """pi = 1: population uniques are the sample uniques; smaller pi: fewer of them unique."""
    t = pd.DataFrame({"a": [str(i) for i in range(30)] + ["x"] * 20})
    r1 = reidentification_risk(t, ["a"])
    assert r1["uniqueness"]["population_uniques"] == pytest.approx(30 / 50)
    r = reidentification_risk(t, ["a"], sampling_fraction=0.1)
    u = r["uniqueness"]
    assert 0 < u["sample_uniques_in_population"] < 30 / 50
    assert u["population_uniques"] < 30 / 50
    # hand computation of Zayatz's estimate: classes of size 1 (30) and 20 (1), n = 50, N = 500
    from scipy.stats import hypergeom

    w1, w20 = hypergeom.pmf(1, 500, 1, 50), hypergeom.pmf(1, 500, 20, 50)
    cond = 30 * w1 / (30 * w1 + 1 * w20)
    assert u["sample_uniques_in_population"] == pytest.approx(30 * cond / 50)
    assert u["population_uniques"] == pytest.approx(30 * cond / 0.1 / 500)


def test_risk_suppressed_rows_left_out_and_errors():
    t = pd.DataFrame({"a": ["*", "*", "1", "1", "2"], "b": ["*", "*", "x", "x", "y"]})
    r = reidentification_risk(t, ["a", "b"])
    assert r["records"] == 3 and r["suppressed_records"] == 2 and r["prosecutor"]["highest"] == 1
    with pytest.raises(ParameterError, match="threshold"):
        reidentification_risk(t, ["a"], threshold=0)
    with pytest.raises(ParameterError, match="not both"):
        reidentification_risk(t, ["a"], population=t, sampling_fraction=0.5)
    with pytest.raises(DataError, match="must be a sample"):
        reidentification_risk(t, ["a"], population=t.iloc[:3])
    allstar = reidentification_risk(t.iloc[:2], ["a", "b"])
    assert allstar["records"] == 0 and allstar["prosecutor"]["highest"] == 0.0


@pytest.mark.slow
def test_adult_prosecutor_risk_matches_class_sizes(tmp_path, capsys):
    """Acceptance: `veil table risk` on Adult reports the figures of a direct computation."""
    from veil.tables.adult import ADULT_QI8, load_adult

    df = load_adult()
    p = tmp_path / "adult.csv"
    df.to_csv(p, index=False)
    out = tmp_path / "risk.json"
    assert run(["table", "risk", str(p), "--qi", ",".join(ADULT_QI8), "-o", str(out)]) == 0
    got = json.loads(out.read_text())
    d = direct_risk(df, ADULT_QI8)
    assert got["records"] == 30_162
    pr = got["prosecutor"]
    assert (pr["highest"], pr["success_rate"], pr["records_at_risk"]) == pytest.approx(
        d["prosecutor"])
    printed = capsys.readouterr().err  # with -o, the summary is a status line (stderr)
    assert f"{100 * d['prosecutor'][1]:.2f}%" in printed


# --------------------------------------------------------------------------- CLI end to end

HIER_AGE = "\n".join(f"{a};{a // 5 * 5}~{a // 5 * 5 + 4};{a // 10 * 10}~{a // 10 * 10 + 9};*"
                     for a in range(20, 70)) + "\n"


@pytest.fixture
def people(tmp_path):
    rng = np.random.default_rng(3)
    n = 300
    df = pd.DataFrame({"age": rng.integers(20, 70, n).astype(str),
                       "sex": rng.choice(["F", "M"], n),
                       "zip": rng.choice(["1001", "1002", "2001", "2002"], n),
                       "disease": rng.choice(["a", "b", "c"], n)})
    p = tmp_path / "people.csv"
    df.to_csv(p, index=False, lineterminator="\r\n")
    hdir = tmp_path / "h"
    hdir.mkdir()
    (hdir / "age.csv").write_text(HIER_AGE)
    (hdir / "x_hierarchy_zip.csv").write_text("1001;100*;*\n1002;100*;*\n2001;200*;*\n"
                                              "2002;200*;*\n")
    return df, p, hdir, tmp_path


@pytest.mark.parametrize("method", ["global", "local", "mondrian-hierarchy"])
def test_cli_generalization_matches_the_library(people, method):
    df, p, hdir, tmp = people
    out = tmp / f"{method}.csv"
    args = ["table", "anonymize", str(p), "--k", "5", "--qi", "age,sex,zip", "-m", method,
            "--hierarchies", str(hdir), "-o", str(out), "--report", str(tmp / "rep.json")]
    if method != "mondrian-hierarchy":
        args += ["--sensitive", "disease", "--l-diversity", "2", "--max-suppression", "0.02"]
    assert run(args) == 0
    H = {"age": Hierarchy.from_csv(hdir / "age.csv"),
         "zip": Hierarchy.from_csv(hdir / "x_hierarchy_zip.csv")}
    tbl = read_table(p)
    if method == "global":
        lib = global_recoding(tbl, k=5, qi=["age", "sex", "zip"], hierarchies=H,
                              models=[DistinctLDiversity("disease", 2)], max_suppression=0.02)
    elif method == "local":
        lib = local_recoding(tbl, k=5, qi=["age", "sex", "zip"], hierarchies=H,
                             models=[DistinctLDiversity("disease", 2)], max_suppression=0.02)
    else:
        from veil.tables import mondrian_generalize

        lib = mondrian_generalize(tbl, k=5, qi=["age", "sex", "zip"], hierarchies=H)
    lib_out = tmp / "lib.csv"
    lib.table.write(lib_out)
    assert out.read_bytes() == lib_out.read_bytes()
    got = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert got.groupby(["age", "sex", "zip"]).size().min() >= 5
    assert got.disease.equals(df.disease) and b"\r\n" in out.read_bytes()
    side = json.loads((tmp / f"{method}.csv.meta.json").read_text())
    assert side["risk"]["prosecutor"]["highest"] <= 1 / 5
    assert "stats" not in side and "utility" not in json.dumps(side)
    rep = json.loads((tmp / "rep.json").read_text())
    assert rep["publishable"] is False
    assert rep["risk"]["input"]["prosecutor"]["highest"] >= rep["risk"]["output"]["prosecutor"][
        "highest"]
    assert set(rep["stats"]["utility"]["per_attribute"]) == {"age", "sex", "zip"}


def test_cli_risk_and_errors(people, capsys):
    df, p, hdir, tmp = people
    assert run(["table", "risk", str(p), "--qi", "age,sex"]) == 0
    d = direct_risk(df, ["age", "sex"])
    assert f"{100 * d['prosecutor'][1]:.2f}%" in capsys.readouterr().out
    out = tmp / "o.csv"
    for extra, msg in [(["--hierarchies", str(hdir)], "apply to --method global"),
                       (["-m", "global", "--l-diversity", "2"], "need --sensitive"),
                       (["-m", "global", "--hierarchy", "age"], "COLUMN=FILE"),
                       (["-m", "global", "--hierarchy", f"zz={hdir / 'age.csv'}"],
                        "not a quasi-identifier"),
                       (["-m", "global", "--metric", "dm"], "metric must be one of"),
                       (["-m", "global", "--max-suppression", "2"], "--max-suppression")]:
        assert run(["table", "anonymize", str(p), "--k", "5", "--qi", "age,sex,zip", "-o",
                    str(out)] + extra) == 2
        assert msg in capsys.readouterr().err
        assert not out.exists()
    # a hierarchy file is an input: never overwritten
    before = (hdir / "age.csv").read_bytes()
    assert run(["table", "anonymize", str(p), "--k", "5", "--qi", "age,sex", "-m", "global",
                "--hierarchies", str(hdir), "-o", str(hdir / "age.csv")]) == 2
    assert (hdir / "age.csv").read_bytes() == before


def test_cli_published_files_do_not_depend_on_hidden_values(people):
    """Global recoding on neighbours that differ in a suppressed row's hidden age: the
    published table and its sidecar are identical."""
    df, p, hdir, tmp = people
    lines = p.read_bytes().decode().split("\r\n")
    outs = []
    for age in ("21", "22"):
        q = tmp / f"n{age}.csv"
        # an extra row alone in its zip: suppressed at any level that keeps zip
        q.write_bytes("\r\n".join(lines[:-1] + [f"{age},F,2002,a", ""]).encode())
        o = tmp / f"o{age}.csv"
        assert run(["table", "anonymize", str(q), "--k", "5", "--qi", "age,sex,zip", "-m",
                    "global", "--hierarchies", str(hdir), "--max-suppression", "0.05",
                    "-o", str(o)]) == 0
        outs.append((o.read_bytes(), (tmp / f"o{age}.csv.meta.json").read_bytes()))
    last = outs[0][0].decode().split("\r\n")[-2]
    assert last.startswith("*,*,*") or last.split(",")[0] not in ("21", "22")
    assert outs[0] == outs[1]
