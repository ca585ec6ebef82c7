"""One quoting function for SQL (veil.io.sql): literal paths, hostile names, no hand-made quoting."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

import veil
from veil.errors import ParameterError
from veil.io import read_table, sql

SRC = Path(veil.__file__).parent


@pytest.mark.parametrize("name", ["p[1].csv", "q*x.csv", "r?.csv", "s{a,b}.csv", "t'.csv",
                                  "u\\b.csv", "v[x.csv", "[*?].csv"])
def test_path_is_literal_not_a_glob(tmp_path, name):
    # decoys that a glob reading of `name` would match
    for decoy in ["p1.csv", "qzzx.csv", "rr.csv", "sa.csv", "x.csv", "*.csv", "?.csv"]:
        (tmp_path / decoy).write_text("a\n999\n")
    (tmp_path / name).write_text("a\n7\n")
    con = duckdb.connect()
    assert con.sql(f"SELECT a FROM read_csv({sql.path(tmp_path / name)})").fetchall() == [(7,)]
    got = read_table(tmp_path / name, columns={"a": "int"})
    assert got.column("a").to_pylist() == [7]


def test_glob_chars_absent_file_is_an_error_not_a_match(tmp_path):
    (tmp_path / "p1.csv").write_text("a\n1\n")
    with pytest.raises(veil.errors.DataError, match="no such file"):
        read_table(tmp_path / "p[1].csv", columns={"a": "int"})


@pytest.mark.parametrize("name", ['user" IS NULL OR (SELECT 1) > 0 OR "user', 'a"b', "it's",
                                  "select", "é 名"])
def test_ident_round_trips_hostile_names(name):
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t ({sql.ident(name)} INTEGER)")
    con.execute(f"INSERT INTO t VALUES (1), (NULL)")
    assert con.sql(f"SELECT count(*) FROM t WHERE {sql.ident(name)} IS NULL").fetchall() == [(1,)]
    assert con.sql("SELECT * FROM t").columns == [name]
    assert con.sql(f"SELECT {sql.literal(name)}").fetchall() == [(name,)]


def test_nul_is_refused():
    with pytest.raises(ParameterError, match="NUL"):
        sql.ident("a\x00b")
    with pytest.raises(ParameterError, match="NUL"):
        sql.literal("a\x00b")


def test_no_hand_made_quoting_outside_the_sql_module():
    """Every quoted identifier or literal goes through veil.io.sql (no `.replace("'", "''")`)."""
    pattern = re.compile(r"""replace\(\s*(["'])(\\?["'])\1\s*,""")
    offenders = []
    for f in SRC.rglob("*.py"):
        if f == SRC / "io" / "sql.py":
            continue
        for i, line in enumerate(f.read_text().splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{f.relative_to(SRC)}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


_COPY_TO = re.compile(r"""\bTO\s*\{\s*sql\.(\w+)\(""")


def test_copy_destinations_go_through_sql_target():
    """A COPY destination is never ``sql.path`` (it escapes glob characters, so ``-o
    'o[1].csv'`` would write ``o[[]1].csv``); the writers in io/write.py use ``sql.target``."""
    offenders, seen = [], 0
    for f in SRC.rglob("*.py"):
        text = f.read_text()
        for m in re.finditer(r"COPY\b", text):
            window = text[m.start():m.start() + 600]
            to = _COPY_TO.search(window)
            if to is None:
                continue
            seen += 1
            strict = f == SRC / "io" / "write.py"  # the writers: sql.target only
            if to.group(1) in ("path", "paths", "glob") or (strict and to.group(1) != "target"):
                line = text.count("\n", 0, m.start()) + 1
                offenders.append(f"{f.relative_to(SRC)}:{line}: TO {{sql.{to.group(1)}(...)}}")
    assert seen >= 2, seen  # write.py's COPY at least (the check must see something)
    assert not offenders, "\n".join(offenders)


def test_copy_check_catches_sql_path(tmp_path):
    """Canary: the pattern flags a destination quoted with sql.path."""
    bad = 'con.execute(f"COPY __out TO {sql.path(tmp)} (FORMAT csv)")'
    assert _COPY_TO.search(bad).group(1) == "path"
