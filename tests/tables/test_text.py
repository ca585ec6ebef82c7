"""The published text is the input text (defects 1-4): files, pandas, pyarrow, one semantics."""

import csv
import io
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from veil.cli import main
from veil.errors import DataError
from veil.tables import DiversityConstraint, check_constraints, count_targets, diva, k_anonymize


def read_table(*a, **kw):
    from veil.tables.data import read_table as rt  # imported late: the CLI tests run on main too

    return rt(*a, **kw)


def read_text_table(*a, **kw):
    from veil.tables.textio import read_text_table as rt

    return rt(*a, **kw)


def cell_text(*a, **kw):
    from veil.tables.data import cell_text as ct

    return ct(*a, **kw)


def run(argv):
    try:
        main(argv)
    except SystemExit as exc:
        return exc.code or 0
    return 0


# values DuckDB's sniffer used to rewrite; each appears in a QI and a non-QI column
TRICKY = ["F", "T", "yes", "no", "01/02/2020", "12:30", "1e3", "-0", "0", "inf", "NaN",
          " lead", "trail ", '"a,b"', '"two\nlines"', '"say ""hi"""', '""', "x"]


def tricky_file(path, *, odd=False):
    """Each record twice (so k = 2 needs no suppression), CRLF, quoted fields; +1 odd row."""
    lines = ["q1,q2,n1,n2"]
    for i, v in enumerate(TRICKY):
        w = TRICKY[(i + 3) % len(TRICKY)]
        rec = f"{v},{w},{w},{v}"
        lines += [rec, rec]
    if odd:
        lines.append('odd,"only, once",1e3,-0')
    data = "\r\n".join(lines) + "\r\n"
    path.write_bytes(data.encode())
    return data


def records(data):
    return list(csv.reader(io.StringIO(data, newline="")))


@pytest.mark.parametrize("method", ["baseline", "diva", "mondrian"])
def test_cli_output_is_the_input_text_byte_for_byte(tmp_path, method):
    src = tmp_path / "in.csv"
    data = tricky_file(src)
    out = tmp_path / "out.csv"
    assert run(["table", "anonymize", str(src), "--k", "2", "--qi", "q1,q2", "-m", method,
                "-o", str(out)]) == 0
    assert out.read_bytes() == data.encode()  # nothing needed suppression: identical file


def test_cli_suppressed_cells_only_change(tmp_path):
    src = tmp_path / "in.csv"
    data = tricky_file(src, odd=True)
    out = tmp_path / "out.csv"
    assert run(["table", "anonymize", str(src), "--k", "2", "--qi", "q1,q2", "-m", "baseline",
                "-o", str(out)]) == 0
    got = out.read_bytes().decode()
    assert got.count("\r\n") == data.count("\r\n")  # line ends kept (incl. the quoted one)
    a, b = records(data), records(got)
    assert len(a) == len(b) and a[0] == b[0]
    stars = 0
    for ra, rb in zip(a[1:], b[1:]):
        assert ra[2:] == rb[2:]  # non-QI untouched
        for x, y in zip(ra[:2], rb[:2]):
            assert y == x or y == "*"
            stars += y == "*"
    assert stars > 0
    # each input record whose cells all stayed is copied byte for byte (quoting kept)
    raw_in = data.split("\r\n")
    for line in ['"say ""hi""",F,F,"say ""hi"""', 'trail ,"say ""hi""","say ""hi""",trail ',
                 '"",T,T,""', '-0,NaN,NaN,-0']:
        assert line in raw_in and line in got.split("\r\n")


def test_reader_semantics_and_errors(tmp_path):
    p = tmp_path / "t.csv"
    p.write_bytes('\ufeffa,b\n1, x \n\n"q""",\n'.encode())
    t = read_text_table(p)
    assert t.columns == ["a", "b"] and t["a"].tolist() == ["1", 'q"']
    assert t["b"].tolist() == [" x ", ""]
    out = tmp_path / "o.csv"
    assert t.write(out).read_bytes() == p.read_bytes()  # BOM, blank line, no final change
    p.write_text("a,b\n1,2\n3\n")
    with pytest.raises(DataError, match="row 2: has 1 field"):
        read_text_table(p)
    p.write_text('a,b\n1,"2\n')
    with pytest.raises(DataError, match="not closed"):
        read_text_table(p)
    p.write_text('a,b\n1,"2"x\n')
    with pytest.raises(DataError, match="row 1: text 'x' after the closing quote"):
        read_text_table(p)
    p.write_text("a,a\n1,2\n")
    with pytest.raises(DataError, match="'a' appears twice"):
        read_text_table(p)
    p.write_bytes(b"a\n\xff\n")
    with pytest.raises(DataError, match="row 1: is not UTF-8"):
        read_text_table(p)


