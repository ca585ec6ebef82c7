"""Readers for CSV, Parquet and JSON files through DuckDB, with schema checks.

Every problem in an input file becomes a :class:`veil.errors.DataError` that
names the file, the 1-based data row (the header is not counted) and the
column, and says what was found and what was expected. Checks run in SQL
(``TRY_CAST``) and numpy over whole columns; no Python loop touches the rows.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import DataError, ParameterError, ResourceError
from ..validation import check_choice
from . import sql

__all__ = [
    "read_json",
    "FORMATS",
    "KINDS",
    "detect_format",
    "read_table",
    "iter_column",
    "read_columns",
    "read_points",
    "read_counts",
    "read_checkins",
    "column_names",
]

#: File formats veil reads and writes.
FORMATS: tuple[str, ...] = ("csv", "parquet", "json")

#: Column kinds understood by :func:`read_table` and what they check.
KINDS: dict[str, str] = {
    "float": "a finite real number (float64)",
    "int": "an integer (int64)",
    "count": "a non-negative integer count (int64)",
    "lat": "a latitude in degrees, finite and within [-90, 90] (float64)",
    "lon": "a longitude in degrees, finite and within [-180, 180] (float64)",
    "str": "text (any non-missing value, read as a string)",
    "time": "a number (float64) or a date/time (datetime64[us])",
}

_EXTENSIONS: dict[str, str] = {
    ".csv": "csv", ".tsv": "csv", ".tab": "csv", ".txt": "csv",
    ".parquet": "parquet", ".pq": "parquet",
    ".json": "json", ".jsonl": "json", ".ndjson": "json",
}

_NUMERIC_KINDS = ("float", "int", "count", "lat", "lon")
_EXACT_LIMIT = 2.0 ** 52
_DUCK_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                 "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "REAL")


def detect_format(path: str | os.PathLike, format: str | None = None, *,
                  option: str = "format=") -> str:
    """Return the file format: ``format`` if given, else from the file's extension.

    Parameters
    ----------
    path : str or path-like
        The file (only its name is used).
    format : {'csv', 'parquet', 'json'}, optional
        Explicit format; overrides the extension.
    option : str
        How the caller spells the format option, for the message (e.g. ``--input-format``).

    Raises
    ------
    ParameterError
        If ``format`` is not a known format, or it is ``None`` and the extension is unknown.

    Examples
    --------
    >>> detect_format("visits.parquet")
    'parquet'
    >>> detect_format("data.bin", "csv")
    'csv'
    """
    if format is not None:
        return check_choice(str(format).lower(), "format", FORMATS)
    suffix = Path(path).suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    if Path(path).is_dir():  # `read_counts("data")` said "cannot tell the format of 'data'"
        raise DataError("is a folder, not a file", path=str(path))
    raise ParameterError(
        f"cannot tell the format of {str(path)!r} from its extension {suffix or '(none)'!r}; "
        f"use a .csv, .tsv, .parquet or .json name, or pass {option} "
        f"(one of {', '.join(FORMATS)})")


def _connect():
    """A private in-memory DuckDB connection with no progress bar and ordered results."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
    except duckdb.Error:
        # inside Jupyter without ipywidgets DuckDB refuses to change the setting (and shows
        # no bar anyway): every reader must still work in a notebook (docs/tutorials)
        pass
    con.execute("SET preserve_insertion_order = true")
    # DuckDB 2.0's type_pushdown turns TRY_CAST(varchar_col AS BIGINT) over read_csv into a
    # typed CSV read that raises on a bad value instead of yielding NULL; keep TRY_CAST exact.
    try:
        con.execute("SET disabled_optimizers = 'type_pushdown'")
    except duckdb.Error:  # pragma: no cover - older DuckDB without that optimizer
        pass
    private_spill(con)
    return con


def shared_sql(query: str):
    """Run ``query`` on veil's shared connection of this process and thread (configured by
    :func:`_connect`: private spill directory, exact TRY_CAST), not DuckDB's global default
    connection, which spills into the working directory and is shared with other code."""
    from ..identity import shared_connection

    with shared_connection() as con:
        return con.sql(query)


def _spill_root() -> str:
    """The folder (mode 0700, one per user, reused) that holds DuckDB's spill directories.

    DuckDB creates its directories world-readable (0755, files 0644), so each connection's
    spill directory goes inside this folder, which only this user can enter. It is one
    folder per user (``veil-duckdb-UID`` in the system's temp dir, kept like other tools'
    per-user sockets folders) rather than per process, because worker processes that end
    without running exit handlers would leave theirs behind. An existing path is used only
    if it is a real directory owned by this user with mode 0700; otherwise (a planted link
    or folder) a fresh private folder is made instead.
    """
    import stat
    import tempfile

    root = os.path.join(tempfile.gettempdir(), f"veil-duckdb-{os.getuid()}")
    try:
        os.mkdir(root, 0o700)
    except FileExistsError:
        pass
    except OSError:
        root = tempfile.mkdtemp(prefix="veil-duckdb-")
    st = os.lstat(root)
    if not (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and stat.S_IMODE(st.st_mode) == 0o700):
        root = tempfile.mkdtemp(prefix="veil-duckdb-")
    return root


def private_spill(con):
    """Make ``con`` spill into a fresh directory inside this user's private folder.

    DuckDB spills a query larger than its memory limit into ``.tmp`` under the working
    directory by default: that writes next to the user's files, follows a ``.tmp`` symbolic
    link planted there, and (like any directory DuckDB creates) is readable by other users.
    The directory given here is created by DuckDB when it first spills, inside a folder
    only this user can enter (:func:`_spill_root`), and removed when the connection closes.
    Call it right after ``duckdb.connect()`` (DuckDB cannot switch the directory once it has
    spilled). Returns ``con``.
    """
    import secrets

    spill = os.path.join(_spill_root(), f"spill-{secrets.token_hex(8)}")
    con.execute(f"SET temp_directory = {sql.literal(spill)}")
    return con


_sql_str = sql.literal
_ident = sql.ident


