"""One entry point for every histogram mechanism, and the public ``auto`` rule."""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Iterator

import numpy as np

from ..budget import PureDP
from ..errors import ParameterError
from ..release import Release
from ..validation import check_choice, check_int, check_positive
from ._common import as_budget, as_counts

__all__ = ["publish", "publish_records", "publish_binned_records", "publish_bounded_records",
           "histogram_of", "METHODS", "WORKLOAD_AWARE",
           "choose_method", "AUTO_RULE", "AUTO_TOTAL_FRACTION", "workload_class",
           "check_options"]

METHODS = ("identity", "noisefirst", "structurefirst", "optimized-structurefirst", "boost",
           "hb", "sort-and-group", "ahp", "dawa", "hdmm", "mwem", "coarse", "privtree", "auto")

#: methods that take the public ``workload`` they should answer well
WORKLOAD_AWARE = ("dawa", "hdmm", "mwem", "coarse", "privtree")

#: ``auto``'s rule: Identity from ``exact_epsilon`` on; below it, per workload class,
#: ``(upper bound on log10(signal), method)`` in order,
#: ``signal = epsilon * N / n`` (records per bin in units of the noise scale ``1/epsilon``,
#: ``N`` the public records bound or the DP estimate of the total). Fitted offline on the
#: 18 DPBench 1-D datasets (``veil bench histograms --fit-auto ... --fit-target 1.15``, the
#: count of cells above 1.15x the best; docs/benchmarks.md, "`auto`: the public rule").
AUTO_RULE = {
    "exact_epsilon": 3.162278,
    "prefix": ((-1.5103, "coarse"), (1.4897, "privtree"), (math.inf, "hdmm")),
    "ranges": ((-1.5103, "coarse"), (1.4897, "privtree"), (math.inf, "hdmm")),
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
    'coarse'
    >>> choose_method(n=4096, epsilon=0.1, records_bound=4000, workload="all-range")[0]
    'privtree'
    >>> choose_method(n=1024, epsilon=1.0, records_bound=10**4, workload="all-range")[0]
    'privtree'
    >>> choose_method(n=1024, epsilon=1.0, records_bound=10**4)[0]   # prefix: to 10^1.49
    'privtree'
    >>> choose_method(n=1024, epsilon=1.0, records_bound=10**5)[0]
    'hdmm'
    >>> choose_method(n=4096, epsilon=1.0, records_bound=10**7)[0]
    'hdmm'
    >>> choose_method(n=4096, epsilon=5.0, records_bound=10**7)[0]
    'identity'
    >>> choose_method(n=65536, epsilon=1.0, records_bound=10**8)[0]   # no ready HDMM strategy
    'hb'
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
            why = (f"{cls} workload, signal epsilon*N/n = {signal:.3g} "
                   f"(log10 {ls:.2f} < {upper:g}): {method}")
            too_large = _too_large_for_auto(method, n)
            if too_large:
                method = AUTO_SIZE_FALLBACK[method]
                why += f"; {too_large}: {method}"
            return method, why
    raise ParameterError(f"auto rule for {cls!r} has no open last interval")  # pragma: no cover


#: what ``auto`` runs when its rule's pick does not suit the number of bins (the rule was
#: fitted at n = 1024): optimized StructureFirst's V-optimal table above
#: ``partition.VOPT_MAX_CELLS`` cells is refused (n >= 25,900 with k = n/10), so DAWA, its
#: neighbour in the rule; HDMM above the largest shipped strategy (4096 bins) optimizes its
#: strategy at run time (39 s at 8192 bins, 515 s at 65,536), so HB, the data-independent
#: tree (expected prefix error 1.22x HDMM's at 4096 and 8192 bins, docs/benchmarks.md)
AUTO_SIZE_FALLBACK = {"optimized-structurefirst": "dawa", "hdmm": "hb"}


def _too_large_for_auto(method: str, n: int) -> str:
    """Why ``method`` does not suit ``n`` bins for ``auto`` ('' when it does).

    Examples
    --------
    >>> _too_large_for_auto("hdmm", 4096), _too_large_for_auto("hdmm", 5000)[:30]
    ('', 'hdmm has no ready strategy for')
    """
    if method == "optimized-structurefirst":
        from .partition import VOPT_MAX_CELLS

        k = max(1, math.ceil(n / 10))
        if k > 1 and k * (n + 1) * 2 > VOPT_MAX_CELLS:
            return (f"its V-optimal table for {n:,} bins ({k * (n + 1) * 2:.3g} cells) is above "
                    f"the limit {VOPT_MAX_CELLS:.3g}")
    if method == "hdmm":
        from ._hdmm_shipped import SHIPPED_NS

        if n > max(SHIPPED_NS):
            return (f"hdmm has no ready strategy for {n:,} bins (above {max(SHIPPED_NS):,}: "
                    f"optimizing one takes minutes)")
    return ""


def check_options(method: str, n: int, *, records_bound=None, **params) -> None:
    """Check a method's public options for ``n`` bins before anything is read or charged.

    The same checks, and messages, as the mechanism itself runs (``k`` from 1 to n, a tree's
    ``branching`` from 2 to n, the required ``count_bound`` of StructureFirst, a positive
    ``records_bound``), so a command can refuse a bad option before it opens the privacy
    ledger (a missing ``--count-bound`` was refused after the charge had been reserved).
    With ``auto`` the options its pick may take are checked the same way.

    Examples
    --------
    >>> check_options("hb", 64)
    >>> check_options("structurefirst", 64, k=7)
    Traceback (most recent call last):
    ...
    veil.errors.ParameterError: count_bound is required: a public upper bound F on any bin count (e.g. from domain knowledge). It must not be computed from the private counts.
    """
    from ._common import check_count_bound, check_k_bins
    from .tree import check_branching

    method = check_choice(method, "method", METHODS)
    n = check_int(n, "n", minimum=1)
    if records_bound is not None:
        check_positive(records_bound, "records_bound")
    if params.get("k") is not None:
        check_k_bins(params["k"], n)
    if params.get("branching") is not None:
        check_branching(params["branching"], n)
    if params.get("buckets") is not None:
        check_int(params["buckets"], "buckets", minimum=1, maximum=n)
    if method in ("structurefirst", "optimized-structurefirst") or (
            method == "auto" and params.get("count_bound") is not None):
        check_count_bound(params.get("count_bound"))


def _mechanism(method: str):
    """The function implementing ``method`` (not ``'auto'``)."""
    from . import basic, sortgroup, structurefirst, tree
    from .coarse import coarse as coarse_fn
    from .dawa import dawa as dawa_fn
    from .hdmm import hdmm as hdmm_fn
    from .mwem import mwem as mwem_fn
    from .privtree import privtree as privtree_fn

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
        "coarse": coarse_fn,
        "privtree": privtree_fn,
    }[method]



