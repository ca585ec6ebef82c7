"""Atomic writers: success paths, and failures that must leave nothing behind."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest

import veil.io.write as W
from veil import PureDP, Release, geometric_mechanism, make_rng
from veil.errors import ParameterError
from veil.io import (atomic_path, atomic_paths, read_columns, read_table, sidecar_path, to_arrow,
                     write_json, write_release, write_table)


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


# ---------------------------------------------------------------- atomic_path


def test_atomic_path_temp_is_beside_target_and_renamed(tmp_path):
    out = tmp_path / "o.txt"
    with atomic_path(out) as tmp:
        assert tmp.parent == tmp_path and tmp != out
        tmp.write_text("hello")
        assert not out.exists()
    assert out.read_text() == "hello"
    assert _names(tmp_path) == ["o.txt"]


def test_atomic_path_fsyncs_before_rename(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(W.os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(W.os, "replace", lambda a, b: (calls.append("replace"), real_replace(a, b))[1])
    with atomic_path(tmp_path / "o.txt") as tmp:
        tmp.write_text("x")
    assert calls[:2] == ["fsync", "replace"]


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyboardInterrupt()])
def test_exception_mid_write_leaves_nothing(tmp_path, exc):
    out = tmp_path / "o.csv"
    with pytest.raises(type(exc)):
        with atomic_path(out) as tmp:
            with open(tmp, "w") as fh:
                fh.write("a,b\n1,")  # a partial row
                fh.flush()
                raise exc
    assert _names(tmp_path) == []


def test_failure_keeps_previous_content(tmp_path):
    out = tmp_path / "o.txt"
    out.write_text("old")
    with pytest.raises(ValueError):
        with atomic_path(out) as tmp:
            tmp.write_text("new but incomplete")
            raise ValueError("late failure")
    assert out.read_text() == "old"
    assert _names(tmp_path) == ["o.txt"]


def test_body_that_writes_nothing_is_an_error(tmp_path):
    out = tmp_path / "o.txt"
    with pytest.raises(FileNotFoundError, match="nothing was written"):
        with atomic_path(out) as tmp:
            tmp.unlink()
    assert _names(tmp_path) == []


def test_rename_failure_removes_temp(tmp_path, monkeypatch):
    def fail(a, b):
        raise OSError("disk on fire")

    monkeypatch.setattr(W.os, "replace", fail)
    with pytest.raises(OSError, match="disk on fire"):
        write_table({"a": [1, 2]}, tmp_path / "o.csv")
    assert _names(tmp_path) == []


@pytest.mark.parametrize("target,pattern", [
    ("missing/o.csv", "folder .*missing.* does not exist"),
    (".", "output file name is required|is a folder"),
    ("sub", "is a folder"),
])
def test_bad_targets(tmp_path, target, pattern):
    (tmp_path / "sub").mkdir()
    with pytest.raises(ParameterError, match=pattern):
        with atomic_path(tmp_path / target if target != "." else tmp_path) as tmp:
            tmp.write_text("x")
    assert _names(tmp_path) == ["sub"]


def test_atomic_paths_all_or_nothing(tmp_path, monkeypatch):
    real_replace = os.replace
    n = {"calls": 0}

    def second_fails(a, b):
        n["calls"] += 1
        if n["calls"] == 2:
            raise OSError("second rename failed")
        return real_replace(a, b)

    monkeypatch.setattr(W.os, "replace", second_fails)
    with pytest.raises(OSError, match="second rename"):
        with atomic_paths(tmp_path / "a", tmp_path / "b") as (ta, tb):
            ta.write_text("a")
            tb.write_text("b")
    assert _names(tmp_path) == []


def test_atomic_paths_replacing_a_set_never_leaves_half_of_the_old_one(tmp_path, monkeypatch):
    """Replacing an existing data file and sidecar (--force): the data file was replaced, the
    sidecar's rename failed, the new data file was removed and the OLD sidecar stayed, alone,
    describing a release that was no longer there. Now neither remains; a failure before the
    first rename still leaves the old pair untouched."""
    for name in ("a", "b"):
        (tmp_path / name).write_text("old " + name)
    real_replace = os.replace
    n = {"calls": 0}

    def fails_at(k):
        def replace(a, b):
            n["calls"] += 1
            if n["calls"] == k:
                raise OSError("rename failed")
            return real_replace(a, b)
        return replace

    monkeypatch.setattr(W.os, "replace", fails_at(1))
    with pytest.raises(OSError, match="rename failed"):
        with atomic_paths(tmp_path / "a", tmp_path / "b") as (ta, tb):
            ta.write_text("a")
            tb.write_text("b")
    assert _names(tmp_path) == ["a", "b"] and (tmp_path / "b").read_text() == "old b"
    n["calls"] = 0
    monkeypatch.setattr(W.os, "replace", fails_at(2))
    with pytest.raises(OSError, match="rename failed"):
        with atomic_paths(tmp_path / "a", tmp_path / "b") as (ta, tb):
            ta.write_text("a")
            tb.write_text("b")
    assert _names(tmp_path) == []


def test_atomic_paths_distinct_targets(tmp_path):
    with pytest.raises(ParameterError, match="distinct"):
        with atomic_paths(tmp_path / "a", tmp_path / "." / "a"):
            pass


# ---------------------------------------------------------------- write_table / json / release


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_write_table_roundtrip_and_inputs(tmp_path, fmt):
    import pandas as pd

    data = {"k": np.array([1, 2, 3]), "s": np.array(["a", "b", "c"], dtype=object),
            "x": np.array([0.5, -1.25, 3.0])}
    for i, value in enumerate([data, pa.table(data), pd.DataFrame(data)]):
        out = tmp_path / f"t{i}.{fmt}"
        write_table(value, out)
        back = read_columns(out, columns={"k": "int", "s": "str", "x": "float"})
        assert back["k"].tolist() == [1, 2, 3] and back["s"].tolist() == ["a", "b", "c"]
        assert back["x"].tolist() == [0.5, -1.25, 3.0]
    assert not [n for n in _names(tmp_path) if "tmp" in n]


def test_write_table_explicit_format_and_json_is_an_array(tmp_path):
    out = tmp_path / "t.out"
    write_table({"a": [1, 2]}, out, format="json")
    assert json.loads(out.read_text()) == [{"a": 1}, {"a": 2}]


def test_write_table_copy_failure_leaves_nothing(tmp_path, monkeypatch):
    def partial_then_fail(arrow, tmp, fmt, final):
        tmp.write_text("k\n1\n")  # half of the output
        raise OSError(f"cannot write {final}: device full")

    monkeypatch.setattr(W, "_copy", partial_then_fail)
    out = tmp_path / "t.csv"
    with pytest.raises(OSError, match="device full"):
        write_table({"k": [1, 2]}, out)
    assert _names(tmp_path) == []


@pytest.mark.parametrize("value,pattern", [
    ({"a": [1, 2], "b": [1]}, "column 'b' has 1 values"),
    ({"a": np.zeros((2, 2))}, "one-dimensional"),
    ({}, "no columns"),
    (np.zeros((2, 2)), "one-dimensional"),
])
def test_to_arrow_rejects_bad_tables(tmp_path, value, pattern):
    with pytest.raises(ParameterError, match=pattern):
        write_table(value, tmp_path / "o.csv")
    assert _names(tmp_path) == []


def test_to_arrow_single_array():
    assert to_arrow(np.array([1, 2]), name="n").column_names == ["n"]


def test_write_json(tmp_path):
    out = tmp_path / "m.json"
    write_json({"eps": np.float64(0.5), "v": np.arange(3), "bad": float("nan")}, out)
    assert json.loads(out.read_text()) == {"bad": "nan", "eps": 0.5, "v": [0, 1, 2]}


def test_write_json_unserializable_leaves_nothing(tmp_path):
    with pytest.raises(TypeError):
        write_json({"x": object()}, tmp_path / "m.json")
    assert _names(tmp_path) == []


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_write_release_data_and_sidecar(tmp_path, fmt):
    rel = geometric_mechanism(np.array([5, 0, 9]), epsilon=0.5, rng=make_rng(seed=3))
    data, meta = write_release(rel, tmp_path / f"r.{fmt}", name="count")
    assert meta == sidecar_path(data) and meta.name == f"r.{fmt}.meta.json"
    got = read_table(data, columns={"count": "int"}).column("count").to_pylist()
    assert got == rel.value.tolist()
    side = json.loads(meta.read_text())
    assert side["mechanism"] == "geometric" and side["budget"]["epsilon"] == 0.5
    assert side["noise_scale"] == rel.noise_scale
    assert _names(tmp_path) == sorted([data.name, meta.name])


def test_write_release_failure_in_sidecar_removes_data(tmp_path, monkeypatch):
    rel = Release(value=np.array([1, 2]), mechanism="m", budget=PureDP(1.0))
    real_replace = os.replace
    n = {"calls": 0}

    def sidecar_rename_fails(a, b):
        n["calls"] += 1
        if n["calls"] == 2:
            raise OSError("cannot rename sidecar")
        return real_replace(a, b)

    monkeypatch.setattr(W.os, "replace", sidecar_rename_fails)
    with pytest.raises(OSError, match="sidecar"):
        write_release(rel, tmp_path / "r.csv")
    assert _names(tmp_path) == []


def test_write_release_rejects_non_release(tmp_path):
    with pytest.raises(ParameterError, match="must be a veil Release"):
        write_release({"a": [1]}, tmp_path / "r.csv")
    assert _names(tmp_path) == []


def test_output_permissions_follow_umask_or_previous_file(tmp_path):
    mask = os.umask(0o022)
    try:
        out = tmp_path / "m.json"
        write_json({"a": 1}, out)
        assert out.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0o600
        os.chmod(out, 0o640)
        write_json({"a": 2}, out)
        assert out.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(mask)


def test_paths_with_quotes_and_bom_crlf(tmp_path):
    d = tmp_path / "it's here"
    d.mkdir()
    src = d / "o'k.csv"
    src.write_bytes(b"\xef\xbb\xbfbin,count\r\na,1\r\nb,2\r\n")
    t = read_table(src, columns={"bin": "str", "count": "count"})
    assert t.to_pydict() == {"bin": ["a", "b"], "count": [1, 2]}
    out = d / "x'y.parquet"
    write_table(t, out)
    assert read_table(out).to_pydict() == {"bin": ["a", "b"], "count": [1, 2]}


from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                max_size=12)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.integers(-2**63, 2**63 - 1),
                               st.floats(allow_nan=False, allow_infinity=False),
                               _text), min_size=1, max_size=20),
       fmt=st.sampled_from(["csv", "parquet", "json"]))
def test_roundtrip_is_exact(tmp_path, rows, fmt):
    ints, floats, texts = (list(c) for c in zip(*rows, strict=True))
    out = tmp_path / f"r.{fmt}"
    write_table({"i": np.array(ints, dtype=np.int64), "x": np.array(floats),
                 "s": np.array(texts, dtype=object)}, out)
    back = read_columns(out, columns={"i": "int", "x": "float", "s": "str"})
    assert back["i"].tolist() == ints
    assert back["x"].tolist() == floats
    assert back["s"].tolist() == texts
