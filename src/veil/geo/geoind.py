"""Geo-indistinguishability for real use: planar Laplace on latitude/longitude points.

* :func:`planar_laplace` - exact planar Laplace noise added per point in its
  own local metric plane (azimuthal equidistant around the point).
* :func:`planar_laplace_xy` - the same on planar coordinates in metres.
* :func:`discretized_planar_laplace` - outputs snapped to a public grid and
  truncated to a public region (Andres et al., CCS 2013), float64, with the
  adjusted epsilon' recorded in the Release.
* :class:`ConsistentObfuscator` - the averaging defence for repeated
  queries: the same input within the same time window always gets the same
  output, so averaging many reports of one location learns nothing new.

Why planar Laplace is eps-geo-indistinguishable: the output density at ``z``
for input ``x`` is ``eps^2/(2 pi) exp(-eps |z - x|)``, and by the triangle
inequality ``exp(-eps |z - x|) <= exp(eps |x - x'|) exp(-eps |z - x'|)``, so
every output set is at most ``exp(eps d(x, x'))`` times more likely under
``x`` than under ``x'``. Each point is obfuscated once with the whole budget
(``GeoDP(eps)`` per point; reports of different points are independent).
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import replace
from typing import Any

import numpy as np

from ..budget import GeoDP, PureDP
from ..errors import ParameterError
from ..random import make_rng
from ..release import Release
from ..samplers import planar_laplace_noise
from ..validation import check_epsilon, check_positive
from ._kernels import displace_turn, planar_laplace_draws
from .geometry import EARTH_RADIUS_M, Grid, LocalProjection, Region, check_latlon, destination
from .snapping import (DEFAULT_RESOLUTION_M, check_resolution, lattice_note,
                       latlon_snapping_correction, snap_latlon, snap_plane, snapping_correction)

__all__ = [
    "geo_epsilon",
    "planar_laplace",
    "planar_laplace_xy",
    "discretized_planar_laplace",
    "discretized_planar_laplace_xy",
    "discretization_epsilon",
    "ConsistentObfuscator",
    "PublicCells",
    "FLOAT64_PRECISION",
]

FLOAT64_PRECISION = 2.0 ** -52
MAX_GRID_CELLS = 20_000_000

_FLOAT_NOTE = ("float64 sampler; for a formal pure guarantee with truncation to a public "
               "region use discretized_planar_laplace")

#: The float64 planar samplers draw their Gamma(2, 1) length as minus the log of a product
#: of uniforms that are at least 2^-53 (two of them, or three in the disc sampler), so the
#: length never exceeds 160 ln 2 < 111 (divided by eps).
PLANAR_MAX_GAMMA = 111.0


#: smallest epsilon per metre accepted: a noise scale of 10^12 m, 25,000 times the Earth's
#: circumference (below it the noise is already uniform over the globe; at 1e-300 the error
#: figures overflowed and the command stopped with an internal ZeroDivisionError)
GEO_EPSILON_MIN = 1e-12


def geo_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """Epsilon per metre from a float or a :class:`~veil.budget.GeoDP` budget.

    A :class:`~veil.budget.PureDP` budget is refused: geo-indistinguishability is
    measured per metre, a pure-DP epsilon has no unit of distance. Values below
    :data:`GEO_EPSILON_MIN` are refused too (a mean displacement beyond 10^12 m).

    Examples
    --------
    >>> geo_epsilon(GeoDP(0.01)), geo_epsilon(0.02)
    (0.01, 0.02)
    """
    if isinstance(epsilon, GeoDP):
        eps = check_epsilon(epsilon.epsilon_per_metre, name)
    elif isinstance(epsilon, PureDP):
        raise ParameterError(f"{name}: geo-indistinguishability needs epsilon per metre, e.g. "
                             f"GeoDP({epsilon.epsilon}/200) for eps = {epsilon.epsilon} at "
                             f"200 m; got PureDP({epsilon.epsilon})")
    else:
        eps = check_epsilon(epsilon, name)
    if eps < GEO_EPSILON_MIN:
        raise ParameterError(f"{name} = {eps:g} per metre gives a mean displacement of "
                             f"{2 / eps:.3g} m, beyond any distance on Earth (20,000 km at most): "
                             f"use at least {GEO_EPSILON_MIN:g} per metre (e.g. ln(4)/200 = "
                             f"{np.log(4) / 200:.4g} for eps = ln 4 at 200 m)")
    return eps


def _as_points(points: Any, name: str = "points") -> tuple[np.ndarray, np.ndarray]:
    a = _points_array(points, name)
    return a[:, 0], a[:, 1]


def _points_array(points: Any, name: str = "points") -> np.ndarray:
    """Validated ``[lat, lon]`` points as a C-contiguous ``(n, 2)`` float64 array."""
    try:
        a = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{name} must be numeric [lat, lon] pairs: {exc}") from None
    if a.ndim == 1 and a.shape[0] == 2:
        a = a.reshape(1, 2)
    if a.ndim != 2 or a.shape[1] != 2:
        raise ParameterError(f"{name} must have shape (n, 2) as [lat, lon], got {a.shape}")
    check_latlon(a[:, 0], a[:, 1], name=name)
    return np.ascontiguousarray(a)


def planar_laplace(points: Any, *, epsilon: float | GeoDP,
                   rng: np.random.Generator | None = None,
                   resolution: float = DEFAULT_RESOLUTION_M) -> Release:
    """Obfuscate ``[lat, lon]`` points with eps-geo-indistinguishability (planar Laplace).

    Each point gets an independent noise vector: angle uniform on [0, 2 pi),
    length Gamma(2, 1/eps) (the exact planar Laplace radius, minus the log of a
    product of two uniforms), added in the
    point's own azimuthal equidistant plane (so the reported point is at
    great-circle distance ``r`` and bearing ``theta``; no cos(latitude)
    distortion). Vectorized (a fused numba kernel when numba is installed).

    Privacy: eps-geo-indistinguishability per point, ``epsilon`` per metre
    (see the module docstring); the whole budget goes to the one draw. Outputs are
    snapped to the public lat/lon lattice of ``resolution`` metres
    (:mod:`veil.geo.snapping`: no input-dependent float bits are published); the
    float64 correction is added to the Release budget (``budget_split``).

    Parameters
    ----------
    points : array of shape (n, 2)
        ``[latitude, longitude]`` in degrees (validated: finite, in range; the poles
        included).
    epsilon : float or GeoDP
        Privacy per metre (> 0), e.g. ``math.log(4) / 200``.
    rng : numpy.random.Generator, optional
        OS entropy by default.
    resolution : float, default 1.0
        Public output lattice step in metres; ``0`` is the explicit opt-in to raw float64
        output (which leaks through its low-order bits).

    Returns
    -------
    Release
        ``value``: ``(n, 2)`` reported ``[lat, lon]``; ``expected_error``:
        mean distance ``2/eps`` and the 50/90/99% distance quantiles.

    Examples
    --------
    >>> rel = planar_laplace([[48.8566, 2.3522]], epsilon=0.01, rng=make_rng(seed=0))
    >>> rel.value.shape, rel.expected_error["mean_distance_m"]
    ((1, 2), 200.0)
    >>> rel.parameters["resolution_m"], bool(rel.epsilon > 0.01)
    (1.0, True)
    """
    eps = geo_epsilon(epsilon)
    res = check_resolution(resolution)
    corr = latlon_snapping_correction(eps, res)
    pts = _points_array(points)
    rng = make_rng(rng)
    n = pts.shape[0]
    u, f = planar_laplace_draws(n, rng)     # uniform direction, Gamma(2, 1) length
    out = snap_latlon(displace_turn(pts, u, f, eps, EARTH_RADIUS_M), res)
    return Release(out, "planar-laplace", GeoDP(eps + corr),
                   parameters={"epsilon_per_metre": eps, "n_points": int(n),
                               "plane": "per-point azimuthal equidistant",
                               "resolution_m": res},
                   budget_split=_split(eps, corr),
                   noise_scale=1.0 / eps, noise_variance=6.0 / eps ** 2,
                   expected_error=_laplace_error(eps),
                   notes=(lattice_note(res, corr), _FLOAT_NOTE), columns=("lat", "lon"))


def _split(eps: float, corr: float) -> dict[str, float]:
    d = {"planar-laplace": eps}
    if corr:
        d["float64 snapping correction"] = corr
    return d


def _laplace_error(eps: float) -> dict[str, float]:
    from .metrics import laplace_radius_quantile
    return {"mean_distance_m": 2.0 / eps, "rms_distance_m": math.sqrt(6.0) / eps,
            "q50_m": laplace_radius_quantile(0.5, eps), "q90_m": laplace_radius_quantile(0.9, eps),
            "q99_m": laplace_radius_quantile(0.99, eps)}


def planar_laplace_xy(xy: Any, *, epsilon: float | GeoDP,
                      rng: np.random.Generator | None = None,
                      resolution: float = DEFAULT_RESOLUTION_M) -> Release:
    """Planar Laplace on planar points in metres, shape ``(n, 2)`` (same guarantee).

    Outputs are snapped to the public lattice ``resolution * Z^2`` (metres; ``0`` = raw
    float64, an explicit opt-in), with the float64 correction in the budget.

    Examples
    --------
    >>> v = planar_laplace_xy([[0.0, 0.0]], epsilon=0.1, rng=make_rng(seed=0)).value
    >>> v.shape, bool(np.all(v == np.round(v)))
    ((1, 2), True)
    """
    eps = geo_epsilon(epsilon)
    res = check_resolution(resolution)
    corr = snapping_correction(eps, res, PLANAR_MAX_GAMMA / eps)
    a = np.asarray(xy, dtype=np.float64)
    if a.ndim == 1 and a.shape[0] == 2:
        a = a.reshape(1, 2)
    if a.ndim != 2 or a.shape[1] != 2 or not np.isfinite(a).all():
        raise ParameterError(f"xy must be a finite (n, 2) array of metres, got shape {a.shape}")
    rng = make_rng(rng)
    dx, dy = planar_laplace_noise(eps, len(a), rng).T
    out = snap_plane(a + np.column_stack((dx, dy)), res)
    return Release(out, "planar-laplace", GeoDP(eps + corr),
                   parameters={"epsilon_per_metre": eps, "n_points": len(a), "plane": "given",
                               "resolution_m": res},
                   budget_split=_split(eps, corr), noise_scale=1.0 / eps,
                   noise_variance=6.0 / eps ** 2, expected_error=_laplace_error(eps),
                   notes=(lattice_note(res, corr), _FLOAT_NOTE), columns=("x", "y"))


def obfuscation_epsilon(epsilon: float | GeoDP, *, resolution: float = DEFAULT_RESOLUTION_M,
                        grid_step: float | None = None, region: Region | None = None) -> float:
    """The epsilon per metre a release spends, from public parameters only (charge it first).

    :func:`planar_laplace` and :class:`ConsistentObfuscator` spend ``epsilon`` plus the float64
    snapping correction of ``resolution``; :func:`discretized_planar_laplace` spends eps'
    (:func:`discretization_epsilon`) of ``grid_step`` and ``region``. Their Release budget is
    this value: a ledger that recorded ``epsilon`` alone let a release pass a declared total.

    Examples
    --------
    >>> e = obfuscation_epsilon(0.01)
    >>> e == planar_laplace([[48.8566, 2.3522]], epsilon=0.01, rng=make_rng(seed=0)).epsilon
    True
    >>> e > 0.01
    True
    """
    eps = geo_epsilon(epsilon)
    if grid_step is not None:
        if not isinstance(region, Region):
            raise ParameterError("grid_step needs the public region (a Region in metres)")
        return discretization_epsilon(eps, check_positive(grid_step, "grid_step"),
                                      region.diameter)
    return eps + latlon_snapping_correction(eps, check_resolution(resolution))


def discretization_epsilon(epsilon: float, step: float, r_max: float,
                           precision: float = FLOAT64_PRECISION) -> float:
    """The adjusted epsilon' of the discretized, truncated planar Laplace mechanism.

    Following Andres et al. (CCS 2013, Sec. 5): with grid step ``u``, outputs
    truncated to a region of diameter ``r_max`` and samples computed with
    relative precision ``precision`` (float64), let
    ``q = u / (r_max * precision)``; if ``q > 2 e^{eps u}``,
    ``eps' = eps + (1/u) ln((q + 2 e^{eps u}) / (q - 2 e^{eps u}))``. The
    guarantee is eps'-geo-indistinguishability between grid points. (The
    constant follows our reading of the paper; for metre grids the increase
    is ~1e-14 per metre either way.)

    Examples
    --------
    >>> e = discretization_epsilon(0.01, 10.0, 20_000.0)
    >>> 0 < e - 0.01 < 1e-9
    True
    """
    eps = check_epsilon(epsilon, "epsilon")
    u = check_positive(step, "grid_step")
    r_max = check_positive(r_max, "r_max")
    precision = check_positive(precision, "precision")
    q = u / (r_max * precision)
    # compare in log space first: exp(eps u) overflows float64 for eps u > 709
    log_lim = math.log(2.0) + eps * u
    if not math.log(q) > log_lim:
        raise ParameterError(
            f"grid_step {u:g} m is not usable for a region of diameter {r_max:g} m at "
            f"eps={eps:g} per metre: the discretization bound needs q = grid_step / (r_max "
            f"* precision) = {q:.3g} > 2 exp(eps * grid_step) = exp({log_lim:.4g}); choose "
            f"eps * grid_step well below ln(q / 2) = {math.log(q / 2):.3g} (a finer grid or a "
            f"smaller region)")
    lim = math.exp(log_lim)
    return eps + math.log1p(2 * lim / (q - lim)) / u


def discretized_planar_laplace(points: Any, *, epsilon: float | GeoDP, grid_step: float,
                               region: Region, projection: LocalProjection,
                               rng: np.random.Generator | None = None) -> Release:
    """Planar Laplace with outputs on a public grid inside a public region (float-safe).

    Each point is projected to the public plane ``projection`` (choose its
    reference from public information, e.g. the region's centre), moved by an
    exact planar Laplace draw, snapped to the centre of its grid cell
    (step ``grid_step`` metres, grid over the region's bounding box), and,
    when that centre is outside ``region``, remapped to the nearest grid
    centre inside it. Outputs are grid-centre ``[lat, lon]`` (use
    :func:`discretized_planar_laplace_xy` for planar metres).

    Privacy: snapping and truncation are post-processing of planar Laplace;
    the floating-point error of the draw only matters within rounding
    distance of cell boundaries, which Andres et al. bound by an adjusted
    eps' (:func:`discretization_epsilon`), recorded as the Release budget.
    Inputs should be grid points (or the guarantee is stated with the
    distance between their cells).

    Examples
    --------
    >>> from veil.geo.geometry import Box
    >>> proj = LocalProjection(48.8566, 2.3522)
    >>> rel = discretized_planar_laplace([[48.8566, 2.3522]], epsilon=0.01, grid_step=50.0,
    ...     region=Box(-2000, -2000, 2000, 2000), projection=proj, rng=make_rng(seed=0))
    >>> rel.epsilon > 0.01
    True
    """
    if not isinstance(projection, LocalProjection):
        raise ParameterError(f"projection must be a LocalProjection, got {projection!r}")
    lat, lon = _as_points(points)
    x, y = projection.to_plane(lat, lon)
    rel = discretized_planar_laplace_xy(np.column_stack((x, y)), epsilon=epsilon,
                                        grid_step=grid_step, region=region, rng=rng)
    out = rel.value
    la, lo = projection.to_latlon(out[:, 0], out[:, 1])
    params = dict(rel.parameters, projection=[projection.lat0, projection.lon0])
    return replace(rel, value=np.column_stack((la, lo)), parameters=params,
                   columns=("lat", "lon"))


def discretized_planar_laplace_xy(xy: Any, *, epsilon: float | GeoDP, grid_step: float,
                                  region: Region,
                                  rng: np.random.Generator | None = None) -> Release:
    """The discretized, truncated planar Laplace on planar points (metres); see above.

    Returns the grid-centre outputs as an ``(n, 2)`` array of metres.

    Examples
    --------
    >>> from veil.geo.geometry import Box
    >>> rel = discretized_planar_laplace_xy([[5.0, 5.0]], epsilon=0.01, grid_step=10.0,
    ...     region=Box(0, 0, 1000, 1000), rng=make_rng(seed=0))
    >>> bool(((rel.value - 5.0) % 10.0 == 0).all())
    True
    """
    eps = geo_epsilon(epsilon)
    step = check_positive(grid_step, "grid_step")
    if not isinstance(region, Region):
        raise ParameterError(f"region must be a Region (metres in the projection plane), got {region!r}")
    a = np.asarray(xy, dtype=np.float64)
    if a.ndim == 1 and a.shape[0] == 2:
        a = a.reshape(1, 2)
    if a.ndim != 2 or a.shape[1] != 2 or not np.isfinite(a).all():
        raise ParameterError(f"xy must be a finite (n, 2) array of metres, got shape {a.shape}")
    eps_prime = discretization_epsilon(eps, step, region.diameter)
    xmin, ymin, xmax, ymax = region.bounds
    n_cells = math.ceil((xmax - xmin) / step) * math.ceil((ymax - ymin) / step)
    if n_cells > MAX_GRID_CELLS:
        raise ParameterError(f"grid_step {step} m is too fine for the region: {n_cells:.3g} cells "
                             f"(max {MAX_GRID_CELLS:.0e}); use a coarser grid")
    grid = region.grid(step)
    allowed = region.contains(grid.centers)
    if not allowed.any():
        raise ParameterError(f"region: no grid centre of step {step} m lies inside the region "
                             "(empty after discretization); use a finer grid_step")
    rng = make_rng(rng)
    dx, dy = planar_laplace_noise(eps, len(a), rng).T
    out = snap_truncate(np.column_stack((a[:, 0] + dx, a[:, 1] + dy)), grid, allowed)
    return Release(out, "discretized-planar-laplace", GeoDP(eps_prime),
                   parameters={"epsilon_per_metre": eps, "epsilon_prime": eps_prime,
                               "grid_step_m": step, "grid": [grid.x0, grid.y0, grid.x1, grid.y1,
                                                            grid.nx, grid.ny],
                               "region": region.to_dict(), "n_points": int(len(a))},
                   budget_split={"planar-laplace": eps, "float64 discretization": eps_prime - eps},
                   noise_scale=1.0 / eps, noise_variance=6.0 / eps ** 2,
                   expected_error=_laplace_error(eps),
                   notes=("guarantee: eps'-geo-indistinguishability between grid points "
                          "(Andres et al. CCS 2013)", "expected_error ignores snapping/truncation"),
                   columns=("x", "y"))


def snap_truncate(z: np.ndarray, grid: Grid, allowed: np.ndarray) -> np.ndarray:
    """Snap planar points to grid centres; remap centres outside ``allowed`` to the nearest allowed one."""
    from scipy.spatial import cKDTree

    centers = grid.centers
    idx = grid.cell_of(z)
    ok = idx >= 0
    ok[ok] = allowed[idx[ok]]
    out = np.empty_like(z)
    out[ok] = centers[idx[ok]]
    if (~ok).any():
        tree = cKDTree(centers[allowed])
        _, j = tree.query(z[~ok])
        out[~ok] = centers[allowed][j]
    return out


def _key_bytes(user: Any, row: int, col: int, window: int) -> bytes:
    u = str(user).encode("utf-8")
    return (len(u).to_bytes(4, "little") + u + int(row).to_bytes(8, "little", signed=True)
            + int(col).to_bytes(8, "little", signed=True)
            + int(window).to_bytes(8, "little", signed=True))


class PublicCells:
    """A public partition of the sphere into cells of about ``cell_m`` x ``cell_m`` metres.

    Rows are latitude bands of ``cell_m`` metres from the south pole; each row is split
    into ``floor(360 cos(lat_row) / step)`` equal longitude cells (at least one), so cells
    stay roughly square at every latitude, the poles included. The partition depends on
    ``cell_m`` only (never on data).

    Examples
    --------
    >>> pc = PublicCells(100.0)
    >>> r, c = pc.cell_of([45.0, 45.00001], [7.0, 7.0])
    >>> bool(r[0] == r[1] and c[0] == c[1])
    True
    >>> lat, lon = pc.centre(r, c)
    >>> bool(abs(lat[0] - 45.0) < 0.001 and abs(lon[0] - 7.0) < 0.002)
    True
    """

    #: Smallest and largest cell size (metres): below 1 cm the cell indices pass 2^62
    #: (``--cell 1e-300`` moved every report to the south pole); above half a meridian the
    #: one latitude band is centred on a pole (``--cell 1e300`` reported the north pole)
    MIN_CELL_M = 0.01
    MAX_CELL_M = math.pi * EARTH_RADIUS_M

    def __init__(self, cell_m: float):
        self.cell_m = check_positive(cell_m, "cell_m")
        if not self.MIN_CELL_M <= self.cell_m <= self.MAX_CELL_M:
            raise ParameterError(f"cell_m must lie in [{self.MIN_CELL_M}, "
                                 f"{self.MAX_CELL_M:.0f}] metres (1 cm to half a meridian), "
                                 f"got {self.cell_m!r}")
        self.step = self.cell_m / (EARTH_RADIUS_M * math.pi / 180.0)   # degrees of latitude
        self.n_rows = max(1, math.ceil(180.0 / self.step))

    def _cols(self, row: np.ndarray) -> np.ndarray:
        lat_c = np.clip(-90.0 + (row + 0.5) * self.step, -90.0, 90.0)
        return np.maximum(1, np.floor(360.0 * np.cos(np.radians(lat_c)) / self.step)
                          ).astype(np.int64)

    def cell_of(self, lat: Any, lon: Any) -> tuple[np.ndarray, np.ndarray]:
        """Row and column of each point (validated lat/lon in degrees)."""
        la, lo = check_latlon(lat, lon)
        la, lo = np.atleast_1d(la), np.atleast_1d(lo)
        row = np.clip(np.floor((la + 90.0) / self.step), 0, self.n_rows - 1).astype(np.int64)
        ncol = self._cols(row)
        col = np.floor((lo + 180.0) / 360.0 * ncol).astype(np.int64) % ncol
        return row, col

    def centre(self, row: Any, col: Any) -> tuple[np.ndarray, np.ndarray]:
        """Latitude and longitude of the cells' centres."""
        row = np.asarray(row, dtype=np.int64)
        col = np.asarray(col, dtype=np.int64)
        lat = np.clip(-90.0 + (row + 0.5) * self.step, -90.0, 90.0)
        lon = -180.0 + (col + 0.5) * 360.0 / self._cols(row)
        return lat, lon

    @property
    def max_offset_m(self) -> float:
        """An upper bound on the distance from a point to its cell centre (metres)."""
        return self.cell_m * math.sqrt(2.0)


class ConsistentObfuscator:
    """Planar Laplace with the averaging defence for repeated reports: one report per
    (user, public cell, time window).

    A client that reports its location many times would let an observer average the
    reports and recover the true point (the mean of n independent reports is
    ``2/(eps sqrt(n))``-accurate). A stationary user with real GPS never reports the same
    float twice, so caching on the exact input does not help (issue 16: 400 reports with
    1 m jitter averaged to 11 m from the truth). This obfuscator therefore generalizes each
    point to its cell of a public partition (:class:`PublicCells`, ``cell_m`` metres) and
    reports planar Laplace noise around the *cell centre*, drawn from a keyed hash of
    (user, cell, ``floor(t / window_s)``): within a window every report from the same cell
    is identical, as Location Guard caches one noisy location per privacy level, and
    averaging learns nothing more than one report.

    Privacy: each distinct (user, cell, window) spends ``epsilon`` once (planar Laplace
    around the public cell centre, snapped to the public ``resolution`` lattice); two
    points of the same cell are perfectly indistinguishable, and points ``d`` metres apart
    in different cells are ``eps (d + 2 sqrt(2) cell_m)``-indistinguishable (their centres
    are at most ``d + 2 sqrt(2) cell_m`` apart). The key is secret (random by default; keep
    it on the device); users are keyed separately, so two users in the same cell get
    independent reports.

    Parameters
    ----------
    epsilon : float or GeoDP
        Per metre.
    window_s : float
        Length of a time window in seconds.
    cell_m : float, default 100
        Side of the public cells (metres); a larger cell tolerates more GPS jitter and
        movement and costs up to ``cell_m / sqrt(2)`` more error.
    key : bytes, optional
        At least 16 secret bytes; default ``os.urandom(32)``. Never publish it.
    resolution : float, default 1.0
        Public output lattice (metres); see :mod:`veil.geo.snapping`.

    Examples
    --------
    >>> ob = ConsistentObfuscator(epsilon=0.01, window_s=3600)
    >>> a = ob.obfuscate([[45.0, 7.0], [45.000003, 7.000004]], t=[10.0, 20.0]).value
    >>> bool((a[0] == a[1]).all())
    True
    """

    def __init__(self, *, epsilon: float | GeoDP, window_s: float, cell_m: float = 100.0,
                 key: bytes | None = None, resolution: float = DEFAULT_RESOLUTION_M):
        self.epsilon = geo_epsilon(epsilon, "epsilon")
        self.window_s = check_positive(window_s, "window_s")
        self.cells = PublicCells(cell_m)
        self.resolution = check_resolution(resolution)
        self._corr = latlon_snapping_correction(self.epsilon, self.resolution)
        if key is None:
            key = os.urandom(32)
        if not isinstance(key, bytes | bytearray) or len(key) < 16:
            raise ParameterError("key must be at least 16 secret bytes")
        self._key = bytes(key)

    @property
    def cell_m(self) -> float:
        return self.cells.cell_m

    def windows(self, t: Any) -> np.ndarray:
        """The time window of each time ``t`` (seconds), refusing indices beyond 2^62 (the
        int64 cast wrapped and put every report in one window)."""
        tt = np.asarray(t, dtype=np.float64).reshape(-1)
        with np.errstate(over="ignore", invalid="ignore"):
            wf = np.floor(tt / self.window_s)
        bad = ~(np.abs(wf) < 2.0 ** 62)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ParameterError(f"t[{i}] = {float(tt[i])!r} is {float(wf[i]):.3g} windows of "
                                 f"{self.window_s!r} s from 0: beyond 2^62 windows; use seconds "
                                 "and a larger window")
        return wf.astype(np.int64)

    def _seed(self, user: Any, row: int, col: int, window: int) -> int:
        h = hashlib.blake2b(_key_bytes(user, row, col, window), key=self._key[:64],
                            digest_size=16)
        return int.from_bytes(h.digest(), "little")

    def draws(self, users: Any, rows: np.ndarray, cols: np.ndarray, windows: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
        """The keyed planar Laplace draws ``(u, f)`` for each distinct key (see
        :func:`veil.geo._kernels.planar_laplace_draws`)."""
        n = len(rows)
        u = np.empty(n)
        f = np.empty(n)
        for k in range(n):  # one keyed hash per distinct (user, cell, window)
            g = np.random.Generator(np.random.PCG64(self._seed(users[k], rows[k], cols[k],
                                                               windows[k])))
            uu, ff = planar_laplace_draws(1, g)
            u[k], f[k] = uu[0], ff[0]
        return u, f

    def obfuscate(self, points: Any, *, t: Any, user: Any = None) -> Release:
        """Report each ``[lat, lon]`` at time ``t`` (seconds) for ``user`` (one label per
        point, or one for all; default: a single user). Repeated (user, cell, window)
        keys repeat their report."""
        lat, lon = _as_points(points)
        tt = np.asarray(t, dtype=np.float64).reshape(-1)
        if tt.size == 1 and lat.size > 1:
            tt = np.full(lat.size, tt[0])
        if tt.shape != lat.shape or not np.isfinite(tt).all():
            raise ParameterError("t must be finite times, one per point (or one for all)")
        if user is None:
            users = np.full(lat.size, "", dtype=object)
        else:
            users = np.asarray(user, dtype=object).reshape(-1)
            if users.size == 1 and lat.size > 1:
                users = np.full(lat.size, users[0], dtype=object)
            if users.shape != lat.shape:
                raise ParameterError(f"user must have one label per point ({lat.size}), got "
                                     f"{users.size}")
        windows = self.windows(tt)
        rows, cols = self.cells.cell_of(lat, lon)
        _, ucode = np.unique(users.astype(str), return_inverse=True)
        keys = np.column_stack((ucode.ravel(), rows, cols, windows))
        uniq, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        inv = inv.ravel()
        u, f = self.draws(users[first], uniq[:, 1], uniq[:, 2], uniq[:, 3])
        clat, clon = self.cells.centre(uniq[:, 1], uniq[:, 2])
        z = displace_turn(np.column_stack((clat, clon)), u, f, self.epsilon, EARTH_RADIUS_M,
                          use_numba=False)
        z = snap_latlon(z, self.resolution)[inv]
        eps = self.epsilon
        n_users = int(len(np.unique(ucode)))
        return Release(z, "planar-laplace-consistent", GeoDP(eps + self._corr),
                       parameters={"epsilon_per_metre": eps, "window_s": self.window_s,
                                   "cell_m": self.cell_m, "resolution_m": self.resolution,
                                   "n_points": int(lat.size), "n_users": n_users,
                                   "n_distinct": int(len(uniq))},
                       budget_split={"planar-laplace per distinct (user, cell, window)": eps,
                                     **({"float64 snapping correction": self._corr}
                                        if self._corr else {})},
                       noise_scale=1.0 / eps, noise_variance=6.0 / eps ** 2,
                       expected_error=_laplace_error(eps),
                       notes=("same (user, public cell, window) -> same output (averaging "
                              "defence); noise is added to the public cell centre",
                              f"each distinct (user, cell, window) spends eps; "
                              f"{len(uniq)} distinct over {lat.size} reports",
                              lattice_note(self.resolution, self._corr)),
                       columns=("lat", "lon"),
                       # how many distinct (user, cell, window) keys: a function of the true
                       # cells that the published points show (one output per key), declared
                       derived=("parameters.n_distinct", "notes"))
