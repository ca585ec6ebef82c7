"""Implementation of :mod:`veil.audit` (see the package docstring)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from scipy import stats

from ..errors import DataError, ParameterError
from ..validation import check_epsilon, check_int, check_positive, check_probability

Sampler = Callable[[int, np.random.Generator], np.ndarray]


@dataclass(frozen=True)
class Event:
    """An event on mechanism outputs: ``fn(outputs) -> bool mask`` over the first axis."""

    name: str
    fn: Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class TestResult:
    """Outcome of a conformance or structural check."""

    passed: bool
    name: str
    statistic: float = math.nan
    pvalue: float = math.nan
    detail: str = ""

    __test__ = False  # not a pytest class

    def __bool__(self) -> bool:
        return self.passed


@dataclass
class AuditResult:
    """Outcome of :func:`dp_ratio_audit`.

    ``eps_lower_bound`` holds with probability at least ``1 - alpha`` over the
    sampling (family-wise over all events and both directions).
    """

    passed: bool
    eps_lower_bound: float
    claimed_epsilon: float
    correction: float
    worst_event: str
    n: int
    alpha: float
    details: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.passed

    def summary(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        return (f"{verdict}: eps lower bound {self.eps_lower_bound:.4f} vs claimed "
                f"{self.claimed_epsilon:g} x {self.correction:g} (worst event {self.worst_event}, "
                f"n={self.n} per side, family-wise alpha={self.alpha:g})")


def clopper_pearson(k: np.ndarray, n: int, alpha_one_sided: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact one-sided Clopper-Pearson bounds (lower, upper) for k successes out of n.

    Each bound alone fails with probability at most ``alpha_one_sided``.
    """
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        lower = np.where(k > 0, stats.beta.ppf(alpha_one_sided, k, n - k + 1), 0.0)
        upper = np.where(k < n, stats.beta.ppf(1 - alpha_one_sided, k + 1, n - k), 1.0)
    return np.nan_to_num(lower, nan=0.0), np.nan_to_num(upper, nan=1.0)


def dp_ratio_audit(sample_a: Sampler, sample_b: Sampler, events: Sequence[Event], *,
                   claimed_epsilon: float, n: int = 200_000, alpha: float = 1e-6,
                   seed: int | None = 0, correction: float = 1.0) -> AuditResult:
    """Lower-bound the privacy loss between two neighbouring inputs.

    Parameters
    ----------
    sample_a, sample_b : callable ``(n, rng) -> array``
        Draw ``n`` outputs of the mechanism run on input A (resp. B); the first
        axis indexes the samples.
    events : sequence of Event
        Fixed before sampling (never chosen from the samples).
    claimed_epsilon : float
        The epsilon the mechanism claims for this pair of inputs.
    n : int
        Samples per side.
    alpha : float
        Family-wise error: the probability that a correct mechanism FAILs.
    seed : int or None
        Audits are experiments: seeded by default so canaries can reuse the
        same streams. ``None`` draws from OS entropy.
    correction : float
        A declared analytic factor (>= 1) on the claimed epsilon, e.g. for a
        documented rounding; never an empirical fudge.

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> import numpy as np
    >>> from veil.samplers import discrete_laplace
    >>> a = lambda n, g: 0 + discrete_laplace(1.0, n, g)
    >>> b = lambda n, g: 1 + discrete_laplace(1.0, n, g)
    >>> ev = events_threshold(lambda z: z, [-1, 0, 1, 2], "z")
    >>> dp_ratio_audit(a, b, ev, claimed_epsilon=1.0, n=20_000).passed
    True
    """
    claimed = check_epsilon(claimed_epsilon, "claimed_epsilon")
    n = check_int(n, "n", minimum=10)
    alpha = check_probability(alpha, "alpha", open_low=True, open_high=True)
    correction = check_positive(correction, "correction")
    if correction < 1:
        raise ParameterError(f"correction must be >= 1 (it can only loosen), got {correction}")
    if not events:
        raise ParameterError("events must not be empty")
    ss = np.random.SeedSequence(seed)
    ga, gb = (np.random.default_rng(s) for s in ss.spawn(2))
    xa = np.asarray(sample_a(n, ga))
    xb = np.asarray(sample_b(n, gb))
    if xa.shape[0] != n or xb.shape[0] != n:
        raise DataError(f"samplers must return n={n} outputs, got {xa.shape[0]} and {xb.shape[0]}")
    ka = np.array([int(np.count_nonzero(e.fn(xa))) for e in events])
    kb = np.array([int(np.count_nonzero(e.fn(xb))) for e in events])
    # 2 directions per event, each using one lower and one upper bound.
    a_each = alpha / (4 * len(events))
    la, ua = clopper_pearson(ka, n, a_each)
    lb, ub = clopper_pearson(kb, n, a_each)
    with np.errstate(divide="ignore"):
        ab = np.where(la > 0, np.log(la) - np.log(ub), -np.inf)
        ba = np.where(lb > 0, np.log(lb) - np.log(ua), -np.inf)
    both = np.maximum(ab, ba)
    i = int(np.argmax(both))
    bound = float(max(0.0, both[i]))
    details = [{"event": e.name, "count_a": int(ka[j]), "count_b": int(kb[j]),
                "eps_lb_a_over_b": float(ab[j]), "eps_lb_b_over_a": float(ba[j])}
               for j, e in enumerate(events)]
    return AuditResult(passed=bound <= claimed * correction, eps_lower_bound=bound,
                       claimed_epsilon=claimed, correction=correction,
                       worst_event=events[i].name, n=n, alpha=alpha, details=details)


