"""Samplers for the noise distributions veil's mechanisms use.

* :func:`discrete_laplace` is **exact**: it draws only uniform integers and
  compares integers (the Canonne-Kamath-Steinke 2020 algorithm, vectorized over
  numpy arrays); no floating-point logarithm or exponential is on the sampling
  path. The requested scale is rounded *up* to a dyadic rational, so the
  effective epsilon is never larger than the one asked for.
* :func:`laplace`, :func:`gamma_radius` and :func:`planar_laplace_noise` are
  float64 samplers from numpy. Their outputs are only as private as floating
  point allows (Mironov, CCS 2012): mechanisms that publish real numbers snap
  them to a grid where the guarantee must hold exactly.
* :func:`uniform_in_convex_polygon` samples exactly (up to float64) from the
  uniform distribution on a convex polygon by fan triangulation.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .errors import ParameterError
from .random import make_rng
from .validation import check_epsilon, check_finite_array, check_int, check_positive

__all__ = [
    "dyadic_scale",
    "discrete_laplace",
    "discrete_laplace_pmf",
    "discrete_laplace_variance",
    "laplace",
    "gamma_radius",
    "planar_laplace_noise",
    "uniform_in_convex_polygon",
    "polygon_area",
]

_FACT_N = 20
_FACT = math.factorial(_FACT_N)  # 20! < 2**63
# thresholds T_K = 20!/K! for K = 1..20 (decreasing); P(W < T_K) = 1/K! exactly
_FACT_T = np.array([_FACT // math.factorial(k) for k in range(1, _FACT_N + 1)], dtype=np.int64)


def dyadic_scale(scale: float) -> tuple[int, int]:
    """Round ``scale`` up to ``2**a / den`` (integers), the form the exact sampler uses.

    Returns ``(num, den)`` with ``num = 2**a``, ``num / den >= scale`` and
    ``den >= 2**20``, so the relative rounding is below 1e-6 and the effective
    epsilon (sensitivity * den / num) never exceeds the requested one.
    """
    scale = check_positive(scale, "scale")
    a = max(0, math.ceil(math.log2(scale))) + 21
    if a > 62:
        raise ParameterError(f"the noise scale sensitivity / epsilon = {scale:.3g} is above the "
                             f"exact sampler's maximum 2**41 (about {2.0 ** 41:.3g}): use a "
                             f"larger epsilon (--epsilon) or a smaller sensitivity (the "
                             f"command's --sensitivity or per-person bound)")
    num = 1 << a
    den = int(Fraction(num) / Fraction(scale))  # floor, so num/den >= scale
    if den >= 1 << 63:
        raise ParameterError(f"scale {scale!r} is too small for the exact sampler (min about "
                             f"{2.0 ** -41:.3g}): epsilon / sensitivity above about 2e12")
    return num, den


def _factorial_stop(n: int, rng: np.random.Generator) -> np.ndarray:
    """L with P(L > K) = 1/K!: the first K where Bernoulli(1/K) fails (so L >= 2).

    One uniform integer W on [0, 20!) decides L exactly when L <= 20:
    L = 1 + #{K : W < 20!/K!}. The event L > 20 (W == 0, probability 1/20!)
    continues the chain draw by draw, so the sampler stays exact.
    """
    w = rng.integers(0, _FACT, size=n, dtype=np.int64)
    stop = 2 + (w < _FACT_T[1]).astype(np.int64)
    stop += w < _FACT_T[2]
    deep = np.flatnonzero(w < _FACT_T[3])  # probability 1/24: finish with a search
    if deep.size:
        stop[deep] = np.searchsorted(-_FACT_T, -w[deep], side="right") + 1
        for i in deep[w[deep] == 0]:  # probability 1/20! each; kept for exactness
            k = _FACT_N + 1
            while rng.integers(0, k) == 0:
                k += 1
            stop[i] = k
    return stop


def _bernoulli_exp_ratio(u: np.ndarray, t: int, rng: np.random.Generator) -> np.ndarray:
    """Exact Bernoulli(exp(-u / t)) for integer arrays ``0 <= u <= t``.

    Von Neumann's series: A_K ~ Bernoulli(u / (t K)) for K = 1, 2, ... until
    the first failure; the result is 1 iff that K is odd. Each A_K is one
    uniform integer on [0, t K) compared with u.
    """
    n = u.shape[0]
    cont = rng.integers(0, t, size=n, dtype=np.int64) < u
    out = ~cont                               # stopped at K = 1 (odd)
    idx = np.flatnonzero(cont)
    uu = u[idx]
    k = 2
    while idx.size:
        cont = rng.integers(0, t * k, size=idx.size, dtype=np.int64) < uu
        out[idx[~cont]] = (k & 1) == 1
        idx = idx[cont]
        uu = uu[cont]
        k += 1
    return out


def _geometric_exp1(n: int, rng: np.random.Generator) -> np.ndarray:
    """Exact V with P(V = v) = (1 - e^-1) e^-v: count Bernoulli(e^-1) successes.

    Bernoulli(e^-1) is the von Neumann chain with ratio 1, i.e. [L odd] for the
    factorial stop L.
    """
    v = np.zeros(n, dtype=np.int64)
    active = np.arange(n)
    while active.size:
        success = (_factorial_stop(active.size, rng) & 1) == 1
        active = active[success]
        v[active] += 1
    return v


def _discrete_laplace_rational(num: int, den: int, n: int,
                               rng: np.random.Generator) -> np.ndarray:
    """n exact draws with P[z] proportional to exp(-|z| den / num), ``num = 2**a``.

    Canonne, Kamath and Steinke (2020), Algorithm 2: U uniform on [0, num),
    keep with probability exp(-U/num), V geometric, X = U + num V,
    Y = floor(X / den), random sign, reject (-, 0).
    """
    out = np.empty(n, dtype=np.int64)
    # expected acceptance: E[exp(-U/num)] ~ 1 - e^-1, then (-, 0) is rejected half the time
    a = math.exp(-den / num)
    accept = (1 - math.exp(-1)) * (1 - 0.5 * (1 - a)) if num != den else 1 - 0.5 * (1 - a)
    filled = 0
    while filled < n:
        need = n - filled
        m = int(need / accept * 1.03) + 64
        if num == den:
            # scale exactly 1: U < num = den never changes floor((U + num V) / den) = V,
            # and the keep-step on U is independent of V, so both are skipped.
            y = _geometric_exp1(m, rng)
        else:
            u = rng.integers(0, num, size=m, dtype=np.int64)
            u = u[_bernoulli_exp_ratio(u, num, rng)]
            v = _geometric_exp1(u.size, rng)
            y = (u + num * v) // den
        neg = rng.integers(0, 2, size=y.size, dtype=np.int8) == 1
        ok = ~(neg & (y == 0))
        z = np.where(neg, -y, y)[ok]
        take = min(z.size, need)
        out[filled:filled + take] = z[:take]
        filled += take
    return out


def discrete_laplace(scale: float, size: int | tuple[int, ...] | None = None,
                     rng: np.random.Generator | None = None) -> np.ndarray | int:
    """Exact discrete Laplace (two-sided geometric) noise.

    ``P[Z = z]`` is proportional to ``exp(-|z| / t)`` where ``t`` is ``scale``
    rounded up to a rational ``2**a / den`` (see :func:`dyadic_scale`). Adding it to a
    count of sensitivity ``s`` with ``scale = s / epsilon`` is epsilon-DP.

    Parameters
    ----------
    scale : float
        t > 0.
    size : int or tuple, optional
        Output shape; ``None`` returns one Python int.
    rng : numpy.random.Generator, optional
        Defaults to a generator seeded from OS entropy.

    Examples
    --------
    >>> z = discrete_laplace(2.0, size=5, rng=make_rng(seed=0))
    >>> z.dtype, z.shape
    (dtype('int64'), (5,))
    """
    rng = make_rng(rng)
    num, den = dyadic_scale(scale)
    if size is None:
        return int(_discrete_laplace_rational(num, den, 1, rng)[0])
    shape = (size,) if isinstance(size, int | np.integer) else tuple(size)
    n = int(np.prod(shape)) if shape else 1
    if n < 0:
        raise ParameterError(f"size must be non-negative, got {size!r}")
    return _discrete_laplace_rational(num, den, n, rng).reshape(shape)


def discrete_laplace_pmf(z: np.ndarray, scale: float) -> np.ndarray:
    """The probability mass of the discrete Laplace at integers ``z`` (float64)."""
    num, den = dyadic_scale(scale)
    a = math.exp(-den / num)
    z = np.abs(np.asarray(z, dtype=np.float64))
    return (1 - a) / (1 + a) * np.power(a, z)


def discrete_laplace_variance(scale: float) -> float:
    """Variance 2a / (1 - a)^2 with a = exp(-1/t) of the (rounded) discrete Laplace."""
    num, den = dyadic_scale(scale)
    a = math.exp(-den / num)
    return 2 * a / (1 - a) ** 2


def laplace(scale: float, size: int | tuple[int, ...] | None = None,
            rng: np.random.Generator | None = None) -> np.ndarray | float:
    """Continuous Laplace(0, scale) noise in float64 (see the module note on floating point)."""
    scale = check_positive(scale, "scale")
    return make_rng(rng).laplace(0.0, scale, size=size)


def gamma_radius(shape: float, epsilon: float, size: int | tuple[int, ...] | None = None,
                 rng: np.random.Generator | None = None) -> np.ndarray | float:
    """Radius ~ Gamma(shape, 1/epsilon): shape 2 for planar Laplace, 3 for the 2-d K-norm mechanism."""
    shape = check_positive(shape, "shape")
    epsilon = check_epsilon(epsilon, "epsilon")
    return make_rng(rng).gamma(shape, 1.0 / epsilon, size=size)


def planar_laplace_noise(epsilon: float, size: int,
                         rng: np.random.Generator | None = None) -> np.ndarray:
    """Planar Laplace displacements, shape ``(size, 2)``, density ``eps^2 / (2 pi) exp(-eps ||d||)``.

    Angle uniform, radius Gamma(2, 1/epsilon); epsilon is per unit of the
    plane (per metre in a metric projection). Implementation without
    trigonometry: (u, v) uniform in the unit disc by rejection; the doubled
    angle ((u^2 - v^2), 2uv)/s with s = u^2 + v^2 is a uniform direction, and s
    is Uniform(0, 1) independent of it, so -ln(s) - ln(t) with a third uniform
    t is Gamma(2, 1), independent of the direction.

    Examples
    --------
    >>> d = planar_laplace_noise(0.01, 1000, rng=make_rng(seed=1))
    >>> d.shape
    (1000, 2)
    """
    epsilon = check_epsilon(epsilon, "epsilon")
    size = check_int(size, "size", minimum=0)
    rng = make_rng(rng)
    w = np.empty((3, size))            # one buffer, worked in place (large n: few page faults)
    rng.random(out=w[:2])
    u, v, t = w[0], w[1], w[2]
    u *= 2.0
    u -= 1.0
    v *= 2.0
    v -= 1.0
    s = np.multiply(u, u)
    s += np.multiply(v, v, out=t)      # t is drawn below; its buffer is scratch until then
    bad = np.flatnonzero((s > 1.0) | (s == 0.0))
    while bad.size:  # about 21% redrawn, then 4.6%, ...
        uv = rng.random((2, bad.size)) * 2.0 - 1.0
        u[bad] = uv[0]
        v[bad] = uv[1]
        sb = uv[0] * uv[0] + uv[1] * uv[1]
        s[bad] = sb
        bad = bad[(sb > 1.0) | (sb == 0.0)]
    rng.random(out=t)
    t *= s
    f = np.log(t, out=t)  # ln(s t) = -(Gamma(2,1) draw); t in [0,1) may be 0: -inf -> redrawn
    zero = np.flatnonzero(~np.isfinite(f))
    while zero.size:     # probability 2^-53 per point
        f[zero] = np.log(rng.random(zero.size) * s[zero])
        zero = zero[~np.isfinite(f[zero])]
    f /= s
    f *= -1.0 / epsilon  # radius / s
    out = np.empty((2, size))
    np.multiply(u, u, out=out[0])
    out[0] -= v * v
    out[0] *= f
    np.multiply(u, v, out=out[1])
    out[1] *= 2.0 * f
    return out.T


def polygon_area(vertices: np.ndarray) -> float:
    """Signed shoelace area (positive for counter-clockwise order)."""
    v = np.asarray(vertices, dtype=np.float64)
    x, y = v[:, 0], v[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y))


def uniform_in_convex_polygon(vertices: np.ndarray, size: int,
                              rng: np.random.Generator | None = None) -> np.ndarray:
    """Uniform points inside a convex polygon, shape ``(size, 2)``.

    The polygon is fanned into triangles from its first vertex; a triangle is
    chosen with probability proportional to its area and a point is drawn
    uniformly in it (two uniforms, reflected into the triangle).

    Parameters
    ----------
    vertices : array of shape (m, 2)
        Vertices in order (either orientation), m >= 3, strictly convex or with
        collinear vertices; zero area is rejected.
    """
    v = check_finite_array(vertices, "vertices", ndim=2)
    if v.shape[1] != 2 or v.shape[0] < 3:
        raise ParameterError(f"vertices must have shape (m>=3, 2), got {v.shape}")
    size = check_int(size, "size", minimum=0)
    e = np.roll(v, -1, axis=0) - v
    cross = e[:, 0] * np.roll(e, -1, axis=0)[:, 1] - e[:, 1] * np.roll(e, -1, axis=0)[:, 0]
    tol = 1e-12 * float(np.abs(v).max() ** 2 + 1.0)
    if (cross > tol).any() and (cross < -tol).any():
        raise ParameterError("vertices do not form a convex polygon in order")
    a = v[1:-1] - v[0]
    b = v[2:] - v[0]
    areas = 0.5 * np.abs(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])
    total = areas.sum()
    if not total > tol:
        raise ParameterError("polygon has zero area")
    rng = make_rng(rng)
    tri = rng.choice(areas.size, size=size, p=areas / total)
    r1 = rng.random(size)
    r2 = rng.random(size)
    flip = r1 + r2 > 1
    r1[flip] = 1 - r1[flip]
    r2[flip] = 1 - r2[flip]
    return v[0] + r1[:, None] * a[tri] + r2[:, None] * b[tri]
