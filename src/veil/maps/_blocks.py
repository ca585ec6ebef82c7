"""Array helpers shared by the map mechanisms: 2-D prefix sums, block sums, padding, cell orders.

Everything is vectorized and accepts leading batch dimensions (``(..., rows, cols)``), so the
audits run many releases of one map at once through the same code as a single release.
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..histograms._common import split_edges  # one implementation, shared with coarse

__all__ = ["prefix2d", "rect_sums", "side_power", "pad_square", "block_order", "hilbert_order",
           "split_edges", "spread_blocks"]


def prefix2d(x: np.ndarray) -> np.ndarray:
    """Summed-area table with a zero first row and column: ``P[..., i, j] = x[..., :i, :j].sum()``.

    Integer input stays int64 (exact); real input is float64.

    Examples
    --------
    >>> prefix2d(np.array([[1, 2], [3, 4]])).tolist()
    [[0, 0, 0], [0, 1, 3], [0, 4, 10]]
    """
    a = np.asarray(x)
    dt = np.int64 if np.issubdtype(a.dtype, np.integer) else np.float64
    P = np.zeros((*a.shape[:-2], a.shape[-2] + 1, a.shape[-1] + 1), dtype=dt)
    np.cumsum(np.cumsum(a, axis=-2, dtype=dt), axis=-1, dtype=dt, out=P[..., 1:, 1:])
    return P


def rect_sums(P: np.ndarray, y0, y1, x0, x1) -> np.ndarray:
    """Sums over the half-open rectangles ``[y0, y1) x [x0, x1)`` from a summed-area table.

    ``P`` may carry leading batch dimensions; the index arrays broadcast against each other and
    the result has shape ``(*batch, *broadcast(y0, y1, x0, x1))``.
    """
    y0, y1, x0, x1 = (np.asarray(v, dtype=np.int64) for v in (y0, y1, x0, x1))
    return P[..., y1, x1] - P[..., y0, x1] - P[..., y1, x0] + P[..., y0, x0]


def side_power(n: int, base: int) -> int:
    """Smallest ``h >= 0`` with ``base**h >= n`` (integer arithmetic)."""
    h, size = 0, 1
    while size < n:
        size *= base
        h += 1
    return h


def pad_square(x: np.ndarray, side: int) -> np.ndarray:
    """Pad the last two axes with zeros (south/west corner kept) to ``side x side``."""
    rows, cols = x.shape[-2:]
    if rows > side or cols > side:
        raise ParameterError(f"cannot pad a {rows}x{cols} grid to {side}x{side}")
    if rows == side and cols == side:
        return x
    out = np.zeros((*x.shape[:-2], side, side), dtype=x.dtype)
    out[..., :rows, :cols] = x
    return out


def block_order(base: int, h: int) -> np.ndarray:
    """Row-major flat indices of a ``base**h`` square grid listed in nested-block order.

    In this order every block of ``base**l x base**l`` cells aligned on multiples of
    ``base**l`` is a contiguous run of ``base**(2 l)`` positions, so a 2-D tree of fan-out
    ``base**2`` over the grid is a 1-D tree over the reordered cells (for ``base = 2`` this is
    the Morton, or Z, order).

    Examples
    --------
    >>> block_order(2, 1).tolist()
    [0, 1, 2, 3]
    >>> block_order(2, 2)[:8].tolist()
    [0, 1, 4, 5, 2, 3, 6, 7]
    """
    side = base ** h
    p = np.arange(side * side, dtype=np.int64)
    y = np.zeros_like(p)
    x = np.zeros_like(p)
    scale = 1
    for _ in range(h):
        q = p % (base * base)
        p //= base * base
        y += (q // base) * scale
        x += (q % base) * scale
        scale *= base
    return y * side + x


def hilbert_order(k: int) -> np.ndarray:
    """Row-major flat indices of a ``2**k`` square grid in Hilbert-curve order (vectorized).

    Consecutive positions are always edge-adjacent cells, and every aligned dyadic block is a
    contiguous run (the locality DAWA-2D relies on).

    Examples
    --------
    >>> hilbert_order(1).tolist()
    [0, 2, 3, 1]
    """
    n = 1 << k
    d = np.arange(n * n, dtype=np.int64)
    x = np.zeros_like(d)
    y = np.zeros_like(d)
    t = d.copy()
    s = 1
    while s < n:
        rx = 1 & (t // 2)
        ry = 1 & (t ^ rx)
        # rotate the quadrant
        flip = (ry == 0) & (rx == 1)
        x = np.where(flip, s - 1 - x, x)
        y = np.where(flip, s - 1 - y, y)
        swap = ry == 0
        x, y = np.where(swap, y, x), np.where(swap, x, y)
        x += s * rx
        y += s * ry
        t //= 4
        s *= 2
    return y * n + x


def spread_blocks(values: np.ndarray, row_edges: np.ndarray, col_edges: np.ndarray) -> np.ndarray:
    """Spread each block total of a block grid uniformly over its cells.

    ``values`` has shape ``(..., R, C)`` (one total per block); blocks are
    ``[row_edges[i], row_edges[i+1]) x [col_edges[j], col_edges[j+1])``. Returns
    ``(..., row_edges[-1], col_edges[-1])`` float64.
    """
    rh = np.diff(row_edges)
    cw = np.diff(col_edges)
    dens = np.asarray(values, dtype=np.float64) / (rh[:, None] * cw[None, :])
    return np.repeat(np.repeat(dens, rh, axis=-2), cw, axis=-1)
