"""Validation by one generated DuckDB query."""

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from veil.errors import ParameterError
from veil.tables import check_constraints, count_targets, parse_constraints, validation_sql


def test_one_query_for_all_constraints():
    cs = parse_constraints("sex=F: 1..2\nsex=F, race=W: 0..5\nrace=B: 1..1")
    sql = validation_sql(cs)
    assert sql.count("SELECT") == 1 and sql.count("FILTER") == 3
    assert "count_if" not in sql


def test_counts_match_numpy_on_random_tables():
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(0, 30))
        df = pd.DataFrame({"a": rng.choice(["x", "y", "*"], n), "b": rng.integers(0, 3, n)})
        cs = parse_constraints("a=x: 0..3\na=y, b=1: 2..9\nb=2: 0..inf")
        got = [s.count for s in check_constraints(df, cs)]
        want = [int((df.a == "x").sum()), int(((df.a == "y") & (df.b == 1)).sum()),
                int((df.b == 2).sum())]
        assert got == want


def test_empty_table_counts_zero_not_null():
    """count_if would return NULL here; count(*) FILTER returns 0."""
    df = pd.DataFrame({"sex": pd.Series([], dtype=str)})
    con = duckdb.connect()
    con.register("t", df)
    assert con.sql("SELECT count_if(sex = 'F') FROM t").fetchall()[0][0] is None
    st = check_constraints(df, parse_constraints("sex=F: 0..3"))
    assert st[0].count == 0 and st[0].satisfied


def test_suppressed_and_null_cells_never_match():
    df = pd.DataFrame({"sex": ["F", "*", None, "F"], "race": ["W", "W", "W", "*"]})
    st = check_constraints(df, parse_constraints("sex=F: 2..2\nsex=F, race=W: 1..1"))
    assert [s.count for s in st] == [2, 1] and all(s.satisfied for s in st)
    with pytest.raises(ParameterError, match="suppression marker"):
        check_constraints(df, parse_constraints("sex=*: 0..1"))


def test_quoting_of_names_and_values():
    df = pd.DataFrame({'we"ird col': ["it's", "x", "it's"]})
    cs = [parse_constraints("a=b: 0..1")[0].__class__({'we"ird col': "it's"}, 2, 2)]
    assert check_constraints(df, cs)[0].count == 2


def test_table_kinds_and_files(tmp_path):
    df = pd.DataFrame({"sex": ["F", "M", "F"], "age": [30, 30, 31]})
    cs = parse_constraints("sex=F: 2..2\nage=30: 1..1")
    p = tmp_path / "t.csv"
    df.to_csv(p, index=False)
    for t in (df, pa.Table.from_pandas(df), {"sex": df.sex.to_numpy(), "age": df.age.to_numpy()},
              str(p)):
        assert count_targets(t, cs) == [2, 2]
    with pytest.raises(ParameterError, match="unknown attribute 'zip'"):
        count_targets(df, parse_constraints("zip=1: 0..1"))
