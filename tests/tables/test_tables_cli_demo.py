"""`veil table ...` commands (exit codes, outputs) and the demo section data."""

import json

import numpy as np
import pandas as pd
import pytest

from veil.cli import main


def run(argv):
    try:
        main(argv)
    except SystemExit as exc:
        return exc.code or 0
    return 0


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    n = 120
    df = pd.DataFrame({"age": rng.integers(20, 30, n), "sex": rng.choice(["F", "M"], n),
                       "race": rng.choice(["W", "B"], n), "income": rng.integers(0, 9, n)})
    p = tmp_path / "people.csv"
    df.to_csv(p, index=False)
    nf = int((df.sex == "F").sum())
    c = tmp_path / "c.txt"
    c.write_text(f"sex=F: {nf - 15}..{nf - 5}\nrace=B, sex=F: 5..inf\n")
    return df, p, c, tmp_path


def test_anonymize_writes_table_and_report(files, capsys):
    df, p, c, tmp = files
    out = tmp / "anon.csv"
    assert run(["table", "anonymize", str(p), "--k", "5", "--qi", "age,sex,race",
                "--constraints", str(c), "--output", str(out), "--seed", "1"]) == 0
    got = pd.read_csv(out, dtype=str)
    assert got.groupby(["age", "sex", "race"]).size().min() >= 5
    assert (got.income.astype(int) == df.income).all()
    rep = json.loads((tmp / "anon.csv.meta.json").read_text())
    assert rep["constraints_satisfied"] == rep["constraints_total"] == 2
    assert "not differential privacy" in rep["guarantee"]
    cap = capsys.readouterr()
    assert "constraints satisfied 2/2" in cap.err and cap.out == ""  # status: stderr
    # the check command agrees (exit 0 when all hold)
    assert run(["table", "constraints", "check", str(out), "--constraints", str(c)]) == 0
    # baseline ignores constraints: the check fails with exit 1
    out2 = tmp / "base.parquet"
    assert run(["table", "anonymize", str(p), "--k", "5", "--qi", "age,sex,race", "--constraints", str(c),
                "--method", "baseline", "-o", str(out2)]) == 0
    assert run(["table", "constraints", "check", str(out2), "--constraints", str(c)]) == 1


@pytest.mark.parametrize("extra, text, msg", [
    (["--k", "1"], None, "--k must be >= 2"),
    (["--k", "5", "--qi", "age,zip"], None, "not in the table"),
    (["--k", "5"], "sex=F: 2..9\n", "lo = 2 is below k = 5"),
    (["--k", "5"], "sex=F: 9..2\n", "lo = 9 > hi = 2"),
    (["--k", "5"], "gender=F: 5..9\n", "unknown attribute 'gender'"),
    (["--k", "5"], "sex=Q: 5..9\n", "does not occur in column 'sex'"),
    (["--k", "5"], "sex=F: 0..2\nrace=B, sex=F: 5..9\n", "unsatisfiable"),
    (["--k", "5"], "sex=F: 500..900\n", "no \\(5, Sigma\\)-anonymization exists"),
    (["--k", "5", "--method", "best"], None, "--method must be one of"),
])
def test_anonymize_bad_input_exit_2_no_output(files, capsys, extra, text, msg):
    df, p, c, tmp = files
    out = tmp / "bad.csv"
    args = ["table", "anonymize", str(p), "--qi", "age,sex,race", "-o", str(out)]
    if "--qi" in extra:
        args = args[:3] + ["-o", str(out)]
    if text is not None:
        c.write_text(text)
        args += ["--constraints", str(c)]
    assert run(args + extra) == 2
    import re

    assert re.search(msg, capsys.readouterr().err)
    assert not out.exists() and not (tmp / "bad.csv.meta.json").exists()


def test_empty_table_exit_2(tmp_path, capsys):
    p = tmp_path / "e.csv"
    p.write_text("age,sex\n")
    assert run(["table", "anonymize", str(p), "--k", "2", "--qi", "age", "-o",
                str(tmp_path / "o.csv")]) == 2
    assert "empty" in capsys.readouterr().err