def test_skip_initial_space_keeps_the_bytes(tmp_path):
    p = tmp_path / "adult.data"
    p.write_text("39, State-gov, Male\n50, State-gov, Male\n38, Private, Female\n")
    t = read_table(p, names=["age", "work", "sex"], skip_initial_space=True)
    assert t["work"].tolist() == ["State-gov", "State-gov", "Private"]
    r = k_anonymize(t, k=3, qi=["work"])
    assert r.table.write(tmp_path / "o.csv").read_text() == (
        "39, *, Male\n50, *, Male\n38, *, Female\n")


# --------------------------------------------------------------------------- one semantics

def test_pandas_float_column_matches_integer_text_defect3():
    df = pd.DataFrame({"fi": [39.0, 39.0, 40.0]})
    assert check_constraints(df, [DiversityConstraint({"fi": "39"}, 0)])[0].count == 2
    assert cell_text(np.array([39.0, 0.5, -0.0, 1e20, np.inf])).tolist() == [
        "39", "0.5", "0", "100000000000000000000", "inf"]
    assert cell_text(np.array([0.1], dtype=np.float32)).tolist() == ["0.1"]  # shortest repr


def test_bool_and_case_sensitive_columns_defect3():
    df = pd.DataFrame({"Sex": ["F", "M", "M"], "sex": ["M", "M", "F"], "b": [True, False, True]})
    cs = [DiversityConstraint({"Sex": "F"}, 0), DiversityConstraint({"sex": "F"}, 0),
          DiversityConstraint({"sex": "M", "Sex": "M"}, 0), DiversityConstraint({"b": "True"}, 0)]
    assert count_targets(df, cs) == [1, 1, 1, 2]
    assert count_targets(pa.Table.from_pandas(df), cs) == [1, 1, 1, 2]


def _kinds(df, tmp_path):
    """The same table as pandas, pyarrow, mapping, CSV file and Parquet file."""
    csvp, parq = tmp_path / "t.csv", tmp_path / "t.parquet"
    df.to_csv(csvp, index=False)
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), parq)
    return {"pandas": df, "arrow": pa.Table.from_pandas(df, preserve_index=False),
            "mapping": {c: df[c].to_numpy() for c in df.columns},
            "csv": read_table(csvp), "parquet": read_table(parq), "csv-path": str(csvp)}


def test_same_counts_and_output_across_table_kinds(tmp_path):
    rng = np.random.default_rng(1)
    n = 60
    df = pd.DataFrame({"age": rng.integers(30, 34, n), "sex": rng.choice(["F", "M"], n),
                       "w": rng.integers(0, 3, n) + 0.5, "b": rng.random(n) < 0.5,
                       "v": rng.integers(0, 9, n)})
    cs = [DiversityConstraint({"age": "31"}, 0), DiversityConstraint({"w": "1.5", "sex": "F"}, 0),
          DiversityConstraint({"b": "True"}, 0)]
    want = [int((df.age == 31).sum()), int(((df.w == 1.5) & (df.sex == "F")).sum()),
            int(df.b.sum())]
    texts = {}
    for kind, t in _kinds(df, tmp_path).items():
        assert count_targets(t, cs) == want, kind
        if kind == "csv-path":
            continue
        res = diva(t, k=3, qi=["age", "sex", "w"], constraints=[
            DiversityConstraint({"sex": "F"}, 3)], seed=0)
        cols = res.table if not isinstance(res.table, pa.Table) else res.table.to_pydict()
        texts[kind] = [list(map(str, cols[c])) for c in ("age", "sex", "w")]
    first = next(iter(texts.values()))
    assert all(v == first for v in texts.values())


def test_parquet_round_trip_keeps_types(tmp_path):
    df = pd.DataFrame({"a": ["x", "x", "y", "y"], "n": [1.5, 2.5, 3.5, 4.5]})
    p = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), p)
    r = k_anonymize(read_table(p), k=3, qi=["a"])
    out = pq.read_table(r.table.write(tmp_path / "o.parquet"))
    assert out.column("n").type == pa.float64() and out.column("a").to_pylist() == ["*"] * 4


# --------------------------------------------------------------------------- defect 4, 2

def test_check_absent_value_counts_zero_defect4(tmp_path, capsys):
    t = tmp_path / "t.csv"
    t.write_text("sex,age\n*,1\n*,1\nF,2\nF,2\n")
    c = tmp_path / "c.txt"
    c.write_text("sex=X: 0..0\nsex=F: 2..2\n")
    assert run(["table", "constraints", "check", str(t), "--constraints", str(c)]) == 0
    cap = capsys.readouterr()
    assert "value 'X' does not occur" in cap.err and "2/2 constraints hold" in cap.out
    c.write_text("sex=X: 5..\n")
    assert run(["table", "constraints", "check", str(t), "--constraints", str(c)]) == 1
    c.write_text("gender=X: 5..\n")
    assert run(["table", "constraints", "check", str(t), "--constraints", str(c)]) == 2


