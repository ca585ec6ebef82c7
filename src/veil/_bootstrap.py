"""Paired bootstrap of a ratio of mean errors, for benchmark tables (not for releases)."""

from __future__ import annotations

import numpy as np


def ratio_bootstrap(mine, references, *, resamples: int, rng, floor: float = 0.0
                    ) -> tuple[float, np.ndarray]:
    """``mean(mine) / min_r mean(references[r])`` and its paired bootstrap distribution.

    ``mine`` (T,) and every row of ``references`` (R, T) are errors over the same T runs (the
    same data in run t), so runs are resampled together (``scipy.stats.bootstrap``,
    ``paired=True``); the best reference is re-selected in every resample, as a table of means
    does. Both means are floored at ``floor`` (e.g. one record per query). Returns the observed
    ratio and the ``resamples`` bootstrapped ratios (take quantiles for percentile bounds).

    Examples
    --------
    >>> r, dist = ratio_bootstrap([2.0, 2.2, 1.8], [[1.0, 1.1, 0.9], [3.0, 3.0, 3.0]],
    ...                           resamples=1000, rng=np.random.default_rng(0))
    >>> round(r, 3), dist.shape, bool(dist.min() > 1.5)
    (2.0, (1000,), True)
    """
    from scipy.stats import bootstrap

    mine = np.asarray(mine, dtype=np.float64)
    refs = np.atleast_2d(np.asarray(references, dtype=np.float64))

    def ratio(a, *others, axis=-1):
        best = np.min([np.mean(o, axis=axis) for o in others], axis=0)
        return np.maximum(np.mean(a, axis=axis), floor) / np.maximum(best, floor)

    res = bootstrap((mine, *refs), ratio, n_resamples=resamples, paired=True,
                    vectorized=True, method="percentile", batch=min(resamples, 10_000),
                    random_state=rng)
    return float(ratio(mine, *refs)), np.asarray(res.bootstrap_distribution)
