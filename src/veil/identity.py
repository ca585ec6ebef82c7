"""Content identity of a dataset: the same rows give the same identity, whatever the file.

The privacy ledger (:mod:`veil.ledger`) charges budgets to *datasets*, not to files: a copy,
a rename, a ``touch``, a symbolic link or a CSV-to-Parquet conversion of the same rows must
be the same dataset, or a user could start from zero by copying a file.

How it is computed (one DuckDB scan of the file, nothing materialized in Python):

1. Every cell is read as text (CSV with ``all_varchar``; other formats cast to VARCHAR) and
   **normalized**: empty and missing cells become one NULL token; anything that parses as a
   number becomes that number's canonical text (integral values below 2**53 as integers,
   others as DuckDB's shortest round-trip double: ``"1.50"``, ``1.5`` and ``1.5e0`` agree;
   ``"007"`` and ``7`` agree); text that parses as a date or time becomes its canonical
   timestamp text (``2012-04-03T18:00:09`` and ``2012-04-03 18:00:09`` agree); other text is
   kept as it is.
2. Each **column** gets a fingerprint from the multiset of its normalized values: the number
   of rows and the sum, modulo 2**64, of the low 64 bits of the MD5 of every value (one
   streaming aggregate over the rows: memory does not grow with the number of distinct
   values). A sum is order-insensitive and counts duplicates.
3. The **dataset identity** is the SHA-256 of the row count and the *sorted* column
   fingerprints. Column names are not part of it (renaming a header is not a new dataset).

Why order-insensitive: no veil mechanism's privacy depends on the order of the rows (a
histogram, per-user counts, a trajectory sorted by its time column), and sorting or
shuffling a file would otherwise be a free way to a fresh budget. Why column-wise: the
ledger also links a *derived* file (a column extracted from a table, the same user column in
another export) to the dataset it came from, by its column fingerprints.

What it cannot see: a file whose *content* differs (one row added or removed, one value
changed) is a different dataset to any exact hash. The ledger's documentation
(``docs/guarantees.md``) states that limit.

How it is made fast without changing any identity: typed columns (Parquet, in-memory
tables) skip the text round trip where it provably gives back the value's own text (see
:func:`_typed_norm`; FLOAT, DECIMAL, dates, time zones and anything else take the general
path), and the low 64 bits of the MD5 are read as ``md5_number(v) >> 64`` (the same number
as DuckDB's ``md5_number_lower``, which is 2.7x slower). ``benchmarks/identity_memory.py``
measures the scan against the former ones.

MD5 is used as a well-specified, version-stable function (DuckDB's ``hash()`` is not
guaranteed stable across releases); it is not a security boundary here: the fingerprints
are stored only in the private ledger, never published.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import DataError, ParameterError, ResourceError
from .io import sql

__all__ = ["ColumnPrint", "DatasetIdentity", "identity_of_file", "identity_of_files",
           "identity_of_table", "IDENTITY_VERSION"]

#: Changes whenever the normalization or the hashing changes (identities are then not
#: comparable with older ledgers; the ledger records the version it was written with).
IDENTITY_VERSION = "veil-dataset-v1"

_MOD = 1 << 64


@dataclass(frozen=True)
class ColumnPrint:
    """The fingerprint of one column (the multiset of its normalized values).

    Attributes
    ----------
    name : str
        The column's name in the file it was read from (informational only).
    fingerprint : str
        32 hex digits.
    constant : bool
        Every row holds the same value: such a column carries no information about anyone,
        and the ledger never links datasets through it.
    """

    name: str
    fingerprint: str
    constant: bool


@dataclass(frozen=True)
class DatasetIdentity:
    """The content identity of a table (see the module docstring).

    Attributes
    ----------
    id : str
        32 hex digits (128 bits of a SHA-256).
    rows : int
    columns : tuple of ColumnPrint
        In the file's column order.
    """

    id: str
    rows: int
    columns: tuple[ColumnPrint, ...]

    def column(self, name: str) -> ColumnPrint:
        """The print of column ``name`` (ParameterError if the table has no such column)."""
        for c in self.columns:
            if c.name == name:
                return c
        import difflib

        names = [c.name for c in self.columns]
        close = [n for n in names if n.casefold() == name.casefold()] or \
            difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ParameterError(f"column {name!r} is not one of {names}{hint}")

    def prints(self, names: list[str] | tuple[str, ...] | None = None) -> list[str]:
        """Fingerprints of the named (default: all) non-constant columns."""
        cols = self.columns if names is None else [self.column(n) for n in names]
        return [c.fingerprint for c in cols if not c.constant]


_LOCAL = threading.local()


@contextlib.contextmanager
def shared_connection():
    """A DuckDB connection reused by this process and thread (opening one costs 50-100 ms).

    Configured like :func:`veil.io.read._connect`. Relations registered on it must be
    unregistered by the caller; a forked child opens its own.
    """
    from .io.read import _connect

    con = getattr(_LOCAL, "con", None)
    if con is None or getattr(_LOCAL, "pid", None) != os.getpid():
        con = _connect()
        _LOCAL.con, _LOCAL.pid = con, os.getpid()
    yield con


def _norm(col: str) -> str:
    """SQL for the normalized text of a VARCHAR expression ``col`` (see the module docstring)."""
    d = f"TRY_CAST({col} AS DOUBLE)"
    return (f"CASE WHEN {col} IS NULL OR {col} = '' THEN chr(0) "
            f"WHEN {d} IS NOT NULL THEN CASE WHEN isfinite({d}) AND {d} = round({d}) "
            f"AND abs({d}) < 9007199254740992 THEN CAST(CAST({d} AS BIGINT) AS VARCHAR) "
            f"ELSE CAST({d} AS VARCHAR) END "
            f"ELSE coalesce(CAST(TRY_CAST({col} AS TIMESTAMP) AS VARCHAR), {col}) END")


#: 2**53: integral doubles below it in magnitude are written as integers
_EXACT = 9007199254740992

#: DuckDB column types whose normalized text is computed from the typed value
#: (:func:`_typed_norm`); every other type is cast to VARCHAR and takes :func:`_norm`
_INTEGERS = frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
                       "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"})


def _typed_norm(col: str, dtype: str) -> str:
    """SQL for the normalized text of a typed column ``col``: the same text as
    ``_norm(CAST(col AS VARCHAR))`` for every value, without its text round trip where that
    provably gives the value's own text back (the scan then costs about half as much):

    - DOUBLE: DuckDB writes a double as its shortest round-trip text, so parsing that text
      gives the same double, and the general path reduces to the integral/non-integral
      branch on the value itself (NaN and infinities included);
    - integers within +-2**53: their text parses to a double that is the integer exactly,
      which the general path writes back as the same integer text; larger ones take the
      general path;
    - TIMESTAMP (no time zone), finite: the text is not a number and parses back to the same
      timestamp, whose text it is; ``infinity`` and ``-infinity`` take the general path
      (``'infinity'`` parses as a number there).

    ``tests/core/test_identity.py`` checks the equality on edge values and random bit
    patterns.
    """
    general = _norm(f"CAST({col} AS VARCHAR)")
    if dtype == "DOUBLE":
        return (f"CASE WHEN {col} IS NULL THEN chr(0) WHEN isfinite({col}) AND {col} = "
                f"round({col}) AND abs({col}) < {_EXACT} THEN CAST(CAST({col} AS BIGINT) AS "
                f"VARCHAR) ELSE CAST({col} AS VARCHAR) END")
    if dtype in _INTEGERS:
        return (f"CASE WHEN {col} IS NULL THEN chr(0) WHEN {col} > -{_EXACT} AND {col} < "
                f"{_EXACT} THEN CAST({col} AS VARCHAR) ELSE {general} END")
    if dtype == "TIMESTAMP":
        return (f"CASE WHEN {col} IS NULL THEN chr(0) WHEN isfinite({col}) THEN "
                f"CAST({col} AS VARCHAR) ELSE {general} END")
    return general


#: DuckDB memory limit of the identity scan (a streaming aggregate: it needs little; the
#: limit guards against a plan change). The former scan grouped each column by its distinct
#: values: 3.2 GB for 2 x 10^7 rows of distinct coordinates with no limit, out of memory
#: at 10^8 rows with a 1 GB limit (``benchmarks/identity_memory.py``).
IDENTITY_MEMORY_LIMIT = "1GB"


@contextlib.contextmanager
def _identity_connection():
    """A DuckDB connection of its own for one identity scan, under
    :data:`IDENTITY_MEMORY_LIMIT` (it spills privately, as every :func:`_connect` does), so
    the shared connection's limit is left alone."""
    from .io.read import _connect

    con = _connect()
    try:
        con.execute(f"SET memory_limit = {sql.literal(IDENTITY_MEMORY_LIMIT)}")
        yield con
    finally:
        con.close()


