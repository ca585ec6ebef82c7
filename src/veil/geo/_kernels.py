"""Hot kernels for veil.geo (numba when available, numpy otherwise).

:func:`polar_destination` moves each point ``(lat, lon)`` (degrees) by a
distance ``r`` metres along the direction whose east/north components are
``(cos_t, sin_t)`` (a unit vector), on the sphere of radius ``radius``: the
inverse azimuthal equidistant projection centred at each point. The numba
kernel is fused and parallel; the numpy fallback computes the same formulas.
"""

from __future__ import annotations

import math

import numpy as np

import importlib.util

# numba is optional and imported lazily (its import costs about a second)
_HAVE_NUMBA = importlib.util.find_spec("numba") is not None
_JIT: dict[str, object] = {}

_DEG = math.pi / 180.0
NUMBA_MIN_SIZE = 20_000


def _polar_destination_numpy(lat, lon, r, cos_t, sin_t, radius):
    p0 = lat * _DEG
    c = r / radius
    sp0, cp0 = np.sin(p0), np.cos(p0)
    sc, cc = np.sin(c), np.cos(c)
    # azimuth measured from north: sin(az) = east component, cos(az) = north component
    num = sp0 * cc + cp0 * sc * sin_t
    den = np.hypot(cp0 * cc - sp0 * sc * sin_t, sc * cos_t)
    la = np.arctan2(num, den) / _DEG
    lo = lon * _DEG + np.arctan2(cos_t * sc * cp0, cc - sp0 * num)
    lo = ((lo + math.pi) % (2 * math.pi) - math.pi) / _DEG
    return la, lo


def _numba_kernel():
    """Compile (or load from cache) the fused numba kernel on first use."""
    if "polar" in _JIT:
        return _JIT["polar"]
    import numba

    @numba.njit(parallel=True, fastmath=False, cache=True)
    def _polar_destination_numba(lat, lon, r, cos_t, sin_t, radius):  # pragma: no cover - jit
        n = lat.shape[0]
        la = np.empty(n)
        lo = np.empty(n)
        for i in numba.prange(n):
            p0 = lat[i] * _DEG
            c = r[i] / radius
            sp0 = math.sin(p0)
            cp0 = math.cos(p0)
            if c < 2e-3:  # Taylor series, exact to float64 rounding here (next term < 1e-20 c)
                c2 = c * c
                sc = c * (1.0 - c2 / 6.0 * (1.0 - c2 / 20.0 * (1.0 - c2 / 42.0)))
                cc = 1.0 - c2 / 2.0 * (1.0 - c2 / 12.0 * (1.0 - c2 / 30.0 * (1.0 - c2 / 56.0)))
            else:
                sc = math.sin(c)
                cc = math.cos(c)
            num = sp0 * cc + cp0 * sc * sin_t[i]
            den = math.hypot(cp0 * cc - sp0 * sc * sin_t[i], sc * cos_t[i])
            la[i] = math.atan2(num, den) / _DEG
            x = lon[i] * _DEG + math.atan2(cos_t[i] * sc * cp0, cc - sp0 * num)
            if x >= math.pi or x < -math.pi:
                x = (x + math.pi) % (2 * math.pi) - math.pi
            lo[i] = x / _DEG
        return la, lo

    _JIT["polar"] = _polar_destination_numba
    return _polar_destination_numba


def _numba_turn_kernel():
    """Fused kernel taking the angle as a uniform fraction of a turn (sin/cos computed inside)."""
    if "turn" in _JIT:
        return _JIT["turn"]
    import numba

    @numba.njit(parallel=True, fastmath=False, cache=True)
    def _turn(lat, lon, r, u, radius):  # pragma: no cover - jit
        n = lat.shape[0]
        la = np.empty(n)
        lo = np.empty(n)
        for i in numba.prange(n):
            th = 2.0 * math.pi * u[i]
            st = math.sin(th)   # east component is cos(th), north is sin(th)
            ct = math.cos(th)
            p0 = lat[i] * _DEG
            c = r[i] / radius
            sp0 = math.sin(p0)
            cp0 = math.cos(p0)
            if c < 2e-3:  # Taylor series, exact to float64 rounding here
                c2 = c * c
                sc = c * (1.0 - c2 / 6.0 * (1.0 - c2 / 20.0 * (1.0 - c2 / 42.0)))
                cc = 1.0 - c2 / 2.0 * (1.0 - c2 / 12.0 * (1.0 - c2 / 30.0 * (1.0 - c2 / 56.0)))
            else:
                sc = math.sin(c)
                cc = math.cos(c)
            num = sp0 * cc + cp0 * sc * st
            a = cp0 * cc - sp0 * sc * st
            b = sc * ct
            la[i] = math.atan2(num, math.sqrt(a * a + b * b)) / _DEG
            x = lon[i] * _DEG + math.atan2(ct * sc * cp0, cc - sp0 * num)
            if x >= math.pi or x < -math.pi:
                x = (x + math.pi) % (2 * math.pi) - math.pi
            lo[i] = x / _DEG
        return la, lo

    _JIT["turn"] = _turn
    return _turn


def polar_destination_turn(lat, lon, r, u, radius, *, use_numba: bool | None = None):
    """Like :func:`polar_destination` with the direction given as a fraction ``u`` of a turn.

    The angle ``2 pi u`` is measured counter-clockwise from east; with ``u`` uniform on [0, 1)
    the direction is uniform.
    """
    lat = np.ascontiguousarray(lat, dtype=np.float64)
    lon = np.ascontiguousarray(lon, dtype=np.float64)
    r = np.ascontiguousarray(r, dtype=np.float64)
    u = np.ascontiguousarray(u, dtype=np.float64)
    if use_numba is None:
        use_numba = _HAVE_NUMBA and lat.size >= NUMBA_MIN_SIZE
    if use_numba and _HAVE_NUMBA:
        return _numba_turn_kernel()(lat, lon, r, u, float(radius))
    th = 2 * np.pi * u
    return _polar_destination_numpy(lat, lon, r, np.cos(th), np.sin(th), float(radius))


def polar_destination(lat, lon, r, cos_t, sin_t, radius, *, use_numba: bool | None = None):
    """Destination of each point after moving ``r`` metres east-north direction ``(cos_t, sin_t)``."""
    lat = np.ascontiguousarray(lat, dtype=np.float64)
    lon = np.ascontiguousarray(lon, dtype=np.float64)
    r = np.ascontiguousarray(r, dtype=np.float64)
    cos_t = np.ascontiguousarray(cos_t, dtype=np.float64)
    sin_t = np.ascontiguousarray(sin_t, dtype=np.float64)
    if use_numba is None:
        use_numba = _HAVE_NUMBA and lat.size >= NUMBA_MIN_SIZE
    if use_numba and _HAVE_NUMBA:
        return _numba_kernel()(lat, lon, r, cos_t, sin_t, float(radius))
    return _polar_destination_numpy(lat, lon, r, cos_t, sin_t, float(radius))
