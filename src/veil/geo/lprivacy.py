"""l-privacy on continuous regions: distinguishability and loss functions, circular noise.

This module follows ElSalamouny and Gambs, *Optimal noise functions for
location privacy on continuous regions* (IJIS 2018). A *symmetric mechanism*
reports ``p = i + mu`` where the noise vector ``mu`` is drawn from one
distribution whatever the true location ``i``; a *circular noise function* is
a density ``F(mu) = R(|mu|) / Z`` that depends only on the length of ``mu``.

l-privacy
---------
A mechanism satisfies l-privacy on a set ``X`` when, for all ``i, j`` in ``X``
and every output set ``S``, ``P[K(i) in S] <= exp(l(d(i, j))) P[K(j) in S]``.
For a symmetric mechanism with noise function ``F`` this is the condition
``F(mu) <= exp(l(|u|)) F(mu + u)`` for every vector ``mu`` and every
displacement ``u`` in ``V_X = {j - i : i, j in X}``. For a *circular* ``F``
only the lengths of ``V_X`` matter and the condition reduces to one
dimension (:func:`check_lprivacy`):

    ln R(s) - ln R(t) <= l(|s - t|)   for all s, t >= 0 with |s - t| in lengths(V_X).

(Given ``s``, ``t`` and a displacement length ``r``, the output radius ``t``
is reachable from noise radius ``s`` iff ``|s - r| <= t <= s + r``; ``l`` is
non-decreasing, so the smallest admissible ``r = |s - t|`` binds.) For a
connected region, ``lengths(V_X) = [0, diameter]``; on the whole plane it
is ``[0, inf)``. A region with non-empty interior makes l-privacy on ``X``
equivalent to l*-privacy on the plane, where ``l*`` is the largest
sub-additive function below ``l`` on ``[0, diameter]`` (chain small
displacements): :meth:`Distinguishability.tight`.

Noise functions
---------------
:class:`PlanarLaplace`
    ``R(r) = exp(-eps r)``; exact sampling (uniform angle, Gamma(2, 1/eps) radius).
:class:`TightNoise`
    The parametric family used for the optimal noise search: a flat core of
    radius ``core`` followed by the steepest decay l allows, scaled by
    ``slope`` in (0, 1]: ``R(r) = exp(-slope * l*((r - core)+))``. For
    eps-geo-indistinguishability it is planar Laplace with a flat core
    (``core=0, slope=1`` is planar Laplace); for (D, eps)-location privacy it
    is the circular staircase with first step at ``core`` and one factor
    ``exp(-slope eps)`` every ``D`` metres. Every member satisfies l-privacy on
    the plane (a short proof is in the class docstring). Exact samplers for
    both named l; a tabulated inverse CDF for user l.
:class:`RadialNoise`
    A user radial density ``R(r)`` (any non-negative integrable function);
    sampled by a tabulated inverse CDF (stated accuracy).

Expected loss is computed by :func:`expected_loss` with composite
Gauss-Legendre quadrature between the breakpoints of ``R`` and ``L`` and an
error bound (see there).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..random import make_rng
from ..validation import check_epsilon, check_int, check_positive
from .geoind import geo_epsilon
from .geometry import Region

__all__ = [
    "Distinguishability",
    "geo_indistinguishability",
    "d_epsilon_privacy",
    "custom_distinguishability",
    "Loss",
    "distance_loss",
    "squared_loss",
    "power_loss",
    "threshold_loss",
    "custom_loss",
    "make_loss",
    "CircularNoise",
    "PlanarLaplace",
    "TightNoise",
    "RadialNoise",
    "Integral",
    "expected_loss",
    "LPrivacyCheck",
    "check_lprivacy",
    "displacement_lengths",
    "OptimalNoise",
    "optimal_noise",
    "check_lprivacy_planar",
]


# --------------------------------------------------------------------------- monotone functions

def _probe_grid(scale: float) -> np.ndarray:
    """Points where user functions are probed for monotonicity (0 .. 1e3 x scale)."""
    return np.unique(np.concatenate((
        [0.0], np.geomspace(scale * 1e-6, scale * 1e3, 4000), np.linspace(0, 20 * scale, 4001))))


def _check_monotone(fn: Callable[[np.ndarray], np.ndarray], what: str, scale: float,
                    allow_inf: bool) -> None:
    d = _probe_grid(scale)
    try:
        v = np.asarray(fn(d), dtype=np.float64)
    except Exception as exc:  # noqa: BLE001 - report any failure of the user function
        raise ParameterError(f"{what}: the function failed on an array of distances: {exc}") from None
    if v.shape != d.shape:
        raise ParameterError(f"{what}: the function must return one value per distance "
                             f"(vectorized), got shape {v.shape} for input {d.shape}")
    if np.isnan(v).any():
        i = int(np.flatnonzero(np.isnan(v))[0])
        raise ParameterError(f"{what}: the function returned NaN at d={d[i]!r}")
    if (v < 0).any():
        i = int(np.flatnonzero(v < 0)[0])
        raise ParameterError(f"{what}: the function must be >= 0, got {v[i]!r} at d={d[i]!r}")
    if not allow_inf and np.isinf(v).any():
        i = int(np.flatnonzero(np.isinf(v))[0])
        raise ParameterError(f"{what}: the function must be finite, got inf at d={d[i]!r}")
    dec = np.flatnonzero(np.diff(v) < -1e-12 * np.maximum(1.0, np.abs(v[:-1])))
    if dec.size:
        i = int(dec[0])
        raise ParameterError(f"{what} must be non-decreasing: f({d[i]!r}) = {v[i]!r} > "
                             f"f({d[i + 1]!r}) = {v[i + 1]!r}")


# --------------------------------------------------------------------------- distinguishability l

def _finite_or_none(x: float) -> float | None:
    """JSON-friendly: ``None`` for inf/NaN (e.g. D of geo-indistinguishability)."""
    return float(x) if math.isfinite(x) else None


@dataclass(frozen=True)
class Distinguishability:
    """A distinguishability function ``l(d)``: non-decreasing, >= 0, possibly ``inf``.

    Build one with :func:`geo_indistinguishability`, :func:`d_epsilon_privacy`
    or :func:`custom_distinguishability`.

    Attributes
    ----------
    kind : {"geo", "d-eps", "custom"}
    epsilon : float
        eps per metre (geo), eps within D (d-eps), or ``nan`` (custom).
    D : float
        The radius of (D, eps)-location privacy (``inf`` otherwise).
    scale : float
        A natural length (metres) used for grids: ``1/eps``, ``D``, or given.
    """

    kind: str
    epsilon: float
    D: float
    scale: float
    fn: Callable[[np.ndarray], np.ndarray] | None = field(default=None, repr=False, compare=False)
    name: str = ""

    def __call__(self, d: Any) -> np.ndarray:
        d = np.asarray(d, dtype=np.float64)
        if self.kind == "geo":
            return self.epsilon * d
        if self.kind == "d-eps":
            return np.where(d <= self.D, self.epsilon, np.inf)
        return np.asarray(self.fn(d), dtype=np.float64)  # type: ignore[misc]

    def tight(self, r: Any, *, max_step: float = math.inf, h: float | None = None) -> np.ndarray:
        """``l*(r)``: the largest sub-additive function below ``l`` using steps ``<= max_step``.

        Chaining displacements ``d_1 + ... + d_n = r`` (each ``<= max_step``)
        shows a noise function that is l-private on a region of diameter
        ``max_step`` is ``l*``-private on the whole plane; conversely ``l*``
        bounds from below how fast ``ln R`` may decrease. Closed forms:
        ``eps r`` (geo) and ``eps ceil(r / D)`` for (D, eps) (0 at r = 0).
        Custom ``l``: a min-plus dynamic program on a grid of step ``h``
        (default ``scale / 200``) over ``[0, 100 scale]`` (repeated span by
        span beyond), linearly interpolated. This is numerical: verify a
        noise function built on it with :func:`check_lprivacy`.
        """
        r = np.asarray(r, dtype=np.float64)
        if self.kind == "geo":
            return self.epsilon * r
        if self.kind == "d-eps":
            step = min(self.D, max_step)
            return np.where(r <= 0, 0.0, self.epsilon * np.ceil(r / step - 1e-12))
        h = self.scale / 200 if h is None else h
        n = 20_001                                  # the table covers [0, 100 scale]
        table = self._tight_table(n, h, max_step)
        x = r / h
        k = np.floor(x).astype(np.int64)
        q, rem = np.divmod(k, n - 1)               # beyond the table: repeat whole spans
        frac = x - k
        nxt = np.minimum(rem + 1, n - 1)
        return q * table[n - 1] + table[rem] + frac * (table[nxt] - table[rem])

    def _tight_table(self, n: int, h: float, max_step: float) -> np.ndarray:
        cache = self.__dict__.setdefault("_cache", {})
        key = (n, h, max_step)
        if key in cache:
            return cache[key]
        d = np.arange(n) * h
        base = self(d)
        base = np.where(d <= max_step, base, np.inf)
        base[0] = 0.0
        t = base.copy()
        for k in range(2, n):  # min-plus: t[k] = min(base[k], min_j t[j] + t[k - j])
            j = np.arange(1, k // 2 + 1)
            t[k] = min(t[k], float(np.min(t[j] + t[k - j])))
        cache[key] = t
        return t

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "epsilon": _finite_or_none(self.epsilon),
                "D": _finite_or_none(self.D), "name": self.name}


def geo_indistinguishability(epsilon: float) -> Distinguishability:
    """``l(d) = eps d``: eps-geo-indistinguishability, ``epsilon`` per metre.

    Examples
    --------
    >>> l = geo_indistinguishability(0.01)
    >>> float(l(200.0))
    2.0
    """
    eps = geo_epsilon(epsilon, "epsilon")  # per metre, at least GEO_EPSILON_MIN
    return Distinguishability("geo", eps, math.inf, 1.0 / eps, None, f"geo(eps={eps:g}/m)")


def d_epsilon_privacy(D: float, epsilon: float) -> Distinguishability:
    """``l(d) = eps`` for ``d <= D``, ``inf`` beyond: (D, eps)-location privacy.

    Examples
    --------
    >>> l = d_epsilon_privacy(500.0, 1.0)
    >>> l([100.0, 600.0]).tolist()
    [1.0, inf]
    """
    D = check_positive(D, "D")
    eps = check_epsilon(epsilon, "epsilon")
    return Distinguishability("d-eps", eps, D, D, None, f"(D={D:g} m, eps={eps:g})")


def custom_distinguishability(fn: Callable[[np.ndarray], np.ndarray], *, scale: float,
                              name: str = "custom") -> Distinguishability:
    """A user ``l(d)``: vectorized, non-decreasing, ``>= 0`` (``inf`` allowed).

    ``scale`` (metres) is the length over which l changes appreciably; it sets
    the probe and integration grids. Monotonicity is checked on a grid from
    ``1e-6 scale`` to ``1e3 scale``: a decreasing l is rejected.

    Examples
    --------
    >>> l = custom_distinguishability(lambda d: 0.01 * d + 0.5 * (d > 0), scale=100.0)
    >>> float(l(100.0))
    1.5
    """
    scale = check_positive(scale, "scale")
    if not callable(fn):
        raise ParameterError(f"l must be callable, got {fn!r}")
    _check_monotone(fn, "l (distinguishability)", scale, allow_inf=True)
    return Distinguishability("custom", math.nan, math.inf, scale, fn, name)


# --------------------------------------------------------------------------- loss functions

@dataclass(frozen=True)
class Loss:
    """A loss function ``L(d) >= 0``, non-decreasing in the distance ``d`` (metres).

    ``breakpoints`` lists distances where L jumps (for integration).
    """

    name: str
    fn: Callable[[np.ndarray], np.ndarray] = field(repr=False, compare=False)
    breakpoints: tuple[float, ...] = ()

    def __call__(self, d: Any) -> np.ndarray:
        return np.asarray(self.fn(np.asarray(d, dtype=np.float64)), dtype=np.float64)


def distance_loss() -> Loss:
    """``L(d) = d`` (metres)."""
    return Loss("distance", lambda d: d)


def squared_loss() -> Loss:
    """``L(d) = d^2``."""
    return Loss("squared", lambda d: d * d)


def power_loss(p: float) -> Loss:
    """``L(d) = d^p`` for ``p > 0``."""
    p = check_positive(p, "p")
    if p > POWER_MAX:  # power:1e300 printed an overflow warning and "expected_loss": inf
        raise ParameterError(f"power loss exponent {p:g} is above {POWER_MAX}: d^p overflows "
                             "float64 at the distances the noise reaches")
    return Loss(f"power({p:g})", lambda d: d ** p)


#: The largest exponent of :func:`power_loss` (10^5 m to the 20th is 1e100, far from overflow)
POWER_MAX = 20


def threshold_loss(delta: float) -> Loss:
    """Step loss: ``L(d) = 1`` if ``d > delta`` else 0 (the service fails beyond delta metres)."""
    delta = check_positive(delta, "delta")
    return Loss(f"threshold({delta:g})", lambda d: (d > delta).astype(np.float64), (delta,))


def custom_loss(fn: Callable[[np.ndarray], np.ndarray], *, scale: float,
                name: str = "custom", breakpoints: Any = ()) -> Loss:
    """A user loss: vectorized, finite, non-decreasing, ``>= 0`` (checked on a grid).

    ``breakpoints`` lists distances where L jumps or has a kink (integration splits there).

    Examples
    --------
    >>> L = custom_loss(lambda d: np.minimum(d, 1000.0), scale=1000.0)
    >>> float(L(5000.0))
    1000.0
    """
    scale = check_positive(scale, "scale")
    if not callable(fn):
        raise ParameterError(f"loss must be callable, got {fn!r}")
    _check_monotone(fn, "loss", scale, allow_inf=False)
    bps = tuple(float(b) for b in np.asarray(breakpoints, dtype=np.float64).reshape(-1))
    return Loss(name, fn, bps)


def make_loss(spec: str) -> Loss:
    """Parse ``distance``, ``squared``, ``power:P`` or ``threshold:DELTA`` (CLI helper)."""
    s = str(spec).strip().lower()
    if s in ("distance", "d", "l1"):
        return distance_loss()
    if s in ("squared", "d2", "sq"):
        return squared_loss()
    if s.startswith("power:"):
        return power_loss(_num(s[6:], "loss power"))
    if s.startswith("threshold:"):
        return threshold_loss(_num(s[10:], "loss threshold"))
    raise ParameterError(f"loss: unknown {spec!r}; use distance, squared, power:P or threshold:DELTA")


def _num(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ParameterError(f"{what}: expected a number, got {text!r}") from None


# --------------------------------------------------------------------------- noise functions

class CircularNoise:
    """A circular noise function ``F(mu) = R(|mu|) / Z`` on the plane.

    Subclasses implement :meth:`log_radial` (``ln R``, unnormalized, ``-inf``
    where zero), :meth:`sample_radius`, and set :attr:`exact_sampler`.
    """

    name: str = "circular"
    exact_sampler: bool = False
    monotone: bool = True  # R non-increasing (used for the quadrature bracket)

    def log_radial(self, r: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def radial(self, r: Any) -> np.ndarray:
        """The unnormalized radial profile ``R(r)``."""
        return np.exp(self.log_radial(np.asarray(r, dtype=np.float64)))

    def breakpoints(self, r_hi: float) -> np.ndarray:
        """Radii ``< r_hi`` where R may jump (integration splits there)."""
        return np.zeros(0)

    def tail_radius(self, tol: float = 1e-13) -> float:
        """A radius beyond which the radius density carries mass below ``tol`` (generic search)."""
        s = self.scale
        r = 10 * s
        for _ in range(200):
            grid = np.linspace(r, 4 * r, 64)
            if np.all(self.radial(grid) * grid ** 3 * 2 * np.pi < tol * self._norm_rough()):
                return r
            r *= 1.5
        raise ParameterError(f"{self.name}: the radial density does not decay (not integrable?)")

    @property
    def scale(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def _norm_rough(self) -> float:
        r = np.linspace(0, 50 * self.scale, 20001)
        return float(np.trapezoid(self.radial(r) * 2 * np.pi * r, r))

    def normalizer(self) -> float:
        """``Z = int R(|mu|) dmu = 2 pi int R(r) r dr``."""
        return expected_loss(self, Loss("one", lambda d: np.ones_like(d)), _raw=True)[1]

    def density(self, xy: Any) -> np.ndarray:
        """The normalized planar density at noise vectors ``xy`` of shape ``(n, 2)``."""
        a = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        return self.radial(np.hypot(a[:, 0], a[:, 1])) / self.normalizer()

    def radius_pdf(self, r: Any) -> np.ndarray:
        """Density of the noise length ``|mu|``: ``2 pi r R(r) / Z``."""
        r = np.asarray(r, dtype=np.float64)
        return np.where(r >= 0, 2 * np.pi * r * self.radial(np.maximum(r, 0)) / self.normalizer(), 0.0)

    def radius_cdf(self, r: Any) -> np.ndarray:
        """CDF of the noise length (numerical unless overridden)."""
        r = np.atleast_1d(np.asarray(r, dtype=np.float64))
        grid, cdf = self._cdf_table()
        return np.interp(r, grid, cdf, left=0.0, right=1.0)

    def _cdf_table(self, n: int = 200_001) -> tuple[np.ndarray, np.ndarray]:
        cached = getattr(self, "_cdf_cache", None)
        if cached is not None:
            return cached
        hi = self.tail_radius()
        grid = np.unique(np.concatenate((np.linspace(0.0, hi, n), self.breakpoints(hi),
                                         np.nextafter(self.breakpoints(hi), np.inf))))
        f = 2 * np.pi * grid * self.radial(grid)
        cum = np.concatenate(([0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(grid))))
        table = (grid, cum / cum[-1])
        self._cdf_cache = table
        return table

    def sample_radius(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Numerical sampler: inverse of the tabulated radius CDF (linear interpolation).

        The table has 2e5 trapezoid cells up to :meth:`tail_radius` (mass
        beyond below 1e-13); the sampled CDF differs from the true one by the
        trapezoid error (about ``h^2 max|f'|`` per cell).
        """
        grid, cdf = self._cdf_table()
        u = rng.uniform(size=size)
        return np.interp(u, cdf, grid)

    def sample(self, size: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """Noise vectors, shape ``(size, 2)``: uniform angle and a radius from :meth:`sample_radius`."""
        size = check_int(size, "size", minimum=0)
        rng = make_rng(rng)
        theta = rng.uniform(0.0, 2 * np.pi, size=size)
        r = self.sample_radius(size, rng)
        return np.column_stack((r * np.cos(theta), r * np.sin(theta)))

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "exact_sampler": self.exact_sampler}


