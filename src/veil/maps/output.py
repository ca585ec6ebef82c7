"""Writing and reading published maps: a Parquet/CSV table, GeoJSON, a PNG heat map, GeoTIFF.

Every output of :func:`write_map` is derived from the released values and the public grid only
(post-processing), and all of them -- with the table's ``.meta.json`` sidecar -- are written
atomically together: if one fails, none is left behind.

* **Table** (``.parquet``, ``.csv`` or ``.json``): one row per cell, ``row, col, lat_min,
  lat_max, lon_min, lon_max, count`` (row 0 south, column 0 west), plus the sidecar
  ``<table>.meta.json`` (mechanism, budget and its split, the protected unit, the grid). This is
  what ``veil map query`` reads back.
* **GeoJSON**: a FeatureCollection of one Polygon per cell (``[lon, lat]`` rings, counter-
  clockwise) with properties ``row, col, count``.
* **PNG**: a heat map in an equirectangular projection stretched by ``1 / cos(latitude)`` at
  the map's middle latitude (east-west and north-south distances to the same scale there; no
  basemap), a colour bar and a scale bar whose length is computed from the grid's extent.
  Negative estimates are shown as 0 (display only; the table keeps them).
* **GeoTIFF** (``.tif``, optional extra ``veil[geotiff]``, the well-kept pure-Python
  ``tifffile``): one float32 band, north-up, with the GeoTIFF tags of a WGS 84 lat/lon raster.
"""

from __future__ import annotations

import io
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError, ParameterError
from ..release import Release, TabularMixin, to_jsonable
from .grid import MapGrid, _M_PER_DEG

__all__ = ["write_map", "read_map", "PublishedMap", "map_table", "geojson_text", "png_bytes",
           "geotiff_bytes", "scale_bar", "TABLE_FORMATS"]

TABLE_FORMATS = (".parquet", ".csv", ".json")


@dataclass(frozen=True)
class PublishedMap(TabularMixin):
    """A published map read back from its table and sidecar."""

    values: np.ndarray
    grid: MapGrid
    meta: dict[str, Any]

    def to_arrow(self):
        """The map's table: one row per cell (``row, col``, the cell's box, ``count``)."""
        from ..io.write import to_arrow

        return to_arrow(map_table(self.values, self.grid))


def map_table(values: np.ndarray, grid: MapGrid) -> dict[str, np.ndarray]:
    """The table of a map: one row per cell in row-major order."""
    t = grid.cell_bounds()
    t["count"] = np.asarray(values, dtype=np.float64).ravel()
    return t


def geojson_text(values: np.ndarray, grid: MapGrid, properties: dict | None = None) -> str:
    """A GeoJSON FeatureCollection of the cells (rings ``[lon, lat]``, counter-clockwise)."""
    la, lo = grid.lat_edges, grid.lon_edges
    v = np.asarray(values, dtype=np.float64)
    feats = []
    for r in range(grid.rows):
        s, n = repr(float(la[r])), repr(float(la[r + 1]))
        for c in range(grid.cols):
            w, e = repr(float(lo[c])), repr(float(lo[c + 1]))
            feats.append(
                '{"type":"Feature","properties":{"row":%d,"col":%d,"count":%s},'
                '"geometry":{"type":"Polygon","coordinates":[[[%s,%s],[%s,%s],[%s,%s],[%s,%s],'
                '[%s,%s]]]}}' % (r, c, repr(float(v[r, c])), w, s, e, s, e, n, w, n, w, s))
    head = {"type": "FeatureCollection",
            "bbox": [grid.west, grid.south, grid.east, grid.north],
            "veil": to_jsonable(properties or {})}
    h = json.dumps(head, allow_nan=False)[:-1]
    return h + ',"features":[' + ",".join(feats) + "]}\n"


def scale_bar(grid: MapGrid) -> tuple[float, str, float]:
    """A round scale-bar length for the map: ``(metres, label, length in degrees of lon)``.

    About a quarter of the map's width at its middle latitude, rounded down to 1, 2 or 5 times
    a power of ten.

    Examples
    --------
    >>> scale_bar(MapGrid(40.70, -74.02, 40.82, -73.93, rows=10, cols=10))[:2]
    (1000.0, '1 km')
    """
    mid = math.radians((grid.south + grid.north) / 2)
    width_m = (grid.east - grid.west) * _M_PER_DEG * math.cos(mid)
    target = width_m / 4
    p = 10.0 ** math.floor(math.log10(target))
    length = max(m * p for m in (1.0, 2.0, 5.0) if m * p <= target)
    label = f"{length / 1000:g} km" if length >= 1000 else f"{length:g} m"
    deg = length / (_M_PER_DEG * max(math.cos(mid), 1e-9))
    return length, label, deg


