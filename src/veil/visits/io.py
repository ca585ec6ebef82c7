"""Reading one histogram or a target profile from JSON / CSV."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import DataError
from ..io import sql

__all__ = ["read_histogram", "read_profile", "is_checkin_file"]

_VALUE_COLS = ("count", "counts", "visits", "weight", "probability", "value", "frequency")


def _load_json(p: Path):
    from ..io.read import read_json

    return read_json(p, what="the JSON file")


def _csv(lit: str, delimiter: str | None) -> str:
    """DuckDB's CSV reader call (the delimiter sniffed unless given)."""
    delim = "" if delimiter is None else f", delim={sql.literal(delimiter)}"
    return f"read_csv({lit}, header=true{delim})"


def read_profile(path: str | Path, *, what: str = "histogram", delimiter: str | None = None,
                 format: str | None = None) -> tuple[list[str] | None, np.ndarray]:
    """Labels and values from a JSON or CSV file.

    JSON: ``{"Bar": 3, ...}``, ``{"histogram": {...}}`` or a list of numbers.
    CSV: a category column (``category``/``name``/``label``, any case) and a value
    column (``count``, ``weight``, ``probability``, ``value`` ...); rows with the
    same category are summed (so ``Category,Hour,Count`` files work).
    """
    p = Path(path)
    if not p.exists():
        raise DataError(f"{what} file not found", path=str(p))
    if format == "parquet":
        raise DataError(f"a {what} is a JSON or CSV file, not Parquet", path=str(p))
    if format == "json" or (format is None and p.suffix.lower() == ".json"):
        data = _load_json(p)
        if isinstance(data, dict) and isinstance(data.get("histogram"), (dict, list)):
            data = data["histogram"]
        if isinstance(data, dict):
            labels = [str(k) for k in data]
            vals = list(data.values())
        elif isinstance(data, list):
            if any(isinstance(v, dict) for v in data):
                raise DataError(f"a list of objects is a check-in table, not a {what}: a JSON "
                                f"{what} is an object {{category: count}} or a list of numbers",
                                path=str(p))
            labels, vals = None, data
        else:
            raise DataError(f"a JSON {what} must be an object {{category: count}} or a list",
                            path=str(p))
        for k, v in zip(labels or range(len(vals)), vals):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise DataError(f"value for {k!r} must be a number, got {v!r}", path=str(p))
            if isinstance(v, int) and abs(v) >= EXACT_LIMIT:  # before float64 rounds it
                _too_large(what, k, v, p)
        return labels, _checked(labels, np.asarray(vals, dtype=np.float64), what, p)
    from ..io.read import duckdb_read_error, read_errors, shared_sql

    lit = sql.path(p)
    try:
        rel = shared_sql(f"SELECT * FROM {_csv(lit, delimiter)}")
        cols = rel.columns
    except read_errors() as exc:  # DuckDB's own message quotes a row of the file
        raise duckdb_read_error(exc, p, delimiter=delimiter) from None
    low = {c.lower(): c for c in cols}
    cat = next((low[c] for c in ("category", "name", "label", "place") if c in low), None)
    val = next((low[c] for c in _VALUE_COLS if c in low), None)
    if cat is None or val is None:
        raise DataError(f"a CSV {what} needs a category column and a count/weight column; "
                        f"found {cols}", path=str(p))
    try:
        rows = shared_sql(f'SELECT CAST({sql.ident(cat)} AS VARCHAR) AS c, sum(CAST({sql.ident(val)} AS DOUBLE)) '
                          f"AS v, count(*) FILTER (WHERE {sql.ident(val)} IS NULL) AS nn FROM "
                          f"{_csv(lit, delimiter)} GROUP BY 1 ORDER BY 1").fetchall()
    except read_errors() as exc:
        raise (None if isinstance(exc, UnicodeDecodeError) else _not_a_number(
            _csv(lit, delimiter), val, p)) or \
            duckdb_read_error(exc, p, delimiter=delimiter) from None
    if any(r[0] is None for r in rows):
        raise DataError("empty category name", path=str(p), column=cat)
    if any(r[2] for r in rows):
        raise DataError("empty value", path=str(p), column=val)
    labels = [r[0] for r in rows]
    return labels, _checked(labels, np.asarray([r[1] for r in rows], dtype=np.float64), what, p)


