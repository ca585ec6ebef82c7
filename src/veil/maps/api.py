"""One entry point for every map mechanism (:func:`publish`), and the public ``auto`` rule."""

from __future__ import annotations

import dataclasses

from ..errors import ParameterError
from ..release import Release
from ..validation import check_choice
from ._common import as_budget, as_grid_counts, check_sensitivity

__all__ = ["publish", "METHODS", "MECHANISMS"]

#: the mechanisms (``auto`` picks one of them by a public rule, see :mod:`veil.maps.auto`)
MECHANISMS = ("identity", "ug", "ag", "quadtree", "hb2d", "privtree", "dawa2d", "hdmm")
METHODS = (*MECHANISMS, "auto")

#: mechanisms whose grid-size rule needs the number of points (public ``scale`` or noisy)
NEEDS_SCALE = ("ug", "ag")


def _fn(method: str):
    from .hdmm import hdmm
    from .mechanisms import ag, dawa2d, hb2d, identity, quadtree, ug
    from .privtree import privtree

    return {"identity": identity, "ug": ug, "ag": ag, "quadtree": quadtree, "hb2d": hb2d,
            "privtree": privtree, "dawa2d": dawa2d, "hdmm": hdmm}[method]


def publish(counts, *, epsilon, method: str = "auto", sensitivity: int = 1,
            scale: float | None = None, rng=None, **params) -> Release:
    """Publish an eps-DP map (a 2-D count grid) with the chosen mechanism.

    Parameters
    ----------
    counts : array_like of int, shape (rows, cols)
        True counts per cell of a public grid (e.g. :attr:`veil.maps.PointCounts.counts`).
    epsilon : float or PureDP
    method : str
        One of :data:`METHODS`; ``'auto'`` applies :func:`veil.maps.auto.choose_method`.
    sensitivity : int
        Points one protected unit can contribute (the per-person bound, or 1).
    scale : float, optional
        A *public* number of points (never the private count) for the grid-size rules of UG,
        AG and ``auto``; without it they spend 5 % of epsilon on a noisy count.
    rng : numpy.random.Generator, optional
    **params
        Passed to the mechanism (e.g. ``height`` for the quadtree, ``theta`` for PrivTree).

    Examples
    --------
    >>> import numpy as np
    >>> from veil.random import make_rng
    >>> r = publish(np.ones((16, 16), dtype=int), epsilon=1.0, method="quadtree",
    ...             rng=make_rng(seed=0))
    >>> r.mechanism, r.value.shape
    ('quadtree', (16, 16))
    """
    method = check_choice(method, "method", METHODS)
    x = as_grid_counts(counts)
    b = as_budget(epsilon)
    s = check_sensitivity(sensitivity)
    _check_options(method, params)
    if method == "auto":
        from .auto import publish_auto

        return publish_auto(x, epsilon=b, sensitivity=s, scale=scale, rng=rng, **params)
    if method in NEEDS_SCALE:
        params["scale"] = scale
    elif scale is not None:
        from ..validation import check_positive

        check_positive(scale, "scale")  # accepted (and unused) for a uniform call
    try:
        rel = _fn(method)(x, epsilon=b, sensitivity=s, rng=rng, **params)
    except TypeError as exc:  # unknown keyword for this mechanism
        raise ParameterError(f"method {method!r}: {exc}") from None
    return rel


def _check_options(method: str, params: dict) -> None:
    """A mechanism option given to a method that does not take it is an error naming the
    methods that do (`--height 2` with the default auto was an internal TypeError)."""
    import inspect

    from .auto import publish_auto

    own = set(inspect.signature(publish_auto).parameters) - {"x", "epsilon", "sensitivity",
                                                              "scale", "rng"}
    for name in params:
        if method == "auto" and name in own:  # auto's own options (its rule, its shares)
            continue
        takers = [m for m in MECHANISMS
                  if name in inspect.signature(_fn(m)).parameters]
        if method == "auto" or method not in takers:
            where = ", ".join(takers) if takers else "no method"
            raise ParameterError(f"option {name} applies to --method {where}, not {method!r}"
                                 + (" (auto chooses its methods' options itself)"
                                    if method == "auto" else ""))


def with_parameters(rel: Release, **extra) -> Release:
    """The release with more public parameters recorded."""
    return dataclasses.replace(rel, parameters={**rel.parameters, **extra})
