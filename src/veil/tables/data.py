"""Table adaptors: pandas DataFrames, pyarrow Tables and mappings of columns.

Algorithms work on integer codes of the quasi-identifier columns; values are
compared as strings (``39`` and ``"39"`` are the same value), which is also
how the constraint text and the generated SQL see them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import DataError, ParameterError
from ..io import sql

__all__ = ["as_columns", "column_strings", "encode_qi", "EncodedQI", "read_table",
           "write_table_atomic", "table_kind", "replace_columns", "num_rows"]


def table_kind(table: Any) -> str:
    """``"pandas"``, ``"arrow"`` or ``"mapping"``."""
    mod = type(table).__module__
    if mod.startswith("pandas") and hasattr(table, "columns"):
        return "pandas"
    if mod.startswith("pyarrow") and hasattr(table, "column_names"):
        return "arrow"
    if isinstance(table, Mapping):
        return "mapping"
    raise ParameterError(
        f"table must be a pandas DataFrame, a pyarrow Table or a mapping of column name to "
        f"values, got {type(table).__name__}")


def as_columns(table: Any) -> dict[str, np.ndarray]:
    """The table as an ordered dict of numpy arrays (no copy when possible)."""
    kind = table_kind(table)
    if kind == "pandas":
        return {str(c): table[c].to_numpy() for c in table.columns}
    if kind == "arrow":
        return {name: table.column(name).to_numpy(zero_copy_only=False)
                for name in table.column_names}
    cols = {str(c): np.asarray(v) for c, v in table.items()}
    lengths = {len(v) for v in cols.values()}
    if len(lengths) > 1:
        raise DataError(f"columns have different lengths: {sorted(lengths)}")
    return cols


def num_rows(cols: Mapping[str, np.ndarray]) -> int:
    return len(next(iter(cols.values()))) if cols else 0


def _is_missing(arr: np.ndarray) -> np.ndarray:
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    if arr.dtype.kind == "O":
        with np.errstate(invalid="ignore"):
            return np.asarray((arr == None) | (arr != arr), dtype=bool)  # noqa: E711
    return np.zeros(len(arr), dtype=bool)


def column_strings(arr: np.ndarray, *, name: str | None = None) -> np.ndarray:
    """Values of a column as a numpy array of Python strings.

    Integral floats print without ``.0`` (pandas turns int columns with gaps
    into floats). Missing values raise :class:`DataError` naming the row.
    """
    arr = np.asarray(arr)
    miss = _is_missing(arr)
    if miss.any():
        row = int(np.flatnonzero(miss)[0]) + 1
        raise DataError("missing value in a quasi-identifier or constraint column; drop or "
                        "fill missing values first", row=row, column=name)
    if arr.dtype.kind == "f" and np.all(np.mod(arr, 1) == 0):
        arr = arr.astype(np.int64)
    if arr.dtype.kind == "b":
        return np.where(arr, "True", "False").astype(object)
    return arr.astype(str).astype(object)


class EncodedQI:
    """Quasi-identifier columns as integer codes.

    Attributes
    ----------
    names : list of str
    codes : ndarray, shape (n, q), int32
        ``codes[i, j]`` indexes ``values[j]``; codes follow the sorted order of
        the values (numerically when every value is a number).
    values : list of ndarray of str
    """

    def __init__(self, names: list[str], codes: np.ndarray, values: list[np.ndarray]):
        self.names = names
        self.codes = codes
        self.values = values

    @property
    def n(self) -> int:
        return self.codes.shape[0]

    @property
    def q(self) -> int:
        return self.codes.shape[1]

    def code_of(self, attr: str, value: str) -> int:
        """Code of a value in an attribute, or -2 when it does not occur."""
        j = self.names.index(attr)
        vals = self.values[j]
        hit = np.flatnonzero(vals == value)
        return int(hit[0]) if hit.size else -2


def _sort_key_values(uniq: np.ndarray) -> np.ndarray:
    try:
        nums = np.array([float(u) for u in uniq])
        return np.argsort(nums, kind="stable")
    except ValueError:
        return np.argsort(uniq.astype(str), kind="stable")


def encode_qi(cols: Mapping[str, np.ndarray], qi: Sequence[str]) -> EncodedQI:
    """Encode the quasi-identifier columns ``qi`` of ``cols`` as integer codes."""
    n = num_rows(cols)
    codes = np.empty((n, len(qi)), dtype=np.int32)
    values = []
    for j, name in enumerate(qi):
        s = column_strings(cols[name], name=name)
        uniq, inv = np.unique(s.astype(str), return_inverse=True)
        order = _sort_key_values(uniq)
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        codes[:, j] = rank[inv]
        values.append(uniq[order].astype(object))
    return EncodedQI(list(qi), codes, values)


def replace_columns(table: Any, new: Mapping[str, np.ndarray]) -> Any:
    """A copy of ``table`` (same kind) with some columns replaced; the input is not mutated."""
    kind = table_kind(table)
    if kind == "pandas":
        out = table.copy(deep=True)
        for name, arr in new.items():
            col = next(c for c in table.columns if str(c) == name)
            out[col] = arr
        return out
    if kind == "arrow":
        import pyarrow as pa

        out = table
        for name, arr in new.items():
            i = table.column_names.index(name)
            out = out.set_column(i, name, pa.array(list(arr), type=pa.string()))
        return out
    out = {str(c): np.array(v, copy=True) for c, v in table.items()}
    for name, arr in new.items():
        out[name] = np.asarray(arr)
    return out


def read_table(path: str | Path, *, header: bool | None = None,
               names: Sequence[str] | None = None):
    """Read CSV or Parquet through DuckDB into a pyarrow Table (all columns kept).

    ``names`` gives column names to a CSV without a header. Leading and trailing
    spaces of text values are stripped (the UCI files pad them).
    """
    import duckdb

    p = Path(path)
    if not p.is_file():
        raise DataError("input file does not exist", path=str(p))
    con = duckdb.connect()
    try:
        lit = sql.path(p)
        if p.suffix.lower() in (".parquet", ".pq"):
            rel = con.sql(f"SELECT * FROM read_parquet({lit})")
        else:
            opts = []
            if header is not None:
                opts.append(f"header={'true' if header else 'false'}")
            if names is not None:
                cols = ", ".join(sql.literal(n) for n in names)
                opts.append(f"names=[{cols}]")
            extra = (", " + ", ".join(opts)) if opts else ""
            rel = con.sql(f"SELECT * FROM read_csv({lit}{extra})")
        tbl = rel.to_arrow_table()
    except duckdb.Error as exc:
        raise DataError(f"cannot read the table: {exc}", path=str(p)) from None
    finally:
        con.close()
    import pyarrow as pa
    import pyarrow.compute as pc

    for i, name in enumerate(tbl.column_names):
        col = tbl.column(i)
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            tbl = tbl.set_column(i, name, pc.utf8_trim_whitespace(col))
    return tbl


def write_table_atomic(table: Any, path: str | Path) -> Path:
    """Write a table atomically as CSV, Parquet or JSON (by suffix) via :func:`veil.io.write_table`.
    """
    from ..io import write_table

    if table_kind(table) == "mapping":
        table = {k: np.asarray(v) for k, v in table.items()}
    return write_table(table, path)
