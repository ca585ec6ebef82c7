"""Random-number policy.

* The default generator is seeded from operating-system entropy
  (:class:`numpy.random.SeedSequence` with no argument draws 128 bits from
  :mod:`secrets`). There is never a fixed default seed.
* A ``seed`` is accepted only for experiments and tests. **Publishing output
  produced with a known seed destroys the privacy guarantee**: anyone holding
  the seed can subtract the noise.
* Multi-step mechanisms draw independent child streams with :func:`spawn`.

numpy's PCG64 is not a cryptographically secure generator; its output is
statistically excellent and unpredictable without the seed, which is the threat
model veil assumes (see ``docs/guarantees.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ParameterError

__all__ = ["make_rng", "spawn", "RNGLike"]

RNGLike = np.random.Generator | int | None


def make_rng(rng: Any = None, *, seed: int | None = None) -> np.random.Generator:
    """Return the generator a mechanism should use.

    Parameters
    ----------
    rng : numpy.random.Generator or None
        An existing generator (used as is). ``None`` means a fresh generator
        seeded from OS entropy, unless ``seed`` is given.
    seed : int, optional
        **For experiments only.** A reproducible stream; never publish output
        produced with a known seed.

    Returns
    -------
    numpy.random.Generator

    Examples
    --------
    >>> g = make_rng()              # secure default
    >>> g2 = make_rng(seed=1)       # reproducible, for experiments
    >>> float(g2.random()) == float(make_rng(seed=1).random())
    True
    """
    if rng is not None and seed is not None:
        raise ParameterError("give either rng or seed, not both")
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is not None:
        if isinstance(rng, bool) or not isinstance(rng, int | np.integer):
            raise ParameterError(
                f"rng must be a numpy.random.Generator or None, got {type(rng).__name__}")
        # An integer passed as rng is treated as an explicit experimental seed.
        seed = int(rng)
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ParameterError(f"seed must be a non-negative integer, got {seed!r}")
        return np.random.default_rng(np.random.SeedSequence(int(seed)))
    return np.random.default_rng(np.random.SeedSequence())


def spawn(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """Return ``n`` statistically independent child generators of ``rng``.

    Used by multi-step mechanisms so each step has its own stream.
    """
    if n < 0:
        raise ParameterError(f"n must be >= 0, got {n}")
    return list(rng.spawn(n))

