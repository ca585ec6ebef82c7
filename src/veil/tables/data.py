"""Table adaptors and the one value semantics of ``veil.tables``: a cell's value is its text.

Every part of ``veil.tables`` (constraint parsing, validation, DIVA, the
baselines, generalization, risk) compares cells by their text, given by
:func:`cell_text`:

* a file (CSV) cell is its field's text, exactly (``NaN``, ``-0``, ``01``,
  `` padded `` and the empty field are values; nothing is trimmed or typed);
* a string is itself; ``True``/``False`` for booleans; integers in decimal;
* a float is written as the shortest text that round-trips (numpy's
  repr), except that an integral float is written as an integer:
  ``39.0`` is ``"39"`` (pandas turns an integer column with gaps into
  floats), ``-0.0`` is ``"0"``, ``1e20`` is ``"100000000000000000000"``,
  ``0.5`` is ``"0.5"``, ``inf`` is ``"inf"``;
* dates and times are Python's ``str`` of the value (``2020-01-02``,
  ``2020-01-02 03:04:05``);
* missing values (``None``, ``NaN``, ``NaT``, ``pd.NA``, an Arrow null) have
  no text: a missing value in a quasi-identifier or constraint column is an
  error naming the row.

The same rules apply to pandas DataFrames, pyarrow Tables, mappings of
columns, Parquet files (typed values) and :class:`~veil.tables.textio.TextTable`
(files read as text). Column names are case-sensitive everywhere (``Sex`` and
``sex`` are two columns); SQL never sees a user's column name unless it is
unique without regard to case (DuckDB folds case).

Examples
--------
>>> import pandas as pd
>>> cell_text(pd.Series([39.0, 39.5, float("-0")]).to_numpy()).tolist()
['39', '39.5', '0']
>>> cell_text(np.array([True, False])).tolist()
['True', 'False']
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import DataError, ParameterError
from .textio import TextTable, read_text_table

__all__ = ["as_columns", "cell_text", "encode_qi", "EncodedQI", "read_table",
           "write_table_atomic", "table_kind", "replace_columns", "num_rows", "text_columns"]


def table_kind(table: Any) -> str:
    """``"text"``, ``"pandas"``, ``"arrow"`` or ``"mapping"``."""
    if isinstance(table, TextTable):
        return "text"
    mod = type(table).__module__
    if mod.startswith("pandas") and hasattr(table, "columns"):
        return "pandas"
    if mod.startswith("pyarrow") and hasattr(table, "column_names"):
        return "arrow"
    if isinstance(table, Mapping):
        return "mapping"
    raise ParameterError(
        f"table must be a pandas DataFrame, a pyarrow Table, a veil TextTable or a mapping of "
        f"column name to values, got {type(table).__name__}")


def _check_unique(names: list[str]) -> None:
    seen = set()
    for n in names:
        if n in seen:
            raise DataError(f"column name {n!r} appears twice; names must be unique")
        seen.add(n)


def as_columns(table: Any) -> dict[str, Any]:
    """The table as an ordered dict of columns (numpy arrays, Arrow arrays for Arrow input)."""
    kind = table_kind(table)
    if kind == "text":
        return table.column_dict()
    if kind == "pandas":
        names = [str(c) for c in table.columns]
        _check_unique(names)
        return {n: table.iloc[:, j].to_numpy() for j, n in enumerate(names)}
    if kind == "arrow":
        names = list(table.column_names)
        _check_unique(names)
        return {name: table.column(j) for j, name in enumerate(names)}
    cols = {str(c): np.asarray(v) for c, v in table.items()}
    lengths = {len(v) for v in cols.values()}
    if len(lengths) > 1:
        raise DataError(f"columns have different lengths: {sorted(lengths)}")
    return cols


def num_rows(cols: Mapping[str, Any]) -> int:
    return len(next(iter(cols.values()))) if cols else 0


def _float_text(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Text of a float array and its missing mask (NaN)."""
    a = np.asarray(a)
    miss = np.isnan(a)
    out = np.empty(len(a), dtype=object)
    fin = np.isfinite(a)
    integral = fin & (np.mod(np.where(fin, a, 0), 1) == 0)
    small = integral & (np.abs(np.where(fin, a, 0)) < 2.0 ** 62)
    if small.any():
        out[small] = a[small].astype(np.int64).astype(str)
    big = integral & ~small
    for i in np.flatnonzero(big):
        out[i] = str(int(a[i]))
    rest = ~integral & ~miss
    if rest.any():
        out[rest] = a[rest].astype(str)
    return out, miss