def events_points(values: Sequence[Any], key: Callable[[np.ndarray], np.ndarray] | None = None
                  ) -> list[Event]:
    """Events ``{key(x) == v}`` for discrete outputs."""
    k = key or (lambda x: x)
    return [Event(f"=={v!r}", (lambda x, v=v: k(x) == v)) for v in values]


def events_threshold(stat: Callable[[np.ndarray], np.ndarray], thresholds: Sequence[float],
                     name: str = "stat") -> list[Event]:
    """Events ``{stat(x) <= t}`` and ``{stat(x) > t}`` for each threshold."""
    out = []
    for t in thresholds:
        out.append(Event(f"{name}<={t:g}", (lambda x, t=t: stat(x) <= t)))
        out.append(Event(f"{name}>{t:g}", (lambda x, t=t: stat(x) > t)))
    return out


def events_tails(stat: Callable[[np.ndarray], np.ndarray], thresholds: Sequence[float],
                 name: str = "stat") -> list[Event]:
    """Two-sided tail events ``{stat(x) >= t}`` and ``{stat(x) <= -t}``."""
    out = []
    for t in thresholds:
        out.append(Event(f"{name}>={t:g}", (lambda x, t=t: stat(x) >= t)))
        out.append(Event(f"{name}<=-{t:g}", (lambda x, t=t: stat(x) <= -t)))
    return out


def events_lr_levels(logratio: Callable[[np.ndarray], np.ndarray], levels: Sequence[float]
                     ) -> list[Event]:
    """Likelihood-ratio level sets of the *claimed* model: ``{llr(x) > c}`` and complements.

    ``logratio(x) = ln p_A(x) - ln p_B(x)`` under the model the mechanism
    claims; the most powerful events for detecting a larger privacy loss.
    """
    out = []
    for c in levels:
        out.append(Event(f"llr>{c:g}", (lambda x, c=c: logratio(x) > c)))
        out.append(Event(f"llr<={c:g}", (lambda x, c=c: logratio(x) <= c)))
    return out


