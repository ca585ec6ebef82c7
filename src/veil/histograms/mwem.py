"""MWEM (Hardt, Ligett, McSherry, NeurIPS 2012) for 1-D range workloads.

Multiplicative Weights with the Exponential Mechanism keeps a synthetic
histogram ``A`` (uniform at first) and, for ``T`` rounds, (1) picks the
workload query that ``A`` answers worst with the exponential mechanism, (2)
measures that query on the data with Laplace noise, (3) moves ``A`` towards
all measurements so far by multiplicative-weights updates. It spends little
noise on the domain as a whole, which is what wins when there is very little
signal (few records per bin in units of the noise): the benchmark literature
(DPBench) keeps it for that regime.

The number of records is not assumed known: a share ``total_fraction`` of the
budget buys a noisy total (the scale of ``A``).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from ..mechanisms import exponential_mechanism_probabilities
from ..release import Release
from ..validation import check_int, check_probability
from ._common import NEIGHBOURS, as_budget, as_counts, as_rng, noisy_integers
from .workload import RangeWorkload

__all__ = ["mwem"]


def _answers(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    P = np.concatenate(([0.0], np.cumsum(x, dtype=np.float64)))
    return P[q[:, 1]] - P[q[:, 0]]


def _mwem(x, q, eps0, eps_t, T, updates, g, *, noise: bool = True):
    """MWEM's loop; ``noise=False`` (NOT private) measures exactly: for the audit's canary."""
    def measure(values, eps):
        if not noise:
            return np.asarray(values, dtype=np.int64)
        return noisy_integers(np.asarray(values, dtype=np.int64), eps, g)[0]

    n = x.size
    N = max(float(measure([x.sum()], eps0)[0]), 1.0)
    A = np.full(n, N / n)
    true_ans = _answers(x, q)
    chosen, meas = [], []
    for _ in range(T):
        score = np.abs(_answers(A, q) - true_ans)
        p = exponential_mechanism_probabilities(score, epsilon=eps_t, sensitivity=1.0)
        j = int(g.choice(q.shape[0], p=p))
        chosen.append(j)
        meas.append(float(measure([int(true_ans[j])], eps_t)[0]))
        for _ in range(updates):
            for jj, mm in zip(chosen, meas):  # T * updates small O(n) updates
                lo, hi = q[jj]
                err = mm - A[lo:hi].sum()
                A[lo:hi] *= math.exp(max(min(err / (2.0 * N), 50.0), -50.0))
                A *= N / A.sum()
    return A, chosen


def mwem(counts, *, epsilon, workload="prefix", rounds: int = 10, total_fraction: float = 0.05,
         updates: int = 10, rng=None) -> Release:
    """MWEM: exponential-mechanism query selection, noisy measurement, multiplicative weights.

    Why it is eps-DP: the noisy total costs ``eps0 = total_fraction * epsilon``
    (discrete Laplace, sensitivity 1); each of the ``T`` rounds spends
    ``eps_t = (epsilon - eps0) / (2T)`` on the exponential mechanism (score
    ``|q(A) - q(x)|`` has sensitivity 1, since ``A`` depends only on earlier
    outputs) and ``eps_t`` on measuring the chosen range count (discrete Laplace,
    sensitivity 1). Sequential composition: ``eps0 + 2 T eps_t = epsilon``. The
    multiplicative-weights updates are post-processing.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
    epsilon : float or PureDP
    workload : 'prefix' or array (q, 2) of ranges ``[lo, hi)``
        The public queries to select from (and to answer well).
    rounds : int
        ``T``, the number of selected and measured queries ("a few").
    total_fraction : float in (0, 1)
        Share of epsilon for the noisy number of records.
    updates : int
        Passes of multiplicative-weights updates over all measurements after
        each round (the paper's practical improvement; post-processing).
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = mwem([0] * 30 + [50] * 30, epsilon=1.0, rounds=5, rng=make_rng(seed=0))
    >>> r.mechanism, len(r.parameters["selected"])
    ('mwem', 5)
    """
    x = as_counts(counts)
    n = x.size
    b = as_budget(epsilon)
    T = check_int(rounds, "rounds", minimum=1)
    updates = check_int(updates, "updates", minimum=1)
    frac = check_probability(total_fraction, "total_fraction", open_low=True, open_high=True)
    w = RangeWorkload.from_spec(workload, n)
    if w.queries is None:
        raise ParameterError("mwem selects among explicit queries: use 'prefix' or an array of "
                             "ranges, not 'all-range'")
    q = w.queries
    eps0, rest = (p.epsilon for p in b.split([frac, 1.0 - frac]))
    eps_t = rest / (2 * T)
    while eps0 + 2 * T * eps_t > b.epsilon:  # never spend more than epsilon (rounding)
        eps_t = math.nextafter(eps_t, 0.0)
    A, chosen = _mwem(x, q, eps0, eps_t, T, updates, as_rng(rng))
    return Release(A, "mwem", b,
                   {"n": n, "workload": w.describe(), "rounds": T, "updates": updates,
                    "total_fraction": frac, "selected": [q[j].tolist() for j in chosen]},
                   {"total": eps0, "select_and_measure": 2 * T * eps_t},
                   notes=(NEIGHBOURS, "selected ranges are outputs of the exponential "
                          "mechanism (published)"),
                   derived=("parameters.selected",))
