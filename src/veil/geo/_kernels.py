"""Hot kernels for veil.geo (numba when available, numpy otherwise).

:func:`polar_destination` moves each point ``(lat, lon)`` (degrees) by a
distance ``r`` metres along the direction whose east/north components are
``(cos_t, sin_t)`` (a unit vector), on the sphere of radius ``radius``: the
inverse azimuthal equidistant projection centred at each point, with the
general (arctan2) formulas in numpy. :func:`displace_turn` computes the same
for planar Laplace draws with a SIMD-vectorized numba kernel and falls back to
:func:`polar_destination`'s formulas where its series do not apply.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np

from .._jit import call

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
    north_arm = cp0 * cc - sp0 * sc * sin_t
    den = np.hypot(north_arm, sc * cos_t)
    la = np.arctan2(num, den) / _DEG
    # divided by cos(lat) >= 0: exact at the poles, where the textbook form is 0/0
    # (see veil.geo.geometry.aeqd_inverse)
    lo = lon * _DEG + np.arctan2(cos_t * sc, north_arm)
    lo = ((lo + math.pi) % (2 * math.pi) - math.pi) / _DEG
    return la, lo


# Series coefficients for the short-displacement path of the disc kernel (products instead
# of divisions keep the loop vectorizable).
_I3, _I5, _I7, _I9 = 1.0 / 3.0, 1.0 / 5.0, 1.0 / 7.0, 1.0 / 9.0
_I6, _I12, _I20, _I30, _I42, _I56 = 1 / 6.0, 1 / 12.0, 1 / 20.0, 1 / 30.0, 1 / 42.0, 1 / 56.0
_SERIES_MAX = 2e-3   # |angle| below which the truncated series are exact to float64 rounding


# Taylor coefficients of sin (x .. x^21) and cos (1 .. x^22): on [-pi/2, pi/2] the remainders
# are below 2e-18, so these polynomials are exact to float64 rounding there.
_SIN = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(11))
_COS = tuple((-1) ** k / math.factorial(2 * k) for k in range(12))


def _numba_turn_kernel():
    """Branch-free, SIMD-vectorizable kernel for short displacements (see displace_turn)."""
    if "turn" in _JIT:
        return _JIT["turn"]
    import numba

    two_pi, rad, deg, pi = 2.0 * math.pi, 180.0 / math.pi, _DEG, math.pi
    i3, i5, i7, i9 = _I3, _I5, _I7, _I9
    i6, i12, i20, i30, i42, i56 = _I6, _I12, _I20, _I30, _I42, _I56
    s1, s3, s5, s7, s9, s11, s13, s15, s17, s19, s21 = _SIN
    c0, c2_, c4, c6, c8, c10, c12, c14, c16, c18, c20, c22 = _COS
    smax = _SERIES_MAX

    @numba.njit(inline="always")
    def sin_half(x):  # pragma: no cover - jit; |x| <= pi/2
        y = x * x
        return x * (s1 + y * (s3 + y * (s5 + y * (s7 + y * (s9 + y * (s11 + y * (
            s13 + y * (s15 + y * (s17 + y * (s19 + y * s21))))))))))

    @numba.njit(inline="always")
    def cos_half(x):  # pragma: no cover - jit; |x| <= pi/2
        y = x * x
        return c0 + y * (c2_ + y * (c4 + y * (c6 + y * (c8 + y * (c10 + y * (c12 + y * (
            c14 + y * (c16 + y * (c18 + y * (c20 + y * c22))))))))))

    # 'contract' lets LLVM fuse multiply-adds (one rounding instead of two); error_model
    # 'numpy' removes the division-by-zero checks: both are needed for the loop to vectorize.
    # Serial on purpose: the loop is memory-bound at a few ns per point, and on a loaded
    # machine a parallel region waits for its slowest thread.
    @numba.njit(fastmath={"contract"}, error_model="numpy", cache=True)
    def _turn(xy, u, f, k, la, lo):  # pragma: no cover - jit; xy = [lat0, lon0, lat1, ...]
        n = u.shape[0]
        bad = np.empty(n, dtype=np.bool_)
        for i in range(n):
            ph = pi * (u[i] - 0.5)              # half the direction angle, in [-pi/2, pi/2)
            sh = sin_half(ph)
            ch = cos_half(ph)
            ct = ch * ch - sh * sh              # east component, cos(2 ph)
            st = 2.0 * sh * ch                  # north component, sin(2 ph)
            c = -f[i] * k                       # angular distance r / R
            lat_i = xy[2 * i]
            p0 = lat_i * deg
            sp0 = sin_half(p0)
            cp0 = cos_half(p0)
            c2 = c * c
            sc = c * (1.0 - c2 * i6 * (1.0 - c2 * i20 * (1.0 - c2 * i42)))
            cc = 1.0 - c2 * 0.5 * (1.0 - c2 * i12 * (1.0 - c2 * i30 * (1.0 - c2 * i56)))
            num = sp0 * cc + cp0 * sc * st      # sin(lat2)
            aa = cp0 * cc - sp0 * sc * st
            bb = sc * ct
            h = math.sqrt(aa * aa + bb * bb)    # cos(lat2)
            ny = num * cp0 - h * sp0            # sin(lat2 - lat)
            nx = h * cp0 + num * sp0            # cos(lat2 - lat)
            z = ny / nx
            z2 = z * z
            dphi = z * (1.0 - z2 * (i3 - z2 * (i5 - z2 * (i7 - z2 * i9))))
            yy = ct * sc * cp0
            xx = cc - sp0 * num
            w = yy / xx
            w2 = w * w
            dl = w * (1.0 - w2 * (i3 - w2 * (i5 - w2 * (i7 - w2 * i9))))
            x = xy[2 * i + 1] * deg + dl
            x = x - two_pi * (x >= pi) + two_pi * (x < -pi)
            la[i] = lat_i + dphi * rad
            lo[i] = x * rad
            bad[i] = not ((c < smax) & (cp0 > 0.0175) & (nx > 0.0) & (abs(z) < smax)
                          & (xx > 0.0) & (abs(w) < smax))
        return bad

    _JIT["turn"] = _turn
    return _turn


def planar_laplace_draws(size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Raw draws of ``size`` planar Laplace displacements: ``(u, f)``.

    ``u`` is Uniform[0, 1) (direction angle ``2 pi u - pi`` from east,
    counter-clockwise) and ``f = ln((1 - t1)(1 - t2))`` with two further
    uniforms, i.e. minus a Gamma(2, 1) draw (the sum of two Exp(1)); the
    displacement length for parameter eps is ``-f / eps``. ``1 - t`` lies in
    (0, 1], so ``f`` is always finite. (The same law as
    :func:`veil.samplers.planar_laplace_noise`, whose rejection in the disc
    gives no trigonometry in the plane; here the angle is a fraction of a
    turn because the kernel evaluates sin and cos by polynomials anyway and
    needs no rejection pass.)
    """
    w = rng.random((3, size))
    u, t1, t2 = w[0], w[1], w[2]
    np.subtract(1.0, t1, out=t1)
    np.subtract(1.0, t2, out=t2)
    t1 *= t2
    f = np.log(t1, out=t1)
    return u, f