def events_balls(centers: Sequence[Sequence[float]], radii: Sequence[float]) -> list[Event]:
    """Events ``{||x - c|| <= r}`` for 2-D outputs (array of shape (n, 2))."""
    out = []
    for c in centers:
        c = np.asarray(c, dtype=np.float64)
        for r in radii:
            out.append(Event(f"ball({c[0]:g},{c[1]:g};{r:g})",
                             (lambda x, c=c, r=r: np.hypot(x[:, 0] - c[0], x[:, 1] - c[1]) <= r)))
    return out


def conformance_ks(samples: np.ndarray, cdf: Callable[[np.ndarray], np.ndarray] | Any,
                   alpha: float = 1e-6, name: str = "ks") -> TestResult:
    """Kolmogorov-Smirnov test of continuous samples against ``cdf``; PASS iff p >= alpha."""
    x = np.asarray(samples, dtype=np.float64).ravel()
    res = stats.kstest(x, cdf)
    return TestResult(bool(res.pvalue >= alpha), name, float(res.statistic), float(res.pvalue))


def conformance_chi2(samples: np.ndarray, pmf: Callable[[np.ndarray], np.ndarray],
                     support: Sequence[int], alpha: float = 1e-6, min_expected: float = 5.0,
                     name: str = "chi2") -> TestResult:
    """Chi-square goodness of fit of integer samples against ``pmf`` on ``support``.

    Values outside ``support`` form one extra cell with the remaining mass;
    cells with small expected counts are merged into it.
    """
    x = np.asarray(samples).ravel()
    sup = np.asarray(support)
    n = x.size
    p = np.asarray(pmf(sup), dtype=np.float64)
    obs = np.array([np.count_nonzero(x == v) for v in sup], dtype=np.float64)
    exp = n * p
    keep = exp >= min_expected
    rest_obs = n - obs[keep].sum()
    rest_exp = n - exp[keep].sum()
    o = np.append(obs[keep], rest_obs)
    e = np.append(exp[keep], rest_exp)
    if e[-1] < min_expected:  # fold a tiny remainder into the last kept cell
        o[-2] += o[-1]
        e[-2] += e[-1]
        o, e = o[:-1], e[:-1]
    stat, pv = stats.chisquare(o, e)
    return TestResult(bool(pv >= alpha), name, float(stat), float(pv))


def check_integer_outputs(x: np.ndarray) -> TestResult:
    """Structure: every output is an integer (dtype integer, or integral floats)."""
    a = np.asarray(x)
    if np.issubdtype(a.dtype, np.integer):
        return TestResult(True, "integer-outputs")
    ok = bool(np.all(np.isfinite(a)) and np.all(a == np.round(a)))
    return TestResult(ok, "integer-outputs", detail="" if ok else "non-integer values found")


def check_on_grid(points: np.ndarray, origin: Sequence[float], step: float,
                  atol: float = 1e-6) -> TestResult:
    """Structure: every 2-D point lies on the grid ``origin + step * integers``."""
    p = (np.asarray(points, dtype=np.float64) - np.asarray(origin, dtype=np.float64)) / step
    err = float(np.max(np.abs(p - np.round(p)))) if p.size else 0.0
    return TestResult(err <= atol, "on-grid", statistic=err)


def check_rejects_nonfinite(fn: Callable[[np.ndarray], Any], good_input: np.ndarray) -> TestResult:
    """Structure: ``fn`` raises a veil ParameterError/DataError for NaN, +inf and -inf entries."""
    base = np.asarray(good_input, dtype=np.float64)
    failures = []
    for bad in (np.nan, np.inf, -np.inf):
        x = base.copy()
        x.flat[0] = bad
        try:
            fn(x)
        except (ParameterError, DataError):
            continue
        except Exception as exc:  # noqa: BLE001
            failures.append(f"{bad}: raised {type(exc).__name__}")
            continue
        failures.append(f"{bad}: accepted")
    return TestResult(not failures, "rejects-nonfinite", detail="; ".join(failures))