def test_constraint_commands(tmp_path, capsys):
    f = tmp_path / "s.txt"
    f.write_text("sex=F: 2..4\nsex=F: 1..5\nsex=F, race=W: 0..9\n")
    assert run(["table", "constraints", "minimize", str(f), "-o", str(tmp_path / "m.txt")]) == 0
    assert (tmp_path / "m.txt").read_text() == "sex=F: 2..4\n"
    assert run(["table", "constraints", "implies", str(f), "race=W, sex=F: 0..4"]) == 0
    assert run(["table", "constraints", "implies", str(f), "race=W, sex=F: 1..4"]) == 1
    assert run(["table", "constraints", "implies", str(f), "race=W, sex=F: 1..4", "--exact"]) == 1
    assert run(["table", "constraints", "satisfiable", str(f)]) == 0
    f.write_text("sex=F: 0..2\nsex=F, race=W: 3..5\n")
    assert run(["table", "constraints", "satisfiable", str(f)]) == 1
    assert "empty range [3, 2]" in capsys.readouterr().out
    f.write_text("sex=F 2..4\n")
    assert run(["table", "constraints", "satisfiable", str(f)]) == 2
    assert "line 1" in capsys.readouterr().err


def test_demo_results_quick():
    from veil.tables.demo import demo_results

    r = demo_results(np.random.default_rng(3), quick=True)
    assert r["satisfied"]["DIVA"] == len(r["constraints"])
    assert all(v >= r["k"] for v in r["min_class_size"].values())
    assert len(r["excerpt_rows"]) == 12 and len(r["status_rows"]) == len(r["constraints"])
    g = r["generalization"]
    loss = {row[0]: row[1] for row in g["rows"]}
    assert loss["local recoding"] <= loss["Mondrian (hierarchy)"]
    assert g["l_diversity"]["satisfied"] and g["l_diversity"]["worst"] >= 2
    risk = {row[0]: row for row in g["risk_rows"]}
    assert risk["input"][2] == 1.0  # the synthetic input has unique rows
    assert all(row[2] <= 1 / r["k"] for name, row in risk.items() if name != "input")


def test_report_section_builds():
    import veil.report.core as core
    from veil.report.sections.tables import build

    ctx = core.DemoContext(rng=np.random.default_rng(0), quick=True, outdir=None)
    sec = build(ctx)
    assert sec.id == "tables" and "NOT differential privacy" in sec.guarantee
    assert len(sec.figures) == 2 and len(sec.tables) == 5
    assert sec.results["l_diversity_worst_class"] >= 2
    sec.to_dict()


def test_experiment_generator_and_quick_format():
    from veil.tables import check_constraints, is_minimal, is_satisfiable
    from veil.tables.experiment import format_results, generate_constraints, synthetic_table

    rng = np.random.default_rng(2)
    df = synthetic_table(2000, rng)
    qi = list(df.columns[:7])
    for overlapping in (False, True):
        cs = generate_constraints(df, qi, m=6, k=5, rng=rng, overlapping=overlapping)
        assert len(cs) == 6 and is_satisfiable(cs) and is_minimal(cs)
        assert all(c.lo >= 5 for c in cs)
        assert all(s.satisfied or s.count >= s.constraint.lo for s in check_constraints(df, cs))
    text = format_results({"quick": True, "repeats": 1, "note": "x", "adult": [],
                           "ordering": [], "scaling": []})
    assert "Adult" in text


def test_constraint_commands_exact_by_default_defect6(tmp_path, capsys):
    f = tmp_path / "s.txt"
    f.write_text("A=a: 0..3\nA=a, B=b1: 2..\nA=a, B=b2: 2..\n")
    assert run(["table", "constraints", "satisfiable", str(f)]) == 1
    assert "cannot hold together" in capsys.readouterr().out
    assert run(["table", "constraints", "satisfiable", str(f), "--axioms"]) == 0
    assert run(["table", "constraints", "satisfiable", str(f), "--exact"]) == 1
    # unsatisfiable Sigma implies anything (exactly), not by the axioms
    assert run(["table", "constraints", "implies", str(f), "A=a2: 5..5"]) == 0
    assert run(["table", "constraints", "implies", str(f), "A=a2: 5..5", "--axioms"]) == 1
    f.write_text("A=a: 0..5\nA=a, B=b1: 2..\nA=a, B=b2: 2..\nA=a: 4..\n")
    out = tmp_path / "m.txt"
    assert run(["table", "constraints", "minimize", str(f), "-o", str(out)]) == 0
    assert "A=a: 4..inf" not in out.read_text() and out.read_text().count("\n") == 3
    assert run(["table", "constraints", "minimize", str(f), "-o", str(out), "--axioms",
                "--force"]) == 0  # replaces the first cover
    assert out.read_text().count("\n") == 4
    f.write_text("A=a: 0..3000000\n")
    assert run(["table", "constraints", "implies", str(f), "A=a: 0..2000000", "--exact"]) == 1
