"""Loader for the UCI Adult table in the shared data (read in place, never copied)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["ADULT_COLUMNS", "ADULT_QI", "load_adult"]

ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                 "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                 "hours-per-week", "native-country", "income"]
ADULT_QI = ["age", "education", "marital-status", "occupation", "race", "sex", "native-country"]


def load_adult(path: str | Path | None = None):
    """The Adult training table without rows that contain ``?`` (30,162 rows), as pandas.

    ``path`` defaults to ``adult/adult.data`` of the shared data
    (:func:`veil.datasets.shared_data_path`).
    """
    import duckdb

    from ..datasets import shared_data_path

    p = Path(path) if path is not None else shared_data_path("adult", "adult.data")
    names = ", ".join("'" + c + "'" for c in ADULT_COLUMNS)
    lit = str(p).replace("'", "''")
    con = duckdb.connect()
    try:
        cols = ", ".join(f'trim(CAST("{c}" AS VARCHAR)) AS "{c}"' if c not in
                         ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                          "hours-per-week") else f'"{c}"' for c in ADULT_COLUMNS)
        where = " AND ".join(f'trim(CAST("{c}" AS VARCHAR)) <> \'?\'' for c in ADULT_COLUMNS)
        df = con.sql(f"SELECT {cols} FROM read_csv('{lit}', header=false, names=[{names}], "
                     f"all_varchar=false) WHERE {where}").df()
    finally:
        con.close()
    return df