def _check_file(path: Path) -> None:
    spath = str(path)
    if not path.exists():
        parent = path.parent
        hint = ""
        if parent.is_dir():
            near = difflib.get_close_matches(path.name, os.listdir(parent), n=1)
            if near:
                hint = f"; did you mean {str(parent / near[0])!r}?"
        raise DataError(f"no such file{hint}", path=spath)
    if path.is_dir():
        raise DataError("is a folder, not a file", path=spath)
    if not os.access(path, os.R_OK):
        raise DataError("is not readable (permission denied)", path=spath)
    if path.stat().st_size == 0:
        raise DataError("the file is empty (0 bytes): expected a header and data rows",
                        path=spath)


def _first_ragged_row(path: Path, delimiter: str, header: bool) -> tuple[int | None, str] | None:
    """On the error path only: (row, message) for the first row whose field count differs."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh, delimiter=delimiter)
            first = next(reader, None)
            if first is None:
                return None
            width = len(first)
            for i, rec in enumerate(reader, start=1 if header else 2):
                if rec and len(rec) != width:
                    what = "the header has" if header else "row 1 has"
                    return i, (f"has {len(rec)} field(s) but {what} {width}; "
                               f"check the delimiter {delimiter!r} and quoting")
    except UnicodeDecodeError as exc:
        return None, f"is not UTF-8 text (byte {exc.start} of a line cannot be decoded)"
    except (csv.Error, OSError) as exc:
        return None, f"cannot be parsed as CSV: {exc}"
    return None


def _duck_detail(msg: str, limit: int = 200) -> str:
    """What may be shown of a DuckDB message: its first line without the error class, a
    quoted value cut to 40 characters (as :func:`_raw_value` shows a cell), at most ``limit``
    characters. DuckDB's CSV errors quote the row they failed on ("Original Line: ...") and
    list the reader's settings on the lines that follow; a conversion error quotes the value
    whole (a 32 MB field made a 32 MB message)."""
    first = msg.strip().splitlines()[0] if msg.strip() else ""
    first = re.sub(r"^[A-Za-z ]*Error:\s*", "", first)
    first = re.sub(r"'([^']{40})[^']+'", lambda m: f"'{m.group(1)[:37]}...'", first)
    return first if len(first) <= limit else first[:limit - 3] + "..."


def read_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a DuckDB read of a user's file can raise: ``duckdb.Error``, and
    ``UnicodeDecodeError`` when DuckDB hands back text that is not valid UTF-8 (a JSON string
    escaping a surrogate, ``"\\ud800\\udc00"``, came back as CESU-8 and the Python binding
    raised it, unnamed). Catch ``except read_errors() as exc`` and pass ``exc`` to
    :func:`duckdb_read_error`."""
    import duckdb

    return (duckdb.Error, UnicodeDecodeError)


def _duck_error(exc: Exception, path: Path, fmt: str, delimiter: str | None,
                header: bool) -> DataError | ResourceError:
    """Turn a DuckDB reading error into a DataError with the file and, if known, the row
    (a DuckDB out-of-memory error becomes a :class:`ResourceError`, not a bad file).

    The message never quotes the file's rows (see :func:`_duck_detail`). ``delimiter`` is
    ``None`` for a CSV file read with DuckDB's dialect detection.
    """
    msg = str(exc)
    spath = str(path)
    if isinstance(exc, UnicodeDecodeError):
        return DataError("holds text that DuckDB hands back as invalid UTF-8 (for example a JSON "
                         "\\u escape of a surrogate, \\ud800-\\udfff); write those characters "
                         "as UTF-8, or remove them", path=spath)
    if type(exc).__name__ == "OutOfMemoryException":
        return ResourceError(f"file {spath}: DuckDB ran out of memory while processing it "
                             f"({_duck_detail(msg) or type(exc).__name__}); the file itself "
                             f"was not found faulty. Raise DuckDB's memory limit "
                             f"(--memory-limit, where the command has it) or free memory on "
                             f"this machine")
    if fmt == "csv":
        known = csv_text_error(exc, spath, header=header)
        if known is not None:
            return known
        m = re.search(r"Line:\s*(\d+).*?Expected Number of Columns:\s*(\d+)\s*Found:\s*(\d+)",
                      msg, re.S)
        how = "the delimiter and quoting" if delimiter is None else \
            f"the delimiter {delimiter!r} and quoting"
        if m:
            line, want, got = (int(g) for g in m.groups())
            return DataError(f"has {got} field(s) but the header has {want}; check {how}",
                             path=spath, row=line - (1 if header else 0))
        detail = None if delimiter is None else _first_ragged_row(path, delimiter, header)
        if detail is not None:
            return DataError(detail[1], path=spath, row=detail[0])
        dialect = "" if delimiter is None else f" (delimiter {delimiter!r})"
        return DataError(f"cannot be read as CSV{dialect}: "
                         f"{_duck_detail(msg) or type(exc).__name__}", path=spath)
    label = {"parquet": "Parquet", "json": "JSON"}[fmt]
    return DataError(f"cannot be read as {label} (corrupt or not a {label} file?): "
                     f"{_duck_detail(msg) or type(exc).__name__}", path=spath)


def csv_text_error(exc: Exception, path: str, *, header: bool = True) -> DataError | None:
    """A DuckDB CSV error that is about the file's text, whatever the query: not UTF-8 (with
    the data row), or a line longer than the reader's limit; else None. The engine uses it
    for errors met while it stages a job, where the query adds nothing the user needs."""
    msg = str(exc)
    if "invalid unicode" in msg.lower():
        m = re.search(r"Line:\s*(\d+)", msg)
        row = int(m.group(1)) - (1 if header else 0) if m else None
        return DataError("is not UTF-8 encoded text (garbled or binary file?); "
                         "re-save it as UTF-8 CSV", path=path,
                         row=row if row and row > 0 else None)
    m = re.search(r"Maximum line size of (\d+) bytes exceeded", msg)
    if m:  # DuckDB's line number is wrong here (line 1 for any line): none is given
        return DataError(f"a line is longer than {int(m.group(1)):,} bytes, the CSV "
                         "reader's limit (a huge field, or a quote that is never "
                         "closed?)", path=path)
    return None


