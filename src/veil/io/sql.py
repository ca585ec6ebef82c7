r"""The one place where veil quotes what it puts into SQL.

Every identifier (a column or table name), every string literal and every file path that veil
sends to DuckDB goes through a function of this module; no other module builds a quoted name
or literal by hand (a test greps the package for that).

Why a module of its own: column names and paths come from users and from files, and a name such
as ``user" IS NULL OR (SELECT ...) OR "user`` would otherwise smuggle a predicate into a query.
DuckDB also treats ``*``, ``?``, ``[`` and ``{`` in a path given to ``read_csv`` and friends as a
glob: ``p[1].csv`` would read ``p1.csv``. :func:`path` escapes those characters so that a path
is always literal; a glob is built only where a caller asks for one (:func:`glob`).

Examples
--------
>>> print(ident('a"b'))
"a""b"
>>> literal("it's")
"'it''s'"
>>> path("/data/p[1].csv")
"'/data/p[[]1].csv'"
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..errors import ParameterError

__all__ = ["ident", "literal", "path", "paths", "target", "glob", "glob_escape"]

_GLOB_CHARS = {"[": "[[]", "*": "[*]", "?": "[?]", "{": "[{]"}


def _text(value: object, what: str) -> str:
    s = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    if "\x00" in s:
        raise ParameterError(f"{what} {s!r} contains a NUL character, which SQL cannot carry")
    return s


def ident(name: object) -> str:
    """A SQL identifier in double quotes, embedded double quotes doubled.

    Parameters
    ----------
    name : object
        The column or table name (converted with ``str``).

    Raises
    ------
    ParameterError
        If the name contains a NUL character.
    """
    return '"' + _text(name, "the name").replace('"', '""') + '"'


def literal(value: object) -> str:
    """A SQL string literal in single quotes, embedded single quotes doubled.

    Parameters
    ----------
    value : object
        The value (converted with ``str``; a path-like is converted with ``os.fspath``).

    Raises
    ------
    ParameterError
        If the value contains a NUL character.
    """
    return "'" + _text(value, "the value").replace("'", "''") + "'"


def glob_escape(p: str | os.PathLike) -> str:
    """Escape DuckDB's glob characters so that ``p`` matches exactly one file name.

    >>> glob_escape("a*b?[c]{d}")
    'a[*]b[?][[]c][{]d}'
    """
    s = _text(p, "the path")
    return "".join(_GLOB_CHARS.get(ch, ch) for ch in s)


def path(p: str | os.PathLike) -> str:
    """A SQL literal naming exactly the file ``p`` (absolute, glob characters escaped).

    Use it wherever a file path goes into ``read_csv``, ``read_parquet`` or ``read_json``:
    DuckDB then reads that one file and never expands a pattern. A ``COPY ... TO``
    destination takes :func:`target` instead.
    """
    return literal(glob_escape(os.path.abspath(_text(p, "the path"))))


def target(p: str | os.PathLike) -> str:
    """A SQL literal naming the file ``p`` as a ``COPY ... TO`` destination (absolute).

    DuckDB never expands a pattern in a COPY destination, so glob characters are kept as
    they are: escaping them (as :func:`path` does for readers) would write a file whose
    name holds the escapes (``o[[]1].csv`` instead of ``o[1].csv``).

    >>> target("/out/o[1].csv")
    "'/out/o[1].csv'"
    """
    return literal(os.path.abspath(_text(p, "the path")))


def paths(ps: Iterable[str | os.PathLike]) -> str:
    """A SQL list literal of literal paths (see :func:`path`)."""
    return "[" + ", ".join(path(p) for p in ps) + "]"


def read_parquet(files: str, *options: str) -> str:
    """The DuckDB relation reading Parquet ``files`` (a literal from :func:`path` or
    :func:`paths`), with NaN taken as possible in every float column.

    Every Parquet read of veil goes through it. Parquet's min/max statistics leave NaN out
    (pyarrow, Spark and others write them so), and DuckDB prunes and folds filters by those
    statistics unless told that a column can hold NaN: with the default, on a pyarrow file
    whose ``lat`` holds NaN, ``WHERE lat <= 40`` kept the NaN rows and ``WHERE isnan(lat)``
    found none (DuckDB 2.0.1), so invalid points reached the grid and the budget's counts.

    >>> read_parquet(paths(["/d/a.parquet"]), "union_by_name = true")
    "read_parquet(['/d/a.parquet'], can_have_nan = true, union_by_name = true)"
    """
    return f"read_parquet({', '.join([files, 'can_have_nan = true', *options])})"


def _bom_array(p: str | os.PathLike) -> bool:
    """Whether the file starts with a UTF-8 byte-order mark, then (after blanks) ``[``
    (a regular file only: opening a FIFO to peek would block)."""
    if not os.path.isfile(p):
        return False
    try:
        with open(p, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return head.startswith(b"\xef\xbb\xbf") and head[3:].lstrip(b" \t\r\n").startswith(b"[")


def read_json(files: Iterable[str | os.PathLike]) -> str:
    """The DuckDB relation reading the JSON ``files`` (paths; one table).

    Every JSON read of a user's file goes through it. DuckDB detects a JSON array and a
    newline-delimited file by itself, except an array after a UTF-8 byte-order mark (as
    Windows tools write it): ``read_json_auto`` read ``\\ufeff[{"lat": 1}, {"lat": 2}]`` as
    *one* row of one column ``json`` holding the list. Such files are read with
    ``format = 'array'``, which skips the mark; the others as before.

    >>> read_json(["/d/a.json"])
    "read_json_auto(['/d/a.json'])"
    """
    files = list(files)
    lst = paths(files)
    if files and all(_bom_array(f) for f in files):
        return f"read_json({lst}, format = 'array')"
    return f"read_json_auto({lst})"


def read_json_objects(p: str | os.PathLike) -> str:
    """DuckDB's ``read_json_objects`` of one JSON file (one row per top-level value, column
    ``json``), reading an array after a byte-order mark as :func:`read_json` does.

    >>> read_json_objects("/d/a.json")
    "read_json_objects('/d/a.json')"
    """
    fmt = ", format = 'array'" if _bom_array(p) else ""
    return f"read_json_objects({path(p)}{fmt})"


def glob(pattern: str) -> str:
    """A SQL literal for a glob pattern the user asked for explicitly (not escaped)."""
    return literal(pattern)