def _one_text(x: Any) -> str | None:
    """Text of one Python value, ``None`` if missing."""
    if x is None:
        return None
    if isinstance(x, str):
        return x
    if isinstance(x, (bool, np.bool_)):
        return "True" if x else "False"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        t, m = _float_text(np.array([x], dtype=np.asarray(x).dtype))
        return None if m[0] else t[0]
    if isinstance(x, np.datetime64):
        if np.isnat(x):
            return None
        return str(x.astype("datetime64[us]").astype(object))
    if isinstance(x, (_dt.date, _dt.time, _dt.timedelta)):
        if type(x).__name__ == "NaTType":
            return None
        return str(x)
    try:  # pandas NA / NaT and other missing markers
        import pandas as pd

        if pd.isna(x):
            return None
    except (ImportError, TypeError, ValueError):
        pass
    if isinstance(x, bytes):
        raise DataError(f"binary value {x[:20]!r}: veil.tables compares text; decode it first")
    return str(x)


def _arrow_text(col: Any) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    t = col.type
    miss = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_dictionary(t):
        col = col.dictionary_decode()
        t = col.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        vals = np.asarray(col.to_pylist(), dtype=object)
        return vals, miss
    if pa.types.is_integer(t):
        vals = np.asarray(col.cast(pa.string()).to_pylist(), dtype=object)
        return vals, miss
    if pa.types.is_floating(t):
        arr = col.to_numpy(zero_copy_only=False)  # nulls come as NaN; float32 stays float32
        out, m = _float_text(np.where(miss, np.nan, arr))
        return out, m | miss
    vals = np.asarray([_one_text(x) for x in col.to_pylist()], dtype=object)
    return vals, miss | np.array([v is None for v in vals], dtype=bool)


def cell_text(arr: Any, *, name: str | None = None, missing: str = "raise") -> np.ndarray:
    """The text of every cell of a column (see the module docstring for the rules).

    Parameters
    ----------
    arr : array-like, pyarrow Array or ChunkedArray
    name : str, optional
        Column name for error messages.
    missing : {"raise", "keep", "skip"}
        A missing value raises :class:`DataError` naming the row (``"raise"``),
        is kept as ``None`` (``"keep"``) or is left out (``"skip"``).

    Returns
    -------
    ndarray of object (str)
    """
    if missing not in ("raise", "keep", "skip"):
        raise ParameterError(f"missing must be 'raise', 'keep' or 'skip', got {missing!r}")
    if type(arr).__module__.startswith("pyarrow"):
        out, miss = _arrow_text(arr)
    else:
        a = np.asarray(arr)
        if a.ndim != 1:
            raise DataError(f"a column must be one-dimensional, got shape {a.shape}",
                            column=name)
        kind = a.dtype.kind
        if kind == "f":
            out, miss = _float_text(a)
        elif kind == "b":
            out = np.where(a, "True", "False").astype(object)
            miss = np.zeros(len(a), dtype=bool)
        elif kind in "iu":
            out = a.astype(str).astype(object)
            miss = np.zeros(len(a), dtype=bool)
        elif kind in "US":
            if kind == "S":
                raise DataError("binary (bytes) column: veil.tables compares text; decode it "
                                "first", column=name)
            out = a.astype(object)
            miss = np.zeros(len(a), dtype=bool)
        elif kind == "M":
            miss = np.isnat(a)
            out = np.empty(len(a), dtype=object)
            out[~miss] = [str(x) for x in a[~miss].astype("datetime64[us]").astype(object)]
        else:
            if all(type(x) is str for x in a):  # the common case, no per-type dispatch
                return a.astype(object) if a.dtype != object else a
            out = np.asarray([_one_text(x) for x in a], dtype=object)
            miss = np.array([v is None for v in out], dtype=bool)
    if miss.any():
        if missing == "raise":
            row = int(np.flatnonzero(miss)[0]) + 1
            raise DataError("missing value in a quasi-identifier or constraint column; drop or "
                            "fill missing values first", row=row, column=name)
        if missing == "skip":
            return out[~miss]
        out = out.copy()
        out[miss] = None
    return out