def duckdb_read_error(exc: Exception, path: str | os.PathLike, *, format: str = "csv",
                      delimiter: str | None = None,
                      header: bool = True) -> DataError | ResourceError:
    """A DuckDB error met reading ``path`` as veil's one-line error: the file, the row when
    DuckDB gives it, the problem in veil's words, never the file's content.

    Parameters
    ----------
    exc : duckdb.Error
        The error.
    path : str or path-like
        The file that was read.
    format : str
        ``'csv'``, ``'parquet'`` or ``'json'``.
    delimiter : str, optional
        The CSV delimiter; ``None`` when DuckDB detected it.
    header : bool
        Whether the CSV file has a header line (rows are counted after it).

    Examples
    --------
    >>> import duckdb, tempfile, pathlib
    >>> from veil.io import sql
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
    >>> _ = f.write_bytes(b"name,city\\nAda,Paris\\nBo,Caf\\xe9\\n")
    >>> try:
    ...     duckdb.sql(f"SELECT * FROM read_csv({sql.path(f)}, header=true)").fetchall()
    ... except duckdb.Error as exc:
    ...     print(duckdb_read_error(exc, f.name))
    file p.csv, row 2: is not UTF-8 encoded text (garbled or binary file?); re-save it as UTF-8 CSV
    """
    return _duck_error(exc, Path(os.fspath(path)), format, delimiter, header)


def _source_sql(path: Path, fmt: str, *, delimiter: str, header: bool,
                all_varchar: bool) -> str:
    """The DuckDB table function reading ``path`` (a literal path: never a glob)."""
    p = sql.path(path)
    if fmt == "csv":
        opts = [f"header={'true' if header else 'false'}", f"delim={_sql_str(delimiter)}",
                "quote='\"'", "escape='\"'", "skip=0", "strict_mode=true",
                "null_padding=false", "comment=''", "allow_quoted_nulls=false"]
        if all_varchar:
            opts.append("all_varchar=true")
        return f"read_csv({p}, {', '.join(opts)})"
    if fmt == "parquet":
        return sql.read_parquet(p)
    return sql.read_json([path])


def _internal(i: int) -> str:
    """The positional name veil gives column ``i`` inside SQL (never a name from the file)."""
    return f"c{i}"


def _csv_header(path: Path, delimiter: str) -> list[str]:
    """The exact names of a CSV header (the first record), parsed like DuckDB parses it.

    DuckDB trims, renames (``a``, ``a_1``; ``Sex`` and ``sex`` are renamed as duplicates)
    and replaces blank names in a header; veil keeps the names as written, so it reads the
    first record itself. Bytes that are not UTF-8 are kept as surrogates and reported.
    """
    spath = str(path)
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="surrogateescape") as fh:
            rec = next(csv.reader(fh, delimiter=delimiter, quotechar='"', doublequote=True,
                                  strict=True), None)
    except (csv.Error, OSError) as exc:
        raise DataError(f"the header line cannot be parsed as CSV: {exc}", path=spath) from None
    if not rec:
        raise DataError("the first line (the header) is empty: expected column names",
                        path=spath)
    for name in rec:
        if any("\udc80" <= ch <= "\udcff" for ch in name):
            raise DataError("the header is not UTF-8 encoded text; re-save the file as UTF-8",
                            path=spath)
        if "\x00" in name:
            raise DataError("the header holds a NUL character", path=spath)
    return rec


def _check_unique(names: list[str], path: str) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(names, start=1):
        if name in seen:
            raise DataError(f"the column name appears twice (columns {seen[name]} and {i}); "
                            f"column names must be unique", path=path, column=name)
        seen[name] = i


def _json_keys(con, path: Path) -> set[str]:
    """Every top-level key of a JSON file's records (error path of a suspected rename)."""
    rows = con.sql(f"SELECT DISTINCT unnest(json_keys(json)) FROM "
                   f"{sql.read_json_objects(path)}").fetchall()
    return {r[0] for r in rows}


def check_json_records(con, path: Path, duck: list[str], types: list[str] | None) -> None:
    """Refuse a JSON file DuckDB could not read as columns of records (it then reads one
    column ``json``): records with a blank key or different keys (one MAP column), and JSON
    without records (an empty array, numbers, lists). A file whose records have the one key
    ``"json"`` is read the same way by DuckDB and passes."""
    spath = str(path)
    if duck != ["json"]:
        return
    if types and types[0].upper().startswith("MAP"):
        # DuckDB falls back to one MAP column when it cannot make columns of the keys
        keys = _json_keys(con, path)
        if keys != {"json"}:
            why = ("a record has a blank key \"\"" if "" in keys else
                   f"the records have {len(keys)} different keys")
            raise DataError(f"the JSON records cannot be read as columns ({why}); give every "
                            f"record the same non-blank keys", path=spath)
        return
    ((objects,),) = con.sql(f"SELECT count(*) FILTER (WHERE json_type(json) = 'OBJECT') "
                            f"FROM {sql.read_json_objects(path)}").fetchall()
    if not objects:
        raise DataError("holds no JSON records: veil reads an array of objects "
                        "([{\"lat\": ..., \"lon\": ...}, ...]) or one object per line; "
                        "this file is an empty array or holds values that are not objects",
                        path=spath)