def _identity_sql(con, source: str, what: str, kind: str | None = None,
                  error: Callable[[Exception], Exception] | None = None) -> DatasetIdentity:
    """The identity of the rows of ``source`` (SQL); ``error`` turns a DuckDB error met
    reading them into veil's (default: a one-line DataError naming ``what``). A message
    never quotes DuckDB's whole error: its CSV errors hold a row of the file."""
    import duckdb

    from .io.read import _duck_detail, read_errors

    as_kind = f" as {kind}" if kind else ""

    def failed(exc: Exception) -> Exception:
        if error is not None:
            return error(exc)
        return DataError(f"cannot read it{as_kind} to compute its identity: "
                         f"{_duck_detail(str(exc)) or type(exc).__name__}", path=what)

    try:
        described = con.sql(f"DESCRIBE SELECT * FROM {source}").fetchall()
    except read_errors() as exc:
        raise failed(exc) from None
    cols = [r[0] for r in described]
    k = len(cols)
    # per row, streaming: the sum over rows of the MD5 of each normalized value equals the
    # sum over distinct values weighted by their counts, without holding the distinct values
    # (a GROUP BY of 10^8 distinct coordinates ran out of a 1 GB limit). md5_number is the
    # digest read little-endian, so its high 64 bits are md5_number_lower (the last 8 bytes,
    # little-endian) at a third of the cost. The column is constant when its least and
    # greatest normalized values agree.
    norms = ", ".join(f"{_typed_norm(sql.ident(c), str(t).upper())} AS n{i}"
                      for i, (c, t, *_) in enumerate(described))
    aggs = ", ".join(
        f"sum((md5_number(n{i}) >> 64)::UBIGINT), min(n{i}) IS NOT DISTINCT FROM max(n{i})"
        for i in range(k))
    query = (f"WITH nv AS (SELECT {norms} FROM {source}) "
             f"SELECT {aggs}, count(*) FROM nv")
    try:
        if k:
            got = con.sql(query).fetchall()[0]
            rows = int(got[-1] or 0)
        else:
            rows = int(con.sql(f"SELECT count(*) FROM {source}").fetchall()[0][0])
            got = ()
    except duckdb.OutOfMemoryException as exc:
        raise ResourceError(f"file {what}: DuckDB ran out of memory computing its identity "
                            f"(limit {IDENTITY_MEMORY_LIMIT}): {_duck_detail(str(exc))}"
                            ) from None
    except read_errors() as exc:
        raise failed(exc) from None
    prints = []
    for i, c in enumerate(cols):
        total, same = got[2 * i], got[2 * i + 1]
        s = int(total or 0) % _MOD
        digest = hashlib.sha256(f"{IDENTITY_VERSION}|col|{rows}|{s}".encode()).hexdigest()[:32]
        prints.append(ColumnPrint(c, digest, constant=rows == 0 or bool(same)))
    body = "|".join(sorted(p.fingerprint for p in prints))
    ident = hashlib.sha256(f"{IDENTITY_VERSION}|table|{rows}|{body}".encode()).hexdigest()[:32]
    return DatasetIdentity(ident, rows, tuple(prints))


