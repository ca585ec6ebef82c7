"""Intervals, rankings and the computed sentences of the report.

Every sentence of ``veil demo`` that states a number or a comparison is built here (or
in its section) from the numbers it describes, never typed in. Two kinds of help:

* :func:`mean_ci` and :class:`Interval`: a mean with a Student-t confidence interval,
  for cards and error bars;
* :func:`rank_methods`: which of several methods has the lowest mean error, with a
  stated test (Welch's t-test of the best against each other method, Holm's correction
  over those comparisons) so that a "best method" is only named when the trials
  separate it from the others, and "no significant difference" is said otherwise.

Nothing here is private: these are summaries of experiments on synthetic data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

__all__ = ["Interval", "mean_ci", "Ranking", "rank_methods", "plural", "fmt_p",
           "count_phrase", "DEFAULT_ALPHA"]

#: Family-wise significance level of the report's comparisons.
DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class Interval:
    """A mean and its two-sided confidence interval.

    Attributes
    ----------
    mean, low, high : float
    level : float
        Confidence level (0.95 for a 95 % interval).
    n : int
        Number of values the mean is taken over.

    Examples
    --------
    >>> iv = mean_ci([1.0, 2.0, 3.0])
    >>> round(iv.mean, 3), round(iv.low, 3), round(iv.high, 3)
    (2.0, -0.484, 4.484)
    >>> iv.text("{:.1f}")
    '2.0 (95% CI -0.5 to 4.5, n = 3)'
    """

    mean: float
    low: float
    high: float
    level: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def text(self, spec: str = "{:.4g}", unit: str = "") -> str:
        """``mean unit (95% CI low to high unit, n = ...)``, numbers formatted by ``spec``."""
        u = f" {unit}" if unit else ""
        if self.n < 2 or not math.isfinite(self.half_width):
            return f"{spec.format(self.mean)}{u} (n = {self.n:,}, no interval)"
        return (f"{spec.format(self.mean)}{u} ({self.level:.0%} CI {spec.format(self.low)} to "
                f"{spec.format(self.high)}{u}, n = {self.n:,})")

    def to_dict(self) -> dict[str, float | int]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "level": self.level,
                "n": self.n}


def mean_ci(values: Sequence[float] | np.ndarray, level: float = 0.95, axis: int | None = None):
    """Mean with a Student-t confidence interval.

    Parameters
    ----------
    values : array_like
        Independent draws (trials, repetitions).
    level : float
        Confidence level in (0, 1).
    axis : int, optional
        Reduce along this axis and return arrays ``(mean, low, high)`` instead of an
        :class:`Interval` (for error bars over many points).

    Returns
    -------
    Interval, or tuple of arrays when ``axis`` is given
        With a single value the interval is infinite (nothing is known about the spread).

    Examples
    --------
    >>> m, lo, hi = mean_ci([[1.0, 3.0], [2.0, 5.0]], axis=0)
    >>> m.tolist()
    [1.5, 4.0]
    """
    from scipy.special import stdtrit

    if not 0 < level < 1:
        from ..errors import ParameterError

        raise ParameterError(f"level must be in (0, 1), got {level!r}")
    a = np.asarray(values, dtype=float)
    if axis is None:
        a = a.ravel()
        n = a.size
        m = float(a.mean())
        if n < 2:
            return Interval(m, -math.inf, math.inf, level, n)
        se = float(a.std(ddof=1)) / math.sqrt(n)
        h = float(stdtrit(n - 1, 0.5 + level / 2)) * se
        return Interval(m, m - h, m + h, level, n)
    n = a.shape[axis]
    m = a.mean(axis=axis)
    if n < 2:
        inf = np.full_like(m, np.inf)
        return m, -inf, inf
    se = a.std(axis=axis, ddof=1) / math.sqrt(n)
    h = float(stdtrit(n - 1, 0.5 + level / 2)) * se
    return m, m - h, m + h


def _holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (monotone, capped at 1)."""
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p)
    m = p.size
    adj = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adj[i] = running
    return adj.tolist()


def _welch_p(a: np.ndarray, b: np.ndarray) -> float:
    """One-sided Welch t-test p-value of mean(a) < mean(b).

    The same statistic and Welch-Satterthwaite degrees of freedom as
    ``scipy.stats.ttest_ind(a, b, equal_var=False, alternative="less")`` (checked by a test),
    through the Student-t CDF ufunc, which is much cheaper per call.
    """
    from scipy.special import stdtr

    if a.size < 2 or b.size < 2:
        return 1.0
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0:  # both exact: the difference is certain (or there is none)
        return 0.0 if a.mean() < b.mean() else 1.0
    t = (a.mean() - b.mean()) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    return float(stdtr(df, t))


