"""A randomized mitigation for SLH: every user's release is resampled to one public size.

Why it exists. The paper's adversary only sees that a released histogram has no
sensitive visits. Measured on held-out check-ins (``veil bench visits
--adversary``), a classifier on LHO's releases still tells sanitized users from
untouched ones: LHO keeps the size ``N`` (which includes the hidden visits) and
publishes the non-sensitive profile exactly. :class:`Resample` applies the same
randomized transformation to every user, sensitive or not:

1. ``q = (1 - mix) * H' / |H'| + mix * p0`` -- the LHO-sanitized profile, with a
   share ``mix`` of the mass moved to a public profile ``p0`` (default: uniform
   over the non-sensitive categories of the domain);
2. the release is ``Multinomial(size, q)``: ``size`` visits drawn from ``q``.

What is guaranteed (by construction, for every input): every sensitive bin is 0;
every release has exactly ``size`` visits, so the size carries no information;
the release depends on the input only through the sanitized profile ``H'/|H'|``
(not on ``N`` or ``K``), through the same random procedure for every user; the
randomness comes from OS entropy unless a seed is given (experiments only).

What is NOT guaranteed: this is not differential privacy. The non-sensitive profile
itself is correlated with visiting sensitive places, and the release is a noisy
sample of it; an adversary with better features or training data than the attacks
of :mod:`veil.visits.distinguishability` may do better than the AUC measured there,
and several releases of the same user average the sampling noise away (publish one
release per user). The quality cost (``d_q`` and the lost size) is reported by the
benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..validation import check_finite_array, check_int, check_probability

__all__ = ["Resample", "apply_resample"]


@dataclass(frozen=True)
class Resample:
    """Resample every sanitized histogram to a public size (optionally mixed with a profile).

    Parameters
    ----------
    size : int
        The public release size: every released histogram has exactly this many
        visits. Choose it without looking at the users' sizes (e.g. from the
        app's design, or a published median of another data set).
    mix : float in [0, 1)
        Share of the mass moved to the public profile before sampling.
    profile : array-like, optional
        The public profile ``p0`` over the domain (non-negative weights;
        sensitive bins are set to 0 and the rest normalized). Default: uniform
        over the non-sensitive bins.

    Examples
    --------
    >>> import numpy as np
    >>> m = Resample(size=20)
    >>> x = apply_resample(np.array([[6, 4, 0, 0]]), [3], m, np.random.default_rng(1))
    >>> int(x.sum()), int(x[0, 3])
    (20, 0)
    """

    size: int
    mix: float = 0.0
    profile: Any = None

    def __post_init__(self) -> None:
        # below 2^53 like every visit count (float64 costs; 1e20 overflowed in numpy)
        object.__setattr__(self, "size", check_int(self.size, "resample size", minimum=1,
                                                   maximum=2**53 - 1))
        mix = check_probability(self.mix, "resample mix")
        if mix >= 1.0:
            raise ParameterError(f"resample mix must be < 1 (1 would ignore the data), got {mix}")
        object.__setattr__(self, "mix", mix)
        if self.profile is not None:
            p = check_finite_array(self.profile, "resample profile", ndim=1)
            if (p < 0).any():
                raise ParameterError("resample profile must be non-negative")
            object.__setattr__(self, "profile", tuple(float(v) for v in p))

    def public_profile(self, n: int, sensitive: np.ndarray) -> np.ndarray:
        """``p0`` on ``n`` bins, zero on the sensitive ones, normalized."""
        if self.profile is None:
            p = np.ones(n)
        else:
            p = np.asarray(self.profile, dtype=np.float64)
            if p.size != n:
                raise ParameterError(f"resample profile has {p.size} weights for {n} bins")
        p = p.copy()
        p[np.asarray(sensitive, dtype=np.int64)] = 0.0
        if p.sum() <= 0:
            raise ParameterError("resample profile puts no weight on a non-sensitive bin")
        return p / p.sum()

    def to_dict(self) -> dict[str, Any]:
        return {"name": "resample", "size": self.size, "mix": self.mix,
                "profile": "uniform over non-sensitive bins" if self.profile is None
                else list(self.profile)}


def apply_resample(sanitized: np.ndarray, sensitive: Any, mitigation: Resample,
                   rng: np.random.Generator) -> np.ndarray:
    """Apply :class:`Resample` to sanitized histograms (rows), vectorized over users.

    Parameters
    ----------
    sanitized : ndarray of int, shape (users, bins)
        LHO outputs (sensitive bins 0, every row non-empty).
    sensitive : indices of the sensitive bins
    mitigation : Resample
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int64, shape (users, bins)
        Every row sums to ``mitigation.size`` and is 0 on the sensitive bins.

    Examples
    --------
    >>> import numpy as np
    >>> x = apply_resample(np.array([[3, 1, 0]]), [2], Resample(size=8, mix=0.5),
    ...                    np.random.default_rng(0))
    >>> x.sum(axis=1).tolist(), x[:, 2].tolist()
    ([8], [0])
    """
    X = np.asarray(sanitized, dtype=np.float64)
    if X.ndim != 2:
        raise ParameterError(f"sanitized must be 2-dimensional, got shape {X.shape}")
    sens = np.asarray(sensitive, dtype=np.int64).reshape(-1)
    tot = X.sum(axis=1, keepdims=True)
    if (tot <= 0).any():
        raise ParameterError("every sanitized histogram must have at least one visit")
    if sens.size and (X[:, sens] != 0).any():
        raise ParameterError("sanitized histograms must be 0 on the sensitive bins")
    p0 = mitigation.public_profile(X.shape[1], sens)
    q = (1.0 - mitigation.mix) * (X / tot) + mitigation.mix * p0[None, :]
    q[:, sens] = 0.0
    q /= q.sum(axis=1, keepdims=True)
    return rng.multinomial(mitigation.size, q).astype(np.int64)
