"""Labelled inputs: one convention for a histogram given as an array, a pandas Series or a dict.

Every veil function that takes counts over named bins (``veil.visits.hide``, ``resemble``,
``avoid``) accepts the same three forms:

* an array (or list) with an optional ``labels`` sequence of the same length;
* a pandas ``Series``: its index names the bins (unless it is the default 0..n-1 index);
* a ``dict`` (any mapping) from bin name to count.

When ``labels`` is given with a Series or a dict, the values are put in the order of
``labels`` and a bin the input does not mention counts as 0; a name that is not among the
labels is an error (it would otherwise be dropped silently).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .errors import ParameterError

__all__ = ["labelled_values", "is_series"]


def is_series(x: Any) -> bool:
    """True for a pandas Series (pandas is not imported)."""
    return type(x).__name__ == "Series" and hasattr(x, "index") and hasattr(x, "to_numpy")


def _default_index(index) -> bool:
    try:
        return bool(type(index).__name__ == "RangeIndex" and index.start == 0
                    and index.step == 1)
    except AttributeError:  # pragma: no cover - not a pandas index
        return False


def labelled_values(data: Any, labels: Sequence[str] | None = None, *,
                    name: str = "histogram") -> tuple[Any, tuple[str, ...] | None]:
    """The values and bin names of a labelled input (see the module docstring).

    Parameters
    ----------
    data : array_like, pandas.Series or mapping
    labels : sequence of str, optional
        The bin names (the domain) in their order.
    name : str
        The parameter's name, for error messages.

    Returns
    -------
    values : array_like
        ``data`` itself when it is neither a Series nor a mapping (validated by the caller).
    labels : tuple of str or None

    Examples
    --------
    >>> labelled_values({"bar": 3, "park": 1})
    (array([3, 1]), ('bar', 'park'))
    >>> labelled_values({"park": 1}, ["bar", "park"])
    (array([0, 1]), ('bar', 'park'))
    >>> labelled_values([1, 2], ["a", "b"])
    ([1, 2], ('a', 'b'))
    """
    labs = None if labels is None else tuple(str(x) for x in labels)
    if labs is not None and len(set(labs)) != len(labs):
        dup = sorted({x for x in labs if labs.count(x) > 1})[:3]
        raise ParameterError(f"labels repeat names: {dup}")
    if is_series(data):
        if _default_index(data.index) and labs is None:
            return data.to_numpy(), None
        if _default_index(data.index):
            return data.to_numpy(), labs
        keys = [str(k) for k in data.index]
        vals = data.to_numpy()
    elif isinstance(data, Mapping):
        keys = [str(k) for k in data.keys()]
        vals = np.asarray(list(data.values()))
    else:
        return data, labs
    if len(set(keys)) != len(keys):
        dup = sorted({k for k in keys if keys.count(k) > 1})[:3]
        raise ParameterError(f"{name} names a bin more than once: {dup}")
    if labs is None:
        return vals, tuple(keys)
    pos = {lab: i for i, lab in enumerate(labs)}
    unknown = [k for k in keys if k not in pos]
    if unknown:
        raise ParameterError(f"{name} has {len(unknown)} bin(s) that are not among the labels, "
                             f"e.g. {unknown[:3]}")
    out = np.zeros(len(labs), dtype=vals.dtype if vals.size else np.int64)
    for k, v in zip(keys, vals):
        out[pos[k]] = v
    return out, labs