def _refuse_records_as_counts(counts) -> None:
    """Loud failure for the classic mistake ``publish(df["age"], ...)``.

    A pandas Series or DataFrame column given as the counts is, far more often than not, one
    value per *record*: publishing it "as counts" releases one noisy "bin" per person. The
    caller says which one it is: ``publish(counts=...)`` for counts per bin, or
    ``publish(values=..., bins=...)`` / :func:`publish_records` for records.
    """
    kind = type(counts).__name__
    module = type(counts).__module__ or ""
    if module.startswith("pandas") and kind in ("Series", "DataFrame", "Index"):
        name = getattr(counts, "name", None)
        label = f" {name!r}" if name is not None else ""
        raise ParameterError(
            f"publish() got a pandas {kind}{label} as its first argument: if it holds one "
            f"value per record (e.g. df['age']), publish a histogram of it with "
            f"publish(values=..., bins=[public edges], epsilon=...) or publish_records(); if it "
            f"really holds one count per bin, pass it as publish(counts=...)")


def publish(data=None, /, *, counts=None, values=None, bins=None, epsilon,
            method: str = "auto", rng=None, records_bound=None, users=None,
            max_records=None, **params) -> Release:
    """Publish an eps-DP histogram with the chosen mechanism.

    Two inputs, never guessed: ``counts`` (one true count per bin, in domain order) or
    ``values`` with public ``bins`` (one value per record; see :func:`publish_records`).
    A positional argument is taken as counts, except a pandas Series/DataFrame, which is
    refused (it is usually a column of records: ``publish(df["age"], ...)`` would
    publish one noisy "bin" per person).

    Parameters
    ----------
    data : array_like of int, shape (n,), positional only
        Counts per bin (same as ``counts=``).
    counts : array_like of int, shape (n,)
        True counts per bin, in domain order (bins fixed in advance, publicly).
    values : array_like of float, optional
        One value per record instead of counts (needs ``bins``).
    bins : array_like of float, optional
        Public bin edges for ``values`` (see :func:`publish_records`).
    users, max_records : optional
        Per-user contribution bounding for ``values`` (see :func:`publish_records`).
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
    >>> r = publish(values=[23, 35, 35, 71], bins=[0, 30, 60, 90], epsilon=1.0,
    ...             method="identity", rng=make_rng(seed=0))
    >>> r.value.shape, r.protects
    ((3,), 'record')
    """
    given = [n for n, v in (("a positional argument", data), ("counts", counts),
                            ("values", values)) if v is not None]
    if len(given) != 1:
        raise ParameterError("publish() needs exactly one of counts (one count per bin) or "
                             f"values with bins (one value per record); got "
                             f"{' and '.join(given) if given else 'neither'}")
    if values is not None:
        return publish_records(values, bins=bins, epsilon=epsilon, method=method, rng=rng,
                               records_bound=records_bound, users=users,
                               max_records=max_records, **params)
    if bins is not None or users is not None or max_records is not None:
        raise ParameterError("bins, users and max_records apply to values (records), not to "
                             "counts per bin")
    if data is not None:
        _refuse_records_as_counts(data)
        counts = data
    return _publish_counts(counts, epsilon=epsilon, method=method, rng=rng,
                           records_bound=records_bound, **params)