def _not_a_number(reader: str, val: str, p: Path) -> DataError | None:
    """The first row whose ``val`` is not a number, named as :func:`veil.io.read_table`
    names it (error path only; DuckDB's conversion error quoted the whole value)."""
    import duckdb

    from ..io.read import shared_sql, shown_cell

    v = sql.ident(val)
    try:  # the rows come in file order (DuckDB preserves insertion order)
        got = shared_sql(f"SELECT CAST({v} AS VARCHAR) AS v, {v} IS NOT NULL AND "
                         f"TRY_CAST({v} AS DOUBLE) IS NULL AS bad FROM {reader}"
                         ).to_arrow_table()
    except duckdb.Error:
        return None
    bad = np.flatnonzero(got.column("bad").to_numpy(zero_copy_only=False))
    if not bad.size:
        return None
    i = int(bad[0])
    shown = shown_cell(str(got.column("v")[i].as_py()))
    return DataError(f"{shown} is not a number (expected a count or a weight)", path=str(p),
                     row=i + 1, column=val)


#: Values (and their total) must stay below 2^53: the solvers compute in float64, which holds
#: every whole number exactly only below it (9007199254740993 visits were published as
#: ...992, and "the size is kept" failed)
EXACT_LIMIT = 2**53


def _scale_hint(what: str) -> str:
    return " (scale the weights down: only their proportions matter)" if what == "target" else ""


def _too_large(what: str, key, value, p: Path):
    shown = f"{value:,}" if isinstance(value, int) else f"about {value:.6g}"
    raise DataError(f"{what} value for {key!r} is {shown}, not below 2^53 = {EXACT_LIMIT:,}: "
                    "visits are computed in float64, which holds whole numbers exactly only "
                    f"below that{_scale_hint(what)}", path=str(p))


def _checked(labels, vals: np.ndarray, what: str, p: Path) -> np.ndarray:
    """``vals``, refusing any value or a total of 2^53 or more in absolute value (an infinite
    total of finite weights made `visits resemble` keep the input, "certified optimal")."""
    bad = np.flatnonzero(~np.isfinite(vals))
    if bad.size:
        i = int(bad[0])
        key = labels[i] if labels is not None else i
        raise DataError(f"{what} value for {key!r} must be a finite number, got "
                        f"{float(vals[i])!r}", path=str(p))
    big = np.flatnonzero(~(np.abs(vals) < EXACT_LIMIT))
    if big.size:
        i = int(big[0])
        _too_large(what, labels[i] if labels is not None else i, float(vals[i]), p)
    total = float(np.sum(np.abs(vals), dtype=np.float64)) if vals.size else 0.0
    if not total < EXACT_LIMIT:
        raise DataError(f"the {what}'s values add up to about {total:.6g}, not below 2^53 = "
                        f"{EXACT_LIMIT:,}: visits are computed in float64, which holds whole "
                        f"numbers exactly only below that{_scale_hint(what)}", path=str(p))
    return vals


def read_histogram(path: str | Path, *, delimiter: str | None = None,
                   format: str | None = None) -> tuple[list[str] | None, np.ndarray]:
    """One user's histogram (labels may be None); counts are validated by the solver."""
    return read_profile(path, what="histogram", delimiter=delimiter, format=format)


def is_checkin_file(path: str | Path, user_column: str, *, delimiter: str | None = None,
                    format: str | None = None) -> bool:
    """True when ``path`` is a check-in table with a user column (not one histogram)."""
    p = Path(path)
    kind = format or p.suffix.lower().lstrip(".")
    if kind == "json" and not _json_records(p):
        return False  # an object {category: count} or a list of counts: one histogram
    if kind == "parquet":
        return True
    import duckdb

    from ..io.read import shared_sql

    lit = sql.path(p)
    reader = f"read_json_auto({lit})" if kind == "json" else _csv(lit, delimiter)
    try:
        cols = shared_sql(f"SELECT * FROM {reader} LIMIT 0").columns
    except duckdb.Error:
        return False
    return user_column in cols


def _json_records(p: Path) -> bool:
    """Whether a JSON file is an array of objects (check-in rows), from its first bytes: a
    JSON check-in table was read as one histogram ("value for 0 must be a number")."""
    try:
        with open(p, "rb") as fh:
            head = fh.read(4096).decode("utf-8-sig", errors="replace").lstrip()
    except OSError:
        return False
    return head.startswith("[") and head[1:].lstrip().startswith("{")
