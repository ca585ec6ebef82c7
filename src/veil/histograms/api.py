"""One entry point for every histogram mechanism, and the public ``auto`` rule."""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np

from ..errors import ParameterError
from ..release import Release
from ..validation import check_choice, check_positive
from ._common import as_budget, as_counts

__all__ = ["publish", "METHODS", "WORKLOAD_AWARE", "choose_method", "AUTO_RULE",
           "AUTO_TOTAL_FRACTION", "workload_class"]

METHODS = ("identity", "noisefirst", "structurefirst", "optimized-structurefirst", "boost",
           "hb", "sort-and-group", "ahp", "dawa", "hdmm", "mwem", "auto")

#: methods that take the public ``workload`` they should answer well
WORKLOAD_AWARE = ("dawa", "hdmm", "mwem")

#: ``auto``'s rule: Identity from ``exact_epsilon`` on; below it, per workload class,
#: ``(upper bound on log10(signal), method)`` in order,
#: ``signal = epsilon * N / n`` (records per bin in units of the noise scale ``1/epsilon``,
#: ``N`` the public records bound or the DP estimate of the total). Fitted offline on the
#: 18 DPBench 1-D datasets (``veil bench histograms --fit-auto``; docs/benchmarks.md).
AUTO_RULE = {
    "exact_epsilon": 3.162278,
    "prefix": ((0.4897, "dawa"), (math.inf, "hdmm")),
    "ranges": ((-0.5103, "optimized-structurefirst"), (0.4897, "dawa"), (math.inf, "hdmm")),
}

#: without a public records bound, ``auto`` spends this share of epsilon on a noisy total
AUTO_TOTAL_FRACTION = 0.02


def workload_class(workload) -> str:
    """``'prefix'`` for the prefix workload, ``'ranges'`` for all ranges or a given range set."""
    if isinstance(workload, str):
        return "prefix" if workload == "prefix" else "ranges"
    from .workload import RangeWorkload

    if isinstance(workload, RangeWorkload):
        return "prefix" if workload.kind == "prefix" else "ranges"
    return "ranges"


def choose_method(*, n: int, epsilon: float, records_bound: float | None,
                  workload="prefix", rule: dict | None = None) -> tuple[str, str]:
    """The public rule behind ``method='auto'``; returns ``(method, reason)``.

    The rule reads only public quantities: the number of bins ``n``, epsilon, the
    workload's class (prefix, or other ranges) and ``records_bound``, a public
    bound on the number of records (or a differentially private estimate of it,
    which ``publish`` buys when no bound is given). From ``AUTO_RULE["exact_epsilon"]``
    on it returns Identity (its exact discrete noise is then 0 in almost every
    bin); below, with ``signal = epsilon * N / n``, it walks :data:`AUTO_RULE` for
    the workload class and returns the first method whose upper bound on
    ``log10(signal)`` is above the signal's.

    Examples
    --------
    >>> choose_method(n=4096, epsilon=0.01, records_bound=1000)[0]
    'dawa'
    >>> choose_method(n=4096, epsilon=0.01, records_bound=1000, workload="all-range")[0]
    'optimized-structurefirst'
    >>> choose_method(n=4096, epsilon=1.0, records_bound=10**7)[0]
    'hdmm'
    >>> choose_method(n=4096, epsilon=5.0, records_bound=10**7)[0]
    'identity'
    """
    rule = AUTO_RULE if rule is None else rule
    exact = rule.get("exact_epsilon", math.inf)
    if epsilon >= exact:
        a = math.exp(-epsilon)
        return "identity", (f"epsilon {epsilon:g} >= {exact:g}: discrete Laplace noise is 0 in "
                            f"all but {100 * 2 * a / (1 + a):.2g} % of bins: identity")
    if records_bound is None:
        raise ParameterError("choose_method needs records_bound (a public bound or a DP "
                             "estimate of the number of records)")
    N = check_positive(records_bound, "records_bound")
    signal = epsilon * N / n
    cls = workload_class(workload)
    ls = math.log10(signal)
    for upper, method in rule[cls]:
        if ls < upper:
            return method, (f"{cls} workload, signal epsilon*N/n = {signal:.3g} "
                            f"(log10 {ls:.2f} < {upper:g}): {method}")
    raise ParameterError(f"auto rule for {cls!r} has no open last interval")  # pragma: no cover