def displace_turn(points, u, f, epsilon, radius, *, use_numba: bool | None = None) -> np.ndarray:
    """Move each ``[lat, lon]`` row of ``points`` by the displacement ``(u, f)``; ``(n, 2)`` out.

    The direction is ``2 pi u - pi`` (east = 0, counter-clockwise) and the
    distance ``-f / epsilon`` metres (see :func:`planar_laplace_draws`), applied
    as the inverse azimuthal equidistant projection centred at each point
    (great-circle distance and bearing exact).

    The numba path evaluates the exact spherical formulas with Taylor
    polynomials (sin and cos on [-pi/2, pi/2] to degree 22; the short-distance
    case, angles below 2e-3 rad or about 12 km, with remainders below 1e-19
    relative), which LLVM vectorizes with SIMD; points outside that case (long
    displacements, latitudes beyond 89 degrees, large longitude turns) are
    flagged and redone with the general formulas (arctan2), so the result
    agrees with :func:`polar_destination` to float64 rounding everywhere.
    """
    xy = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 2)
    lat, lon = xy[:, 0], xy[:, 1]
    n = xy.shape[0]
    out = np.empty((2, n))
    if use_numba is None:
        use_numba = _HAVE_NUMBA and n >= NUMBA_MIN_SIZE
    if not (use_numba and _HAVE_NUMBA):
        th = 2.0 * np.pi * u - np.pi
        out[0], out[1] = _polar_destination_numpy(lat, lon, -f / epsilon, np.cos(th), np.sin(th),
                                                  float(radius))
        return out.T
    bad = call(_numba_turn_kernel(), xy.reshape(-1), u, f, 1.0 / (epsilon * radius), out[0],
               out[1])
    idx = np.flatnonzero(bad)
    if idx.size:
        th = 2.0 * np.pi * u[idx] - np.pi
        out[0, idx], out[1, idx] = _polar_destination_numpy(
            lat[idx], lon[idx], -f[idx] / epsilon, np.cos(th), np.sin(th), float(radius))
    return out.T


def polar_destination(lat, lon, r, cos_t, sin_t, radius):
    """Destination of each point after moving ``r`` metres east-north direction ``(cos_t, sin_t)``."""
    return _polar_destination_numpy(*(np.asarray(v, dtype=np.float64)
                                      for v in (lat, lon, r, cos_t, sin_t)), float(radius))
