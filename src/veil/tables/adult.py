"""Loader for the UCI Adult table in the shared data (read in place, never copied)."""

from __future__ import annotations

from pathlib import Path

from ..io import sql
from ..io.read import private_spill

__all__ = ["ADULT_COLUMNS", "ADULT_QI", "ADULT_QI8", "load_adult"]

ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                 "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                 "hours-per-week", "native-country", "income"]
ADULT_QI = ["age", "education", "marital-status", "occupation", "race", "sex", "native-country"]
#: The 8 quasi-identifiers of the ARX examples (with workclass), used for generalization.
ADULT_QI8 = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex",
             "native-country"]


def load_adult(path: str | Path | None = None):
    """The Adult training table without rows that contain ``?`` (30,162 rows), as pandas.

    ``path`` defaults to ``adult/adult.data`` of the shared data
    (:func:`veil.datasets.shared_data_path`).
    """
    import duckdb

    from ..datasets import shared_data_path

    p = Path(path) if path is not None else shared_data_path("adult", "adult.data")
    names = ", ".join(sql.literal(c) for c in ADULT_COLUMNS)
    con = private_spill(duckdb.connect())
    try:
        q = sql.ident
        cols = ", ".join(f'trim(CAST({q(c)} AS VARCHAR)) AS {q(c)}' if c not in
                         ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                          "hours-per-week") else q(c) for c in ADULT_COLUMNS)
        where = " AND ".join(f"trim(CAST({q(c)} AS VARCHAR)) <> '?'" for c in ADULT_COLUMNS)
        df = con.sql(f"SELECT {cols} FROM read_csv({sql.path(p)}, header=false, names=[{names}], "
                     f"all_varchar=false) WHERE {where}").df()
    finally:
        con.close()
    return df
