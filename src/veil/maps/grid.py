"""The public grid of a map: a bounding box in degrees and a number of rows and columns.

A map counts points in the cells of a regular latitude/longitude grid. The grid (its box and its
resolution) is a *public* parameter: it is published with the map, so it must be fixed before
looking at the data -- given by the user, taken from a named public region (:data:`REGIONS`), or
(only with an explicit opt-in that raises a :class:`veil.errors.PrivacyWarning`) computed from
the data's own extent, which is not private (the extreme points can reveal individuals).

Conventions: a box is ``(south, west, north, east)`` in degrees (``LAT_MIN,LON_MIN,LAT_MAX,
LON_MAX`` on the command line, as elsewhere in veil). Row 0 is the southernmost row and column 0
the westernmost column; cell ``(i, j)`` covers ``[south + i dlat, south + (i+1) dlat) x [west + j
dlon, west + (j+1) dlon)``, and the north and east edges belong to the last row and column.
Boxes that cross the antimeridian are not supported (split the map in two).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..distances import EARTH_RADIUS_M
from ..errors import ParameterError, PrivacyWarning
from ..validation import check_int, check_positive

__all__ = ["MapGrid", "REGIONS", "region_bbox", "parse_bbox", "parse_shape", "MAX_CELLS",
           "data_extent_warning"]

#: Largest number of cells of a map grid (4096 x 4096): the mechanisms hold a few arrays of
#: this size in memory.
MAX_CELLS = 4096 * 4096

_M_PER_DEG = math.pi * EARTH_RADIUS_M / 180.0


def _port_veil_bbox() -> tuple[float, float, float, float]:
    """The box of veil's fictional demo city (``veil.datasets.synthetic.synthetic_city``)."""
    lat0, lon0, width_km, height_km = 44.0, -32.0, 10.0, 8.0  # the generator's defaults
    half_lat = height_km * 500.0 / _M_PER_DEG
    half_lon = width_km * 500.0 / (_M_PER_DEG * math.cos(math.radians(lat0)))
    return (lat0 - half_lat, lon0 - half_lon, lat0 + half_lat, lon0 + half_lon)


#: Named public regions: ``name -> ((south, west, north, east), description)``. These are
#: public, approximate extents (never computed from anyone's data).
REGIONS: dict[str, tuple[tuple[float, float, float, float], str]] = {
    "world": ((-90.0, -180.0, 90.0, 180.0), "the whole globe"),
    "conus": ((24.396308, -124.848974, 49.384358, -66.885444),
              "the contiguous United States (commonly cited extent)"),
    "nyc": ((40.4774, -74.2591, 40.9176, -73.7004),
            "New York City, the five boroughs (commonly cited extent)"),
    "manhattan": ((40.70, -74.02, 40.82, -73.93), "a box over Manhattan"),
    "beijing-4th-ring": ((39.831741, 116.273804, 39.988695, 116.467438),
                         "Beijing inside the 4th ring road (the GeoLife PIM setup)"),
    "port-veil": (_port_veil_bbox(), "Port Veil, veil's fictional demo city (44 N, 32 W)"),
}