def png_bytes(values: np.ndarray, grid: MapGrid, *, title: str = "",
              ax=None) -> bytes | None:
    """Render the heat map (see the module docstring); returns PNG bytes (or draws on ``ax``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import PowerNorm

    v = np.clip(np.asarray(values, dtype=np.float64), 0, None)
    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(6.4, 5.2))
    mid = math.radians((grid.south + grid.north) / 2)
    vmax = float(v.max()) if v.max() > 0 else 1.0
    im = ax.imshow(v, origin="lower", extent=(grid.west, grid.east, grid.south, grid.north),
                   aspect=1.0 / max(math.cos(mid), 1e-9), cmap="magma",
                   norm=PowerNorm(0.5, vmin=0.0, vmax=vmax), interpolation="nearest")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.yaxis.set_major_locator(MaxNLocator(5))
    ax.set_xlabel("longitude (degrees)")
    ax.set_ylabel("latitude (degrees)")
    if title:
        ax.set_title(title, fontsize=9)
    _, label, deg = scale_bar(grid)
    x0 = grid.west + 0.05 * (grid.east - grid.west)
    y0 = grid.south + 0.05 * (grid.north - grid.south)
    ax.plot([x0, x0 + deg], [y0, y0], color="white", lw=3, solid_capstyle="butt")
    ax.plot([x0, x0 + deg], [y0, y0], color="black", lw=1, solid_capstyle="butt")
    ax.text(x0 + deg / 2, y0 + 0.02 * (grid.north - grid.south), label, ha="center",
            va="bottom", fontsize=8, color="white",
            bbox={"facecolor": "black", "alpha": 0.5, "pad": 1, "lw": 0})
    if not own:
        return None
    fig.colorbar(im, ax=ax, shrink=0.8, label="estimated points per cell")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def geotiff_bytes(values: np.ndarray, grid: MapGrid) -> bytes:
    """A one-band float32 GeoTIFF (WGS 84 lat/lon, north-up) of the map, through ``tifffile``."""
    try:
        import tifffile
    except ImportError:
        raise ParameterError("GeoTIFF output needs the optional tifffile package: "
                             "pip install 'veil[geotiff]' (or write .png / .geojson)") from None
    dlat, dlon = grid.cell_deg
    img = np.flipud(np.asarray(values, dtype=np.float32))  # first row = north
    geokeys = (1, 1, 0, 4,          # GeoKeyDirectory header: version 1.1.0, 4 keys
               1024, 0, 1, 2,       # GTModelType = geographic
               1025, 0, 1, 1,       # GTRasterType = PixelIsArea
               2048, 0, 1, 4326,    # GeographicType = WGS 84
               2054, 0, 1, 9102)    # GeogAngularUnits = degree
    extratags = [(33550, "d", 3, (dlon, dlat, 0.0), True),                     # ModelPixelScale
                 (33922, "d", 6, (0.0, 0.0, 0.0, grid.west, grid.north, 0.0), True),  # Tiepoint
                 (34735, "H", len(geokeys), geokeys, True)]                    # GeoKeyDirectory
    buf = io.BytesIO()
    tifffile.imwrite(buf, img, extratags=extratags, photometric="minisblack")
    return buf.getvalue()


def _release_grid(release: Release, grid: MapGrid | None) -> MapGrid:
    if grid is not None:
        return grid
    g = release.parameters.get("grid")
    if g is None:
        raise ParameterError("the release has no grid in its parameters: pass grid=")
    return MapGrid.from_dict(g)


def write_map(release: Release, path, *, grid: MapGrid | None = None, geojson=None, png=None,
              geotiff=None, title: str | None = None) -> list[Path]:
    """Write a published map's table and sidecar, and optionally GeoJSON, PNG and GeoTIFF.

    Parameters
    ----------
    release : Release
        A map release (value ``rows x cols``); the grid is read from its parameters unless
        ``grid`` is given.
    path : path
        The table: ``.parquet``, ``.csv`` or ``.json``; the sidecar is ``<path>.meta.json``.
    geojson, png, geotiff : path, optional
        Extra outputs (``.geojson``/``.json``, ``.png``, ``.tif``/``.tiff``).
    title : str, optional
        PNG title (default: mechanism, epsilon and the protected unit).

    Returns
    -------
    list of pathlib.Path
        Every file written (table, sidecar, then the extras), all atomically.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from veil.maps import MapGrid, publish
    >>> from veil.random import make_rng
    >>> g = MapGrid(0, 0, 1, 1, rows=4, cols=4)
    >>> r = publish(np.ones((4, 4), dtype=int), epsilon=1.0, method="identity",
    ...             rng=make_rng(seed=0))
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> [p.name for p in write_map(r, d / "m.parquet", grid=g, png=d / "m.png")]
    ['m.parquet', 'm.parquet.meta.json', 'm.png']
    """
    from ..io import atomic_paths, sidecar_path
    from ..io.write import _copy, to_arrow

    if not isinstance(release, Release):
        raise ParameterError(f"release must be a veil Release, got {type(release).__name__}")
    g = _release_grid(release, grid)
    values = np.asarray(release.value, dtype=np.float64)
    if values.shape != g.shape:
        raise ParameterError(f"the release has shape {values.shape}, the grid {g.shape}")
    path = Path(os.fspath(path))
    if path.suffix.lower() not in TABLE_FORMATS:
        raise ParameterError(f"the map table must end in {', '.join(TABLE_FORMATS)}, got "
                             f"{path.name!r}")
    extras = []
    for p, exts, what in ((geojson, (".geojson", ".json"), "--geojson"),
                          (png, (".png",), "--png"), (geotiff, (".tif", ".tiff"), "--geotiff")):
        if p is None:
            continue
        p = Path(os.fspath(p))
        if p.suffix.lower() not in exts:
            raise ParameterError(f"{what}: the file must end in {' or '.join(exts)}, got "
                                 f"{p.name!r}")
        extras.append((what, p))
    meta = release.metadata()
    meta["grid"] = g.to_dict()
    if title is None:
        unit = release.parameters.get("protects", "record")
        mp = release.parameters.get("max_points")
        who = f"one person (at most {mp} points)" if unit == "user" else "one point"
        title = f"{release.mechanism}, epsilon {release.epsilon:g}, protects {who}"
    blobs = {}
    for what, _p in extras:  # render before opening the temporary files
        if what == "--geojson":
            blobs[what] = geojson_text(values, g, {"mechanism": release.mechanism,
                                                   "budget": release.budget,
                                                   "protects": release.parameters.get(
                                                       "protects", "record")}).encode()
        elif what == "--png":
            blobs[what] = png_bytes(values, g, title=title)
        else:
            blobs[what] = geotiff_bytes(values, g)
    side = sidecar_path(path)
    targets = [path, side, *(p for _, p in extras)]
    for p in targets[1:]:
        if os.path.abspath(p) == os.path.abspath(path):
            raise ParameterError(f"output {str(p)!r} is given twice")
    fmt = {".parquet": "parquet", ".csv": "csv", ".json": "json"}[path.suffix.lower()]
    with atomic_paths(*targets) as temps:
        _copy(to_arrow(map_table(values, g)), temps[0], fmt, path)
        temps[1].write_text(json.dumps(to_jsonable(meta), indent=2, sort_keys=True,
                                       allow_nan=False) + "\n", encoding="utf-8")
        for (what, _p), tmp in zip(extras, temps[2:]):
            tmp.write_bytes(blobs[what])
    return targets


def read_map(path) -> PublishedMap:
    """Read a published map table and its sidecar (as written by :func:`write_map`).

    The table must hold every cell of the sidecar's grid exactly once, with finite counts.
    """
    from ..io import read_columns, sidecar_path

    path = Path(os.fspath(path))
    side = sidecar_path(path)
    if not path.exists():
        raise DataError("no such file", path=str(path))
    if not side.exists():
        raise DataError(f"no sidecar {side.name} next to the map: a published map is the table "
                        "and its .meta.json (written by veil map publish)", path=str(path))
    from ..io.read import read_json

    meta = read_json(side, what="the sidecar")
    if not isinstance(meta, dict) or "grid" not in meta:
        raise DataError("the sidecar has no 'grid': not a veil map", path=str(side))
    grid = MapGrid.from_dict(meta["grid"])
    cols = read_columns(path, columns={"row": "int", "col": "int", "count": "float"})
    r, c, v = cols["row"], cols["col"], cols["count"]
    bad = (r < 0) | (r >= grid.rows) | (c < 0) | (c >= grid.cols)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"cell ({r[i]}, {c[i]}) is outside the {grid.rows}x{grid.cols} grid",
                        path=str(path), row=i + 1)
    flat = r * grid.cols + c
    if flat.size != grid.n_cells or np.unique(flat).size != grid.n_cells:
        raise DataError(f"the table has {flat.size} rows for {grid.n_cells} cells (each cell "
                        "exactly once)", path=str(path))
    values = np.empty(grid.n_cells, dtype=np.float64)
    values[flat] = v
    return PublishedMap(values.reshape(grid.shape), grid, meta)