def _mechanism(method: str):
    """The function implementing ``method`` (not ``'auto'``)."""
    from . import basic, sortgroup, structurefirst, tree
    from .dawa import dawa as dawa_fn
    from .hdmm import hdmm as hdmm_fn
    from .mwem import mwem as mwem_fn

    return {
        "identity": basic.identity,
        "noisefirst": basic.noise_first,
        "structurefirst": structurefirst.structure_first,
        "optimized-structurefirst": structurefirst.optimized_structure_first,
        "boost": tree.boost,
        "hb": tree.hb,
        "sort-and-group": sortgroup.sort_and_group,
        "ahp": sortgroup.ahp,
        "dawa": dawa_fn,
        "hdmm": hdmm_fn,
        "mwem": mwem_fn,
    }[method]


def publish(counts, *, epsilon, method: str = "auto", rng=None, records_bound=None,
            **params) -> Release:
    """Publish an eps-DP histogram with the chosen mechanism.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
        True counts per bin, in domain order (bins fixed in advance, publicly).
    epsilon : float or PureDP
    method : str
        One of :data:`METHODS`; ``'auto'`` applies :func:`choose_method`. Without
        ``records_bound``, ``auto`` first spends :data:`AUTO_TOTAL_FRACTION` of
        epsilon on a noisy number of records (published in the release) and runs
        the chosen method with the rest.
    rng : numpy.random.Generator, optional
    records_bound : float, optional
        Public upper bound on the number of records (used by ``auto`` and by
        ``optimized-structurefirst``'s budget split).
    **params
        Passed to the mechanism (e.g. ``k``, ``count_bound``, ``branching``,
        ``workload`` for DAWA, HDMM, MWEM and ``auto``).

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = publish([4, 8, 15, 16, 23, 42], epsilon=1.0, method="hb", rng=make_rng(seed=0))
    >>> r.mechanism
    'hb'
    """
    from ._common import as_rng, noisy_integers

    method = check_choice(method, "method", METHODS)
    x = as_counts(counts)
    b = as_budget(epsilon)
    note, pre_split, pre_params, unused = None, {}, {}, []
    if method == "auto":
        g = as_rng(rng)
        rng = g
        wl = params.pop("workload", "prefix")
        known = {name for m in METHODS if m != "auto"
                 for name in inspect.signature(_mechanism(m)).parameters}
        for key in params:  # checked before any budget is spent
            if key not in known:
                raise ParameterError(f"method 'auto': no mechanism takes an option {key!r}")
        if b.epsilon >= AUTO_RULE.get("exact_epsilon", math.inf):  # no total needed
            N = float(records_bound) if records_bound is not None else 1.0
            inner = b
            pre_params = {}
        elif records_bound is not None:
            N = check_positive(records_bound, "records_bound")
            inner = b
            pre_params = {"auto_records_bound": N}
        else:
            e0, rest = b.split([AUTO_TOTAL_FRACTION, 1.0 - AUTO_TOTAL_FRACTION])
            tot, _, _ = noisy_integers(np.array([int(x.sum())]), e0.epsilon, g)
            N = max(float(tot[0]), 1.0)
            inner = rest
            pre_split = {"auto_total": e0.epsilon}
            pre_params = {"auto_noisy_total": N}
        method, note = choose_method(n=x.size, epsilon=inner.epsilon, records_bound=N,
                                     workload=wl)
        # an option of another method (--count-bound, --k, --branching) is set aside, not an
        # error: the pick is only known here (it may follow a noisy total)
        takes = inspect.signature(_mechanism(method)).parameters
        for key in [key for key in params if key not in takes]:
            value = params.pop(key)
            unused.append(f"{key}={value!r} not used: auto picked {method}, which does not "
                          "take it")
        if method in WORKLOAD_AWARE:
            params["workload"] = wl
        if method == "optimized-structurefirst":  # no bin holds more than N records
            params.setdefault("count_bound", N)
            params.setdefault("records_bound", N)
        b_run = inner
    else:
        b_run = b
        if records_bound is not None:
            check_positive(records_bound, "records_bound")
            if method == "optimized-structurefirst":  # it tightens the budget-split model
                params["records_bound"] = records_bound
    fn = _mechanism(method)
    if method in ("structurefirst", "optimized-structurefirst"):
        params.setdefault("count_bound", None)  # a clear error if the public bound is missing
    try:
        rel = fn(x, epsilon=b_run, rng=rng, **params)
    except TypeError as exc:  # unknown keyword for this mechanism
        raise ParameterError(f"method {method!r}: {exc}") from None
    if note is not None:
        rel = dataclasses.replace(rel, budget=b,
                                  budget_split={**pre_split, **rel.budget_split},
                                  parameters={**rel.parameters, **pre_params,
                                              "auto_rule": note},
                                  notes=(*rel.notes, f"auto: {note}",
                                         *(f"auto: {u}" for u in unused)))
    return rel
