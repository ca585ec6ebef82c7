"""The one set of input checks used across veil.

Each check raises :class:`veil.errors.ParameterError` naming the parameter and
the value received, and returns the validated (converted) value.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np

from .errors import ParameterError

__all__ = [
    "EPSILON_MAX",
    "check_epsilon",
    "check_delta",
    "check_probability",
    "check_positive",
    "check_nonnegative",
    "check_int",
    "check_k",
    "check_finite_array",
    "check_counts",
    "check_probability_vector",
    "check_choice",
]


def _is_real(x: Any) -> bool:
    return isinstance(x, Real | np.floating | np.integer) and not isinstance(x, bool)


def check_positive(value: Any, name: str, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float, requiring it finite (unless ``allow_inf``) and > 0."""
    if not _is_real(value):
        raise ParameterError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if math.isnan(v):
        raise ParameterError(f"{name} must be a number > 0, got NaN")
    if math.isinf(v) and not (allow_inf and v > 0):
        raise ParameterError(f"{name} must be finite and > 0, got {v!r}")
    if v <= 0:
        raise ParameterError(f"{name} must be > 0, got {v!r}")
    return v


def check_nonnegative(value: Any, name: str) -> float:
    """Return ``value`` as a finite float >= 0."""
    if not _is_real(value):
        raise ParameterError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise ParameterError(f"{name} must be finite and >= 0, got {v!r}")
    return v


#: The largest epsilon veil accepts (pure DP, per timestamp, or per metre for geo budgets).
#: Above it the noise is far below the resolution of any published value, and the exact
#: discrete Laplace sampler's integer arithmetic (scale rounded to ``2**a / den`` with
#: ``den < 2**63``) overflows near 4e12; ``inf`` (no noise) is the honest way to ask for
#: no privacy, and only tests may (``allow_inf=True``).
EPSILON_MAX = 1e12


def check_epsilon(value: Any, name: str = "epsilon", *, allow_inf: bool = False) -> float:
    """Validate a privacy parameter epsilon: finite, > 0 and at most :data:`EPSILON_MAX`.

    ``allow_inf=True`` admits ``inf`` (no privacy, exact answer), used only by
    tests and deterministic limits.

    Examples
    --------
    >>> check_epsilon(0.5)
    0.5
    >>> check_epsilon(1e17, "--epsilon")
    Traceback (most recent call last):
    ...
    veil.errors.ParameterError: --epsilon must be at most 1e+12 (veil's upper limit: larger values add no meaningful noise and overflow the exact samplers), got 1e+17
    """
    v = check_positive(value, name, allow_inf=allow_inf)
    if v > EPSILON_MAX and not math.isinf(v):
        raise ParameterError(
            f"{name} must be at most {EPSILON_MAX:g} (veil's upper limit: larger values add no "
            f"meaningful noise and overflow the exact samplers), got {v:g}")
    return v


def check_delta(value: Any, name: str = "delta") -> float:
    """Validate delta in the open interval (0, 1)."""
    return check_probability(value, name, open_low=True, open_high=True)


def check_probability(value: Any, name: str, *, open_low: bool = False,
                      open_high: bool = False) -> float:
    """Validate a probability in [0, 1] (ends optionally open)."""
    if not _is_real(value):
        raise ParameterError(f"{name} must be a real number in [0, 1], got {value!r}")
    v = float(value)
    lo_ok = v > 0 if open_low else v >= 0
    hi_ok = v < 1 if open_high else v <= 1
    if math.isnan(v) or not (lo_ok and hi_ok):
        lo = "(" if open_low else "["
        hi = ")" if open_high else "]"
        raise ParameterError(f"{name} must lie in {lo}0, 1{hi}, got {v!r}")
    return v


