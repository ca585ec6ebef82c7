"""GeoLife ``.plt`` trajectories (Zheng et al.): reading, mapping to grid cells, resampling.

A ``.plt`` file has 6 header lines, then ``lat,lon,0,altitude_ft,days,date,time`` where
``days`` counts (fractional) days since 1899-12-30. One file is one trajectory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from ...errors import DataError
from .grid import TemporalGrid

__all__ = ["GeoLifeTrajectory", "read_plt", "iter_geolife", "load_geolife", "to_cells",
           "downsample"]

_DAY_S = 86400.0


@dataclass
class GeoLifeTrajectory:
    """One GeoLife file: user id, file name, time (s), latitude, longitude (degrees)."""

    user: str
    name: str
    t: np.ndarray
    lat: np.ndarray
    lon: np.ndarray

    def __len__(self) -> int:
        return self.t.size


def read_plt(path: str | Path) -> GeoLifeTrajectory:
    """Read one ``.plt`` file (DataError with the file and row on malformed content)."""
    import pandas as pd

    path = Path(path)
    try:
        df = pd.read_csv(path, skiprows=6, header=None, usecols=[0, 1, 4],
                         names=["lat", "lon", "days"], dtype=np.float64)
    except (ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"cannot parse this GeoLife file: {exc}", path=str(path)) from None
    user = path.parent.parent.name if path.parent.name.lower() == "trajectory" else ""
    return GeoLifeTrajectory(user=user, name=path.stem, t=df["days"].to_numpy() * _DAY_S,
                             lat=df["lat"].to_numpy(), lon=df["lon"].to_numpy())


def iter_geolife(folder: str | Path) -> Iterator[GeoLifeTrajectory]:
    """All ``.plt`` files under ``folder`` (recursively), sorted by user then file name."""
    folder = Path(folder)
    if not folder.exists():
        raise DataError(f"GeoLife folder {folder} does not exist", path=str(folder))
    files = sorted(folder.rglob("*.plt"))
    if not files:
        raise DataError(f"no .plt files under {folder}", path=str(folder))
    for f in files:
        yield read_plt(f)


def load_geolife(folder: str | Path) -> list[GeoLifeTrajectory]:
    """Read every trajectory under ``folder`` (e.g. ``shared_data_path("geolife", ...)``)."""
    return list(iter_geolife(folder))


def downsample(t: np.ndarray, step_s: float) -> np.ndarray:
    """Indices keeping the first fix of every ``step_s``-second window (t sorted)."""
    if step_s <= 0:
        return np.arange(t.size)
    b = np.floor((t - t[0]) / step_s).astype(np.int64)
    keep = np.ones(t.size, dtype=bool)
    keep[1:] = b[1:] != b[:-1]
    return np.flatnonzero(keep)


def to_cells(traj: GeoLifeTrajectory, grid: TemporalGrid, *, step_s: float = 0.0) -> np.ndarray:
    """Cells of a trajectory's fixes (after optional downsampling); -1 outside the grid."""
    idx = downsample(traj.t, step_s)
    return grid.cell_of(traj.lat[idx], traj.lon[idx])
