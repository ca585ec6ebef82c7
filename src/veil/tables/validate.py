"""Validation ``R |= Sigma`` by one generated DuckDB SQL query.

Every constraint becomes one ``count(*) FILTER (WHERE ...)`` aggregate of a
single ``SELECT`` over the table, so the table is scanned once for all
constraints. ``count(*) FILTER`` returns 0 (not NULL, as ``count_if`` does on
an empty input) and a suppressed cell never equals a value: the suppression
marker is rejected as a constraint value, and a NULL cell fails ``=``.

The query runs over the *text* of the cells (:func:`veil.tables.data.cell_text`,
the semantics the parser and the anonymizers use): the referenced columns are
converted to text in Python first, never by ``CAST(... AS VARCHAR)`` (which
writes ``39.0`` and ``true``). DuckDB folds the case of identifiers, so when
two referenced columns differ only in case (``Sex`` and ``sex``) the query
names them by position (``"c0"``, ``"c1"`` ...) instead of by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import ParameterError
from ..io import sql
from ..io.read import private_spill
from .constraints import DiversityConstraint

__all__ = ["validation_sql", "sql_columns", "ConstraintStatus", "check_constraints",
           "count_targets"]

SUPPRESSED = "*"


_ident = sql.ident
_literal = sql.literal


def validation_sql(constraints: Sequence[DiversityConstraint], *, table_name: str = "t",
                   marker: str = SUPPRESSED, columns: dict[str, str] | None = None) -> str:
    """The one SQL query that counts the target rows of every constraint.

    ``columns`` maps an attribute to the SQL column that holds its text
    (default: the attribute's own name).

    Examples
    --------
    >>> from veil.tables import parse_constraints
    >>> print(validation_sql(parse_constraints("sex=F: 2..4\\nsex=F, race=W: 0..5")))
    SELECT count(*) AS n_rows,
      count(*) FILTER (WHERE "sex" = 'F') AS c0,
      count(*) FILTER (WHERE "race" = 'W' AND "sex" = 'F') AS c1
    FROM "t"
    """
    columns = columns or {}
    parts = ["count(*) AS n_rows"]
    for i, c in enumerate(constraints):
        conds = []
        for attr, value in c.target:
            if value == marker:
                raise ParameterError(
                    f"constraint {c.to_text()!r} targets the suppression marker {marker!r}; "
                    "a suppressed cell never matches a constraint")
            conds.append(f"{_ident(columns.get(attr, attr))} = {_literal(value)}")
        parts.append(f"count(*) FILTER (WHERE {' AND '.join(conds)}) AS c{i}")
    return "SELECT " + ",\n  ".join(parts) + f"\nFROM {_ident(table_name)}"


def sql_columns(constraints: Sequence[DiversityConstraint]) -> dict[str, str]:
    """SQL column per attribute: its name, or ``c<i>`` when names collide without case."""
    attrs = sorted({a for c in constraints for a in c.attributes})
    folded = [a.casefold() for a in attrs]
    if len(set(folded)) == len(folded):
        return {a: a for a in attrs}
    return {a: f"c{i}" for i, a in enumerate(attrs)}


@dataclass(frozen=True)
class ConstraintStatus:
    """A constraint, its count in a table, and whether it holds."""

    constraint: DiversityConstraint
    count: int

    @property
    def satisfied(self) -> bool:
        return self.constraint.holds(self.count)

    def to_dict(self) -> dict[str, Any]:
        d = self.constraint.to_dict()
        d.update(count=self.count, satisfied=self.satisfied)
        return d


def count_targets(table: Any, constraints: Sequence[DiversityConstraint], *,
                  marker: str = SUPPRESSED) -> list[int]:
    """Counts of each constraint's target rows in ``table`` (one DuckDB query over cell text).

    ``table`` is a pandas DataFrame, a pyarrow Table, a mapping of columns, a
    :class:`~veil.tables.textio.TextTable`, or a path to a CSV/Parquet file
    (read as text). A missing cell matches no value.
    """
    import duckdb
    import pyarrow as pa

    from .data import as_columns, cell_text, read_table

    if isinstance(table, str) or hasattr(table, "__fspath__"):
        table = read_table(table)
    cols = as_columns(table)
    for c in constraints:
        for a in c.attributes:
            if a not in cols:
                raise ParameterError(f"constraint {c.to_text()!r}: unknown attribute {a!r} "
                                     f"(columns: {', '.join(cols)})")
    if not constraints:
        return []
    names = sql_columns(constraints)
    text = pa.table({names[a]: pa.array(cell_text(cols[a], name=a, missing="keep").tolist(),
                                        type=pa.string()) for a in names})
    con = private_spill(duckdb.connect())
    try:
        con.register("t", text)
        row = con.sql(validation_sql(constraints, table_name="t", marker=marker,
                                     columns=names)).fetchall()[0]
    finally:
        con.close()
    return [int(x) for x in row[1:]]


def check_constraints(table: Any, constraints: Sequence[DiversityConstraint], *,
                      marker: str = SUPPRESSED) -> list[ConstraintStatus]:
    """Validate ``table |= constraint`` for every constraint with one SQL query.

    Examples
    --------
    >>> import pandas as pd
    >>> from veil.tables import parse_constraints
    >>> df = pd.DataFrame({"sex": ["F", "F", "M", "*"], "race": ["W", "B", "W", "W"]})
    >>> [s.count for s in check_constraints(df, parse_constraints("sex=F: 2..4\\nrace=W: 3..3"))]
    [2, 3]
    """
    counts = count_targets(table, constraints, marker=marker)
    return [ConstraintStatus(c, n) for c, n in zip(constraints, counts)]
