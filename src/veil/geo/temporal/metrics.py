"""Utility metrics of released trajectories: distance error, drift ratio, kNN precision/recall."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from ...errors import ParameterError
from ...validation import check_finite_array, check_int

__all__ = ["euclidean_error", "drift_ratio", "knn_precision_recall"]


def euclidean_error(released: Any, true: Any) -> np.ndarray:
    """Per-point Euclidean distance between released and true points (same planar units).

    Examples
    --------
    >>> euclidean_error([[3.0, 4.0]], [[0.0, 0.0]])
    array([5.])
    """
    a = check_finite_array(released, "released", ndim=2)
    b = check_finite_array(true, "true", ndim=2)
    if a.shape != b.shape or a.shape[1] != 2:
        raise ParameterError(f"released and true must both have shape (n, 2); got {a.shape} "
                             f"and {b.shape}")
    return np.hypot(a[:, 0] - b[:, 0], a[:, 1] - b[:, 1])


def drift_ratio(drift: Any) -> float:
    """Fraction of timestamps at which the true location was outside the delta-set."""
    d = np.asarray(drift, dtype=bool)
    if d.size == 0:
        raise ParameterError("drift is empty")
    return float(d.mean())


def knn_precision_recall(true: Any, released: Any, pois: Any, *, k: int = 5,
                         k_prime: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Precision and recall of kNN POI queries answered from released locations.

    For each timestamp, ``A`` = the ``k`` POIs nearest the true location and ``B`` = the
    ``k'`` POIs nearest the released one; precision ``|A & B| / k'``, recall
    ``|A & B| / k`` (equal when ``k' = k``).

    Returns
    -------
    precision, recall : arrays (n,)

    Examples
    --------
    >>> pois = [[0, 0], [1, 0], [5, 5], [6, 5]]
    >>> p, r = knn_precision_recall([[0, 0]], [[0.9, 0.1]], pois, k=2)
    >>> p.tolist(), r.tolist()
    ([1.0], [1.0])
    """
    t = check_finite_array(true, "true", ndim=2)
    z = check_finite_array(released, "released", ndim=2)
    p = check_finite_array(pois, "pois", ndim=2)
    k = check_int(k, "k", minimum=1)
    k_prime = k if k_prime is None else check_int(k_prime, "k_prime", minimum=1)
    if max(k, k_prime) > p.shape[0]:
        raise ParameterError(f"k={k} and k_prime={k_prime} must not exceed the number of POIs "
                             f"({p.shape[0]})")
    if t.shape != z.shape:
        raise ParameterError(f"true and released must have the same shape; got {t.shape} and "
                             f"{z.shape}")
    tree = cKDTree(p)
    _, a = tree.query(t, k=k)
    _, b = tree.query(z, k=k_prime)
    a = a.reshape(len(t), k)
    b = b.reshape(len(z), k_prime)
    hits = (a[:, :, None] == b[:, None, :]).any(axis=2).sum(axis=1)
    return hits / k_prime, hits / k