def _exact_names(con, path: Path, fmt: str, duck: list[str], *, delimiter: str, header: bool,
                 names: list[str] | None, types: list[str] | None = None) -> list[str]:
    """The file's column names as written, in file order (DuckDB's ``duck`` names may differ)."""
    spath = str(path)
    if fmt == "json":
        check_json_records(con, path, duck, types)
    if names is not None:
        if fmt != "csv":
            raise ParameterError("names= only applies to CSV files")
        exact = list(names)
    elif fmt == "csv" and header:
        exact = _csv_header(path, delimiter)
    elif fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            exact = list(pq.read_schema(path).names)
        except (pa.ArrowException, OSError) as exc:
            raise DataError(f"cannot be read as Parquet: {_one_line(exc)}", path=spath) from None
    else:
        exact = list(duck)
        if fmt == "json":
            lower = set()
            for name in duck:
                m = re.fullmatch(r"(.*)_\d+", name, re.S)
                if m and m.group(1).lower() in lower:
                    keys = _json_keys(con, path)
                    if name not in keys:
                        twins = sorted(k for k in keys if k.lower() == m.group(1).lower())
                        raise DataError(
                            f"keys {', '.join(repr(k) for k in twins)} differ only in case, "
                            f"which DuckDB's JSON reader cannot keep apart; rename one",
                            path=spath, column=twins[-1] if twins else name)
                lower.add(name.lower())
    if len(exact) != len(duck):
        if fmt == "csv":  # DuckDB took a longer row for the header: name that row
            detail = _first_ragged_row(path, delimiter, header)
            if detail is not None and detail[0] is not None:
                raise DataError(detail[1], path=spath, row=detail[0])
        what = "names= gives" if names is not None else "the header has"
        raise DataError(f"{what} {len(exact)} column name(s) but the rows have {len(duck)} "
                        f"field(s); check the delimiter {delimiter!r} and quoting", path=spath)
    _check_unique(exact, spath)
    return exact


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _bigint_expr(name: str, src_type: str) -> str:
    """Exact BIGINT parse of a column (used only for integers beyond 2**52)."""
    col = _ident(name)
    base = src_type.upper()
    if base == "JSON":
        col = f"({col} ->> '$')"
        base = "VARCHAR"
    if base in _DUCK_NUMERIC or base == "VARCHAR" or base.startswith("DECIMAL"):
        return f"TRY_CAST({col} AS BIGINT)"  # (BOOLEAN and dates never get here)
    return "CAST(NULL AS BIGINT)"


_NESTED = re.compile(r"^(STRUCT|MAP|UNION|LIST|ARRAY)\b|\[\d*\]$")
_NOT_NUMBERS = ("TIMESTAMP", "DATE", "TIME", "INTERVAL", "BLOB", "BOOLEAN", "UUID", "BIT",
                "VARINT", "ENUM")


def _nested_type(src_type: str) -> bool:
    """Whether a DuckDB type holds lists, structs or maps (never a scalar cell)."""
    return bool(_NESTED.search(src_type.upper().strip()))


def _cast_exprs(name: str, src_type: str, kind: str) -> list[str]:
    """SQL expressions for one declared column: the parsed value(s) and a missing flag.

    ``name`` is the column's internal (positional) name; a JSON-typed column (mixed types
    in a JSON file) also gets a flag for cells that are arrays or objects.
    """
    col = _ident(name)
    base = src_type.upper()
    out = []
    if base == "JSON":
        out.append(f"coalesce(json_type({col}) IN ('ARRAY', 'OBJECT'), false) "
                   f"AS {_ident('__nested__' + name)}")
        col = f"({col} ->> '$')"
        base = "VARCHAR"
    out.insert(0, f"({col} IS NULL) AS {_ident('__null__' + name)}")
    if kind in _NUMERIC_KINDS:
        if base.startswith(_NOT_NUMBERS):
            out.append(f"CAST(NULL AS DOUBLE) AS {_ident('__f__' + name)}")
        else:
            out.append(f"TRY_CAST({col} AS DOUBLE) AS {_ident('__f__' + name)}")
    elif kind == "str":
        out.append(f"CAST({col} AS VARCHAR) AS {_ident('__s__' + name)}")
    elif kind == "time":
        if base.startswith(("TIMESTAMP", "DATE")):
            out.append(f"CAST(NULL AS DOUBLE) AS {_ident('__f__' + name)}")
            out.append(f"CAST({col} AS TIMESTAMP) AS {_ident('__t__' + name)}")
        elif base in _DUCK_NUMERIC or base.startswith("DECIMAL"):
            out.append(f"CAST({col} AS DOUBLE) AS {_ident('__f__' + name)}")
            out.append(f"CAST(NULL AS TIMESTAMP) AS {_ident('__t__' + name)}")
        elif base.startswith(_NOT_NUMBERS):
            out.append(f"CAST(NULL AS DOUBLE) AS {_ident('__f__' + name)}")
            out.append(f"CAST(NULL AS TIMESTAMP) AS {_ident('__t__' + name)}")
        else:
            out.append(f"TRY_CAST({col} AS DOUBLE) AS {_ident('__f__' + name)}")
            out.append(f"TRY_CAST(CAST({col} AS VARCHAR) AS TIMESTAMP) "
                       f"AS {_ident('__t__' + name)}")
    return out


def _raw_value(con, src: str, name: str, row_index: int) -> str:
    """The raw text of one cell (error path only), for the message."""
    try:
        rows = con.sql(f"SELECT CAST({_ident(name)} AS VARCHAR) FROM {src} "
                       f"LIMIT 1 OFFSET {int(row_index)}").fetchall()
        val = rows[0][0] if rows else None
    except Exception:  # noqa: BLE001 - only decorates a message
        return "?"
    if val is None:
        return "(missing)"
    return shown_cell(str(val))