def check_int(value: Any, name: str, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """Validate an integer (bools rejected) within optional bounds."""
    if isinstance(value, bool) or not isinstance(value, Integral | np.integer):
        if isinstance(value, float | np.floating) and float(value).is_integer():
            value = int(value)
        else:
            raise ParameterError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ParameterError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise ParameterError(f"{name} must be <= {maximum}, got {v}")
    return v


def check_k(value: Any, name: str = "k", *, minimum: int = 1) -> int:
    """Validate a group-size parameter such as k in k-anonymity."""
    return check_int(value, name, minimum=minimum)


def check_finite_array(values: Any, name: str, *, ndim: int | None = None,
                       dtype: Any = np.float64, allow_empty: bool = False) -> np.ndarray:
    """Convert to an array of ``dtype`` and reject NaN/inf, wrong ndim, or emptiness."""
    try:
        arr = np.asarray(values, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{name} must be numeric: {exc}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ParameterError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ParameterError(f"{name} is empty")
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr)
        if bad.any():
            idx = np.argwhere(bad)[0]
            where = int(idx[0]) if idx.size == 1 else tuple(int(i) for i in idx)
            raise ParameterError(
                f"{name} must be finite; found {arr[tuple(idx)]!r} at index {where}")
    return arr


def check_counts(values: Any, name: str = "counts", *, allow_empty: bool = False) -> np.ndarray:
    """Validate a histogram of non-negative integer counts; return it as int64.

    Floats are accepted only when every value is integral (e.g. ``3.0``).
    """
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{name} must be an array of counts: {exc}") from None
    if raw.ndim != 1:
        raise ParameterError(f"{name} must be one-dimensional, got shape {raw.shape}")
    if raw.size == 0 and not allow_empty:
        raise ParameterError(f"{name} is empty: a histogram needs at least one bin")
    if raw.dtype == bool or not (np.issubdtype(raw.dtype, np.number)):
        raise ParameterError(f"{name} must hold integer counts, got dtype {raw.dtype}")
    if np.issubdtype(raw.dtype, np.floating):
        bad = ~np.isfinite(raw)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ParameterError(f"{name}[{i}] must be finite, got {raw[i]!r}")
        frac = raw != np.round(raw)
        if frac.any():
            i = int(np.flatnonzero(frac)[0])
            raise ParameterError(f"{name}[{i}] must be an integer count, got {raw[i]!r}")
        huge = np.abs(raw) >= 2.0 ** 63  # would wrap around (and warn) in the int64 cast
        if huge.any():
            i = int(np.flatnonzero(huge)[0])
            raise ParameterError(f"{name}[{i}] = {raw[i]!r} does not fit in a 64-bit count")
    arr = raw.astype(np.int64)
    neg = arr < 0
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise ParameterError(f"{name}[{i}] must be >= 0, got {arr[i]}")
    total = float(arr.sum(dtype=np.float64))
    if total > 2.0 ** 62:  # sums of bins (trees, buckets) and noisy counts are int64
        raise ParameterError(f"{name}: the counts total about {total:.4g}, above 2**62 = "
                             f"{2 ** 62:,}: sums of bins and noisy counts are 64-bit integers")
    return arr


def check_probability_vector(values: Any, name: str, *, atol: float = 1e-9) -> np.ndarray:
    """Validate a 1-d probability vector (non-negative, sums to 1 within ``atol``)."""
    arr = check_finite_array(values, name, ndim=1)
    if (arr < 0).any():
        i = int(np.flatnonzero(arr < 0)[0])
        raise ParameterError(f"{name}[{i}] must be >= 0, got {arr[i]!r}")
    s = float(arr.sum())
    if abs(s - 1.0) > atol:
        raise ParameterError(f"{name} must sum to 1, sums to {s!r}")
    return arr


def check_choice(value: Any, name: str, choices: tuple[str, ...] | list[str]) -> str:
    """Validate that ``value`` is one of ``choices`` (with a did-you-mean hint)."""
    if value in choices:
        return value
    import difflib

    hint = difflib.get_close_matches(str(value), list(choices), n=1)
    extra = f"; did you mean {hint[0]!r}?" if hint else ""
    raise ParameterError(
        f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}{extra}")


def exact(value: float) -> str:
    """A user's parameter as text that reads back to the same float: ``{:g}`` when that is
    exact (``1``, ``0.5``, ``1e-06``), else the shortest round-trip form (``0.9999999999``
    printed as ``1`` told the user a different parameter than the one used)."""
    x = float(value)
    short = f"{x:g}"
    return short if float(short) == x else repr(x)
