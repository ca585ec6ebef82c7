"""One entry point for every histogram mechanism, and the public ``auto`` rule."""

from __future__ import annotations

from ..errors import ParameterError
from ..release import Release
from ..validation import check_choice, check_positive
from ._common import as_budget, as_counts

__all__ = ["publish", "METHODS", "choose_method", "AUTO_THRESHOLD"]

METHODS = ("identity", "noisefirst", "structurefirst", "optimized-structurefirst", "boost",
           "hb", "sort-and-group", "ahp", "dawa", "auto")

#: ``auto`` picks DAWA when epsilon * records_bound / n is at most this, else HB.
AUTO_THRESHOLD = 0.01


def choose_method(*, n: int, epsilon: float, records_bound: float | None) -> tuple[str, str]:
    """The public rule behind ``method='auto'``; returns ``(method, reason)``.

    The rule reads only public quantities: the number of bins ``n``, epsilon and
    a public upper bound on the number of records (``records_bound``, e.g. the
    population size; never the private total). With ``signal = epsilon *
    records_bound / n`` (records per bin in units of the noise scale):

    * ``signal <= AUTO_THRESHOLD`` (low signal): ``dawa``, whose partition
      averages away noise over flat regions;
    * otherwise, or when no bound is given: ``hb``, the hierarchical method
      whose range-query error does not depend on the data.

    This follows DPBench's finding that DAWA wins at small eps x scale and tree
    methods at large eps x scale. The threshold 0.01 was calibrated on the 18
    DPBench histograms (n = 4096, one trial, eps in {0.01, 0.1, 1}, scales 1e2 to
    1e7): veil's DAWA won most datasets at eps x scale <= 10 (signal <= 0.0025) and
    HB at eps x scale >= 100 (signal >= 0.025); see ``docs/benchmarks.md (DP histograms)``.

    Examples
    --------
    >>> choose_method(n=4096, epsilon=0.1, records_bound=100)[0]
    'dawa'
    >>> choose_method(n=4096, epsilon=1.0, records_bound=10**7)[0]
    'hb'
    """
    if records_bound is None:
        return "hb", "no public records_bound given: hb (data-independent error)"
    rb = check_positive(records_bound, "records_bound")
    signal = epsilon * rb / n
    if signal <= AUTO_THRESHOLD:
        return "dawa", f"epsilon*records_bound/n = {signal:.3g} <= {AUTO_THRESHOLD:g}: dawa"
    return "hb", f"epsilon*records_bound/n = {signal:.3g} > {AUTO_THRESHOLD:g}: hb"


def publish(counts, *, epsilon, method: str = "auto", rng=None, records_bound=None,
            **params) -> Release:
    """Publish an eps-DP histogram with the chosen mechanism.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
        True counts per bin, in domain order (bins fixed in advance, publicly).
    epsilon : float or PureDP
    method : str
        One of :data:`METHODS`; ``'auto'`` applies :func:`choose_method`.
    rng : numpy.random.Generator, optional
    records_bound : float, optional
        Public upper bound on the number of records (used by ``auto`` and by
        ``optimized-structurefirst``'s budget split).
    **params
        Passed to the mechanism (e.g. ``k``, ``count_bound``, ``branching``).

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = publish([4, 8, 15, 16, 23, 42], epsilon=1.0, method="hb", rng=make_rng(seed=0))
    >>> r.mechanism
    'hb'
    """
    from . import basic, sortgroup, structurefirst, tree
    from .dawa import dawa as dawa_fn

    method = check_choice(method, "method", METHODS)
    x = as_counts(counts)
    b = as_budget(epsilon)
    note = None
    if method == "auto":
        method, note = choose_method(n=x.size, epsilon=b.epsilon, records_bound=records_bound)
    elif records_bound is not None:
        check_positive(records_bound, "records_bound")
        if method == "optimized-structurefirst":  # it tightens the budget-split model
            params["records_bound"] = records_bound
    fn = {
        "identity": basic.identity,
        "noisefirst": basic.noise_first,
        "structurefirst": structurefirst.structure_first,
        "optimized-structurefirst": structurefirst.optimized_structure_first,
        "boost": tree.boost,
        "hb": tree.hb,
        "sort-and-group": sortgroup.sort_and_group,
        "ahp": sortgroup.ahp,
        "dawa": dawa_fn,
    }[method]
    if method in ("structurefirst", "optimized-structurefirst"):
        params.setdefault("count_bound", None)  # a clear error if the public bound is missing
    try:
        rel = fn(x, epsilon=b, rng=rng, **params)
    except TypeError as exc:  # unknown keyword for this mechanism
        raise ParameterError(f"method {method!r}: {exc}") from None
    if note is not None:
        import dataclasses

        rel = dataclasses.replace(rel, parameters={**rel.parameters, "auto_rule": note},
                                  notes=(*rel.notes, f"auto: {note}"))
    return rel