def shown_cell(text: str) -> str:
    """A cell's text as error messages show it: quoted, at most 40 characters."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _first(mask: np.ndarray) -> int | None:
    idx = np.flatnonzero(mask)
    return int(idx[0]) if idx.size else None


def _missing_column_error(path: str, want: str, have: list[str]) -> DataError:
    lower = {h.lower(): h for h in have}
    hint = ""
    if len(have) == 1:
        for sep in (";", "\t", "|", ",", " "):
            if sep in have[0]:
                hint = (f"; the header looks {sep!r}-delimited: pass delimiter={sep!r} "
                        f"(--delimiter on the command line)")
                break
    if not hint and want.lower() in lower:
        hint = f"; did you mean {lower[want.lower()]!r}? (names are case-sensitive)"
    elif not hint:
        near = difflib.get_close_matches(want, have, n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]!r}?" if near else ""
    shown = ", ".join(repr(h) for h in have[:12]) + (" ..." if len(have) > 12 else "")
    return DataError(f"no such column{hint} (the file has: {shown})", path=path, column=want)


def _validate_kinds(columns: Mapping[str, str] | None) -> dict[str, str] | None:
    if columns is None:
        return None
    if isinstance(columns, str) or not isinstance(columns, Mapping):
        raise ParameterError(
            f"columns must be a dict mapping column name to kind, got {columns!r}")
    if not columns:
        raise ParameterError("columns must name at least one column")
    out: dict[str, str] = {}
    for name, kind in columns.items():
        if not isinstance(name, str) or not name:
            raise ParameterError(f"column names must be non-empty strings, got {name!r}")
        out[name] = check_choice(kind, f"kind of column {name!r}", tuple(KINDS))
    return out


@dataclass
class _Scan:
    con: Any
    src: str
    spath: str
    exprs: list
    have: list
    index: dict
    types: dict
    fmt: str
    delimiter: str
    path: Path


@contextlib.contextmanager
def _declared_scan(path, kinds, *, format, delimiter, header, names, keep_others):
    """The checks and SQL shared by :func:`read_table` and :func:`iter_column`: the file,
    its exact column names, the declared columns' cast expressions; yields a :class:`_Scan`
    whose connection is closed afterwards."""
    import duckdb

    path = Path(os.fspath(path))
    fmt = detect_format(path, format)
    if delimiter is None:
        delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    elif not isinstance(delimiter, str) or len(delimiter) != 1:
        raise ParameterError(f"delimiter must be a single character, got {delimiter!r}")
    if names is not None and (isinstance(names, str) or not all(isinstance(n, str) for n in names)):
        raise ParameterError(f"names must be a list of strings, got {names!r}")
    _check_file(path)
    spath = str(path)

    con = _connect()
    try:
        raw = _source_sql(path, fmt, delimiter=delimiter, header=header,
                          all_varchar=kinds is not None)
        try:
            described = con.sql(f"DESCRIBE SELECT * FROM {raw}").fetchall()
        except duckdb.InterruptException:  # SIGINT while DuckDB reads: exit 130, not 2
            raise KeyboardInterrupt from None
        except read_errors() as exc:
            raise _duck_error(exc, path, fmt, delimiter, header) from None
        # SQL only ever sees positional names (c0, c1, ...): a name from the file never
        # reaches a query, and DuckDB's renaming of blank, padded or case-duplicate names
        # cannot change what is read or written back.
        have = _exact_names(con, path, fmt, [r[0] for r in described], delimiter=delimiter,
                            header=header, names=names, types=[str(r[1]) for r in described])
        index = {name: i for i, name in enumerate(have)}
        types = {name: str(described[i][1]) for i, name in enumerate(have)}
        src = f"{raw} AS __src({', '.join(_ident(_internal(i)) for i in range(len(have)))})"

        if kinds is None:
            exprs = [_ident(_internal(i)) for i in range(len(have))]
        else:
            for name, kind in kinds.items():
                if name not in index:
                    raise _missing_column_error(spath, name, have)
                if _nested_type(types[name]):
                    raise DataError(f"holds nested values of type {types[name]} (lists or "
                                    f"structs), expected {KINDS[kind]} in every cell",
                                    path=spath, column=name)
            exprs = []
            for name, kind in kinds.items():
                exprs.extend(_cast_exprs(_internal(index[name]), types[name], kind))
            others = [h for h in have if h not in kinds] if keep_others else []
            exprs.extend(_ident(_internal(index[h])) for h in others)
        yield _Scan(con, src, spath, exprs, have, index, types, fmt, delimiter, path)
    finally:
        con.close()


def read_table(path: str | os.PathLike, *, columns: Mapping[str, str] | None = None,
               format: str | None = None, delimiter: str | None = None, header: bool = True,
               names: list[str] | None = None, keep_others: bool = False) -> pa.Table:
    """Read a CSV, Parquet or JSON file through DuckDB and check its schema.

    Parameters
    ----------
    path : str or path-like
        The input file.
    columns : dict of str to str, optional
        Columns to read, mapping each name to a kind (see :data:`KINDS`): ``'float'``,
        ``'int'``, ``'count'`` (>= 0), ``'lat'``, ``'lon'``, ``'str'`` or ``'time'``.
        Each declared column must exist, have no missing cell and parse as its kind.
        ``None`` reads every column as DuckDB types it, unchecked.
    format : {'csv', 'parquet', 'json'}, optional
        Default: from the extension (``.csv``/``.tsv``/``.txt``, ``.parquet``/``.pq``,
        ``.json``/``.jsonl``/``.ndjson``).
    delimiter : str, optional
        CSV field delimiter; default ``','``, or a tab for ``.tsv``/``.tab`` files.
    header : bool
        Whether a CSV file starts with a header line (default ``True``). Without one,
        columns are named ``column0``, ``column1`` ... unless ``names`` is given.
    names : list of str, optional
        Column names for a CSV file (replace the header's names).
    keep_others : bool
        With ``columns``, also return the other columns unchanged (CSV: as text, so they
        round-trip exactly); all columns then come in the file's order.

    Returns
    -------
    pyarrow.Table
        The declared columns in the order given (file order with ``keep_others``), typed float64 / int64 / string /
        timestamp[us].

    Raises
    ------
    DataError
        Naming the file, 1-based data row and column: missing or empty file, unreadable or
        garbled content, missing column (with a did-you-mean), missing or non-numeric value,
        non-integer or negative count, NaN/inf, latitude or longitude out of range, no data rows.
    ParameterError
        For an unknown format or kind.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "p.csv").write_text("lat,lon\\n48.85,2.35\\n40.71,-74.0\\n")
    >>> t = read_table(d / "p.csv", columns={"lat": "lat", "lon": "lon"})
    >>> t.num_rows, t.column_names
    (2, ['lat', 'lon'])
    """
    import duckdb

    kinds = _validate_kinds(columns)
    with _declared_scan(path, kinds, format=format, delimiter=delimiter, header=header,
                        names=names, keep_others=keep_others) as scan:
        con, src, spath, exprs = scan.con, scan.src, scan.spath, scan.exprs
        have, index, types = scan.have, scan.index, scan.types
        fmt, delimiter = scan.fmt, scan.delimiter
        path = scan.path
        # One scan of the file; insertion order is preserved, so index i is data row i + 1.
        try:
            got = con.sql(f"SELECT {', '.join(exprs)} FROM {src}").to_arrow_table()
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except read_errors() as exc:
            raise _duck_error(exc, path, fmt, delimiter, header) from None
        if got.num_rows == 0:
            raise DataError("has no data rows (only a header?)", path=spath)
        if kinds is None:
            return got.rename_columns(have)

        checked = {name: _check_column(con, src, spath, name, _internal(index[name]), kind,
                                       got, types[name])
                   for name, kind in kinds.items()}
        if not keep_others:
            return pa.table(checked)
        return pa.table({h: checked[h] if h in checked else got.column(_internal(index[h]))
                         for h in have})


@contextlib.contextmanager
def _duck_errors(scan: _Scan, header: bool):
    """DuckDB errors of a streamed read as veil's: SIGINT exits 130, a read error names the
    file (as :func:`read_table`)."""
    import duckdb

    try:
        yield
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None
    except read_errors() as exc:
        raise _duck_error(exc, scan.path, scan.fmt, scan.delimiter, header) from None


#: kinds :func:`iter_column` reads batch by batch (their checks look at one row at a time)
_BATCH_KINDS = ("float", "lat", "lon")


def iter_column(path: str | os.PathLike, column: str, kind: str = "float", *,
                batch_rows: int = 1 << 20, format: str | None = None,
                delimiter: str | None = None, header: bool = True,
                names: list[str] | None = None) -> Iterator[np.ndarray]:
    """Read one numeric column batch by batch: float64 arrays of at most ``batch_rows``
    values, in file order, checked exactly as :func:`read_table` checks them.

    Memory follows ``batch_rows``, not the file (one DuckDB scan, streamed). A bad value
    raises the same :class:`~veil.errors.DataError` as :func:`read_table`, naming the same
    row, when its batch is reached: a caller that writes anything must first consume every
    batch. ``kind`` is ``'float'``, ``'lat'`` or ``'lon'``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "v.csv"
    >>> _ = f.write_text("v\\n1.5\\n2\\n3\\n")
    >>> [b.tolist() for b in iter_column(f, "v", batch_rows=2)]
    [[1.5, 2.0], [3.0]]
    """
    if kind not in _BATCH_KINDS:
        raise ParameterError(f"iter_column reads kinds {', '.join(_BATCH_KINDS)}, got {kind!r}")
    for scan, look, offset, got in _declared_batches(
            path, {column: kind}, batch_rows, format=format, delimiter=delimiter,
            header=header, names=names):
        vals = _check_column(look, scan.src, scan.spath, column,
                             _internal(scan.index[column]), kind, got, scan.types[column],
                             offset=offset)
        yield vals.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)


def _declared_batches(path, columns: Mapping[str, str], batch_rows: int, *, format, delimiter,
                      header, names):
    """``(scan, look, offset, batch)`` for each non-empty batch of the declared columns'
    expressions (:func:`_cast_exprs`), streamed by DuckDB; ``offset`` is the number of data
    rows before the batch. ``look`` is a second connection to the same database, for the
    error messages' cell lookups: a query on the streaming connection would end its stream.
    A file without data rows raises once the stream ends."""
    rows = int(batch_rows)
    if rows < 1:
        raise ParameterError(f"batch_rows must be >= 1, got {batch_rows!r}")
    kinds = _validate_kinds(columns)
    with _declared_scan(path, kinds, format=format, delimiter=delimiter, header=header,
                        names=names, keep_others=False) as scan:
        offset = 0
        with contextlib.closing(scan.con.cursor()) as look, _duck_errors(scan, header):
            reader = scan.con.sql(f"SELECT {', '.join(scan.exprs)} FROM {scan.src}"
                                  ).to_arrow_reader(rows)
            for batch in reader:
                if batch.num_rows == 0:
                    continue
                yield scan, look, offset, pa.Table.from_batches([batch])
                offset += batch.num_rows
        if offset == 0:
            raise DataError("has no data rows (only a header?)", path=scan.spath)


def check_columns_streaming(path: str | os.PathLike, columns: Mapping[str, str], *,
                            batch_rows: int = 1 << 20, format: str | None = None,
                            delimiter: str | None = None, header: bool = True,
                            names: list[str] | None = None) -> int:
    """Check the declared ``columns`` of a file as :func:`read_table` does, batch by batch
    (memory follows ``batch_rows``), and return the number of data rows.

    The error raised is the one :func:`read_table` raises: of the columns in the order given,
    the first with a bad cell, naming its first bad row. Kinds ``float``, ``lat``, ``lon``,
    ``str`` and ``time``.
    """
    kinds = _validate_kinds(columns)
    bad_kinds = [k for k in kinds.values() if k not in (*_BATCH_KINDS, "str", "time")]
    if bad_kinds:
        raise ParameterError(f"check_columns_streaming does not check kinds {bad_kinds}")
    first: dict[str, DataError] = {}
    rows = 0
    batches = _declared_batches(path, kinds, batch_rows, format=format, delimiter=delimiter,
                                header=header, names=names)
    with contextlib.closing(batches):
        for scan, look, offset, got in batches:
            for name, kind in kinds.items():
                if name not in first:
                    try:
                        _check_column(look, scan.src, scan.spath, name,
                                      _internal(scan.index[name]), kind, got,
                                      scan.types[name], offset=offset)
                    except DataError as exc:
                        first[name] = exc
            rows = offset + got.num_rows
            if len(first) == len(kinds):
                break
    for name in kinds:
        if name in first:
            raise first[name]
    return rows


def iter_bounded_values(path: str | os.PathLike, column: str, user: str, *, max_records: int,
                        key: int, batch_rows: int = 1 << 20, format: str | None = None,
                        delimiter: str | None = None, header: bool = True,
                        names: list[str] | None = None) -> Iterator[np.ndarray]:
    """The values of ``column`` kept by per-user contribution bounding, batch by batch.

    The same rows as :func:`veil.bounding.bound_contributions` keeps from the table
    ``{"user": <user as text>, "value": <column as float>}`` read whole, for the same ``key``
    (the same keyed hash of the same texts), selected by DuckDB straight from the file: memory
    follows DuckDB's limit and the batches, not the file. The columns must already have
    passed :func:`check_columns_streaming`. Order of the values: unspecified.
    """
    from ..bounding import bounded_sql

    if user == column:
        raise ParameterError(f"user and value columns must differ, both are {column!r}")
    kinds = _validate_kinds({column: "float", user: "str"})
    with _declared_scan(path, kinds, format=format, delimiter=delimiter, header=header,
                        names=names, keep_others=False) as scan:
        v = _ident("__f__" + _internal(scan.index[column]))
        u = _ident("__s__" + _internal(scan.index[user]))
        rows = (f"(SELECT {u} AS \"user\", {v} AS \"value\" FROM "
                f"(SELECT {', '.join(scan.exprs)} FROM {scan.src}))")
        kept = bounded_sql(rows, user="user", columns=["user", "value"],
                           max_records=max_records, key=key)
        with _duck_errors(scan, header):
            reader = scan.con.sql(f"SELECT \"value\" FROM ({kept})").to_arrow_reader(
                int(batch_rows))
            for batch in reader:
                yield batch.column(0).to_numpy(zero_copy_only=False).astype(np.float64,
                                                                          copy=False)


def column_names(path: str | os.PathLike, *, format: str | None = None,
                 delimiter: str | None = None, header: bool = True,
                 names: list[str] | None = None) -> list[str]:
    """The column names of a file exactly as written (the names :func:`read_table` uses).

    DuckDB trims padded names, renames blank ones and renames names that differ only in
    case; this returns the file's own names, in file order, and refuses a file that names
    two columns alike (the same rules as :func:`read_table`, without reading the rows).

    Parameters
    ----------
    path, format, delimiter, header, names
        As for :func:`read_table`.

    Raises
    ------
    DataError
        If the file cannot be read, or two columns have the same name.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = f.write_text(' age ,Sex,sex\\n1,F,x\\n')
    >>> column_names(f)
    [' age ', 'Sex', 'sex']
    >>> _ = f.write_text('age,sex,age\\n1,F,2\\n')
    >>> column_names(f)
    Traceback (most recent call last):
    ...
    veil.errors.DataError: file ..., column 'age': the column name appears twice (columns 1 and 3); column names must be unique
    """
    import duckdb

    path = Path(os.fspath(path))
    fmt = detect_format(path, format)
    if delimiter is None:
        delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    _check_file(path)
    con = _connect()
    try:
        raw = _source_sql(path, fmt, delimiter=delimiter, header=header, all_varchar=True)
        try:
            described = con.sql(f"DESCRIBE SELECT * FROM {raw}").fetchall()
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except read_errors() as exc:
            raise _duck_error(exc, path, fmt, delimiter, header) from None
        return _exact_names(con, path, fmt, [r[0] for r in described], delimiter=delimiter,
                            header=header, names=names, types=[str(r[1]) for r in described])
    finally:
        con.close()


def _check_column(con, src: str, path: str, name: str, col: str, kind: str, got: pa.Table,
                  src_type: str, offset: int = 0):
    """Vectorized checks of one declared column; returns the converted Arrow array.

    ``name`` is the column's name in the file (for messages), ``col`` its internal name;
    ``got`` holds the rows from data row ``offset + 1`` on (a batch of :func:`iter_column`).
    """
    missing = got.column("__null__" + col).to_numpy()
    i = _first(missing)
    if i is not None:
        raise DataError(f"missing value (empty cell); every row needs a {kind} here "
                        f"({KINDS[kind]})", path=path, row=offset + i + 1, column=name)
    if "__nested__" + col in got.column_names:
        i = _first(got.column("__nested__" + col).to_numpy())
        if i is not None:
            raise DataError(f"{_raw_value(con, src, col, offset + i)} is a list or an object, "
                            f"expected {KINDS[kind]}", path=path, row=offset + i + 1, column=name)
    if kind == "str":
        return got.column("__s__" + col).combine_chunks()

    if kind == "time":
        f = got.column("__f__" + col)
        t = got.column("__t__" + col)
        f_ok = ~np.asarray(f.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        t_ok = ~np.asarray(t.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        if f_ok.all():
            vals = f.to_numpy().astype(np.float64)
            i = _first(~np.isfinite(vals))
            if i is not None:
                raise DataError(f"time must be finite, got {vals[i]!r}", path=path,
                                row=offset + i + 1, column=name)
            return pa.array(vals, type=pa.float64())
        if t_ok.all():
            return t.combine_chunks().cast(pa.timestamp("us"))
        bad = ~(t_ok if t_ok.sum() >= f_ok.sum() else f_ok)
        i = _first(bad)
        raise DataError(f"{_raw_value(con, src, col, offset + i)} is not a time (expected "
                        f"{KINDS['time']}, e.g. 2012-04-03 18:00:09 or 13.5)",
                        path=path, row=offset + i + 1, column=name)

    fcol = got.column("__f__" + col)
    fnull = np.asarray(fcol.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    i = _first(fnull)
    if i is not None:
        raise DataError(f"{_raw_value(con, src, col, offset + i)} is not a number (expected "
                        f"{KINDS[kind]})", path=path, row=offset + i + 1, column=name)
    vals = fcol.to_numpy().astype(np.float64, copy=False)
    finite = np.isfinite(vals)
    i = _first(~finite)
    if i is not None:
        what = {"lat": "latitude", "lon": "longitude"}.get(kind, "value")
        raise DataError(f"{what} must be finite, got {_raw_value(con, src, col, offset + i)} "
                        f"(NaN/inf not allowed)", path=path, row=offset + i + 1, column=name)
    if kind == "lat":
        i = _first((vals < -90.0) | (vals > 90.0))
        if i is not None:
            raise DataError(f"latitude {float(vals[i]):.15g} is outside [-90, 90] (are latitude and "
                            f"longitude swapped?)", path=path, row=offset + i + 1, column=name)
        return pa.array(vals, type=pa.float64())
    if kind == "lon":
        i = _first((vals < -180.0) | (vals > 180.0))
        if i is not None:
            raise DataError(f"longitude {float(vals[i]):.15g} is outside [-180, 180]", path=path,
                            row=offset + i + 1, column=name)
        return pa.array(vals, type=pa.float64())
    if kind == "float":
        return pa.array(vals, type=pa.float64())

    # int / count
    i = _first(vals != np.round(vals))
    if i is not None:
        label = "integer count" if kind == "count" else "integer"
        raise DataError(f"{_raw_value(con, src, col, offset + i)} is not an {label} (expected "
                        f"{KINDS[kind]})", path=path, row=offset + i + 1, column=name)
    if np.abs(vals).max() < _EXACT_LIMIT:
        ints = vals.astype(np.int64)  # integral doubles below 2**52 are exact
    else:  # large integers: parse the text again as BIGINT so no digit is lost
        icol = con.sql(f"SELECT {_bigint_expr(col, src_type)} FROM {src}").to_arrow_table()
        icol = icol.column(0)
        inull = np.asarray(icol.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        i = _first(inull)
        if i is not None:
            raise DataError(f"{_raw_value(con, src, col, offset + i)} does not fit in a 64-bit "
                            f"integer", path=path, row=offset + i + 1, column=name)
        ints = icol.to_numpy().astype(np.int64, copy=False)
    if kind == "count":
        i = _first(ints < 0)
        if i is not None:
            raise DataError(f"count {int(ints[i])} is negative; counts must be >= 0",
                            path=path, row=offset + i + 1, column=name)
    return pa.array(ints, type=pa.int64())


def _to_numpy(col) -> np.ndarray:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        return np.asarray(col.to_pylist(), dtype=object)
    return col.to_numpy(zero_copy_only=False)


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object, refusing a key given twice: ``{"Bar": 5, "Bar": 3}`` read as
    ``{"Bar": 3}`` and 5 visits vanished from a histogram."""
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def read_json(path: str | os.PathLike, *, what: str = "file") -> Any:
    """A small JSON document (a target histogram, a taxonomy, a sidecar, a region).

    The one place such files are read: any failure is a :class:`DataError` naming the file
    (missing, a folder, unreadable, not UTF-8, not JSON), never a bare decoding error. A UTF-8
    byte-order mark, as some editors write, is accepted. A key given twice in one object is an
    error (plain JSON would keep the last one silently).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.json"
    >>> _ = p.write_bytes(b'{"Bar": 1}')
    >>> read_json(p)
    {'Bar': 1}
    >>> _ = p.write_bytes(b'{"caf\\xe9": 1}')
    >>> read_json(p, what="target")
    Traceback (most recent call last):
    ...
    veil.errors.DataError: file ...t.json: target is not UTF-8 text (garbled or binary file?)
    """
    import json

    p = Path(os.fspath(path))
    try:
        text = p.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise DataError(f"{what} not found", path=str(p)) from None
    except IsADirectoryError:
        raise DataError(f"{what} is a folder, not a JSON file", path=str(p)) from None
    except UnicodeDecodeError:
        raise DataError(f"{what} is not UTF-8 text (garbled or binary file?)",
                        path=str(p)) from None
    except OSError as exc:
        raise DataError(f"cannot read {what}: {exc.strerror or exc}", path=str(p)) from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise DataError(f"{what} is not valid JSON ({exc.msg} at line {exc.lineno}, column "
                        f"{exc.colno})", path=str(p)) from None
    except _DuplicateKey as exc:
        raise DataError(f"{what} gives the key {exc.args[0]!r} twice in one object (JSON "
                        "keeps only the last; merge them or remove one)", path=str(p)) from None
    except RecursionError:
        raise DataError(f"{what} is nested too deeply to read", path=str(p)) from None


