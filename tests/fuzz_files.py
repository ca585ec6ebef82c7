"""Hypothesis strategies for odd input files (used by the reader and command fuzz tests).

A generated file is a :class:`FileSpec`: column names (hostile, blank, duplicated, case
twins), cells of odd types (NaN/inf/huge numbers, empty cells, numeric codes, booleans,
lists and structs, dates, text with quotes/newlines/unicode), written as CSV (BOM, CRLF,
no final newline, header only, quoted names), Parquet or JSON (records or NDJSON), and
sometimes damaged (empty file, bytes that are not UTF-8, a NUL, a truncated end).
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

#: Names a command is likely to ask for (so generated files often get past the first check).
USUAL = ["user", "category", "lat", "lon", "time", "count", "age", "sex", "cat"]
HOSTILE = ["a\"b", "it's", "new\nline", " padded ", "", "é 名", "x,y", "Sex", "sex",
           "user\" IS NULL OR (SELECT 1) > 0 OR \"user", "select", "\t", "__null__user"]

names = st.one_of(st.sampled_from(USUAL), st.sampled_from(HOSTILE),
                  st.text(st.characters(codec="utf-8", exclude_characters="\x00"),
                          max_size=6))

_texts = st.one_of(
    st.sampled_from(["", "Bar", "Park", "Gym", "u1", "u2", "F", "M", "nan", "inf", "-0",
                     "1e3", "01/02/2020", "12:30", "true", "[1, 2]", "NULL", "\"q\"",
                     "a,b", "x\ny", "x\r\ny", "é", " pad "]),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8))

_floats = st.one_of(st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 1e-320,
                                     -0.0, 0.5, 2.0 ** 53 + 1]),
                    st.floats(allow_nan=True, allow_infinity=True),
                    st.floats(-90, 90), st.floats(-180, 180))
_ints = st.one_of(st.integers(-3, 20), st.sampled_from([2 ** 63 - 1, -2 ** 63, 2 ** 53 + 1]),
                  st.integers(-2 ** 63, 2 ** 63 - 1))
_huge_ints = st.sampled_from([2 ** 64, 10 ** 30, -10 ** 25])

#: column kinds; a column holds cells of one kind, with missing cells sprinkled in
KINDS = ["int", "float", "text", "code", "bool", "list", "struct", "date", "lat", "lon",
         "time", "huge"]


def _cells(kind: str):
    return {
        "int": _ints, "float": _floats, "text": _texts, "code": st.integers(0, 3),
        "bool": st.booleans(), "list": st.lists(st.integers(0, 5), max_size=3),
        "struct": st.fixed_dictionaries({"x": st.integers(0, 5)}),
        "date": st.sampled_from(["2012-04-03 18:00:09", "2020-02-01", "not a date"]),
        "lat": st.floats(-90, 90), "lon": st.floats(-180, 180),
        "time": st.integers(0, 10 ** 6), "huge": _huge_ints,
    }[kind]


@dataclass
class FileSpec:
    fmt: str                       # csv, parquet, json
    names: list[str]
    kinds: list[str]
    rows: list[list]               # cells (None = missing)
    bom: bool = False
    crlf: bool = False
    final_newline: bool = True
    quote_all: bool = False
    damage: str = "none"           # none, empty, latin1, nul, truncate
    ndjson: bool = False

    @property
    def suffix(self) -> str:
        return {"csv": ".csv", "parquet": ".parquet",
                "json": ".ndjson" if self.ndjson else ".json"}[self.fmt]

    def write(self, path: Path) -> Path:
        data = self._bytes()
        if self.damage == "empty":
            data = b""
        elif self.damage == "latin1":
            data = data[: len(data) // 2] + "caf\u00e9".encode("latin-1") + data[len(data) // 2:]
        elif self.damage == "nul":
            data = data[: len(data) // 2] + b"\x00" + data[len(data) // 2:]
        elif self.damage == "truncate":
            data = data[: max(1, (2 * len(data)) // 3)]
        path.write_bytes(data)
        return path

    def _bytes(self) -> bytes:
        if self.fmt == "csv":
            buf = io.StringIO(newline="")
            w = csv.writer(buf, lineterminator="\r\n" if self.crlf else "\n",
                           quoting=csv.QUOTE_ALL if self.quote_all else csv.QUOTE_MINIMAL)
            w.writerow(self.names)
            for row in self.rows:
                w.writerow(["" if v is None else _csv_text(v) for v in row])
            text = buf.getvalue()
            if not self.final_newline:
                text = text.rstrip("\r\n")
            return (b"\xef\xbb\xbf" if self.bom else b"") + text.encode("utf-8")
        if self.fmt == "json":
            recs = ["{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}"
                                    for k, v in zip(self.names, row)) + "}"
                    for row in self.rows]
            text = "\n".join(recs) + "\n" if self.ndjson else "[" + ",\n".join(recs) + "]"
            return text.encode("utf-8")
        return _parquet_bytes(self)


def _csv_text(v) -> str:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v)


def _parquet_bytes(spec: FileSpec) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = []
    for j, kind in enumerate(spec.kinds):
        col = [row[j] for row in spec.rows]
        try:
            arr = pa.array(col)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arr = pa.array([None if v is None else _csv_text(v) for v in col], pa.string())
        arrays.append(arr)
    table = pa.Table.from_arrays(arrays, names=spec.names) if arrays else pa.table({})
    buf = pa.BufferOutputStream()
    pq.write_table(table, buf)
    return buf.getvalue().to_pybytes()


_NATURAL = {"user": "text", "category": "text", "cat": "text", "lat": "lat", "lon": "lon",
            "time": "time", "count": "code", "age": "code", "sex": "text", "Sex": "text"}


@st.composite
def file_specs(draw, *, want: list[str] | None = None, min_rows: int = 0) -> FileSpec:
    """A generated file; ``want`` names columns to include most of the time.

    Half of the files are well formed (no damage, no missing cell, each usual name with
    the kind it suggests), so that readers and commands often get past their checks and
    their results can be compared with what was written; the other half are anything.
    """
    clean = draw(st.booleans())
    fmt = draw(st.sampled_from(["csv", "csv", "parquet", "json"]))
    cols: list[str] = []
    if want:
        for w in want:
            if clean or draw(st.integers(0, 9)) > 0:  # 90%: the usual name
                cols.append(w)
    cols += draw(st.lists(names, max_size=3))
    if not cols:
        cols = [draw(names)]
    if clean:
        cols = list(dict.fromkeys(cols))
    elif draw(st.integers(0, 19)) == 0:   # 5%: a duplicate name
        cols.append(cols[0])
    if clean:
        kinds = [_NATURAL.get(c, "text") for c in cols]
    else:
        kinds = [draw(st.sampled_from(_likely_kinds(c))) for c in cols]
    n = draw(st.integers(max(min_rows, 1 if clean else 0), 6))
    missing = 0.0 if clean else draw(st.sampled_from([0.0, 0.0, 0.2]))
    rows = []
    for _ in range(n):
        row = []
        for kind in kinds:
            gone = missing and draw(st.floats(0, 1)) < missing
            cell = None if gone else draw(_cells(kind))
            if clean and kind == "text" and cell == "":
                cell = "x"  # an unquoted empty CSV cell is missing by definition
            row.append(cell)
        rows.append(row)
    return FileSpec(
        fmt=fmt, names=cols, kinds=kinds, rows=rows,
        bom=draw(st.integers(0, 4)) == 0, crlf=draw(st.booleans()),
        final_newline=draw(st.integers(0, 4)) > 0, quote_all=draw(st.integers(0, 4)) == 0,
        damage="none" if clean else draw(st.sampled_from(
            ["none"] * 8 + ["empty", "latin1", "nul", "truncate"])),
        ndjson=draw(st.booleans()))


def _likely_kinds(name: str) -> list[str]:
    """Kinds biased to what the name suggests (so commands sometimes succeed), plus odd ones."""
    usual = {"user": ["text", "code", "int"], "category": ["text", "code"],
             "cat": ["text", "code"], "lat": ["lat", "lat", "float"],
             "lon": ["lon", "lon", "float"], "time": ["time", "time", "date", "float"],
             "count": ["code", "int", "int"], "age": ["code", "int", "float"],
             "sex": ["text"], "Sex": ["text"]}.get(name, [])
    return usual * 3 + KINDS