def histogram_of(values, bins) -> tuple:
    """Counts of ``values`` in the public ``bins`` (values outside them are not counted).

    Returns ``(counts, edges)``; ``bins`` must be at least two finite, increasing edges
    chosen without looking at the data (a number of bins is refused: its range would have
    to come from the data). ``values`` is an array, or an *iterator* of 1-D arrays (batches,
    e.g. :func:`veil.io.iter_column`) whose counts are summed: memory then follows one batch
    and the bins, not the number of records.

    Examples
    --------
    >>> histogram_of([1.0, 2.5, 2.5, 9.0, 99.0], [0, 2, 4, 10])[0].tolist()
    [1, 2, 1]
    >>> histogram_of(iter([[1.0, 2.5], [2.5, 9.0, 99.0]]), [0, 2, 4, 10])[0].tolist()
    [1, 2, 1]
    """
    import numpy as np

    from ..validation import check_finite_array

    if bins is None or np.ndim(bins) == 0:
        raise ParameterError(
            f"bins must be public bin edges (e.g. [0, 10, 20, ...]), got {bins!r}: a number "
            "of bins would take its range from the private data")
    edges = check_finite_array(bins, "bins", ndim=1)
    if edges.size < 2 or (np.diff(edges) <= 0).any():
        raise ParameterError("bins must hold at least two increasing edges")
    if isinstance(values, Iterator):
        counts = np.zeros(edges.size - 1, dtype=np.int64)
        for batch in values:
            x = check_finite_array(batch, "values", ndim=1, allow_empty=True)
            counts += np.histogram(x, bins=edges)[0]
        return counts, edges
    x = check_finite_array(values, "values", ndim=1, allow_empty=True)
    counts, _ = np.histogram(x, bins=edges)
    return counts.astype(np.int64), edges