def read_columns(path: str | os.PathLike, *, columns: Mapping[str, str] | None = None,
                 format: str | None = None, **options: Any) -> dict[str, np.ndarray]:
    """Like :func:`read_table` but return a dict of numpy arrays (text as object arrays).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "c.csv"
    >>> _ = f.write_text("bin,n\\na,3\\nb,0\\n")
    >>> cols = read_columns(f, columns={"n": "count"})
    >>> cols["n"].tolist()
    [3, 0]
    """
    table = read_table(path, columns=columns, format=format, **options)
    return {name: _to_numpy(table.column(name)) for name in table.column_names}


def read_points(path: str | os.PathLike, *, lat: str = "lat", lon: str = "lon",
                format: str | None = None, **options: Any) -> np.ndarray:
    """Read points as an ``(n, 2)`` float64 array of ``[lat, lon]`` in degrees.

    Latitudes must lie in [-90, 90] and longitudes in [-180, 180]; NaN/inf rejected.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "pts.csv"
    >>> _ = f.write_text("y,x\\n39.9,116.4\\n")
    >>> read_points(f, lat="y", lon="x").tolist()
    [[39.9, 116.4]]
    """
    if lat == lon:
        raise ParameterError(f"lat and lon must be different columns, both are {lat!r}")
    cols = read_columns(path, columns={lat: "lat", lon: "lon"}, format=format, **options)
    return np.column_stack([cols[lat], cols[lon]])


