"""Basic DP mechanisms every capability builds on.

Why each is private
-------------------
* :func:`geometric_mechanism` adds exact discrete Laplace noise with scale
  ``sensitivity / epsilon`` to integer values. For neighbouring inputs whose
  values differ by at most ``sensitivity`` in L1 norm, the output mass ratio
  is at most ``exp(epsilon)`` (the scale is rounded up, so the effective
  epsilon recorded in the Release is at most the requested one).
* :func:`laplace_mechanism` is the float64 analogue (Dwork et al. 2006).
* :func:`exponential_mechanism` selects candidate ``r`` with probability
  proportional to ``exp(epsilon * u(r) / (2 * sensitivity))`` where
  ``sensitivity`` bounds how much any score can change between neighbouring
  inputs (McSherry and Talwar 2007); when every score moves in the same
  direction between neighbours (``monotonic=True``) the factor 2 is dropped.
"""

from __future__ import annotations

import math

import numpy as np

from .budget import PureDP
from .errors import ParameterError
from .random import make_rng
from .release import Release
from .samplers import discrete_laplace, discrete_laplace_variance, dyadic_scale, laplace
from .validation import check_epsilon, check_finite_array, check_positive

__all__ = ["geometric_mechanism", "laplace_mechanism", "exponential_mechanism",
           "exponential_mechanism_probabilities"]


def _budget(epsilon: float | PureDP) -> PureDP:
    return epsilon if isinstance(epsilon, PureDP) else PureDP(check_epsilon(epsilon))


#: largest absolute value :func:`geometric_mechanism` takes: ``value + noise`` is an int64
#: (a count of 9223372036854775000 came back as -9223372036854690967 after wrapping)
GEOMETRIC_MAX_VALUE = 2 ** 62


def geometric_mechanism(values, *, epsilon: float | PureDP, sensitivity: float = 1.0,
                        rng: np.random.Generator | None = None) -> Release:
    """Add exact discrete Laplace noise to integer values (eps-DP for L1 sensitivity).

    Parameters
    ----------
    values : array_like of int
        True integer answers (e.g. counts).
    epsilon : float or PureDP
    sensitivity : float
        L1 sensitivity of ``values`` between neighbouring datasets.
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = geometric_mechanism([10, 20, 30], epsilon=1.0, rng=make_rng(seed=0))
    >>> r.value.dtype, r.mechanism
    (dtype('int64'), 'geometric')
    """
    budget = _budget(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    x = np.asarray(values)
    if not np.issubdtype(x.dtype, np.integer):
        xf = check_finite_array(x, "values")
        if (xf != np.round(xf)).any():
            raise ParameterError("values must be integers for the geometric mechanism")
        big = bool(xf.size) and float(np.abs(xf).max()) > GEOMETRIC_MAX_VALUE
    else:
        big = bool(x.size) and (int(x.max()) > GEOMETRIC_MAX_VALUE
                                or int(x.min()) < -GEOMETRIC_MAX_VALUE)
    if big:  # a public limit, checked before any noise: value + noise must fit in int64
        raise ParameterError(f"values must be at most 2**62 = {GEOMETRIC_MAX_VALUE:,} in "
                             f"absolute value for the geometric mechanism (the noisy values "
                             f"are 64-bit integers)")
    x = x.astype(np.int64)
    if math.isinf(budget.epsilon):
        return Release(x.astype(np.int64), "geometric", budget, {"sensitivity": sensitivity},
                       {"noise": budget.epsilon}, 0.0, 0.0)
    scale = sensitivity / budget.epsilon
    num, den = dyadic_scale(scale)
    noise = discrete_laplace(scale, size=x.shape, rng=make_rng(rng))
    eff = sensitivity * den / num
    # no wrap: |x| <= 2^62, and at a scale of at most 2^41 (dyadic_scale) a noise of 2^62
    # has probability about exp(-2^21)
    return Release(x + noise, "geometric", budget,
                   {"sensitivity": sensitivity}, {"noise": budget.epsilon},
                   noise_scale=num / den, noise_variance=discrete_laplace_variance(scale),
                   notes=(f"scale rounded up to {num}/{den}; effective epsilon {eff:.12g}",))


def laplace_mechanism(values, *, epsilon: float | PureDP, sensitivity: float = 1.0,
                      rng: np.random.Generator | None = None) -> Release:
    """Add Laplace(sensitivity/epsilon) noise to real values (float64).

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = laplace_mechanism([1.5, 2.5], epsilon=0.5, rng=make_rng(seed=0))
    >>> r.noise_scale
    2.0
    """
    budget = _budget(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    x = check_finite_array(values, "values")
    if math.isinf(budget.epsilon):
        return Release(x.copy(), "laplace", budget, {"sensitivity": sensitivity},
                       {"noise": budget.epsilon}, 0.0, 0.0)
    b = sensitivity / budget.epsilon
    noise = laplace(b, size=x.shape, rng=make_rng(rng))
    return Release(x + noise, "laplace", budget, {"sensitivity": sensitivity},
                   {"noise": budget.epsilon}, noise_scale=b, noise_variance=2 * b * b,
                   notes=("float64 Laplace: see docs/guarantees.md on floating point",))


def exponential_mechanism_probabilities(scores, *, epsilon: float, sensitivity: float,
                                        monotonic: bool = False) -> np.ndarray:
    """Selection probabilities of the exponential mechanism (float64, sums to 1)."""
    eps = check_epsilon(epsilon, allow_inf=True)
    sensitivity = check_positive(sensitivity, "sensitivity")
    u = check_finite_array(scores, "scores", ndim=1)
    if math.isinf(eps):
        p = (u == u.max()).astype(np.float64)
        return p / p.sum()
    from scipy.special import logsumexp  # lazy: keeps `import veil` fast

    factor = 1.0 if monotonic else 2.0
    logits = eps * u / (factor * sensitivity)
    return np.exp(logits - logsumexp(logits))


def exponential_mechanism(scores, *, epsilon: float | PureDP, sensitivity: float,
                          monotonic: bool = False, size: int | None = None,
                          rng: np.random.Generator | None = None) -> Release:
    """Select an index with probability proportional to exp(eps u / (2 sensitivity)).

    Parameters
    ----------
    scores : array_like, shape (m,)
        Utility u(r) of every candidate (higher is better), computed on the private data.
    epsilon : float or PureDP
    sensitivity : float
        Max change of any single score between neighbouring inputs.
    monotonic : bool
        True only if, between any neighbours, all scores move in the same direction.
    size : int, optional
        Draw ``size`` independent selections (each costs epsilon; for audits).

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = exponential_mechanism([0.0, 10.0, 0.0], epsilon=5.0, sensitivity=1.0,
    ...                           rng=make_rng(seed=0))
    >>> int(r.value)
    1
    """
    budget = _budget(epsilon)
    p = exponential_mechanism_probabilities(scores, epsilon=budget.epsilon,
                                            sensitivity=sensitivity, monotonic=monotonic)
    g = make_rng(rng)
    choice = g.choice(p.size, size=size, p=p)
    value = int(choice) if size is None else np.asarray(choice, dtype=np.int64)
    return Release(value, "exponential", budget,
                   {"sensitivity": sensitivity, "monotonic": monotonic, "candidates": p.size},
                   {"selection": budget.epsilon})
