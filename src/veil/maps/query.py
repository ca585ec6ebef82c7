"""Rectangle queries answered from a published map (post-processing: no privacy cost).

A published map gives an estimated number of points per cell. A query box in degrees is
answered by assuming the points of a cell are spread uniformly over it: cells wholly inside the
box count fully, cells cut by its edges count in proportion to the part of the cell inside (in
degrees of latitude and longitude). With the cumulative map ``P`` (a summed-area table) this
is a bilinear interpolation of ``P`` at the four corners of the box, so any number of boxes is
answered in ``O(1)`` each. The part of a box outside the map's grid counts 0 (the map says
nothing there), and :func:`query_boxes` reports how much of each box lies inside.
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ._blocks import prefix2d
from .grid import MapGrid, _check_box

__all__ = ["query_boxes", "answer_cells"]


def _interp(P: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Bilinear interpolation of the table ``P`` (rows+1, cols+1) at fractional (u, v)."""
    rows, cols = P.shape[0] - 1, P.shape[1] - 1
    i = np.clip(np.floor(u).astype(np.int64), 0, rows - 1)
    j = np.clip(np.floor(v).astype(np.int64), 0, cols - 1)
    fu, fv = u - i, v - j
    return ((1 - fu) * (1 - fv) * P[i, j] + fu * (1 - fv) * P[i + 1, j]
            + (1 - fu) * fv * P[i, j + 1] + fu * fv * P[i + 1, j + 1])


def query_boxes(values, grid: MapGrid, boxes) -> dict[str, np.ndarray]:
    """Estimated number of points in each box ``(south, west, north, east)`` (degrees).

    Parameters
    ----------
    values : array (rows, cols)
        A published map (e.g. ``Release.value`` or :func:`veil.maps.read_map`).
    grid : MapGrid
    boxes : sequence of 4-tuples, or an array (q, 4)

    Returns
    -------
    dict
        ``estimate`` (q,) and ``fraction_inside`` (q,): the share of each box's area (in
        degrees squared) inside the map's box.

    Examples
    --------
    >>> g = MapGrid(0, 0, 2, 2, rows=2, cols=2)
    >>> v = np.array([[4.0, 0.0], [0.0, 8.0]])
    >>> query_boxes(v, g, [(0, 0, 1, 1), (0.5, 0.5, 1.5, 1.5), (0, 0, 3, 3)])["estimate"].tolist()
    [4.0, 3.0, 12.0]
    """
    V = np.asarray(values, dtype=np.float64)
    if V.shape != grid.shape:
        raise ParameterError(f"the map has shape {V.shape}, its grid {grid.shape}")
    if not np.isfinite(V).all():
        raise ParameterError("the map has non-finite values")
    B = np.asarray(boxes, dtype=np.float64)
    if B.ndim == 1:
        B = B.reshape(1, -1)
    if B.ndim != 2 or B.shape[1] != 4 or B.shape[0] == 0:
        raise ParameterError(f"boxes must be (south, west, north, east) 4-tuples, got shape "
                             f"{B.shape}")
    for k, b in enumerate(B):
        _check_box(*map(float, b), name=f"box {k + 1}")
    s, w, n, e = (B[:, k] for k in range(4))
    area = (n - s) * (e - w)
    cs, cw = np.maximum(s, grid.south), np.maximum(w, grid.west)
    cn, ce = np.minimum(n, grid.north), np.minimum(e, grid.east)
    ok = (cn > cs) & (ce > cw)
    frac = np.where(ok, (cn - cs) * (ce - cw) / area, 0.0)
    dlat, dlon = grid.cell_deg
    u0, u1 = (cs - grid.south) / dlat, (cn - grid.south) / dlat
    v0, v1 = (cw - grid.west) / dlon, (ce - grid.west) / dlon
    u0, u1 = np.clip(u0, 0, grid.rows), np.clip(u1, 0, grid.rows)
    v0, v1 = np.clip(v0, 0, grid.cols), np.clip(v1, 0, grid.cols)
    P = prefix2d(V)
    est = _interp(P, u1, v1) - _interp(P, u0, v1) - _interp(P, u1, v0) + _interp(P, u0, v0)
    return {"estimate": np.where(ok, est, 0.0), "fraction_inside": frac}


def answer_cells(values, rects) -> np.ndarray:
    """Sums over whole-cell rectangles ``[r0, r1) x [c0, c1)`` (array (q, 4)) of a map."""
    from ._blocks import rect_sums

    q = np.asarray(rects, dtype=np.int64)
    return rect_sums(prefix2d(np.asarray(values, dtype=np.float64)), q[:, 0], q[:, 1],
                     q[:, 2], q[:, 3])
