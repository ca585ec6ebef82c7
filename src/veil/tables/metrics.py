"""Information loss of an anonymized table, per attribute: granularity and non-uniform entropy.

Both compare each published quasi-identifier cell with the input cell it
replaces, through the attribute's hierarchy (a flat one, value -> ``*``, for
suppression-only outputs):

* **granularity loss** of a cell published as label ``g`` (ARX's "loss",
  Iyengar's generalized loss): ``(leaves(g) - 1) / (leaves - 1)``, the share
  of the attribute's domain (hierarchy leaves) the label leaves open; 0 for
  the value itself, 1 for ``*`` or a suppressed cell. Reported as the mean
  over the attribute's cells, and the mean over all QI cells;
* **non-uniform entropy** (Gionis and Tassa 2009): a cell with input value
  ``v`` published as ``g`` costs ``log2(n(g) / n(v))`` bits, where ``n(v)``
  counts input rows with value ``v`` and ``n(g)`` input rows whose value lies
  under ``g`` (all rows for a suppressed cell): the uncertainty about ``v``
  left by ``g`` under the input's own frequencies. Reported as the sum over
  the attribute's cells (bits) and the total.

Both depend on the input (frequencies, which values occur), so they belong
in the custodian's private report, not next to the published table.

Examples
--------
>>> from veil.tables.hierarchy import Hierarchy
>>> h = Hierarchy([["a", "ab", "*"], ["b", "ab", "*"], ["c", "c", "*"]]).encode(["a", "b", "c"])
>>> codes = np.array([[0], [1], [2], [2]])
>>> m = utility_metrics(codes, [h], levels=np.array([[1], [1], [0], [0]]))
>>> round(m["granularity"], 3), round(m["nue_bits"], 3)
(0.25, 2.0)
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["utility_metrics", "flat_hierarchies", "cell_costs"]


def flat_hierarchies(values: Sequence[np.ndarray], names: Sequence[str] | None = None):
    """Flat encoded hierarchies (value -> '*') for columns with these distinct values."""
    from .hierarchy import Hierarchy

    names = list(names) if names is not None else [None] * len(values)
    return [Hierarchy.flat(v.tolist(), name=nm).encode(list(v), column=nm)
            for v, nm in zip(values, names)]


def cell_costs(codes_j: np.ndarray, h, level: int) -> tuple[np.ndarray, np.ndarray]:
    """Granularity and NUE (bits) of every row's cell of one attribute at one level."""
    g = h.gen[level][codes_j]
    gran = h.granularity(level)[g]
    n_v = np.bincount(codes_j, minlength=len(h.gen[0]))
    n_g = np.bincount(h.gen[level][codes_j], minlength=len(h.text[level]))
    nue = np.log2(n_g[g] / n_v[codes_j])
    return gran, nue


def utility_metrics(codes: np.ndarray, hierarchies: Sequence, *, levels: np.ndarray | None = None,
                    suppressed: np.ndarray | None = None, names: Sequence[str] | None = None
                    ) -> dict[str, Any]:
    """Granularity and non-uniform entropy per attribute and in total.

    Parameters
    ----------
    codes : ndarray (n, q)
        Input codes of the QI columns (``EncodedQI.codes``).
    hierarchies : sequence of EncodedHierarchy
        One per QI column, on the same codes.
    levels : ndarray (n, q) of int, optional
        Published level of each cell (default 0: the value itself).
    suppressed : ndarray (n, q) of bool, optional
        Cells published as the suppression marker.
    names : sequence of str, optional
        Attribute names for the per-attribute entries.
    """
    codes = np.asarray(codes)
    n, q = codes.shape
    levels = np.zeros((n, q), dtype=np.int64) if levels is None else np.asarray(levels)
    suppressed = np.zeros((n, q), dtype=bool) if suppressed is None else np.asarray(suppressed)
    names = list(names) if names is not None else [h.name or f"q{j}" for j, h in
                                                    enumerate(hierarchies)]
    per: dict[str, dict[str, float]] = {}
    gran_tot = nue_tot = 0.0
    for j, h in enumerate(hierarchies):
        cj = codes[:, j]
        gran = np.zeros(n)
        nue = np.zeros(n)
        for lev in np.unique(levels[:, j]):
            m = levels[:, j] == lev
            g, e = cell_costs(cj, h, int(lev))
            gran[m], nue[m] = g[m], e[m]
        s = suppressed[:, j]
        if s.any():
            n_v = np.bincount(cj, minlength=len(h.gen[0]))
            gran[s] = 1.0
            nue[s] = np.log2(n / n_v[cj[s]])
        per[names[j]] = {"granularity": float(gran.mean()) if n else 0.0,
                         "nue_bits": float(nue.sum())}
        gran_tot += float(gran.sum())
        nue_tot += float(nue.sum())
    return {"granularity": gran_tot / (n * q) if n * q else 0.0, "nue_bits": nue_tot,
            "per_attribute": per}