def identity_of_file(path: str | os.PathLike, *, format: str | None = None,
                     delimiter: str | None = None, header: bool = True,
                     names: list[str] | None = None) -> DatasetIdentity:
    """The content identity of a CSV, Parquet or JSON file (one DuckDB scan).

    Parameters
    ----------
    path : str or path-like
    format, delimiter, header, names
        As in :func:`veil.io.read_table` (the file is read the way a command reads it).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from veil.io import write_table
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.csv").write_text("age,city\\n30,Paris\\n41.0,Oslo\\n")
    >>> _ = write_table({"town": ["Oslo", "Paris"], "years": [41, 30]}, d / "b.parquet")
    >>> identity_of_file(d / "a.csv").id == identity_of_file(d / "b.parquet").id
    True
    >>> identity_of_file(d / "a.csv").id
    '85a84290d1da2bf5d0203b184cae9f8d'
    """
    from .io.read import _check_file, _duck_error, _source_sql, detect_format

    p = Path(os.fspath(path))
    fmt = detect_format(p, format)
    if delimiter is None:
        delimiter = "\t" if p.suffix.lower() in (".tsv", ".tab") else ","
    _check_file(p)
    with _identity_connection() as con:
        src = _source_sql(p, fmt, delimiter=delimiter, header=header, all_varchar=True)
        exact = names
        if exact is None and fmt == "csv" and header:
            from .io.read import _csv_header

            exact = _csv_header(p, delimiter)  # DuckDB trims and renames names; veil does not
        if exact is not None:  # SQL sees positional names only; the prints get the exact ones
            exact = [str(n) for n in exact]
            src = (f"(SELECT * FROM {src}) AS __named("
                   + ", ".join(f"c{i}" for i in range(len(exact))) + ")")
        ident = _identity_sql(con, src, str(p), {"csv": "CSV", "parquet": "Parquet",
                                                 "json": "JSON"}.get(fmt, fmt),
                              error=lambda exc: _duck_error(exc, p, fmt, delimiter, header))
        if fmt == "json" and [c.name for c in ident.columns] == ["json"]:
            # DuckDB's one column for JSON it cannot read as records: the readers' message
            from .io.read import check_json_records

            types = [str(r[1]) for r in con.sql(f"DESCRIBE SELECT * FROM {src}").fetchall()]
            check_json_records(con, p, ["json"], types)
    if exact is None:
        return ident
    named = {f"c{i}": n for i, n in enumerate(exact)}
    return dataclasses.replace(ident, columns=tuple(
        dataclasses.replace(c, name=named.get(c.name, c.name)) for c in ident.columns))


