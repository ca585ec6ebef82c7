"""A bad number given to a `veil table` option is refused naming that option.

`--l-diversity 0` said "l must be an integer >= 1", `--t-closeness -1` "t must be a number in
[0, 1]": names of the library's parameters, not of the options the user typed. Each case here:
exit 2, one line on stderr naming the option, nothing written.
"""

import pytest

from cli_cases import exit_code as run


SMALL = ("age,sex,zip,disease\n30,M,1000,flu\n30,M,1000,cold\n31,F,1001,flu\n31,F,1001,hiv\n"
         "32,M,1002,flu\n32,F,1002,cancer\n")


ANONYMIZE = [
    (["--sensitive", "disease", "--l-diversity", "0"], "--l-diversity"),
    (["--sensitive", "disease", "--l-diversity", "-3"], "--l-diversity"),
    (["--sensitive", "disease", "--entropy-l", "0.5"], "--entropy-l"),
    (["--sensitive", "disease", "--entropy-l", "inf"], "--entropy-l"),
    (["--sensitive", "disease", "--entropy-l", "nan"], "--entropy-l"),
    (["--sensitive", "disease", "--t-closeness", "-1"], "--t-closeness"),
    (["--sensitive", "disease", "--t-closeness", "1.5"], "--t-closeness"),
    (["--sensitive", "disease", "--t-closeness", "nan"], "--t-closeness"),
    (["-m", "global", "--max-suppression", "1.5"], "--max-suppression"),
    (["-m", "local", "--max-suppression", "-0.1"], "--max-suppression"),
    (["--risk-threshold", "0"], "--risk-threshold"),
    (["--risk-threshold", "2"], "--risk-threshold"),
    (["-m", "global", "--metric", "dm"], "--metric"),
    (["-m", "global", "--search", "fast"], "--search"),
    (["-m", "diva", "--strategy", "best"], "--strategy"),
]


@pytest.mark.parametrize("method", ["diva", "mondrian-hierarchy"])
@pytest.mark.parametrize("extra, option", ANONYMIZE)
def test_anonymize_names_the_option(tmp_path, capsys, extra, option, method):
    p = tmp_path / "small.csv"
    p.write_text(SMALL)
    out = tmp_path / "p.csv"
    if "-m" not in extra:
        extra = ["-m", method] + extra
    capsys.readouterr()
    assert run(["table", "anonymize", str(p), "--k", "2", "--qi", "age,sex,zip", *extra,
                "-o", str(out)]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("veil: error:") and option in lines[0], err
    assert "internal error" not in err
    assert sorted(x.name for x in tmp_path.iterdir()) == ["small.csv"]


@pytest.mark.parametrize("extra, option", [
    (["--sampling-fraction", "0"], "--sampling-fraction"),
    (["--sampling-fraction", "1.5"], "--sampling-fraction"),
    (["--sampling-fraction", "-1e-300"], "--sampling-fraction"),
    (["--sampling-fraction", "nan"], "--sampling-fraction"),
    (["--threshold", "0"], "--threshold"),
    (["--threshold", "nan"], "--threshold"),
])
def test_risk_names_the_option(tmp_path, capsys, extra, option):
    p = tmp_path / "small.csv"
    p.write_text(SMALL)
    out = tmp_path / "risk.json"
    capsys.readouterr()
    assert run(["table", "risk", str(p), "--qi", "age,sex", *extra, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("veil: error:") and option in lines[0], err
    assert sorted(x.name for x in tmp_path.iterdir()) == ["small.csv"]


def test_valid_edge_values_are_accepted(tmp_path):
    p = tmp_path / "small.csv"
    p.write_text(SMALL)
    assert run(["table", "anonymize", str(p), "--k", "2", "--qi", "age,sex,zip",
                "--sensitive", "disease", "--l-diversity", "1", "--risk-threshold", "1",
                "-o", str(tmp_path / "a.csv")]) == 0
    assert run(["table", "anonymize", str(p), "--k", "2", "--qi", "age,sex,zip", "-m", "global",
                "--sensitive", "disease", "--t-closeness", "1", "--max-suppression", "1",
                "-o", str(tmp_path / "b.csv")]) == 0
    assert run(["table", "risk", str(p), "--qi", "age,sex", "--sampling-fraction", "1",
                "--threshold", "1", "-o", str(tmp_path / "r.json")]) == 0
