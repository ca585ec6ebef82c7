"""A regular lat/lon grid projected to metres (equirectangular local projection).

Everything in :mod:`veil.geo.temporal` only uses the small interface below
(``n_cells``, ``centers_m``, ``cell_of``, ``to_metres``, ``to_latlon``, ``cell_size_m``,
``to_dict``/``from_dict``, ``__eq__``).

Coordinates are ``(lat, lon)`` in that order everywhere, as in :mod:`veil.geo`
(``cell_of(lat, lon)``, ``to_metres(lat, lon)``, ``to_latlon(xy) -> [lat, lon]``). Before
veil 0.3 these methods took ``(lon, lat)``; a call that passes longitudes first is refused
with a clear error when it can be told apart (a "latitude" beyond 90 degrees, or no point
inside the grid while the swapped points are), and :meth:`TemporalGrid.to_lonlat` remains
as a deprecated alias of the old order.

Cells are numbered row-major from the south-west corner: ``cell = row * nx + col``
with ``col`` the longitude index (west to east) and ``row`` the latitude index
(south to north). Planar coordinates are ``(x east, y north)`` metres.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...distances import EARTH_RADIUS_M
from ...errors import ParameterError
from ...validation import check_int

__all__ = ["TemporalGrid", "BEIJING_4TH_RING", "beijing_grid", "MAX_PARSED_CELLS"]

#: The most cells of a grid given as ``--grid`` (1000 x 1000): beyond, the per-cell arrays
#: of a model and of a release do not fit in memory (beijing:99999999 asked for 71 PiB).
MAX_PARSED_CELLS = 1_000_000

#: Beijing inside the 4th ring road (lat_min, lon_min, lat_max, lon_max), the
#: region of the PIM paper's GeoLife experiments.
BEIJING_4TH_RING = (39.831741, 116.273804, 39.988695, 116.467438)


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
    lat_min, lon_min, lat_max, lon_max : float
        The region (degrees). It must be public: never derive it from the private
        trajectories.
    nx, ny : int
        Number of columns (longitude) and rows (latitude), each >= 1.

    Examples
    --------
    >>> g = TemporalGrid(lat_min=39.0, lon_min=116.0, lat_max=39.1, lon_max=116.1, nx=10, ny=10)
    >>> int(g.cell_of([39.005], [116.005])[0]), g.n_cells
    (0, 100)
    """

    lat_min: float
    lon_min: float
    lat_max: float
    lon_max: float
    nx: int
    ny: int

    def __post_init__(self) -> None:
        for name in ("lat_min", "lon_min", "lat_max", "lon_max"):
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
        """(lat0, lon0): the projection centre (the box centre)."""
        return (0.5 * (self.lat_min + self.lat_max), 0.5 * (self.lon_min + self.lon_max))

    @property
    def _kx(self) -> float:
        return EARTH_RADIUS_M * math.cos(math.radians(self.origin[0])) * math.pi / 180.0

    @property
    def _ky(self) -> float:
        return EARTH_RADIUS_M * math.pi / 180.0

    def _latlon(self, lat: Any, lon: Any, what: str) -> tuple[np.ndarray, np.ndarray]:
        lat = np.asarray(lat, dtype=np.float64).ravel()
        lon = np.asarray(lon, dtype=np.float64).ravel()
        if lat.shape != lon.shape:
            raise ParameterError(f"TemporalGrid.{what}: lat has {lat.size} values, lon "
                                 f"{lon.size}")
        with np.errstate(invalid="ignore"):
            if np.nanmax(np.abs(lat), initial=0.0) > 90.0:
                raise ParameterError(
                    f"TemporalGrid.{what} takes (lat, lon) (since veil 0.3, as the rest of "
                    f"veil.geo); a latitude of {np.nanmax(np.abs(lat)):g} degrees means "
                    f"longitudes were passed first: call {what}(lat, lon)")
        return lat, lon

    def to_metres(self, lat: Any, lon: Any) -> np.ndarray:
        """Project ``(lat, lon)`` (degrees) to local metres ``[x east, y north]``, ``(n, 2)``."""
        lat, lon = self._latlon(lat, lon, "to_metres")
        lat0, lon0 = self.origin
        return np.column_stack(((lon - lon0) * self._kx, (lat - lat0) * self._ky))

    def to_latlon(self, xy: Any) -> np.ndarray:
        """Inverse of :meth:`to_metres`: ``(n, 2)`` metres to ``(n, 2)`` ``[lat, lon]``."""
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        lat0, lon0 = self.origin
        return np.column_stack((xy[:, 1] / self._ky + lat0, xy[:, 0] / self._kx + lon0))

    def to_lonlat(self, xy: Any) -> np.ndarray:
        """Deprecated: ``(n, 2)`` metres to ``[lon, lat]`` (use :meth:`to_latlon`)."""
        import warnings

        warnings.warn("TemporalGrid.to_lonlat is deprecated: veil uses (lat, lon) "
                      "everywhere; use to_latlon (columns [lat, lon])", DeprecationWarning,
                      stacklevel=2)
        return self.to_latlon(xy)[:, ::-1]

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
            c = self.to_metres(lat_g.ravel(), lon_g.ravel())
            c.setflags(write=False)
            object.__setattr__(self, "_centers_cache", c)
        return c

    @property
    def centers_latlon(self) -> np.ndarray:
        """Cell centres as ``[lat, lon]``, shape ``(n_cells, 2)``."""
        return self.to_latlon(self.centers_m)

    @property
    def centre_m(self) -> np.ndarray:
        """The grid's centre in metres (the public no-information guess)."""
        return np.zeros(2)

    def contains(self, lat: Any, lon: Any) -> np.ndarray:
        """Boolean mask of points inside the box (NaN is outside)."""
        lat = np.asarray(lat, dtype=np.float64)
        lon = np.asarray(lon, dtype=np.float64)
        return ((lon >= self.lon_min) & (lon <= self.lon_max)
                & (lat >= self.lat_min) & (lat <= self.lat_max))

    def cell_of(self, lat: Any, lon: Any) -> np.ndarray:
        """Cell index of each ``(lat, lon)`` point (int64); -1 outside the box or NaN.

        Raises ParameterError when the arguments are evidently in the old ``(lon, lat)``
        order: a latitude beyond 90 degrees, or no point inside the grid while the swapped
        points are.
        """
        lat, lon = self._latlon(lat, lon, "cell_of")
        inside = self.contains(lat, lon)
        if lat.size and not inside.any() and self.contains(lon, lat).any():
            raise ParameterError(
                "no point is inside the grid, but some are with latitude and longitude "
                "swapped: veil takes (lat, lon) everywhere since 0.3 (cell_of(lat, lon); "
                "--grid LAT_MIN,LON_MIN,LAT_MAX,LON_MAX,NX,NY, latitude first)")
        with np.errstate(invalid="ignore", over="ignore"):  # NaN and 1e308 -> outside
            col = np.floor((lon - self.lon_min) / (self.lon_max - self.lon_min) * self.nx)
            row = np.floor((lat - self.lat_min) / (self.lat_max - self.lat_min) * self.ny)
        col = np.clip(np.nan_to_num(col), 0, self.nx - 1).astype(np.int64)
        row = np.clip(np.nan_to_num(row), 0, self.ny - 1).astype(np.int64)
        return np.where(inside, row * self.nx + col, -1)

    # -- persistence ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"lat_min": self.lat_min, "lon_min": self.lon_min, "lat_max": self.lat_max,
                "lon_max": self.lon_max, "nx": self.nx, "ny": self.ny}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TemporalGrid":
        return cls(**{k: d[k] for k in ("lat_min", "lon_min", "lat_max", "lon_max", "nx", "ny")})

    @classmethod
    def parse(cls, spec: str) -> "TemporalGrid":
        """Parse ``"beijing"`` / ``"beijing:NX"`` or ``"lat_min,lon_min,lat_max,lon_max,nx,ny"``.

        Latitude first, as ``--region`` of ``veil location obfuscate``. A box that is only
        valid with longitudes first (the order before veil 0.3) is refused with a hint, and
        a grid of more than :data:`MAX_PARSED_CELLS` cells is refused before any allocation.
        """
        g = cls._parse(spec)
        if g.n_cells > MAX_PARSED_CELLS:
            raise ParameterError(f"--grid must have at most {MAX_PARSED_CELLS} cells (e.g. "
                                 f"beijing:1000), got {g.nx}x{g.ny} = {g.n_cells} in {spec!r}")
        return g

    @classmethod
    def _parse(cls, spec: str) -> "TemporalGrid":
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
            raise ParameterError(f"--grid must be 'beijing[:N]' or 'lat_min,lon_min,lat_max,"
                                 f"lon_max,nx,ny', got {spec!r}")
        try:
            v = [float(p) for p in parts[:4]]
            nx, ny = int(parts[4]), int(parts[5])
        except ValueError:
            raise ParameterError(f"--grid: could not parse {spec!r}") from None
        try:
            return cls(lat_min=v[0], lon_min=v[1], lat_max=v[2], lon_max=v[3], nx=nx, ny=ny)
        except ParameterError as exc:
            try:
                cls(lat_min=v[1], lon_min=v[0], lat_max=v[3], lon_max=v[2], nx=nx, ny=ny)
            except ParameterError:
                raise exc from None
            raise ParameterError(f"--grid is lat_min,lon_min,lat_max,lon_max,nx,ny (latitude "
                                 f"first since veil 0.3); {spec!r} is only valid with "
                                 f"longitudes first: swap them") from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TemporalGrid):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.to_dict().values()))


def beijing_grid(n: int = 50) -> TemporalGrid:
    """The ``n`` x ``n`` grid over Beijing's 4th ring used in the PIM paper (n = 50)."""
    lat_min, lon_min, lat_max, lon_max = BEIJING_4TH_RING
    return TemporalGrid(lat_min=lat_min, lon_min=lon_min, lat_max=lat_max, lon_max=lon_max,
                        nx=n, ny=n)
