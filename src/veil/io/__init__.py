"""Data input and output for veil: CSV, Parquet and JSON through DuckDB.

Readers check the schema and raise :class:`veil.errors.DataError` naming the
file, the 1-based data row and the column; writers are atomic (temporary file
in the same folder, fsync, rename), so a failure never leaves a partial output.

Examples
--------
>>> import tempfile, pathlib
>>> from veil.io import read_counts, write_table
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = write_table({"bin": [0, 1, 2], "count": [4, 0, 9]}, d / "h.parquet")
>>> read_counts(d / "h.parquet", column="count").tolist()
[4, 0, 9]
"""

from __future__ import annotations

from .read import (FORMATS, KINDS, detect_format, iter_column, read_checkins, read_columns,
                   read_counts, read_points, read_table)
from .write import (OutputPolicy, atomic_path, atomic_paths, check_output_target, output_policy,
                    sidecar_path, to_arrow, write_json,
                    write_release, write_table)

__all__ = [
    "FORMATS",
    "KINDS",
    "detect_format",
    "read_table",
    "iter_column",
    "read_columns",
    "read_points",
    "read_counts",
    "read_checkins",
    "OutputPolicy",
    "output_policy",
    "check_output_target",
    "atomic_path",
    "atomic_paths",
    "sidecar_path",
    "to_arrow",
    "write_table",
    "write_json",
    "write_release",
]