class PlanarLaplace(CircularNoise):
    """Planar Laplace noise: density ``eps^2 / (2 pi) exp(-eps |mu|)``.

    The noise length is Gamma(2, 1/eps) (equivalently the Lambert-W inverse
    CDF ``-(W_{-1}((p - 1)/e) + 1) / eps``); sampling is exact up to float64.
    ``eps`` is per metre.

    Examples
    --------
    >>> n = PlanarLaplace(0.01)
    >>> round(float(n.radius_cdf(200.0)[0]), 4)
    0.594
    >>> n.sample(3, rng=make_rng(seed=0)).shape
    (3, 2)
    """

    exact_sampler = True

    def __init__(self, epsilon: float):
        self.epsilon = geo_epsilon(epsilon, "epsilon")  # per metre, at least GEO_EPSILON_MIN
        self.name = f"planar-laplace(eps={self.epsilon:g})"

    @property
    def scale(self) -> float:
        return 1.0 / self.epsilon

    def log_radial(self, r: np.ndarray) -> np.ndarray:
        return -self.epsilon * r

    def normalizer(self) -> float:
        return 2 * np.pi / self.epsilon ** 2

    def radius_cdf(self, r: Any) -> np.ndarray:
        r = np.maximum(np.atleast_1d(np.asarray(r, dtype=np.float64)), 0.0)
        er = self.epsilon * r
        return -np.expm1(-er) - er * np.exp(-er)

    def tail_radius(self, tol: float = 1e-13) -> float:
        # P(|mu| > r) = (1 + eps r) exp(-eps r)
        return 40.0 / self.epsilon

    def sample_radius(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.gamma(2.0, 1.0 / self.epsilon, size=size)

    def describe(self) -> dict[str, Any]:
        return {"name": "planar-laplace", "epsilon": self.epsilon, "exact_sampler": True}


#: most rings of a (D, eps) staircase that :class:`TightNoise` integrates: about
#: ``45 / (slope eps)``; at eps = 1e-4 the search tried to allocate 34 GiB and at 1e-3 it ran
#: for minutes
TIGHT_MAX_RINGS = 1_000_000


class TightNoise(CircularNoise):
    """The parametric family ``R(r) = exp(-slope * l*((r - core)+))``.

    Parameters
    ----------
    l : Distinguishability
    core : float, default 0
        Radius (metres) of the flat core.
    slope : float in (0, 1], default 1
        Fraction of the steepest decay allowed by l.
    max_step : float, default inf
        Longest displacement to protect (a region's diameter); ``l*`` is
        built from steps of at most this length.

    Why every member is l-private on the plane: ``l*`` is non-decreasing and
    sub-additive with ``l*(d) <= l(d)``; for ``t > s``,
    ``(t - core)+ <= (s - core)+ + (t - s)`` so
    ``ln R(s) - ln R(t) <= slope * l*(t - s) <= l(t - s)``, and ``R`` is
    non-increasing so ``ln R(t) - ln R(s) <= 0``. By the reduction in the
    module docstring this is the whole l-privacy condition. (For a custom l,
    ``l*`` is tabulated on a grid; use :func:`check_lprivacy` to verify.)

    Members: geo with ``core=0, slope=1`` is :class:`PlanarLaplace`; (D, eps)
    gives the circular staircase ``R = exp(-slope eps k)`` for
    ``core + (k-1) D < r <= core + k D``.

    Sampling is exact (up to float64) for geo (mixture of a uniform disc,
    an Exp and a Gamma(2) radius) and (D, eps) (the step index from its
    discrete distribution, truncated where the remaining mass is below
    1e-17, then ``r = sqrt(a^2 + U (b^2 - a^2))``); numerical otherwise.

    Examples
    --------
    >>> stair = TightNoise(d_epsilon_privacy(100.0, 1.0), core=50.0)
    >>> float(stair.radial([10.0, 60.0, 160.0])[2]) == math.exp(-2.0)
    True
    """

    def __init__(self, l: Distinguishability, *, core: float = 0.0, slope: float = 1.0,
                 max_step: float = math.inf):
        if not isinstance(l, Distinguishability):
            raise ParameterError(f"l must be a Distinguishability, got {l!r}")
        if not (isinstance(core, int | float | np.integer | np.floating) and math.isfinite(core)
                and core >= 0):
            raise ParameterError(f"core must be finite and >= 0, got {core!r}")
        if not (isinstance(slope, int | float | np.integer | np.floating) and 0 < slope <= 1):
            raise ParameterError(f"slope must be in (0, 1], got {slope!r}")
        if not (isinstance(max_step, int | float | np.integer | np.floating) and max_step > 0):
            raise ParameterError(f"max_step must be > 0, got {max_step!r}")
        if l.kind == "d-eps":
            rings = math.ceil(45.0 / (float(slope) * l.epsilon)) + 5
            if rings > TIGHT_MAX_RINGS:
                need = 45.0 / (float(slope) * (TIGHT_MAX_RINGS - 5))
                raise ParameterError(
                    f"epsilon = {l.epsilon:g} for (D, eps)-privacy (at slope {float(slope):g}) "
                    f"makes a staircase of {rings:,} rings of width D before its tail; at most "
                    f"{TIGHT_MAX_RINGS:,} are integrated: use epsilon >= {need:.3g}, or "
                    f"geo-indistinguishability with epsilon / D = {l.epsilon / l.D:.3g} per "
                    f"metre (--privacy geo), which implies (D, eps)-privacy")
        self.l = l
        self.core = float(core)
        self.slope = float(slope)
        self.max_step = float(max_step)
        self.exact_sampler = l.kind in ("geo", "d-eps")
        self.name = f"tight[{l.name}](core={self.core:g}, slope={self.slope:g})"

    @property
    def scale(self) -> float:
        return self.l.scale

    @property
    def _step(self) -> float:
        return min(self.l.D, self.max_step)

    def log_radial(self, r: np.ndarray) -> np.ndarray:
        r = np.asarray(r, dtype=np.float64)
        return -self.slope * self.l.tight(np.maximum(r - self.core, 0.0), max_step=self.max_step)

    def breakpoints(self, r_hi: float) -> np.ndarray:
        if self.l.kind == "d-eps":
            return self.core + self._step * np.arange(0, max(0, int((r_hi - self.core) / self._step)) + 1)
        return np.array([self.core]) if self.core > 0 else np.zeros(0)

    def tail_radius(self, tol: float = 1e-13) -> float:
        if self.l.kind == "geo":
            lam = self.slope * self.l.epsilon
            return self.core + 45.0 / lam
        if self.l.kind == "d-eps":
            q = self.slope * self.l.epsilon
            steps = math.ceil(45.0 / q) + 5
            return self.core + steps * self._step
        return super().tail_radius(tol)

    # ----- exact normalizer and sampler for the two named l
    def _d_eps_masses(self) -> tuple[float, np.ndarray]:
        """Radius mass of the core and of each step k = 1..K (unnormalized, over 2 pi)."""
        lq = self.slope * self.l.epsilon
        D, c = self._step, self.core
        K = int(math.ceil(40.0 / lq * 1.0)) + int(math.ceil(2 * math.log(2 + 40.0 / lq) / lq)) + 10
        k = np.arange(1, K + 1, dtype=np.float64)
        masses = np.exp(-lq * k) * D * (2 * c + (2 * k - 1) * D) / 2
        return c * c / 2, masses

    def normalizer(self) -> float:
        if self.l.kind == "geo":
            lam, c = self.slope * self.l.epsilon, self.core
            return 2 * np.pi * (c * c / 2 + c / lam + 1 / lam ** 2)
        if self.l.kind == "d-eps":
            core, masses = self._d_eps_masses()
            return 2 * np.pi * (core + float(masses.sum()))
        return super().normalizer()

    def sample_radius(self, size: int, rng: np.random.Generator) -> np.ndarray:
        c = self.core
        if self.l.kind == "geo":
            lam = self.slope * self.l.epsilon
            w = np.array([c * c / 2, c / lam, 1 / lam ** 2])
            comp = rng.choice(3, size=size, p=w / w.sum())
            u = rng.uniform(size=size)
            r = np.empty(size)
            m0, m1, m2 = comp == 0, comp == 1, comp == 2
            r[m0] = c * np.sqrt(u[m0])
            r[m1] = c + rng.exponential(1 / lam, size=int(m1.sum()))
            r[m2] = c + rng.gamma(2.0, 1 / lam, size=int(m2.sum()))
            return r
        if self.l.kind == "d-eps":
            core, masses = self._d_eps_masses()
            p = np.concatenate(([core], masses))
            cdf = np.cumsum(p) / p.sum()
            k = np.minimum(np.searchsorted(cdf, rng.uniform(size=size), side="right"), len(p) - 1)
            D = self._step
            lo = np.where(k == 0, 0.0, c + (k - 1) * D)
            hi = np.where(k == 0, c, c + k * D)
            u = rng.uniform(size=size)
            return np.sqrt(lo * lo + u * (hi * hi - lo * lo))
        return super().sample_radius(size, rng)

    def describe(self) -> dict[str, Any]:
        return {"name": "tight", "l": self.l.to_dict(), "core": self.core, "slope": self.slope,
                "max_step": _finite_or_none(self.max_step), "exact_sampler": self.exact_sampler}


class RadialNoise(CircularNoise):
    """A user-defined circular noise function from its radial profile ``R(r)``.

    Parameters
    ----------
    radial : callable
        Vectorized ``R(r) >= 0`` (unnormalized) for ``r >= 0``; it must be
        integrable against ``r`` (the tail is searched up to 1e60 x scale).
    scale : float
        A typical radius in metres (sets the integration and sampling grids).
    monotone : bool, default False
        Declare ``R`` non-increasing (it is checked) to get the rigorous
        quadrature bracket in :func:`expected_loss`.
    breakpoints : sequence of float, optional
        Radii where ``R`` jumps.

    Sampling is numerical (tabulated inverse CDF, see
    :meth:`CircularNoise.sample_radius`).

    Examples
    --------
    >>> soft = RadialNoise(lambda r: (1 + 0.01 * r / 2) ** 2 * np.exp(-0.01 * r), scale=100.0)
    >>> soft.sample(2, rng=make_rng(seed=0)).shape
    (2, 2)
    """

    def __init__(self, radial: Callable[[np.ndarray], np.ndarray], *, scale: float,
                 monotone: bool = False, breakpoints: Any = (), name: str = "radial"):
        if not callable(radial):
            raise ParameterError(f"radial must be callable, got {radial!r}")
        self._scale = check_positive(scale, "scale")
        self._fn = radial
        self.name = name
        self._bp = np.sort(np.asarray(breakpoints, dtype=np.float64).reshape(-1))
        r = _probe_grid(self._scale)
        v = np.asarray(radial(r), dtype=np.float64)
        if v.shape != r.shape:
            raise ParameterError("radial must be vectorized (one value per radius)")
        if not np.isfinite(v).all() or (v < 0).any():
            raise ParameterError("radial must return finite values >= 0")
        if not (v > 0).any():
            raise ParameterError("radial is zero everywhere (not a density)")
        if monotone and (np.diff(v) > 1e-12 * np.maximum(v[:-1], 1e-300)).any():
            raise ParameterError("radial was declared monotone but increases somewhere")
        self.monotone = bool(monotone)

    @property
    def scale(self) -> float:
        return self._scale

    def log_radial(self, r: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(np.asarray(self._fn(np.asarray(r, dtype=np.float64)), dtype=np.float64))

    def radial(self, r: Any) -> np.ndarray:
        return np.asarray(self._fn(np.asarray(r, dtype=np.float64)), dtype=np.float64)

    def breakpoints(self, r_hi: float) -> np.ndarray:
        return self._bp[self._bp < r_hi]


# --------------------------------------------------------------------------- expected loss

@dataclass(frozen=True)
class Integral:
    """An expected loss with its numerical error bound.

    ``value`` is the Gauss-Legendre estimate; ``error`` bounds ``|value - truth|``:
    for non-increasing ``R`` and non-decreasing ``L`` it comes from rigorous
    lower/upper Riemann sums on ``[0, r_hi]`` (``bracket``) plus the truncated
    tail mass (below ``tail`` relative); otherwise it is the difference
    between two quadrature refinements (an estimate).
    """

    value: float
    error: float
    bracket: tuple[float, float] | None
    method: str


#: most Gauss-Legendre pieces (of 8 nodes) per integral of :func:`expected_loss`: with many
#: intervals (the rings of a (D, eps) staircase), fewer pieces per interval
GL_MAX_PIECES = 1 << 20


def _gl_pieces(edges: np.ndarray, m: int) -> int:
    """Pieces per interval: ``m``, or fewer (at least 1) when ``len(edges) - 1`` intervals
    would pass :data:`GL_MAX_PIECES`. The integrand is smooth inside an interval (the edges
    are its jumps and kinks), so one 8-point piece per ring of width D is already accurate;
    the refinement (twice the pieces) still estimates the error."""
    return max(1, min(int(m), GL_MAX_PIECES // max(1, len(edges) - 1)))


def _gl_integrate(f: Callable[[np.ndarray], np.ndarray], edges: np.ndarray, m: int) -> float:
    """Composite 8-point Gauss-Legendre with each [edges[i], edges[i+1]] cut into m pieces."""
    x, w = np.polynomial.legendre.leggauss(8)
    lo, hi = edges[:-1], edges[1:]
    t = np.linspace(0.0, 1.0, m + 1)
    a = (lo[:, None] + (hi - lo)[:, None] * t[None, :-1]).ravel()
    b = (lo[:, None] + (hi - lo)[:, None] * t[None, 1:]).ravel()
    mid, half = (a + b) / 2, (b - a) / 2
    nodes = mid[:, None] + half[:, None] * x[None, :]
    return float(np.sum(f(nodes) * w[None, :] * half[:, None]))


def expected_loss(noise: CircularNoise, loss: Loss, *, m: int = 64, n_bracket: int = 400_001,
                  bracket: bool = True, error: bool = True,
                  _raw: bool = False) -> Integral | tuple[float, float]:
    """Expected loss ``E[L(|mu|)]`` of a circular noise function, with an error bound.

    ``E[L] = int_0^inf L(r) R(r) r dr / int_0^inf R(r) r dr``, integrated on
    ``[0, r_hi]`` (``r_hi = noise.tail_radius()``: the radius mass beyond is
    below 1e-13) by composite 8-point Gauss-Legendre split at the jumps of R
    and L. When R is non-increasing and L non-decreasing, lower and upper
    Riemann sums over ``n_bracket`` points give a rigorous bracket of both
    integrals on ``[0, r_hi]``, hence of their ratio. Each interval between jumps is cut
    into ``m`` pieces, fewer when there are many intervals (:data:`GL_MAX_PIECES`);
    ``error=False`` skips the error estimate (``error`` is then NaN).

    Examples
    --------
    >>> e = expected_loss(PlanarLaplace(0.01), distance_loss())
    >>> round(e.value, 6), e.error < 0.1
    (200.0, True)
    """
    if not isinstance(noise, CircularNoise):
        raise ParameterError(f"noise must be a CircularNoise, got {noise!r}")
    if not isinstance(loss, Loss):
        raise ParameterError(f"loss must be a Loss, got {loss!r}")
    hi = noise.tail_radius()
    bps = [0.0, hi, *noise.breakpoints(hi).tolist(), *[b for b in loss.breakpoints if b < hi]]
    edges = np.unique(np.clip(np.asarray(bps, dtype=np.float64), 0.0, hi))

    def num_f(r):
        return loss(r) * noise.radial(r) * r

    def den_f(r):
        return noise.radial(r) * r

    k = _gl_pieces(edges, m)
    den = _gl_integrate(den_f, edges, k)
    num = _gl_integrate(num_f, edges, k)
    if _raw:
        return num * 2 * np.pi, den * 2 * np.pi
    if den > 0 and math.isfinite(den) and not math.isfinite(num):
        raise ParameterError(f"{loss.name}: the loss overflows float64 over {noise.name}'s "
                             "support; use a loss that grows more slowly")
    if not (den > 0 and math.isfinite(den) and math.isfinite(num)):
        # e^{-slope eps} underflows beyond eps ~ 745 with no flat core (ZeroDivisionError)
        raise ParameterError(f"{noise.name}: its density underflows (or overflows) in float64, so "
                             "its expected loss cannot be computed; a noise with a flat core "
                             "(core > 0) or a smaller epsilon can")
    value = num / den
    if not error:  # the search compares values only
        return Integral(value, math.nan, None, "gauss-legendre (no error estimate)")
    num2 = _gl_integrate(num_f, edges, 2 * k)
    den2 = _gl_integrate(den_f, edges, 2 * k)
    est = abs(num2 / den2 - value)
    if noise.monotone and bracket:
        g = np.unique(np.concatenate((np.linspace(0.0, hi, n_bracket), edges)))
        Rg = noise.radial(g)
        Lg = loss(g)
        dr = np.diff(g)
        den_lo = float(np.sum(Rg[1:] * g[:-1] * dr))
        den_hi = float(np.sum(Rg[:-1] * g[1:] * dr))
        num_lo = float(np.sum(Lg[:-1] * Rg[1:] * g[:-1] * dr))
        num_hi = float(np.sum(Lg[1:] * Rg[:-1] * g[1:] * dr))
        # the tail beyond hi carries < 1e-13 of the radius mass; its loss share is
        # bounded by the GL estimate of int_hi^{4 hi} (checked small), added to the upper end
        tail = _gl_integrate(num_f, np.array([hi, 4 * hi]), m) / den_lo
        lo_b, hi_b = num_lo / den_hi, num_hi / den_lo + tail
        err = max(value - lo_b, hi_b - value, est)
        return Integral(value, err, (lo_b, hi_b), "gauss-legendre + Riemann bracket")
    return Integral(value, est, None, "gauss-legendre (refinement difference)")


# --------------------------------------------------------------------------- l-privacy checks

def displacement_lengths(region: Region | None = None, points: Any = None) -> tuple[float, np.ndarray | None]:
    """Lengths of the displacement set ``V_X``: ``(max, finite set or None)``.

    A connected region gives ``[0, diameter]`` (returned as ``(diameter, None)``);
    a finite point set gives its pairwise distances; neither means the whole
    plane (``(inf, None)``).
    """
    if region is not None and points is not None:
        raise ParameterError("give a region or points, not both")
    if region is not None:
        if not isinstance(region, Region):
            raise ParameterError(f"region must be a Region, got {region!r}")
        return region.diameter, None
    if points is not None:
        from .geometry import pairwise_distances
        d = pairwise_distances(points)
        vals = np.unique(d[d > 0])
        return float(vals.max(initial=0.0)), vals
    return math.inf, None


@dataclass(frozen=True)
class LPrivacyCheck:
    """Result of :func:`check_lprivacy`.

    ``worst_excess`` is ``max(ln R(s) - ln R(t) - l(|s - t|))`` found (``<= tol`` iff
    satisfied), at radii ``where = (s, t)``.
    """

    satisfied: bool
    worst_excess: float
    where: tuple[float, float]
    max_displacement: float
    method: str

    def __bool__(self) -> bool:
        return self.satisfied


def check_lprivacy(noise: CircularNoise, l: Distinguishability, *, region: Region | None = None,
                   points: Any = None, r_max: float | None = None, n: int = 3001,
                   tol: float = 1e-9) -> LPrivacyCheck:
    """Check that a circular noise function satisfies l-privacy on a region, points or the plane.

    Uses the one-dimensional reduction of the module docstring: for all noise
    radii ``s, t`` with ``|s - t|`` a displacement length,
    ``ln R(s) - ln R(t) <= l(|s - t|)``. Radii are checked on a grid of ``n``
    points over ``[0, r_max]`` (default: the noise's tail radius) plus every
    jump of R and the points just after it; for a finite point set each
    pairwise distance ``r`` is checked with the reachable band
    ``|s - r| <= t <= s + r``. The check is numerical (a grid); :class:`TightNoise`
    members are private by construction (see its docstring).

    Examples
    --------
    >>> l = geo_indistinguishability(0.01)
    >>> bool(check_lprivacy(PlanarLaplace(0.01), l))
    True
    >>> bool(check_lprivacy(PlanarLaplace(0.02), l))
    False
    """
    if not isinstance(noise, CircularNoise):
        raise ParameterError(f"noise must be a CircularNoise, got {noise!r}")
    if not isinstance(l, Distinguishability):
        raise ParameterError(f"l must be a Distinguishability, got {l!r}")
    n = check_int(n, "n", minimum=10)
    dmax, finite = displacement_lengths(region, points)
    hi = noise.tail_radius() if r_max is None else check_positive(r_max, "r_max")
    bp = noise.breakpoints(hi)
    eps_bp = hi * 1e-9
    s = np.unique(np.concatenate((np.linspace(0.0, hi, n), bp, bp + eps_bp,
                                  np.maximum(bp - eps_bp, 0))))
    ln = noise.log_radial(s)
    worst, where = -np.inf, (0.0, 0.0)
    if finite is None:
        # all pairs (s_i, s_j) with |s_i - s_j| <= dmax, vectorized by rows
        for i in range(len(s)):
            d = np.abs(s - s[i])
            ok = d <= dmax
            with np.errstate(invalid="ignore"):
                ex = ln[i] - ln[ok] - l(d[ok])
            ex = np.where(np.isnan(ex), -np.inf, ex)
            j = int(np.argmax(ex))
            if ex[j] > worst:
                worst, where = float(ex[j]), (float(s[i]), float(s[ok][j]))
        method = "grid over radii (1-d reduction), lengths [0, %s]" % dmax
    else:
        for r in finite:
            lr = float(l(np.array([r]))[0])
            for i in range(len(s)):
                band = (s >= abs(s[i] - r)) & (s <= s[i] + r)
                if not band.any():
                    continue
                j = int(np.argmin(np.where(band, ln, np.inf)))
                ex = ln[i] - ln[j] - lr
                if ex > worst:
                    worst, where = float(ex), (float(s[i]), float(s[j]))
        method = "grid over radii for each pairwise distance"
    return LPrivacyCheck(bool(worst <= tol), float(worst), where, float(dmax), method)


# --------------------------------------------------------------------------- optimal noise search

@dataclass(frozen=True)
class OptimalNoise:
    """Result of :func:`optimal_noise`.

    Attributes
    ----------
    noise : TightNoise
        The best member found.
    expected_loss : Integral
        Its expected loss with the error bound.
    core, slope : float
        Its parameters.
    candidates : numpy.ndarray
        ``(k, 3)`` rows ``(core, slope, expected loss)`` of every member evaluated.
    is_planar_laplace : bool
        ``True`` when l is geo-indistinguishability and the optimum is
        ``core = 0, slope = 1`` (planar Laplace).
    """

    noise: TightNoise
    expected_loss: Integral
    core: float
    slope: float
    candidates: np.ndarray
    is_planar_laplace: bool

    def to_dict(self) -> dict[str, Any]:
        return {"noise": self.noise.describe(), "expected_loss": self.expected_loss.value,
                "expected_loss_error": self.expected_loss.error, "core": self.core,
                "slope": self.slope, "is_planar_laplace": self.is_planar_laplace,
                "n_candidates": int(len(self.candidates))}


def optimal_noise(l: Distinguishability, loss: Loss, *, max_step: float = math.inf,
                  cores: Any = None, slopes: Any = None, refine: bool = True) -> OptimalNoise:
    """The member of the :class:`TightNoise` family with the least expected loss.

    Every member satisfies l-privacy on the plane (hence on any region whose
    displacement lengths are at most ``max_step``). The search evaluates a
    grid of ``cores`` (default 0 to 3 x ``l.scale`` in 40 steps) times
    ``slopes`` (default 0.25 .. 1), then refines the core by a bounded scalar
    minimization at the best slope. For eps-geo-indistinguishability the
    optimum is planar Laplace (``core = 0, slope = 1``) for every
    non-decreasing loss: any l-private circular ``R`` has ``R(r) e^{eps r}``
    non-decreasing, so its radius dominates the Laplace radius in likelihood
    ratio order. For (D, eps)-location privacy the optimum is a staircase
    whose first step radius depends on the loss.

    Examples
    --------
    >>> opt = optimal_noise(geo_indistinguishability(0.01), distance_loss())
    >>> opt.is_planar_laplace, round(opt.expected_loss.value, 3)
    (True, 200.0)
    """
    from scipy.optimize import minimize_scalar

    if not isinstance(l, Distinguishability):
        raise ParameterError(f"l must be a Distinguishability, got {l!r}")
    if not isinstance(loss, Loss):
        raise ParameterError(f"loss must be a Loss, got {loss!r}")
    cores = np.linspace(0.0, 3 * l.scale, 41) if cores is None else np.asarray(cores, dtype=float)
    slopes = np.array([0.25, 0.5, 0.75, 0.9, 1.0]) if slopes is None else np.asarray(slopes, dtype=float)
    if cores.size == 0 or slopes.size == 0 or (cores < 0).any() or (slopes <= 0).any() or (slopes > 1).any():
        raise ParameterError("cores must be >= 0 and slopes in (0, 1], both non-empty")

    def f(c: float, a: float) -> float:
        try:
            return expected_loss(TightNoise(l, core=c, slope=a, max_step=max_step), loss,
                                 m=32, bracket=False, error=False).value
        except ParameterError as exc:  # a member float64 cannot evaluate: not a candidate
            if "underflows" not in str(exc):
                raise
            return math.inf

    rows = [(float(c), float(a), f(float(c), float(a))) for a in slopes for c in cores]
    table = np.array(rows)
    if not np.isfinite(table[:, 2]).any():
        raise ParameterError(f"{l.name}: no noise of the family can be evaluated in float64 "
                             "(every density underflows); use a smaller epsilon (for (D, eps), "
                             "or a larger radius D)")
    best = int(np.argmin(table[:, 2]))
    c0, a0, v0 = table[best]
    if refine and cores.size > 1:
        step = float(np.max(np.diff(np.sort(cores))))
        lo, hi = max(0.0, c0 - step), c0 + step
        res = minimize_scalar(lambda c: f(c, a0), bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-4 * l.scale})
        extra = [(float(res.x), a0, float(res.fun))]
        if lo == 0.0:
            extra.append((0.0, a0, f(0.0, a0)))
        table = np.vstack((table, np.array(extra)))
        best = int(np.argmin(table[:, 2]))
        c0, a0, v0 = table[best]
    noise = TightNoise(l, core=float(c0), slope=float(a0), max_step=max_step)
    integral = expected_loss(noise, loss)
    is_pl = l.kind == "geo" and c0 <= 1e-9 * l.scale and a0 == 1.0
    return OptimalNoise(noise, integral, float(c0), float(a0), table, bool(is_pl))


def check_lprivacy_planar(log_density: Callable[[np.ndarray], np.ndarray], l: Distinguishability,
                          *, region: Region | None = None, extent: float, n_grid: int = 161,
                          n_displacements: int = 256, rng: np.random.Generator | None = None,
                          tol: float = 1e-9) -> LPrivacyCheck:
    """Check l-privacy of a general (not necessarily circular) noise function on a region.

    Evaluates ``ln F(mu) - ln F(mu + u) - l(|u|)`` for ``mu`` on an ``n_grid`` x
    ``n_grid`` grid over ``[-extent, extent]^2`` and displacements ``u`` from
    the region's displacement set ``V_X = X - X`` (differences of uniform
    points of X, the differences of its bounding-box corners, and their
    negatives); without a region, ``u`` covers a polar grid up to ``extent``
    (the whole plane, as far as the grid reaches). Numerical: a grid and a
    sample of V_X, so it can miss a violation between grid points.

    Parameters
    ----------
    log_density : callable
        ``ln F`` at noise vectors of shape ``(k, 2)`` (unnormalized is fine).

    Examples
    --------
    >>> from veil.geo.geometry import Box
    >>> l1 = lambda v: -0.01 * (np.abs(v[:, 0]) + np.abs(v[:, 1]))   # per-axis Laplace
    >>> check_lprivacy_planar(l1, geo_indistinguishability(0.01), region=Box(0, 0, 100, 100),
    ...                       extent=500.0, rng=make_rng(seed=0)).satisfied
    False
    """
    if not isinstance(l, Distinguishability):
        raise ParameterError(f"l must be a Distinguishability, got {l!r}")
    extent = check_positive(extent, "extent")
    n_grid = check_int(n_grid, "n_grid", minimum=5)
    rng = make_rng(rng)
    g = np.linspace(-extent, extent, n_grid)
    gx, gy = np.meshgrid(g, g)
    mu = np.column_stack((gx.ravel(), gy.ravel()))
    if region is not None:
        if not isinstance(region, Region):
            raise ParameterError(f"region must be a Region, got {region!r}")
        a = region.sample_uniform(n_displacements, rng)
        b = region.sample_uniform(n_displacements, rng)
        xmin, ymin, xmax, ymax = region.bounds
        corners = np.array([[xmin, ymin], [xmax, ymin], [xmax, ymax], [xmin, ymax]])
        extra = (corners[:, None, :] - corners[None, :, :]).reshape(-1, 2)
        verts = getattr(region, "vertices", None)
        inside = region.contains(corners)        # corner differences only when both are in X
        extra = extra[np.repeat(inside, 4) & np.tile(inside, 4)]
        if verts is not None:
            extra = np.vstack((extra, (verts[:, None, :] - verts[None, :, :]).reshape(-1, 2)))
        U = np.vstack((b - a, extra))
        U = np.vstack((U, -U))
        dmax = region.diameter
    else:
        rad = np.linspace(extent / 32, extent, 16)
        ang = np.linspace(0, 2 * np.pi, 32, endpoint=False)
        U = (rad[:, None, None] * np.stack((np.cos(ang), np.sin(ang)), axis=1)[None]).reshape(-1, 2)
        dmax = math.inf
    U = U[np.hypot(U[:, 0], U[:, 1]) > 0]
    base = np.asarray(log_density(mu), dtype=np.float64)
    worst, where = -np.inf, (0.0, 0.0)
    lu = l(np.hypot(U[:, 0], U[:, 1]))
    for k in range(len(U)):
        shifted = np.asarray(log_density(mu + U[k]), dtype=np.float64)
        with np.errstate(invalid="ignore"):
            ex = base - shifted - lu[k]
        ex = np.where(np.isnan(ex), -np.inf, ex)
        i = int(np.argmax(ex))
        if ex[i] > worst:
            worst, where = float(ex[i]), (float(U[k, 0]), float(U[k, 1]))
    return LPrivacyCheck(bool(worst <= tol), float(worst), where, float(dmax),
                         "2-d grid of noise vectors x sampled displacements (where = worst u)")
