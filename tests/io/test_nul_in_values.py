"""A NUL inside a value is written as given (security probe, defect M2).

numpy's fixed-width text (``<U``) drops trailing NULs, and Arrow's conversion of such an
array cut each value at its first NUL: ``write_table({'c': np.array(['Den\\x00tist'])})``
wrote ``Den``, and ``veil visits hide`` published the category ``Den\\0tist`` as ``Den``. The
reader keeps NULs inside values (a header with one is refused), so what is read is written
back exactly. Each test fails on the code before the fix. File names hold a quote and a
semicolon.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from cli_cases import run_veil
from veil.io import read_table, write_table
from veil.io.write import to_arrow

HOSTILE = "it's;"
VALUES = ["Den\x00tist", "Bar\x00", "\x00Gym", "plain"]


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
@pytest.mark.parametrize("make", [lambda v: np.array(v), lambda v: np.array(v, dtype=object),
                                  list, lambda v: pa.array(v)],
                         ids=["numpy-text", "numpy-object", "list", "arrow"])
def test_write_table_keeps_a_nul_inside_a_value(tmp_path, fmt, make):
    col = make(VALUES)
    # numpy's fixed-width text cannot hold a trailing NUL at all: what it holds is written
    want = [str(v) for v in col] if isinstance(col, np.ndarray) else VALUES
    out = write_table({"c": col, "n": np.arange(4)}, tmp_path / f"{HOSTILE}t.{fmt}")
    assert read_table(out).column("c").to_pylist() == want
    assert to_arrow(col, name="c").column("c").to_pylist() == want


def test_a_file_with_nuls_round_trips_exactly(tmp_path):
    src = tmp_path / f"{HOSTILE}in.csv"
    src.write_bytes(b"c,n\nDen\x00tist,1\nBar\x00,2\n\x00Gym,3\n")
    t = read_table(src)
    assert t.column("c").to_pylist() == ["Den\x00tist", "Bar\x00", "\x00Gym"]
    out = write_table({k: t.column(k).to_numpy(zero_copy_only=False) for k in t.column_names},
                      tmp_path / f"{HOSTILE}out.csv")
    assert out.read_bytes() == src.read_bytes()


def _published(path: Path) -> dict[str, str]:
    with open(path, newline="", encoding="utf-8") as fh:
        return {tuple(r[:-1]) if len(r) > 2 else r[0]: r[-1] for r in list(csv.reader(fh))[1:]}


def test_visits_hide_publishes_a_category_with_a_nul_as_it_is(tmp_path):
    f = tmp_path / f"{HOSTILE}hist.csv"
    f.write_bytes(b"category,count\nBar,3\nCafe,5\nDen\x00tist,2\nGym\x00,4\n")
    res = run_veil(["visits", "hide", f.name, "-s", "Bar", "--domain-from-data", "-o",
                    f"{HOSTILE}out.csv"], tmp_path)
    assert res.code == 0, res.err
    got = _published(tmp_path / f"{HOSTILE}out.csv")
    assert sorted(got) == ["Bar", "Cafe", "Den\x00tist", "Gym\x00"], got
    assert got["Bar"] == "0"


def test_visits_hide_on_check_ins_keeps_nuls_in_categories_and_users(tmp_path):
    f = tmp_path / f"{HOSTILE}checkins.csv"
    # "u1" and "u1\0" are two people: their visits were merged into one histogram
    f.write_bytes(b"user,cat\nu1,Bar\nu1,Den\x00tist\nu1\x00,Cafe\nu1\x00,Gym\x00\n"
                  b"u1\x00,Cafe\n")
    res = run_veil(["visits", "hide", f.name, "--user-column", "user", "--category-column",
                    "cat", "-s", "Bar", "--domain-from-data", "-o", f"{HOSTILE}out.csv"],
                   tmp_path)
    assert res.code == 0, res.err
    got = _published(tmp_path / f"{HOSTILE}out.csv")
    cats = ["Bar", "Cafe", "Den\x00tist", "Gym\x00"]
    assert sorted(got) == sorted((u, c) for u in ("u1", "u1\x00") for c in cats), got
    assert got[("u1", "Den\x00tist")] == "2" and got[("u1", "Cafe")] == "0", got
    assert got[("u1\x00", "Cafe")] == "2" and got[("u1\x00", "Gym\x00")] == "1", got
