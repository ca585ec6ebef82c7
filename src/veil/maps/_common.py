"""Validation and small helpers shared by the map mechanisms."""

from __future__ import annotations

import math

import numpy as np

from ..budget import PureDP
from ..errors import ParameterError
from ..mechanisms import geometric_mechanism
from ..samplers import discrete_laplace_variance
from ..validation import check_epsilon, check_int, check_positive, check_probability

NEIGHBOURS = ("neighbouring maps differ by one protected unit (one person with at most "
              "`sensitivity` points, or one point): the cell counts change by at most "
              "`sensitivity` in L1 norm")

#: DPBench's share of the budget for a noisy number of points when no public scale is given
SCALE_FRACTION = 0.05


def as_budget(epsilon) -> PureDP:
    if isinstance(epsilon, PureDP):
        if math.isinf(epsilon.epsilon):
            raise ParameterError("epsilon must be finite for a map release, got inf")
        return epsilon
    return PureDP(check_epsilon(epsilon, "epsilon"))


def as_grid_counts(counts, name: str = "counts", *, batch: bool = False) -> np.ndarray:
    """A map's true counts: a 2-D (or, internally, batched ``(..., rows, cols)``) array of
    non-negative integers, returned as int64."""
    try:
        raw = np.asarray(counts)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{name} must be an array of counts: {exc}") from None
    if (raw.ndim < 2) if batch else (raw.ndim != 2):
        raise ParameterError(f"{name} must be a 2-D array (rows x cols) of counts, got shape "
                             f"{raw.shape}")
    if raw.size == 0:
        raise ParameterError(f"{name} is empty: a map needs at least one cell")
    if raw.dtype == bool or not np.issubdtype(raw.dtype, np.number):
        raise ParameterError(f"{name} must hold integer counts, got dtype {raw.dtype}")
    if np.issubdtype(raw.dtype, np.floating):
        bad = ~np.isfinite(raw)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ParameterError(f"{name}{list(idx)} must be finite, got {raw[idx]!r}")
        frac = raw != np.round(raw)
        if frac.any():
            idx = tuple(int(i) for i in np.argwhere(frac)[0])
            raise ParameterError(f"{name}{list(idx)} must be an integer count, got {raw[idx]!r}")
    x = raw.astype(np.int64)
    if (x < 0).any():
        idx = tuple(int(i) for i in np.argwhere(x < 0)[0])
        raise ParameterError(f"{name}{list(idx)} must be >= 0, got {x[idx]}")
    return x


def check_sensitivity(sensitivity) -> int:
    """The contribution bound: how many points one protected unit may add (an integer >= 1)."""
    return check_int(sensitivity, "sensitivity", minimum=1)


def noisy(values: np.ndarray, epsilon: float, sensitivity: int, rng) -> tuple[np.ndarray, float, float]:
    """Exact discrete Laplace of scale ``sensitivity / epsilon``; (noisy int64, variance, scale)."""
    rel = geometric_mechanism(np.asarray(values, dtype=np.int64), epsilon=epsilon,
                              sensitivity=float(sensitivity), rng=rng)
    return rel.value, float(rel.noise_variance), float(rel.noise_scale)


def dl_var(epsilon: float, sensitivity: int) -> float:
    return discrete_laplace_variance(sensitivity / epsilon)


def scale_estimate(x: np.ndarray, b: PureDP, *, scale, sensitivity: int, rng,
                   fraction: float = SCALE_FRACTION) -> tuple[float, PureDP, dict, str]:
    """The number of points a grid-size rule needs: public, or a noisy count.

    Returns ``(N, budget left for the mechanism, budget split entry, note)``. A public ``scale``
    (e.g. the population of a region, a previous release) costs nothing; otherwise ``fraction``
    of epsilon buys a noisy total (discrete Laplace, sensitivity ``sensitivity``), floored at 1.
    """
    if scale is not None:
        return check_positive(scale, "scale"), b, {}, "scale: public value given by the caller"
    if x.ndim != 2:
        raise ParameterError("a batch of maps needs a public scale (one noisy count per map "
                             "is not implemented for batches)")
    frac = check_probability(fraction, "scale_fraction", open_low=True, open_high=True)
    e_scale, e_rest = b.split([frac, 1.0 - frac])
    total, _, _ = noisy(np.array([int(x.sum())]), e_scale.epsilon, sensitivity, rng)
    est = max(1.0, float(total[0]))
    return (est, e_rest, {"scale": e_scale.epsilon},
            f"scale: noisy number of points {est:g} (epsilon {e_scale.epsilon:g})")


def grid_dims(m: float, rows: int, cols: int) -> tuple[int, int]:
    """A coarse grid of about ``m x m`` blocks over ``rows x cols`` cells (square blocks for a
    non-square grid), each side capped at the fine grid's."""
    m = max(1.0, float(m))
    a = math.sqrt(rows / cols)
    return (int(min(rows, max(1, math.ceil(m * a - 1e-9)))),
            int(min(cols, max(1, math.ceil(m / a - 1e-9)))))
