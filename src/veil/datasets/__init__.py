"""Datasets: synthetic generators for the embedded demo, and the path to the shared real data.

Real data are read in place from ``../shared/data`` (relative to the project
root) or ``$VEIL_SHARED/data``; they are never copied into the project.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import DataError

__all__ = ["shared_data_path"]

_PROJECT_ROOT = Path(__file__).resolve().parents[3]


def shared_data_path(*parts: str) -> Path:
    """Path to a file or folder of the shared real data, failing clearly if absent.

    Looks in ``$VEIL_SHARED/data`` when that variable is set, else in
    ``../shared/data`` beside the project root (and beside the current
    directory as a fallback for installed copies).

    Examples
    --------
    >>> shared_data_path("adult", "adult.data").name  # doctest: +SKIP
    'adult.data'
    """
    env = os.environ.get("VEIL_SHARED")
    if env:
        candidates = [Path(env) / "data"]
    else:
        candidates = [_PROJECT_ROOT.parent / "shared" / "data",
                      Path.cwd().parent / "shared" / "data"]
    for base in candidates:
        if base.is_dir():
            p = base.joinpath(*parts)
            if not p.exists():
                raise DataError(f"shared data {p} not found (see ../shared/data/README.md)",
                                path=str(p))
            return p
    where = " or ".join(str(c) for c in candidates)
    raise DataError(f"the shared data folder is missing: looked in {where}; set VEIL_SHARED "
                    "to the folder that holds data/")