def read_counts(path: str | os.PathLike, *, column: str = "count",
                format: str | None = None, **options: Any) -> np.ndarray:
    """Read one column of non-negative integer counts as an int64 array.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "h.csv"
    >>> _ = f.write_text("age,count\\n20,5\\n30,7\\n")
    >>> read_counts(f).tolist()
    [5, 7]
    """
    return read_columns(path, columns={column: "count"}, format=format, **options)[column]


def read_checkins(path: str | os.PathLike, *, user: str = "user", category: str = "category",
                  time: str | None = None, format: str | None = None,
                  **options: Any) -> dict[str, np.ndarray]:
    """Read check-ins: ``user`` and ``category`` as text, optional ``time``.

    Returns a dict with keys ``'user'``, ``'category'`` (object arrays of str) and, if
    ``time`` is given, ``'time'`` (float64 or datetime64[us]).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "ci.csv"
    >>> _ = f.write_text("uid,cat\\n1,Food\\n2,Gym\\n")
    >>> ci = read_checkins(f, user="uid", category="cat")
    >>> ci["user"].tolist(), ci["category"].tolist()
    (['1', '2'], ['Food', 'Gym'])
    """
    wanted = {user: "str", category: "str"}
    if len(wanted) < 2:
        raise ParameterError(f"user and category must be different columns, both are {user!r}")
    if time is not None:
        if time in wanted:
            raise ParameterError(f"time column {time!r} is also used as user or category")
        wanted[time] = "time"
    cols = read_columns(path, columns=wanted, format=format, **options)
    out = {"user": cols[user], "category": cols[category]}
    if time is not None:
        out["time"] = cols[time]
    return out
