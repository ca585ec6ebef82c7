"""Contribution bounding: at most ``m`` records per user, sampled uniformly, inside DuckDB.

Why: a check-in file has many rows per person. A mechanism whose neighbouring inputs differ
in one record protects one visit, not a person: someone with 500 check-ins moves a
histogram by 500. Keeping at most ``m`` records per user (``m`` chosen publicly, never from
the data) bounds what one person can change to ``m`` records, so a mechanism that is
``epsilon / m``-DP for one record is ``epsilon``-DP for everything one user contributed
(group privacy over ``m`` records). The Release then states ``protects="user"``.

Which records are kept: for each user, the ``m`` rows with the smallest keyed hash of the
row's *own content* (a random 64-bit key drawn from OS entropy, or from ``seed`` in
experiments). That is a uniform sample of the user's rows, and it depends on nothing but
that user's rows and the key: adding or removing another user's records (or reordering the
file) never changes which of this user's rows are kept, which the sensitivity argument
needs (a rule based on row positions would not have that property). Identical rows of one
user are interchangeable, so ties among them do not matter.

Examples
--------
>>> import pyarrow as pa
>>> t = pa.table({"user": ["a"] * 5 + ["b"], "v": [1, 2, 3, 4, 5, 6]})
>>> from veil.random import make_rng
>>> out = bound_contributions(t, user="user", max_records=2, rng=make_rng(seed=1))
>>> sorted(out.column("user").to_pylist())
['a', 'a', 'b']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from .io import sql
from .random import make_rng
from .validation import check_int

__all__ = ["bounded_sql", "bound_contributions", "bounding_key"]


def bounding_key(rng: np.random.Generator | None = None) -> int:
    """A 63-bit key for the per-row hash (from ``rng``, else OS entropy)."""
    return int(make_rng(rng).integers(0, 2**63 - 1))


def bounded_sql(source: str, *, user: str, columns: Sequence[str], max_records: int,
                key: int) -> str:
    """SQL selecting at most ``max_records`` rows per ``user`` of ``source``, uniformly.

    Parameters
    ----------
    source : str
        A SQL relation (table name, ``read_parquet(...)`` call, or parenthesized query).
    user : str
        The user column.
    columns : sequence of str
        The row's columns that enter the hash (the ones the release reads).
    max_records : int
        The public bound ``m`` (>= 1).
    key : int
        From :func:`bounding_key`.
    """
    m = check_int(max_records, "max_records", minimum=1)
    k = check_int(key, "key", minimum=0)
    u = sql.ident(user)
    # hash() of one string that starts with the key: DuckDB's multi-argument hash() combines
    # per-argument hashes in a way that makes the order far from uniform over keys
    text = ", ".join(f"CAST({sql.ident(c)} AS VARCHAR)" for c in dict.fromkeys([user, *columns]))
    return (f"SELECT * EXCLUDE (__veil_rank) FROM (SELECT *, row_number() OVER (PARTITION BY "
            f"{u} ORDER BY hash(concat_ws(chr(31), {sql.literal(k)}, {text}))) AS __veil_rank "
            f"FROM {source}) WHERE __veil_rank <= {m}")


def bound_contributions(table: pa.Table, *, user: str, max_records: int,
                        columns: Sequence[str] | None = None,
                        rng: np.random.Generator | None = None) -> pa.Table:
    """Keep at most ``max_records`` rows per user of an Arrow table (sampled in DuckDB).

    Parameters
    ----------
    table : pyarrow.Table
    user : str
        The user column.
    max_records : int
        The public bound ``m``.
    columns : sequence of str, optional
        Columns hashed to pick the rows (default: all).
    rng : numpy.random.Generator, optional
        Draws the hash key (default: OS entropy).

    Returns
    -------
    pyarrow.Table
        The kept rows (same columns, order unspecified).
    """
    from .identity import shared_connection

    cols = list(columns) if columns is not None else list(table.column_names)
    q = bounded_sql("__veil_bound", user=user, columns=cols, max_records=max_records,
                    key=bounding_key(rng))
    with shared_connection() as con:
        con.register("__veil_bound", table)
        try:
            return con.sql(q).to_arrow_table()
        finally:
            con.unregister("__veil_bound")