def region_bbox(name: str) -> tuple[float, float, float, float]:
    """The box of a named public region (see :data:`REGIONS`).

    Examples
    --------
    >>> region_bbox("manhattan")
    (40.7, -74.02, 40.82, -73.93)
    """
    key = str(name).strip().lower()
    if key not in REGIONS:
        import difflib

        near = difflib.get_close_matches(key, list(REGIONS), n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise ParameterError(f"unknown region {name!r}{hint} (known: {', '.join(REGIONS)}); or "
                             "give a public box as LAT_MIN,LON_MIN,LAT_MAX,LON_MAX")
    return REGIONS[key][0]


def _check_box(south: Any, west: Any, north: Any, east: Any, name: str) -> tuple[float, ...]:
    vals = []
    for label, v in (("south", south), ("west", west), ("north", north), ("east", east)):
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            raise ParameterError(f"{name}: {label} must be a number, got {v!r}")
        f = float(v)
        if not math.isfinite(f):
            raise ParameterError(f"{name}: {label} must be finite, got {f!r}")
        vals.append(f)
    s, w, n, e = vals
    for label, v in (("south", s), ("north", n)):
        if not -90.0 <= v <= 90.0:
            raise ParameterError(f"{name}: {label} latitude {v!r} is outside [-90, 90] (the box "
                                 "is LAT_MIN,LON_MIN,LAT_MAX,LON_MAX; are lat and lon swapped?)")
    for label, v in (("west", w), ("east", e)):
        if not -180.0 <= v <= 180.0:
            raise ParameterError(f"{name}: {label} longitude {v!r} is outside [-180, 180]")
    if not n > s:
        raise ParameterError(f"{name}: need LAT_MAX > LAT_MIN, got {s!r}..{n!r}")
    if not e > w:
        raise ParameterError(f"{name}: need LON_MAX > LON_MIN, got {w!r}..{e!r} (boxes across "
                             "the antimeridian are not supported: publish two maps)")
    return s, w, n, e


def parse_bbox(text: str, name: str = "--bbox") -> tuple[float, float, float, float]:
    """``'LAT_MIN,LON_MIN,LAT_MAX,LON_MAX'`` -> a checked ``(south, west, north, east)``.

    Examples
    --------
    >>> parse_bbox("39.8,116.2,40.0,116.5")
    (39.8, 116.2, 40.0, 116.5)
    """
    parts = str(text).split(",")
    if len(parts) != 4:
        raise ParameterError(f"{name}: expected LAT_MIN,LON_MIN,LAT_MAX,LON_MAX (4 numbers), "
                             f"got {text!r}")
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        raise ParameterError(f"{name}: not numbers: {text!r}") from None
    return _check_box(*vals, name=name)


def parse_shape(text: str, name: str = "--grid") -> tuple[int, int]:
    """``'ROWSxCOLS'`` (or one number for a square grid) -> ``(rows, cols)``.

    Examples
    --------
    >>> parse_shape("256x512"), parse_shape("128")
    ((256, 512), (128, 128))
    """
    s = str(text).strip().lower()
    parts = s.split("x") if "x" in s else [s, s]
    if len(parts) != 2:
        raise ParameterError(f"{name}: expected ROWSxCOLS such as 256x256, got {text!r}")
    try:
        rows, cols = (int(p) for p in parts)
    except ValueError:
        raise ParameterError(f"{name}: expected ROWSxCOLS such as 256x256, got {text!r}") from None
    if rows < 1 or cols < 1:
        raise ParameterError(f"{name}: rows and columns must be >= 1, got {text!r}")
    return rows, cols


def data_extent_warning(what: str = "the bounding box") -> None:
    """Raise the :class:`PrivacyWarning` of an opted-in box taken from the data's extent."""
    warnings.warn(f"{what} is taken from the private data's own extent (minimum and maximum "
                  "latitude and longitude): this is NOT differentially private and can reveal "
                  "the most extreme points; use a public box or region instead",
                  PrivacyWarning, stacklevel=3)


@dataclass(frozen=True)
class MapGrid:
    """A public ``rows x cols`` grid of latitude/longitude cells over a box.

    Parameters
    ----------
    south, west, north, east : float
        The box in degrees (public; see the module docstring).
    rows, cols : int
        Number of cells from south to north and from west to east (at most
        :data:`MAX_CELLS` cells in total).

    Examples
    --------
    >>> g = MapGrid(39.8, 116.2, 40.0, 116.6, rows=2, cols=4)
    >>> g.shape, [round(d, 9) for d in g.cell_deg]
    ((2, 4), [0.1, 0.1])
    >>> g.cell_of([39.85, 40.0, 41.0], [116.25, 116.6, 116.3]).tolist()
    [[0, 0], [1, 3], [-1, -1]]
    >>> MapGrid.from_dict(g.to_dict()) == g
    True
    """

    south: float
    west: float
    north: float
    east: float
    rows: int
    cols: int

    def __post_init__(self) -> None:
        s, w, n, e = _check_box(self.south, self.west, self.north, self.east, "grid")
        for k, v in (("south", s), ("west", w), ("north", n), ("east", e)):
            object.__setattr__(self, k, v)
        rows = check_int(self.rows, "rows", minimum=1)
        cols = check_int(self.cols, "cols", minimum=1)
        if rows * cols > MAX_CELLS:
            raise ParameterError(f"grid {rows}x{cols} has {rows * cols:,} cells, more than the "
                                 f"maximum {MAX_CELLS:,} (4096 x 4096): use a coarser grid")
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "cols", cols)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_region(cls, name: str, rows: int, cols: int) -> "MapGrid":
        """A grid over a named public region (see :data:`REGIONS`)."""
        return cls(*region_bbox(name), rows=rows, cols=cols)

    @classmethod
    def from_cell_size(cls, bbox, cell_m: float) -> "MapGrid":
        """About square cells of side ``cell_m`` metres over the box (the box is kept; the number
        of rows and columns is rounded up from the box's size at its middle latitude).

        Examples
        --------
        >>> MapGrid.from_cell_size((40.70, -74.02, 40.82, -73.93), 500).shape
        (27, 16)
        """
        s, w, n, e = _check_box(*bbox, name="bbox")
        cell_m = check_positive(cell_m, "cell size (metres)")
        height = (n - s) * _M_PER_DEG
        width = (e - w) * _M_PER_DEG * math.cos(math.radians((s + n) / 2))
        rows = max(1, math.ceil(height / cell_m - 1e-9))
        cols = max(1, math.ceil(width / cell_m - 1e-9))
        return cls(s, w, n, e, rows=rows, cols=cols)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MapGrid":
        """Inverse of :meth:`to_dict` (e.g. from a map's sidecar)."""
        try:
            s, w, n, e = d["bbox"]
            return cls(s, w, n, e, rows=d["rows"], cols=d["cols"])
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, ParameterError):
                raise
            raise ParameterError(f"not a map grid description: {d!r}") from None

    # ------------------------------------------------------------------ properties
    @property
    def bbox(self) -> tuple[float, float, float, float]:
        """``(south, west, north, east)``."""
        return (self.south, self.west, self.north, self.east)

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, cols)``."""
        return (self.rows, self.cols)

    @property
    def n_cells(self) -> int:
        return self.rows * self.cols

    @property
    def cell_deg(self) -> tuple[float, float]:
        """Cell height and width in degrees ``(dlat, dlon)``."""
        return ((self.north - self.south) / self.rows, (self.east - self.west) / self.cols)

    @property
    def lat_edges(self) -> np.ndarray:
        return np.linspace(self.south, self.north, self.rows + 1)

    @property
    def lon_edges(self) -> np.ndarray:
        return np.linspace(self.west, self.east, self.cols + 1)

    @property
    def cell_size_m(self) -> tuple[float, float]:
        """Approximate cell height and width in metres (width at the middle latitude)."""
        dlat, dlon = self.cell_deg
        mid = math.radians((self.south + self.north) / 2)
        return (dlat * _M_PER_DEG, dlon * _M_PER_DEG * math.cos(mid))

    def to_dict(self) -> dict[str, Any]:
        h, w = self.cell_size_m
        return {"bbox": [self.south, self.west, self.north, self.east], "rows": self.rows,
                "cols": self.cols, "cell_deg": list(self.cell_deg),
                "cell_size_m_approx": [round(h, 3), round(w, 3)],
                "order": "row 0 = south, column 0 = west"}

    # ------------------------------------------------------------------ cells
    def cell_of(self, lat, lon) -> np.ndarray:
        """``(n, 2)`` int64 ``[row, col]`` of each point; ``[-1, -1]`` outside the box.

        The same arithmetic as the SQL of :meth:`cell_sql`: ``floor((lat - south) / dlat)``,
        the north/east edges in the last row/column.
        """
        la = np.asarray(lat, dtype=np.float64).ravel()
        lo = np.asarray(lon, dtype=np.float64).ravel()
        dlat, dlon = self.cell_deg
        inside = ((la >= self.south) & (la <= self.north) & (lo >= self.west)
                  & (lo <= self.east))
        with np.errstate(invalid="ignore"):
            r = np.minimum(np.floor((la - self.south) / dlat), self.rows - 1)
            c = np.minimum(np.floor((lo - self.west) / dlon), self.cols - 1)
        r = np.where(inside, r, -1).astype(np.int64)
        c = np.where(inside, c, -1).astype(np.int64)
        return np.column_stack((r, c))

    def cell_sql(self, lat: str, lon: str) -> tuple[str, str, str]:
        """SQL expressions ``(inside, row, col)`` for the (already quoted) ``lat``/``lon`` columns.

        Numbers are written with ``repr`` of validated finite floats, so no text from the user
        reaches the SQL here (identifiers are quoted by the caller with :func:`veil.io.sql.ident`).
        """
        s, w, n, e = (repr(float(v)) for v in self.bbox)
        dlat, dlon = (repr(float(v)) for v in self.cell_deg)
        inside = f"({lat} >= {s} AND {lat} <= {n} AND {lon} >= {w} AND {lon} <= {e})"
        row = f"least(CAST(floor(({lat} - {s}) / {dlat}) AS BIGINT), {self.rows - 1})"
        col = f"least(CAST(floor(({lon} - {w}) / {dlon}) AS BIGINT), {self.cols - 1})"
        return inside, row, col

    def cell_bounds(self) -> dict[str, np.ndarray]:
        """Per cell (row-major): ``row, col, lat_min, lat_max, lon_min, lon_max``."""
        r, c = np.divmod(np.arange(self.n_cells, dtype=np.int64), self.cols)
        la, lo = self.lat_edges, self.lon_edges
        return {"row": r, "col": c, "lat_min": la[r], "lat_max": la[r + 1],
                "lon_min": lo[c], "lon_max": lo[c + 1]}
