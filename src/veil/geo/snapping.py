"""Public output resolution for the continuous location mechanisms (float-safe releases).

A continuous mechanism computed in float64 (``z = x + noise``) publishes the low-order bits
of ``z``, and those depend on ``x``: for the raw ``x + numpy Laplace`` an attacker who sees
``z`` can test whether ``fl(x' + fl(z - x'))`` gives back ``z`` and so rule out inputs
(Mironov, CCS 2012; issue 16 measured an eps lower bound of 8.6 against a claimed 1). veil's
continuous release APIs therefore snap every output to a *public lattice* before it is
published, by default with a step of :data:`DEFAULT_RESOLUTION_M` = 1 metre:

* planar points (metres): ``round(z / u) * u`` per coordinate;
* latitude/longitude: multiples of ``u / (R pi / 180)`` degrees in both coordinates (a
  latitude step of ``u`` metres; longitude cells shrink towards the poles, which is still
  far coarser than float64 rounding).

Every lattice point is reachable from every input (the noise has full support), and the
lattice does not depend on the input, so the published value carries no float pattern.
Snapping is post-processing of the ideal real-valued mechanism, so for it the guarantee is
unchanged. What remains of floating point is the mis-rounding of draws that fall within
rounding distance of a lattice-cell boundary, which Andres et al. (CCS 2013, Sec. 5) bound by
an adjusted ``eps'`` (:func:`snapping_correction`); veil records it in the Release budget.
Its size is about ``1e-13`` per metre for a 1 m lattice.

``resolution = 0`` is the explicit opt-in to the raw float64 output (a note in the Release
says what it leaks).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..distances import EARTH_RADIUS_M
from ..errors import ParameterError

__all__ = ["DEFAULT_RESOLUTION_M", "FLOAT_PRECISION", "check_resolution", "snap_plane",
           "snap_latlon", "latlon_step_deg", "snapping_correction", "latlon_snapping_correction", "FLOAT_OUTPUT_NOTE",
           "lattice_note"]

#: The default public output resolution (metres).
DEFAULT_RESOLUTION_M = 1.0

#: Relative precision allowed for a computed output: 16 float64 ulps (the sampler's log,
#: the trigonometry of the projection and the addition each round once or twice).
FLOAT_PRECISION = 16 * 2.0 ** -52

FLOAT_OUTPUT_NOTE = ("float output (resolution 0, explicit opt-in): the low-order bits of "
                     "each float64 output depend on the input and can rule inputs out "
                     "(Mironov 2012); publish with a resolution > 0 instead")


def check_resolution(resolution: Any, name: str = "resolution") -> float:
    """A finite resolution ``>= 0`` (0 = raw float output, an explicit opt-in).

    Examples
    --------
    >>> check_resolution(1)
    1.0
    """
    try:
        r = float(resolution)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number of metres >= 0, got {resolution!r}"
                             ) from None
    if not (math.isfinite(r) and r >= 0):
        raise ParameterError(f"{name} must be a finite number of metres >= 0 (0 = raw float "
                             f"output), got {resolution!r}")
    return r


def snap_plane(z: Any, resolution: float) -> np.ndarray:
    """Round planar coordinates to the public lattice ``resolution * Z^2`` (0: unchanged).

    Examples
    --------
    >>> snap_plane([[1.4, -2.6]], 1.0).tolist()
    [[1.0, -3.0]]
    """
    z = np.asarray(z, dtype=np.float64)
    if resolution == 0:
        return z
    return np.round(z / resolution) * resolution


def latlon_step_deg(resolution_m: float) -> float:
    """The degree step of the lat/lon lattice: ``resolution_m`` metres of latitude."""
    return resolution_m / (EARTH_RADIUS_M * math.pi / 180.0)


def snap_latlon(latlon: Any, resolution_m: float) -> np.ndarray:
    """Round ``[lat, lon]`` rows to the public degree lattice of :func:`latlon_step_deg`.

    Latitudes stay in [-90, 90] and longitudes are wrapped to [-180, 180).

    Examples
    --------
    >>> p = snap_latlon([[48.85661234, 2.35221234]], 1.0)
    >>> bool(np.all(np.abs(p - [[48.85661234, 2.35221234]]) < 1e-5))
    True
    """
    a = np.asarray(latlon, dtype=np.float64).reshape(-1, 2)
    if resolution_m == 0:
        return a
    step = latlon_step_deg(resolution_m)
    lat = np.round(a[:, 0] / step) * step
    lat = np.clip(lat, -90.0, 90.0)
    lon = np.round(a[:, 1] / step) * step
    lon = np.where(lon >= 180.0, lon - 360.0, lon)
    lon = np.where(lon < -180.0, lon + 360.0, lon)
    return np.column_stack((lat, lon))


def snapping_correction(epsilon_per_metre: float, resolution_m: float,
                        max_displacement_m: float) -> float:
    """The float64 correction of a snapped release, per metre (Andres et al. CCS 2013).

    Outputs are lattice points of step ``u = resolution_m``; a computed displacement of at
    most ``max_displacement_m`` has absolute error at most ``2 r_max p`` with ``p`` =
    :data:`FLOAT_PRECISION`, so only draws within that distance of a cell boundary can be
    mis-rounded. As for the discretized mechanism, ``q = u / (2 r_max p)`` and the guarantee
    between lattice points holds with ``eps' = eps + (1/u) ln((q + 2 e^{eps u}) /
    (q - 2 e^{eps u}))``; this function returns ``eps' - eps`` (0 for ``resolution_m = 0``,
    where no such bound exists: see :data:`FLOAT_OUTPUT_NOTE`).

    ``max_displacement_m`` is the largest displacement the float64 sampler can produce
    (its uniforms are at least 2^-53, so the log of a product of two or three is bounded).

    Examples
    --------
    >>> c = snapping_correction(0.01, 1.0, 111 / 0.01)
    >>> 0 < c < 1e-9
    True
    """
    if resolution_m == 0:
        return 0.0
    q = resolution_m / (2.0 * max_displacement_m * FLOAT_PRECISION)
    if not q > 2.0:  # whatever eps u: the largest displacement's rounding passes the lattice
        raise ParameterError(
            f"eps = {epsilon_per_metre:g} per metre is too small for the float64 sampler: its "
            f"displacements reach {max_displacement_m:.3g} m, whose rounding error exceeds the "
            f"{resolution_m:g} m lattice, so no float64 bound holds; use a larger epsilon")
    return _andres(epsilon_per_metre, resolution_m, q)


def _finest(eps: float, u: float, q: float) -> float:
    """A resolution (metres) whose correction stays below ``eps``, to suggest: ``q / u`` does
    not depend on ``u``, and the correction is about ``4 u / (q u^2)`` for small ``eps u``;
    it equals ``eps`` at ``sqrt(4 u / (q eps))`` (doubled for a margin)."""
    return 2.0 * math.sqrt(4.0 * u / (q * eps))


def _andres(eps: float, u: float, q: float) -> float:
    """``(1/u) ln((q + 2 e^{eps u}) / (q - 2 e^{eps u}))`` with the log-space guard."""
    log_lim = math.log(2.0) + eps * u
    if not math.log(q) > log_lim and eps * u < 1.0:
        # q grows like u and e^{eps u} slower while eps u < 1: a coarser lattice helps
        # (`--resolution 1e-9` was told it was "too coarse" and to use a smaller one)
        at_least = _finest(eps, u, q)
        raise ParameterError(
            f"resolution {u:g} m is too fine for the float64 sampler at eps = {eps:g} per "
            f"metre: the rounding of a displacement passes the lattice; use a larger "
            f"resolution (at least about {at_least:.3g} m)")
    if not math.log(q) > log_lim:
        raise ParameterError(
            f"resolution {u:g} m is too coarse for eps = {eps:g} per metre (eps * resolution "
            f"= {eps * u:.3g}): the float64 bound needs a lattice finer than the noise; use "
            f"a smaller resolution")
    lim = math.exp(log_lim)
    corr = math.log1p(2 * lim / (q - lim)) / u
    if corr > eps:  # `--resolution 1e-6` published "epsilon 410181" per metre for 0.01
        at_least = _finest(eps, u, q)
        raise ParameterError(
            f"resolution {u:g} m is too fine for the float64 sampler at eps = {eps:g} per "
            f"metre: its correction ({corr:.3g} per metre) would exceed epsilon itself; use a "
            f"larger resolution (at least about {at_least:.3g} m)")
    return corr


def latlon_snapping_correction(epsilon_per_metre: float, resolution_m: float) -> float:
    """The float64 correction (per metre) of a release snapped to the lat/lon lattice.

    A computed latitude/longitude has absolute error at most 16 ulps of 180 degrees, so the
    mis-rounding band of a lattice cell is at most ``2 * 16 ulp(180) / step_deg`` of its
    width at every latitude (``q`` is the inverse of that fraction; longitude cells are
    narrower towards the poles but so is the error in metres). Andres et al.'s bound with
    this ``q`` and ``u = resolution_m``: the log-ratio of any two inputs' output
    probabilities exceeds ``eps d`` by at most ``ln((q + 2 e^{eps u}) / (q - 2 e^{eps u}))``,
    written per metre for inputs at least ``u`` apart.

    Examples
    --------
    >>> 0 < latlon_snapping_correction(0.01, 1.0) < 1e-6
    True
    """
    if resolution_m == 0:
        return 0.0
    q = latlon_step_deg(resolution_m) / (2 * 16 * math.ulp(180.0))
    return _andres(epsilon_per_metre, resolution_m, q)


def lattice_note(resolution_m: float, correction: float) -> str:
    """The Release note for a snapped output."""
    if resolution_m == 0:
        return FLOAT_OUTPUT_NOTE
    return (f"outputs on the public lattice of step {resolution_m:g} m (float-safe: no "
            f"input-dependent low-order bits); float64 correction {correction:.3g} per metre "
            f"included in the budget (Andres et al. CCS 2013)")