@dataclass(frozen=True)
class Ranking:
    """The outcome of :func:`rank_methods`.

    Attributes
    ----------
    best : str
        The method with the lowest mean.
    tied : tuple of str
        Methods not significantly worse than ``best`` (``best`` first); a single entry
        means ``best`` is significantly lower than every other method.
    intervals : dict
        Method -> :class:`Interval` of its mean.
    pvalues : dict
        Method -> Holm-adjusted one-sided Welch p-value of "best is lower" (not for best).
    alpha : float
    """

    best: str
    tied: tuple[str, ...]
    intervals: Mapping[str, Interval]
    pvalues: Mapping[str, float]
    alpha: float
    test: str = field(default="one-sided Welch t-test of the lowest mean against each other "
                              "method, Holm-corrected")
    unit: str = "trial"

    @property
    def significant(self) -> bool:
        """True when the best method is significantly lower than every other one."""
        return len(self.tied) == 1

    def runner_up(self) -> str | None:
        """The method with the second-lowest mean (None with a single method)."""
        rest = sorted((m for m in self.intervals if m != self.best),
                      key=lambda m: self.intervals[m].mean)
        return rest[0] if rest else None

    def sentence(self, spec: str = "{:.3g}") -> str:
        """The result in words, computed from the intervals and the tests."""
        b = self.intervals[self.best]
        n = plural(b.n, self.unit)
        if len(self.intervals) == 1:
            return f"only {self.best} was run ({b.text(spec)})"
        if self.significant:
            ru = self.runner_up()
            return (f"{self.best} is lowest ({b.text(spec)}), significantly below every other "
                    f"method, the closest being {ru} ({spec.format(self.intervals[ru].mean)}, "
                    f"adjusted p = {fmt_p(self.pvalues[ru])}; {n} each)")
        others = [m for m in self.tied if m != self.best]
        ps = ", ".join(f"{m} p = {fmt_p(self.pvalues[m])}" for m in others)
        return (f"no significant difference between {', '.join(self.tied)} (lowest mean "
                f"{self.best} {spec.format(b.mean)}; adjusted {ps} at alpha = {self.alpha:g}; "
                f"{n} each)")

    def card(self, spec: str = "{:.3g}") -> dict[str, str]:
        """The content of a "best method" card: the method(s), the interval and the test."""
        b = self.intervals[self.best]
        out = {"lowest": self.best, "mean": b.text(spec)}
        if len(self.intervals) > 1:
            if self.significant:
                ru = self.runner_up()
                out["next"] = f"{ru} {spec.format(self.intervals[ru].mean)}, " \
                              f"p = {fmt_p(self.pvalues[ru])}"
            else:
                out["no significant difference"] = ", ".join(
                    f"{m} (p = {fmt_p(self.pvalues[m])})" for m in self.tied if m != self.best)
        return out


def rank_methods(samples: Mapping[str, Sequence[float]], *, alpha: float = DEFAULT_ALPHA,
                 level: float = 0.95, unit: str = "trial") -> Ranking:
    """Rank methods by mean (lower is better) and say which differences are significant.

    The method with the lowest mean is compared with every other method by a one-sided
    Welch t-test ("its mean is lower"); the p-values are Holm-adjusted over those
    comparisons, so the chance of naming a single best method when in truth another one
    is as good is at most ``alpha`` (for near-normal trial means).

    Parameters
    ----------
    samples : mapping of method -> sequence of float
        Independent trials of each method (e.g. errors), at least one each.
    alpha : float
        Family-wise significance level.
    level : float
        Confidence level of the intervals.
    unit : str
        What one sample is, for the sentences ("trial", "repetition").

    Returns
    -------
    Ranking

    Examples
    --------
    >>> r = rank_methods({"a": [1.0, 1.1, 0.9, 1.0], "b": [2.0, 2.1, 1.9, 2.2]})
    >>> r.best, r.tied, r.significant
    ('a', ('a',), True)
    >>> rank_methods({"a": [1.0, 1.4, 0.6], "b": [1.1, 0.7, 1.5]}).tied
    ('a', 'b')
    """
    if not samples:
        from ..errors import ParameterError

        raise ParameterError("rank_methods needs at least one method")
    arrays = {m: np.asarray(v, dtype=float).ravel() for m, v in samples.items()}
    intervals = {m: mean_ci(a, level) for m, a in arrays.items()}
    best = min(arrays, key=lambda m: (intervals[m].mean, m))
    others = [m for m in arrays if m != best]
    raw = [_welch_p(arrays[best], arrays[m]) for m in others]
    adj = dict(zip(others, _holm(raw))) if others else {}
    tied = (best, *sorted((m for m in others if adj[m] > alpha),
                          key=lambda m: intervals[m].mean))
    return Ranking(best=best, tied=tied, intervals=intervals, pvalues=adj, alpha=alpha,
                   unit=unit)


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 trial``, ``3 trials`` (``words`` for irregular plurals).

    Examples
    --------
    >>> plural(1, "trial"), plural(3, "trial"), plural(2, "repetition")
    ('1 trial', '3 trials', '2 repetitions')
    """
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def count_phrase(k: int, n: int) -> str:
    """``all 5``, ``none of the 5``, ``3 of the 5``.

    Examples
    --------
    >>> count_phrase(5, 5), count_phrase(0, 5), count_phrase(2, 5)
    ('all 5', 'none of the 5', '2 of the 5')
    """
    if k == n:
        return f"all {n:,}"
    if k == 0:
        return f"none of the {n:,}"
    return f"{k:,} of the {n:,}"


def fmt_p(p: float) -> str:
    """A p-value for text: ``0.032``, ``< 1e-10``.

    Examples
    --------
    >>> fmt_p(0.0321), fmt_p(1e-12)
    ('0.032', '< 1e-10')
    """
    if p < 1e-10:
        return "< 1e-10"
    return f"{p:.2g}"