def identity_of_files(paths: list[str | os.PathLike]) -> DatasetIdentity:
    """The content identity of several files read as one table (the parts of a dataset).

    All files must be of one kind (CSV, Parquet or JSON); CSV files are read with DuckDB's
    dialect detection, as the batch engine reads them. One file gives the same identity as
    :func:`identity_of_file` when its delimiter is the default.
    """
    files = [os.fspath(p) for p in paths]
    if not files:
        raise ParameterError("no input files")
    kinds = {Path(f).suffix.lower() for f in files}
    lst = sql.paths(files)
    if kinds <= {".parquet", ".pq"}:
        src, fmt = sql.read_parquet(lst, "union_by_name = true"), "parquet"
    elif kinds <= {".csv", ".tsv", ".txt"}:
        src, fmt = f"read_csv({lst}, header = true, all_varchar = true)", "csv"
    elif kinds <= {".json", ".jsonl", ".ndjson"}:
        src, fmt = sql.read_json(files), "json"
    else:
        raise DataError(f"cannot mix or read input kinds {sorted(kinds)}; use CSV, Parquet or "
                        "JSON", path=files[0])

    def error(exc: Exception) -> Exception:
        from .io.read import _duck_error

        # the file DuckDB names (its CSV errors say "file = PATH"), else the first one
        named = [f for f in files if f in str(exc)]
        at_fault = max(named, key=len) if named else files[0]
        return _duck_error(exc, Path(at_fault), fmt, None, True)  # the dialect is detected

    with _identity_connection() as con:
        return _identity_sql(con, src, files[0], error=error)


def identity_of_table(table: Any, *, label: str = "table") -> DatasetIdentity:
    """The content identity of an in-memory table (Arrow table, DataFrame or dict of arrays).

    Gives the same identity as :func:`identity_of_file` on a file holding the same rows.

    Examples
    --------
    >>> import numpy as np
    >>> a = identity_of_table({"t": np.array([1.0, 2.0]), "lat": np.array([39.9, 40.0])})
    >>> b = identity_of_table({"lat": np.array([40.0, 39.9]), "t": np.array([2, 1])})
    >>> a.id == b.id, a.rows
    (True, 2)
    """
    from .io.write import to_arrow

    arrow = to_arrow(table)
    with _identity_connection() as con:
        con.register("__veil_identity", arrow)
        try:
            return _identity_sql(con, "__veil_identity", label)
        finally:
            con.unregister("__veil_identity")