def publish_records(values, *, bins, epsilon, method: str = "auto", rng=None,
                    records_bound=None, users=None, max_records=None, **params) -> Release:
    """Publish an eps-DP histogram of a column of records over public bins.

    Why private: the histogram of the records has L1 sensitivity 1 under adding or removing
    one record (one count moves by 1), which is what every mechanism of :func:`publish`
    assumes; the bins are public. Values outside the bins are not counted (their number is
    not published). With ``users`` and ``max_records = m``, at most ``m`` records per user
    are kept, sampled uniformly inside DuckDB (:mod:`veil.bounding`), and the mechanism runs
    at ``epsilon / m`` per record: by group privacy over the ``m`` records one user can
    contribute, the release is ``epsilon``-DP per user (``protects="user"``).

    Parameters
    ----------
    values : array_like of float, or an iterator of arrays
        One value per record (NaN/inf refused); without ``users``, also batches of them (an
        iterator, e.g. :func:`veil.io.iter_column`: memory then follows one batch).
    bins : array_like of float
        Public bin edges (see :func:`histogram_of`).
    epsilon : float or PureDP
        The budget per record, or per user with ``max_records``.
    method, rng, records_bound, **params
        As in :func:`publish`.
    users : array_like, optional
        The user of each record (same length as ``values``).
    max_records : int, optional
        The public bound ``m`` on records per user (needs ``users``).

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = publish_records([20, 20, 20, 41], bins=[0, 30, 60], users=["a", "a", "a", "b"],
    ...                     max_records=2, epsilon=1.0, method="identity", rng=make_rng(seed=3))
    >>> r.protects, r.epsilon, r.parameters["max_records"]
    ('user', 1.0, 2)
    """
    import dataclasses

    import numpy as np

    from ..validation import check_finite_array, check_int

    b = as_budget(epsilon)
    if (users is None) != (max_records is None):
        raise ParameterError("users and max_records go together: a user-level release needs "
                             "each record's user and a public bound on records per user")
    if users is None:
        counts, edges = histogram_of(values, bins)
        return publish_binned_records(counts, edges, epsilon=b, method=method, rng=rng,
                                      records_bound=records_bound, **params)
    if isinstance(values, Iterator):
        raise ParameterError("values in batches are for record-level histograms; with users "
                             "and max_records give one array")
    import pyarrow as pa

    from ..bounding import bound_contributions
    from ..random import make_rng

    m = check_int(max_records, "max_records", minimum=1)
    x = check_finite_array(values, "values", ndim=1, allow_empty=True)
    u = np.asarray(users)
    if u.shape != x.shape:
        raise ParameterError(f"users has {u.size} entries, values {x.size}")
    g = make_rng(rng)
    kept = bound_contributions(pa.table({"user": pa.array(u.astype(str)), "value": x}),
                               user="user", max_records=m, rng=g)
    counts, edges = histogram_of(kept.column("value").to_numpy(), bins)
    return publish_bounded_records(counts, edges, epsilon=b, max_records=m, method=method,
                                   rng=g, records_bound=records_bound, **params)


def publish_bounded_records(counts, edges, *, epsilon, max_records, method: str = "auto",
                            rng=None, records_bound=None, **params) -> Release:
    """The release of :func:`publish_records` with ``users`` and ``max_records``, for the
    records already kept by the per-user bounding and counted into public bins.

    Why private: as :func:`publish_records`: the counts come from at most ``max_records``
    records per user (the bounding), so the mechanism runs at ``epsilon / max_records`` per
    record and is ``epsilon``-DP per user by group privacy. The caller must have drawn the
    bounding's key from ``rng`` first (``veil.bounding.bounding_key(rng)``), as
    :func:`publish_records` does: the same ``rng`` then gives the same release.

    Parameters
    ----------
    counts : array_like of int
        Kept records per bin.
    edges : array_like of float
        The public bin edges (``len(counts) + 1``).
    epsilon : float or PureDP
        The budget per user.
    max_records : int
        The public bound ``m`` the bounding used.
    method, rng, records_bound, **params
        As in :func:`publish`.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = publish_bounded_records([2, 1], [0, 30, 60], epsilon=1.0, max_records=2,
    ...                             method="identity", rng=make_rng(seed=3))
    >>> r.protects, r.parameters["epsilon_per_record"]
    ('user', 0.5)
    """
    from ..validation import check_int

    b = as_budget(epsilon)
    m = check_int(max_records, "max_records", minimum=1)
    e = _edges_of(counts, edges)
    per_record = PureDP(b.epsilon / m)
    rel = _publish_counts(counts, epsilon=per_record, method=method, rng=rng,
                          records_bound=records_bound, **params)
    note = (f"user-level: at most {m} records per user (sampled uniformly), mechanism run at "
            f"epsilon/{m} = {per_record.epsilon:g} per record; by group privacy epsilon "
            f"{b.epsilon:g} per user")
    # each step's per-record epsilon times m is what it costs one user
    split = {k: v * m for k, v in rel.budget_split.items()} or {"histogram": b.epsilon}
    return dataclasses.replace(
        rel, budget=b, budget_split=split, protects="user", notes=(*rel.notes, note),
        parameters={**rel.parameters, "input": "records", "bins": e.tolist(),
                    "max_records": m, "epsilon_per_record": per_record.epsilon})