def text_columns(table: Any, names: Sequence[str] | None = None, *, missing: str = "raise"
                 ) -> dict[str, np.ndarray]:
    """The text of the columns ``names`` (default all) of any supported table."""
    cols = as_columns(table)
    names = list(cols) if names is None else list(names)
    return {n: cell_text(cols[n], name=n, missing=missing) for n in names}


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
        self._index = [{v: i for i, v in enumerate(vals.tolist())} for vals in values]

    @property
    def n(self) -> int:
        return self.codes.shape[0]

    @property
    def q(self) -> int:
        return self.codes.shape[1]

    def code_of(self, attr: str, value: str) -> int:
        """Code of a value in an attribute, or -2 when it does not occur."""
        j = self.names.index(attr)
        return self._index[j].get(value, -2)


def _sort_key_values(uniq: np.ndarray) -> np.ndarray:
    try:
        nums = np.array([float(u) for u in uniq])
        if np.isnan(nums).any():
            raise ValueError
        return np.argsort(nums, kind="stable")
    except ValueError:
        return np.argsort(uniq.astype(str), kind="stable")


def encode_qi(cols: Mapping[str, Any], qi: Sequence[str]) -> EncodedQI:
    """Encode the quasi-identifier columns ``qi`` of ``cols`` as integer codes (by text)."""
    n = num_rows(cols)
    codes = np.empty((n, len(qi)), dtype=np.int32)
    values = []
    for j, name in enumerate(qi):
        s = cell_text(cols[name], name=name)
        uniq, inv = np.unique(s.astype(str), return_inverse=True)
        order = _sort_key_values(uniq)
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        codes[:, j] = rank[inv.reshape(-1)]
        values.append(np.asarray(uniq[order].tolist(), dtype=object))
    return EncodedQI(list(qi), codes, values)


def replace_columns(table: Any, new: Mapping[str, np.ndarray]) -> Any:
    """A copy of ``table`` (same kind) with some columns replaced; the input is not mutated."""
    kind = table_kind(table)
    if kind == "text":
        return table.replace(new)
    if kind == "pandas":
        out = table.copy(deep=True)
        for name, arr in new.items():
            j = [str(c) for c in table.columns].index(name)
            out.isetitem(j, np.asarray(arr, dtype=object))
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
               names: Sequence[str] | None = None, delimiter: str | None = None,
               skip_initial_space: bool = False, format: str | None = None) -> TextTable:
    """Read a CSV or Parquet file as text (:func:`veil.tables.textio.read_text_table`).

    ``names`` gives column names to a CSV without a header (``header`` then
    defaults to False). Nothing is trimmed or typed: a CSV cell's value is its
    text; ``skip_initial_space`` drops the spaces after each delimiter (the
    UCI files write ``39, State-gov``) from the values while keeping them in
    the output.
    """
    if header is None:
        header = names is None
    return read_text_table(path, header=header, names=names, delimiter=delimiter,
                           skip_initial_space=skip_initial_space, format=format)


def write_table_atomic(table: Any, path: str | Path) -> Path:
    """Write a table atomically: a TextTable keeps its input's bytes; others via veil.io."""
    if isinstance(table, TextTable):
        return table.write(path)
    from ..io import write_table

    if table_kind(table) == "mapping":
        table = {k: np.asarray(v) for k, v in table.items()}
    return write_table(table, path)
