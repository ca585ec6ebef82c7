"""Utility and privacy metrics for location obfuscation.

* utility: expected and empirical distance error and its quantiles;
* privacy: the expected error of a Bayesian adversary who knows the prior and
  the mechanism and remaps each report to the guess that minimizes her
  expected distance (Shokri et al.'s remapping attack). A user sees both
  sides: how far the reports are, and how far the best guess still is.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import lambertw

from ..distances import haversine_m
from ..errors import ParameterError
from ..validation import check_epsilon, check_probability_vector
from .geometry import pairwise_distances

__all__ = [
    "laplace_radius_quantile",
    "laplace_radius_cdf",
    "distance_errors",
    "error_summary",
    "adversary_error",
    "planar_laplace_channel",
    "expected_loss_of_channel",
]


def laplace_radius_cdf(r: Any, epsilon: float) -> np.ndarray:
    """CDF of the planar Laplace noise length: ``1 - (1 + eps r) exp(-eps r)``."""
    eps = check_epsilon(epsilon)
    er = eps * np.maximum(np.asarray(r, dtype=np.float64), 0.0)
    return -np.expm1(-er) - er * np.exp(-er)


def laplace_radius_quantile(p: Any, epsilon: float) -> Any:
    """Inverse CDF of the planar Laplace radius: ``-(W_{-1}((p - 1)/e) + 1) / eps``.

    Examples
    --------
    >>> round(laplace_radius_quantile(0.5, 0.01), 2)
    167.83
    """
    eps = check_epsilon(epsilon)
    p = np.asarray(p, dtype=np.float64)
    if ((p < 0) | (p >= 1)).any():
        raise ParameterError(f"p must be in [0, 1), got {p!r}")
    r = -(np.real(lambertw((p - 1) / math.e, k=-1)) + 1) / eps
    return float(r) if r.ndim == 0 else r


def distance_errors(true: Any, reported: Any, *, latlon: bool = True) -> np.ndarray:
    """Distance in metres between true and reported points (haversine if ``latlon``)."""
    a = np.asarray(true, dtype=np.float64).reshape(-1, 2)
    b = np.asarray(reported, dtype=np.float64).reshape(-1, 2)
    if a.shape != b.shape:
        raise ParameterError(f"true and reported must have the same shape, got {a.shape} and {b.shape}")
    if latlon:
        return haversine_m(a[:, 0], a[:, 1], b[:, 0], b[:, 1])
    return np.hypot(a[:, 0] - b[:, 0], a[:, 1] - b[:, 1])


def error_summary(errors: Any, quantiles: tuple[float, ...] = (0.5, 0.9, 0.99)) -> dict[str, float]:
    """Mean, RMS and quantiles of distance errors.

    Examples
    --------
    >>> error_summary([1.0, 2.0, 3.0])["mean"]
    2.0
    """
    e = np.asarray(errors, dtype=np.float64)
    if e.size == 0:
        raise ParameterError("errors is empty")
    out = {"mean": float(e.mean()), "rms": float(np.sqrt(np.mean(e * e)))}
    for q in quantiles:
        out[f"q{int(round(q * 100))}"] = float(np.quantile(e, q))
    return out


def adversary_error(channel: Any, prior: Any, inputs: Any, guesses: Any | None = None) -> dict[str, float]:
    """Expected error of the Bayesian remapping adversary.

    Parameters
    ----------
    channel : array (n, m)
        ``K[x, z] = P[report z | true x]`` (rows sum to 1).
    prior : array (n,)
        The adversary's (and user's) prior over the true points.
    inputs : array (n, 2)
        Planar coordinates (metres) of the true points.
    guesses : array (g, 2), optional
        Candidate guesses (default: the inputs).

    Returns
    -------
    dict
        ``adversary_error``: ``sum_z min_g sum_x pi_x K[x, z] d(x, g)``;
        ``prior_only_error``: the error of the best guess without the report.

    Examples
    --------
    >>> K = np.eye(2)
    >>> adversary_error(K, [0.5, 0.5], [[0, 0], [10, 0]])["adversary_error"]
    0.0
    """
    K = np.asarray(channel, dtype=np.float64)
    pi = check_probability_vector(prior, "prior")
    X = np.asarray(inputs, dtype=np.float64).reshape(-1, 2)
    if K.ndim != 2 or K.shape[0] != len(pi) or len(X) != len(pi):
        raise ParameterError(f"channel {K.shape}, prior {pi.shape} and inputs {X.shape} disagree")
    G = X if guesses is None else np.asarray(guesses, dtype=np.float64).reshape(-1, 2)
    D = pairwise_distances(X, G)                      # (n, g)
    joint = pi[:, None] * K                           # (n, m)
    cost = joint.T @ D                                # (m, g): expected distance of guess g after z
    adv = float(cost.min(axis=1).sum())
    prior_only = float((pi @ D).min())
    return {"adversary_error": adv, "prior_only_error": prior_only}


def planar_laplace_channel(inputs: Any, outputs: Any, cell_area: float, epsilon: float) -> np.ndarray:
    """Channel of planar Laplace snapped to output cells (density x cell area, rows renormalized)."""
    eps = check_epsilon(epsilon)
    D = pairwise_distances(inputs, outputs)
    K = eps ** 2 / (2 * math.pi) * np.exp(-eps * D) * cell_area
    return K / K.sum(axis=1, keepdims=True)


def expected_loss_of_channel(channel: Any, prior: Any, inputs: Any, outputs: Any,
                             loss=None) -> float:
    """``sum_x pi_x sum_z K[x, z] L(d(x, z))`` (distance loss by default)."""
    K = np.asarray(channel, dtype=np.float64)
    pi = np.asarray(prior, dtype=np.float64)
    D = pairwise_distances(inputs, outputs)
    Ld = D if loss is None else loss(D)
    return float(pi @ np.sum(K * Ld, axis=1))
