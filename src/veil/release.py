"""The :class:`Release`: a private output together with what a user needs to judge it."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .budget import GeoDP, PureDP

__all__ = ["Release", "to_jsonable", "PROTECTED_UNITS", "TabularMixin", "split_outputs"]

#: The fields of a release that may be outputs of its randomized steps (see
#: :attr:`Release.derived`).
_DERIVABLE = ("mechanism", "parameters", "expected_error", "notes", "noise_scale",
              "noise_variance", "budget_split")

#: What a release whose mechanism was picked from a noisy value (``auto`` after buying a
#: noisy total or a feature) declares as outputs: every field the pick decides, as whole
#: fields, so that the list itself is the same whichever mechanism was picked (two
#: neighbouring inputs can flip the pick; listing the chosen mechanism's own fields made the
#: list, and the fields outside it, differ)
PICKED_FROM_NOISE = ("mechanism", "parameters", "notes", "noise_scale", "noise_variance",
                     "expected_error", "budget_split")

#: The units of protection a release can state (see :attr:`Release.protects`).
PROTECTED_UNITS = ("record", "user")


class TabularMixin:
    """``to_pandas()`` from ``to_arrow()``: every veil result converts the same way.

    A result class defines :meth:`to_arrow` (a :class:`pyarrow.Table` of what may be
    published, one row per bin, cell, point or record); ``to_pandas()`` is that table as a
    :class:`pandas.DataFrame` (pandas is optional: it is imported only here).
    """

    def to_arrow(self):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def to_pandas(self):
        """The published values as a :class:`pandas.DataFrame` (see :meth:`to_arrow`)."""
        return self.to_arrow().to_pandas()


def split_outputs(meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a sidecar (:meth:`Release.metadata`, or its JSON read back) into its public fields
    and its declared outputs (the fields named in its ``derived`` list).

    Returns ``(public, outputs)``; ``outputs`` maps each declared name to its value
    (``"<absent>"`` when the sidecar lacks it). ``meta`` is not modified.

    Examples
    --------
    >>> split_outputs({"parameters": {"n": 4, "edges": [0, 4]}, "notes": [],
    ...                "derived": ["parameters.edges"]})
    ({'parameters': {'n': 4}, 'notes': [], 'derived': ['parameters.edges']}, \
{'parameters.edges': [0, 4]})
    """
    public = {k: (dict(v) if isinstance(v, dict) else v) for k, v in meta.items()}
    outputs = {}
    for name in meta.get("derived") or []:
        head, _, key = str(name).partition(".")
        if key:
            outputs[name] = public.get(head, {}).pop(key, "<absent>")
        else:
            outputs[name] = public.pop(head, "<absent>")
    return public, outputs


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, budgets and dataclasses into JSON-friendly values."""
    if isinstance(obj, PureDP | GeoDP):
        return obj.to_dict()
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating | float):
        v = float(obj)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(obj, np.bool_):
        return bool(obj)
    if hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict())
    return obj


@dataclass(frozen=True)
class Release(TabularMixin):
    """A private output with its provenance.

    Attributes
    ----------
    value : Any
        The released data (array, table, points ...).
    mechanism : str
        Name of the mechanism that produced it.
    budget : PureDP or GeoDP
        The total budget spent.
    parameters : dict
        The public parameters the mechanism was called with, and the values it derived from
        its own noisy outputs (listed in :attr:`derived`).
    budget_split : dict
        How the budget was divided among the mechanism's steps (label -> epsilon).
    noise_scale : float or None
        Scale of the noise added (e.g. Laplace b, discrete Laplace t).
    noise_variance : float or None
        Per-value variance of the noise, when it has a closed form.
    expected_error : dict
        Optional named error estimates (e.g. expected absolute error per bin).
    notes : tuple of str
        Caveats (e.g. floating point; effective epsilon after rounding).
    protects : {"record", "user"}
        The unit of protection: ``"record"`` when neighbouring inputs differ in one record
        (one check-in, one point, one row of a table: the default of every mechanism that
        takes counts or points), ``"user"`` when they differ in everything one person
        contributed (contribution bounded to a public number of records per user, or a
        whole trajectory). A record-level guarantee protects a person only if each person
        contributed a single record.

    columns : tuple of str, optional
        Names of the columns of an ``(n, k)`` value (``("lat", "lon")`` for points), used by
        :meth:`to_arrow`.
    derived : tuple of str
        The fields of :meth:`metadata` that are *outputs*, not settings: values the mechanism
        computed from its own randomized steps (a partition chosen with noisy costs, a
        number of tree leaves, an error estimate from the noisy counts, a method picked on
        a noisy total). They are published under the release's epsilon (post-processing of
        the DP steps), so they vary from run to run and may differ between neighbouring
        inputs; every other field depends on the public parameters only. Names are
        ``"parameters.KEY"``, ``"expected_error.KEY"`` or a top-level field (``"notes"``,
        ``"mechanism"``, ``"expected_error"`` as a whole). When ``"mechanism"`` is listed (``auto`` picking on a noisy
        quantity), everything that follows from the pick is an output too.

    Examples
    --------
    >>> from veil.budget import PureDP
    >>> Release([1, 2], "identity", PureDP(1.0)).protects
    'record'
    >>> Release([1, 2], "identity", PureDP(1.0), protects="person")
    Traceback (most recent call last):
    ...
    veil.errors.ParameterError: protects must be one of 'record', 'user', got 'person'
    >>> import numpy as np
    >>> r = Release(np.array([3.0, -1.0]), "laplace", PureDP(1.0))
    >>> r.to_pandas()
       index  value
    0      0    3.0
    1      1   -1.0
    >>> r.to_arrow().column_names
    ['index', 'value']
    """

    value: Any
    mechanism: str
    budget: PureDP | GeoDP
    parameters: dict[str, Any] = field(default_factory=dict)
    budget_split: dict[str, float] = field(default_factory=dict)
    noise_scale: float | None = None
    noise_variance: float | None = None
    expected_error: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    protects: str = "record"
    columns: tuple[str, ...] | None = None
    derived: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from .errors import ParameterError
        from .validation import check_choice

        check_choice(self.protects, "protects", PROTECTED_UNITS)
        for name in self.derived:
            head, _, key = str(name).partition(".")
            if head not in _DERIVABLE or (key and key not in getattr(self, head)):
                raise ParameterError(f"derived field {name!r} is not a field of this "
                                     f"{self.mechanism} release")

    @property
    def epsilon(self) -> float:
        b = self.budget
        return b.epsilon if isinstance(b, PureDP) else b.epsilon_per_metre

    def metadata(self) -> dict[str, Any]:
        """Everything but the value, as JSON-friendly data (the CLI's sidecar)."""
        return to_jsonable({
            "mechanism": self.mechanism,
            "budget": self.budget,
            "parameters": self.parameters,
            "budget_split": self.budget_split,
            "noise_scale": self.noise_scale,
            "noise_variance": self.noise_variance,
            "expected_error": self.expected_error,
            "notes": list(self.notes),
            "protects": self.protects,
            "derived": sorted(set(self.derived)),
        })

    def to_arrow(self):
        """The released value as a :class:`pyarrow.Table` (nothing else of the release).

        * a table (pyarrow, pandas, a dict of columns) as it is;
        * a 1-D array (a histogram): columns ``index, value``;
        * an ``(n, k)`` array with :attr:`columns` (points): one column per name;
        * any other 2-D array (a map): one row per cell, ``row, col, value``, with the cell's
          ``lat_min, lat_max, lon_min, lon_max`` when the parameters hold its public grid;
        * a scalar: one row, column ``value``.
        """
        import pyarrow as pa

        from .io.write import to_arrow as _table

        v = self.value
        if isinstance(v, pa.Table | pa.RecordBatch) or isinstance(v, dict) or (
                type(v).__name__ == "DataFrame" and hasattr(v, "columns")):
            return _table(v)
        a = np.asarray(v)
        if a.ndim == 0:
            return pa.table({"value": a.reshape(1)})
        if a.ndim == 1:
            return pa.table({"index": np.arange(a.size, dtype=np.int64), "value": a})
        if a.ndim == 2 and self.columns is not None:
            if len(self.columns) != a.shape[1]:
                from .errors import ParameterError

                raise ParameterError(f"the release names {len(self.columns)} columns for a "
                                     f"value of shape {a.shape}")
            return pa.table({str(c): a[:, j] for j, c in enumerate(self.columns)})
        if a.ndim == 2:
            grid = self.parameters.get("grid")
            cols: dict[str, Any] = {}
            if isinstance(grid, dict) and {"rows", "cols", "bbox"} <= set(grid) \
                    and (int(grid["rows"]), int(grid["cols"])) == a.shape:
                from .maps.grid import MapGrid

                cols = MapGrid.from_dict(grid).cell_bounds()
            else:
                r, c = np.divmod(np.arange(a.size, dtype=np.int64), a.shape[1])
                cols = {"row": r, "col": c}
            cols["value"] = a.ravel()
            return pa.table(cols)
        from .errors import ParameterError

        raise ParameterError(f"a release value of shape {a.shape} has no table form")

    def with_derived(self, *names: str) -> Release:
        """This release with ``names`` added to :attr:`derived`."""
        import dataclasses

        return dataclasses.replace(self, derived=tuple(dict.fromkeys((*self.derived,
                                                                      *names))))

    def sidecar_json(self) -> str:
        return json.dumps(self.metadata(), indent=2, sort_keys=True)

    def __repr__(self) -> str:  # short: never dump a large value
        shape = getattr(self.value, "shape", None)
        return (f"Release(mechanism={self.mechanism!r}, budget={self.budget!r}, "
                f"noise_scale={self.noise_scale!r}, value_shape={shape})")