def _edges_of(counts, edges):
    """``edges`` as float64, checked to bound ``len(counts)`` bins."""
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 1 or e.size != np.size(counts) + 1:
        raise ParameterError(f"edges must hold len(counts) + 1 = {np.size(counts) + 1} values, "
                             f"got {e.size}")
    return e


def publish_binned_records(counts, edges, *, epsilon, method: str = "auto", rng=None,
                           records_bound=None, **params) -> Release:
    """The release of :func:`publish_records` (without users) for records already counted
    into public bins, e.g. by :func:`histogram_of` over batches: same mechanism, same
    parameters, same random draws for the same ``rng``.

    Why private: as :func:`publish_records` (one record moves one count by 1; the edges are
    public).

    Parameters
    ----------
    counts : array_like of int
        Records per bin.
    edges : array_like of float
        The public bin edges the counts were made with (``len(counts) + 1``).
    epsilon, method, rng, records_bound, **params
        As in :func:`publish`.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> c, e = histogram_of(iter([[1.0, 2.5], [2.5, 9.0]]), [0, 2, 4, 10])
    >>> r = publish_binned_records(c, e, epsilon=1.0, method="identity", rng=make_rng(seed=3))
    >>> r.protects, r.parameters["bins"]
    ('record', [0.0, 2.0, 4.0, 10.0])
    """
    b = as_budget(epsilon)
    e = _edges_of(counts, edges)
    rel = _publish_counts(counts, epsilon=b, method=method, rng=rng,
                          records_bound=records_bound, **params)
    return dataclasses.replace(rel, parameters={**rel.parameters, "input": "records",
                                                "bins": e.tolist()}, protects="record")


def _publish_counts(counts, *, epsilon, method: str = "auto", rng=None, records_bound=None,
                    **params) -> Release:
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
            # unused by the pick, but a bound of -3 or nan is still a mistake to report
            N = (check_positive(records_bound, "records_bound") if records_bound is not None
                 else 1.0)
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
        if method in ("dawa", "coarse"):  # its penalty / bucket count follows the signal
            params.setdefault("records_bound", N)
        b_run = inner
    else:
        b_run = b
        if records_bound is not None:
            check_positive(records_bound, "records_bound")
            if method in ("optimized-structurefirst", "dawa", "coarse"):
                # it tightens optimized StructureFirst's budget-split model; it sets
                # DAWA's selection penalty and coarse's number of buckets from the signal
                params["records_bound"] = records_bound
            else:  # said, not silently dropped
                unused.append(f"records_bound={records_bound:g} not used: {method} takes no "
                              "records bound")
    fn = _mechanism(method)
    if method in ("structurefirst", "optimized-structurefirst"):
        params.setdefault("count_bound", None)  # a clear error if the public bound is missing
    try:
        rel = fn(x, epsilon=b_run, rng=rng, **params)
    except TypeError as exc:  # unknown keyword for this mechanism
        raise ParameterError(f"method {method!r}: {exc}") from None
    if note is None and unused:
        rel = dataclasses.replace(rel, notes=(*rel.notes, *unused))
    if note is not None:
        rel = dataclasses.replace(rel, budget=b,
                                  budget_split={**pre_split, **rel.budget_split},
                                  parameters={**rel.parameters, **pre_params,
                                              "auto_rule": note},
                                  notes=(*rel.notes, f"auto: {note}",
                                         *(f"auto: {u}" for u in unused)))
        if "auto_noisy_total" in pre_params:  # the pick and all that follows are outputs
            from ..release import PICKED_FROM_NOISE

            rel = dataclasses.replace(rel, derived=PICKED_FROM_NOISE)
    return rel
