"""A regular lon/lat grid projected to metres (equirectangular local projection).

.. note::
   This module is deliberately self-contained: ``veil.geo.geometry`` (LocalProjection,
   Grid) is being written in parallel. Everything else in :mod:`veil.geo.temporal`
   only uses the small interface below (``n_cells``, ``centers_m``, ``cell_of``,
   ``to_metres``, ``to_lonlat``, ``cell_size_m``, ``to_dict``/``from_dict``,
   ``__eq__``), so switching to the shared geometry later is a local change.

Cells are numbered row-major from the south-west corner: ``cell = row * nx + col``
with ``col`` the longitude index (west to east) and ``row`` the latitude index
(south to north).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...distances import EARTH_RADIUS_M
from ...errors import ParameterError
from ...validation import check_int

__all__ = ["TemporalGrid", "BEIJING_4TH_RING", "beijing_grid"]

#: Beijing inside the 4th ring road (lon_min, lat_min, lon_max, lat_max), the
#: region of the PIM paper's GeoLife experiments.
BEIJING_4TH_RING = (116.273804, 39.831741, 116.467438, 39.988695)


def _finite(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ParameterError(f"{name} must be finite, got {value!r}")
    return v


@dataclass(frozen=True, kw_only=True)
class TemporalGrid:
    """A public ``nx`` x ``ny`` grid over a lon/lat box, with cell centres in metres.

    The projection is equirectangular about the box centre
    (``x = R cos(lat0) (lon - lon0)``, ``y = R (lat - lat0)`` in radians), accurate to
    well under 1 % over a city-sized box.

    Parameters
    ----------
    lon_min, lat_min, lon_max, lat_max : float
        The region (degrees). It must be public: never derive it from the private
        trajectories.
    nx, ny : int
        Number of columns (longitude) and rows (latitude), each >= 1.

    Examples
    --------
    >>> g = TemporalGrid(lon_min=116.0, lat_min=39.0, lon_max=116.1, lat_max=39.1, nx=10, ny=10)
    >>> int(g.cell_of([116.005], [39.005])[0]), g.n_cells
    (0, 100)
    """

    lon_min: float
    lat_min: float
    lon_max: float
    lat_max: float
    nx: int
    ny: int

    def __post_init__(self) -> None:
        for name in ("lon_min", "lat_min", "lon_max", "lat_max"):
            object.__setattr__(self, name, _finite(getattr(self, name), name))
        object.__setattr__(self, "nx", check_int(self.nx, "nx", minimum=1))
        object.__setattr__(self, "ny", check_int(self.ny, "ny", minimum=1))
        if not (-180 <= self.lon_min < self.lon_max <= 180):
            raise ParameterError(f"need -180 <= lon_min < lon_max <= 180, got lon_min="
                                 f"{self.lon_min}, lon_max={self.lon_max}")
        if not (-85 <= self.lat_min < self.lat_max <= 85):
            raise ParameterError(f"need -85 <= lat_min < lat_max <= 85, got lat_min="
                                 f"{self.lat_min}, lat_max={self.lat_max}")

    # -- projection ---------------------------------------------------------------
    @property
    def origin(self) -> tuple[float, float]:
        """(lon0, lat0): the projection centre (the box centre)."""
        return (0.5 * (self.lon_min + self.lon_max), 0.5 * (self.lat_min + self.lat_max))

    @property
    def _kx(self) -> float:
        return EARTH_RADIUS_M * math.cos(math.radians(self.origin[1])) * math.pi / 180.0

    @property
    def _ky(self) -> float:
        return EARTH_RADIUS_M * math.pi / 180.0

    def to_metres(self, lon: Any, lat: Any) -> np.ndarray:
        """Project lon/lat (degrees) to local metres, shape ``(n, 2)``."""
        lon = np.asarray(lon, dtype=np.float64).ravel()
        lat = np.asarray(lat, dtype=np.float64).ravel()
        lon0, lat0 = self.origin
        return np.column_stack(((lon - lon0) * self._kx, (lat - lat0) * self._ky))

    def to_lonlat(self, xy: Any) -> np.ndarray:
        """Inverse of :meth:`to_metres`: ``(n, 2)`` metres to ``(n, 2)`` (lon, lat)."""
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        lon0, lat0 = self.origin
        return np.column_stack((xy[:, 0] / self._kx + lon0, xy[:, 1] / self._ky + lat0))

    # -- cells --------------------------------------------------------------------
    @property
    def n_cells(self) -> int:
        return self.nx * self.ny

    @property
    def cell_size_m(self) -> tuple[float, float]:
        """(width, height) of one cell in metres."""
        return ((self.lon_max - self.lon_min) / self.nx * self._kx,
                (self.lat_max - self.lat_min) / self.ny * self._ky)

    @property
    def centers_m(self) -> np.ndarray:
        """Cell centres in metres, shape ``(n_cells, 2)``, in cell order."""
        c = getattr(self, "_centers_cache", None)
        if c is None:
            col = np.arange(self.nx) + 0.5
            row = np.arange(self.ny) + 0.5
            lon = self.lon_min + col * (self.lon_max - self.lon_min) / self.nx
            lat = self.lat_min + row * (self.lat_max - self.lat_min) / self.ny
            lon_g, lat_g = np.meshgrid(lon, lat)  # rows = latitude
            c = self.to_metres(lon_g.ravel(), lat_g.ravel())
            c.setflags(write=False)
            object.__setattr__(self, "_centers_cache", c)
        return c

    def contains(self, lon: Any, lat: Any) -> np.ndarray:
        """Boolean mask of points inside the box (NaN is outside)."""
        lon = np.asarray(lon, dtype=np.float64)
        lat = np.asarray(lat, dtype=np.float64)
        return ((lon >= self.lon_min) & (lon <= self.lon_max)
                & (lat >= self.lat_min) & (lat <= self.lat_max))

    def cell_of(self, lon: Any, lat: Any) -> np.ndarray:
        """Cell index of each point (int64); -1 for points outside the box or NaN."""
        lon = np.asarray(lon, dtype=np.float64).ravel()
        lat = np.asarray(lat, dtype=np.float64).ravel()
        inside = self.contains(lon, lat)
        with np.errstate(invalid="ignore"):
            col = np.floor((lon - self.lon_min) / (self.lon_max - self.lon_min) * self.nx)
            row = np.floor((lat - self.lat_min) / (self.lat_max - self.lat_min) * self.ny)
        col = np.clip(np.nan_to_num(col), 0, self.nx - 1).astype(np.int64)
        row = np.clip(np.nan_to_num(row), 0, self.ny - 1).astype(np.int64)
        return np.where(inside, row * self.nx + col, -1)

    # -- persistence ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"lon_min": self.lon_min, "lat_min": self.lat_min, "lon_max": self.lon_max,
                "lat_max": self.lat_max, "nx": self.nx, "ny": self.ny}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TemporalGrid":
        return cls(**{k: d[k] for k in ("lon_min", "lat_min", "lon_max", "lat_max", "nx", "ny")})

    @classmethod
    def parse(cls, spec: str) -> "TemporalGrid":
        """Parse ``"beijing"`` / ``"beijing:NX"`` or ``"lon_min,lat_min,lon_max,lat_max,nx,ny"``."""
        s = str(spec).strip()
        if s.lower().startswith("beijing"):
            parts = s.split(":")
            n = 50 if len(parts) == 1 else parts[1]
            try:
                return beijing_grid(int(n))
            except ValueError:
                raise ParameterError(f"--grid: bad size in {spec!r}; use beijing:50") from None
        parts = s.split(",")
        if len(parts) != 6:
            raise ParameterError(f"--grid must be 'beijing[:N]' or 'lon_min,lat_min,lon_max,"
                                 f"lat_max,nx,ny', got {spec!r}")
        try:
            return cls(lon_min=float(parts[0]), lat_min=float(parts[1]),
                       lon_max=float(parts[2]), lat_max=float(parts[3]),
                       nx=int(parts[4]), ny=int(parts[5]))
        except ValueError:
            raise ParameterError(f"--grid: could not parse {spec!r}") from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TemporalGrid):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.to_dict().values()))


def beijing_grid(n: int = 50) -> TemporalGrid:
    """The ``n`` x ``n`` grid over Beijing's 4th ring used in the PIM paper (n = 50)."""
    lon_min, lat_min, lon_max, lat_max = BEIJING_4TH_RING
    return TemporalGrid(lon_min=lon_min, lat_min=lat_min, lon_max=lon_max, lat_max=lat_max,
                        nx=n, ny=n)