def test_paths_are_literal_in_every_read_defect2(tmp_path):
    (tmp_path / "p1.csv").write_text("a\nDECOY\nDECOY\n")
    (tmp_path / "p[1].csv").write_text("a\nreal\nreal\n")
    (tmp_path / "data1.csv").write_text("a\nx\nx\n")
    (tmp_path / "data2.csv").write_text("a\nx\nx\n")
    out = tmp_path / "o.csv"
    assert run(["table", "anonymize", str(tmp_path / "p[1].csv"), "--k", "2", "--qi", "a",
                "-m", "baseline", "-o", str(out)]) == 0
    assert out.read_text() == "a\nreal\nreal\n"
    assert count_targets(str(tmp_path / "p[1].csv"), [DiversityConstraint({"a": "real"}, 0)]) == [2]
    assert run(["table", "anonymize", str(tmp_path / "data?.csv"), "--k", "2", "--qi", "a",
                "-o", str(tmp_path / "o2.csv")]) == 2
    assert not (tmp_path / "o2.csv").exists()


def test_no_output_over_an_input(tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text("a\nx\nx\n")
    before = src.read_bytes()
    assert run(["table", "anonymize", str(src), "--k", "2", "--qi", "a", "-o", str(src)]) == 2
    assert "is the input table" in capsys.readouterr().err and src.read_bytes() == before
    c = tmp_path / "c.txt"
    c.write_text("a=x: 0..9\n")
    assert run(["table", "anonymize", str(src), "--k", "2", "--qi", "a", "--constraints", str(c),
                "-o", str(tmp_path / "o.csv"), "--report", str(c)]) == 2
    assert c.read_text() == "a=x: 0..9\n" and not (tmp_path / "o.csv").exists()


# --------------------------------------------------------------------------- published files

def test_published_files_do_not_depend_on_hidden_values(tmp_path):
    """Neighbours differing only in a suppressed cell publish identical table and sidecar.

    The private --report is not compared: it holds runtimes (documented as not publishable).
    """
    base = "q,r,pay\n" + "".join(f"a,{i % 3},{i}\n" for i in range(6)) + "zz1,0,99\n"
    outs = []
    for hidden in ("zz1", "zz2"):
        src = tmp_path / f"in-{hidden}.csv"
        src.write_text(base.replace("zz1", hidden))
        out = tmp_path / f"out-{hidden}.csv"
        assert run(["table", "anonymize", str(src), "--k", "2", "--qi", "q,r", "-m", "diva",
                    "-o", str(out), "--report", str(tmp_path / f"rep-{hidden}.json"),
                    "--seed", "0"]) == 0
        assert hidden not in out.read_text()
        outs.append((out.read_bytes(), (tmp_path / f"out-{hidden}.csv.meta.json").read_bytes()))
        rep = json.loads((tmp_path / f"rep-{hidden}.json").read_text())
        assert rep["publishable"] is False and "stats" in rep
    assert outs[0] == outs[1]
    side = json.loads(outs[0][1])
    assert "stats" not in side and side["metrics"]["suppressed_cells"] > 0


def test_hostile_and_case_colliding_names_through_the_cli(tmp_path, capsys):
    """Column names with quotes, and two names differing only in case, end to end."""
    t = tmp_path / "t.csv"
    t.write_text('"we""ird col",Sex,sex\nit\'s,F,M\nit\'s,F,M\nx,M,M\n')
    c = tmp_path / "c.txt"
    c.write_text('"we\\"ird col"="it\'s": 2..2\nSex=F: 2..2\nsex=M: 3..3\n')
    assert run(["table", "constraints", "check", str(t), "--constraints", str(c), "--show-sql"]) == 0
    out = capsys.readouterr().out
    assert "3/3 constraints hold" in out and '"c0"' in out  # positional names in the SQL
    o = tmp_path / "o.csv"
    assert run(["table", "anonymize", str(t), "--k", "3", "--qi", 'we"ird col,Sex',
                "-m", "baseline", "-o", str(o)]) == 0
    assert o.read_text().splitlines()[0] == '"we""ird col",Sex,sex'


def test_json_is_refused_for_tables(tmp_path):
    from veil.errors import ParameterError

    p = tmp_path / "t.json"
    p.write_text('[{"a": 1}]')
    with pytest.raises(ParameterError, match="CSV or Parquet"):
        read_text_table(p)
