"""First-order Markov mobility model over a public grid, stored as a sparse matrix.

The model is *public* in the PIM framework (the adversary knows it): learn it from
public or already-released data (a "popular" model from many users, or a
"personal" model from one user's past), never silently from the trajectory you are
about to protect.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import scipy.sparse as sp

from ...errors import DataError, ParameterError
from ...validation import check_choice, check_nonnegative
from .grid import TemporalGrid

__all__ = ["MarkovModel", "transition_counts", "distance_decay_prior"]

EMPTY_ROWS = ("self", "uniform")


def transition_counts(cell_sequences: Iterable[Any], n_cells: int) -> sp.csr_matrix:
    """Count transitions between consecutive cells of each sequence (sparse, int64).

    Every consecutive pair ``(a[i], a[i+1])`` with both cells valid (``>= 0``) counts
    once, self-transitions included. A ``-1`` (a point outside the grid) breaks the
    chain: no transition is counted into or out of it.

    Examples
    --------
    >>> transition_counts([[0, 0, 1, -1, 1, 2]], 3).toarray()
    array([[1, 1, 0],
           [0, 0, 1],
           [0, 0, 0]])
    """
    src, dst = [], []
    for seq in cell_sequences:
        a = np.asarray(seq, dtype=np.int64).ravel()
        if a.size and (a.max() >= n_cells or a.min() < -1):
            raise DataError(f"cell indices must lie in [-1, {n_cells - 1}], got range "
                            f"[{a.min()}, {a.max()}]")
        ok = (a[:-1] >= 0) & (a[1:] >= 0)
        src.append(a[:-1][ok])
        dst.append(a[1:][ok])
    s = np.concatenate(src) if src else np.zeros(0, np.int64)
    d = np.concatenate(dst) if dst else np.zeros(0, np.int64)
    c = sp.coo_matrix((np.ones(s.size, dtype=np.int64), (s, d)), shape=(n_cells, n_cells))
    return c.tocsr()


def distance_decay_prior(grid: TemporalGrid, scale_m: float | None = None,
                         cutoff: float = 3.0) -> sp.csr_matrix:
    """A public transition prior: ``P0[i, j]`` proportional to ``exp(-d(i, j) / scale_m)``.

    ``d`` is the distance between cell centres (metres); cells farther than ``cutoff *
    scale_m`` get 0 (a sparse matrix); the cell itself always has weight 1. It depends on the
    public grid only, so mixing it into a learned model reveals nothing. ``scale_m``
    defaults to the larger side of a cell (moves to the 8 neighbours are likely, a few
    cells away rare).

    Examples
    --------
    >>> g = TemporalGrid(lat_min=0.0, lon_min=0.0, lat_max=0.03, lon_max=0.03, nx=3, ny=3)
    >>> P = distance_decay_prior(g)
    >>> bool(np.allclose(P.sum(axis=1), 1.0)), bool(P[4, 4] > P[4, 5] > P[4, 8] > 0)
    (True, True)
    """
    from scipy.spatial import cKDTree

    from ...validation import check_positive

    if scale_m is None:
        scale_m = float(max(grid.cell_size_m))
    scale_m = check_positive(scale_m, "scale_m")
    cutoff = check_positive(cutoff, "cutoff")
    c = grid.centers_m
    tree = cKDTree(c)
    d = tree.sparse_distance_matrix(tree, cutoff * scale_m, output_type="coo_matrix")
    w = np.exp(-d.data / scale_m)
    n = grid.n_cells
    m = sp.coo_matrix((w, (d.row, d.col)), shape=(n, n)).tocsr()
    m = m + sp.identity(n, format="csr") - sp.diags(m.diagonal())   # self weight exactly 1
    rows = np.asarray(m.sum(axis=1)).ravel()
    return (sp.diags(1.0 / rows) @ m).tocsr()


class MarkovModel:
    """A row-stochastic transition matrix ``M`` over a grid's cells (``M[i, j] = P(j | i)``).

    Parameters
    ----------
    grid : TemporalGrid
        The public grid the cells index.
    matrix : scipy.sparse matrix or ndarray, shape (n_cells, n_cells)
        Non-negative, rows summing to 1 (checked to 1e-9).
    meta : dict, optional
        Provenance (how it was learned), saved with the model.

    Notes
    -----
    The prior update ``p @ M`` uses the stored transpose, so one step costs
    ``O(nnz)``: a 2,500-cell GeoLife model has a few thousand non-zeros.

    Examples
    --------
    >>> from veil.geo.temporal.grid import TemporalGrid
    >>> g = TemporalGrid(lon_min=0.0, lat_min=0.0, lon_max=0.02, lat_max=0.01, nx=2, ny=1)
    >>> m = MarkovModel.from_trajectories([[0, 0, 1, 1, 0]], grid=g)
    >>> m.to_dense()
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """

    def __init__(self, *, grid: TemporalGrid, matrix: Any, meta: dict[str, Any] | None = None):
        if not isinstance(grid, TemporalGrid):
            raise ParameterError(f"grid must be a TemporalGrid, got {type(grid).__name__}")
        m = sp.csr_matrix(matrix, dtype=np.float64)
        n = grid.n_cells
        if m.shape != (n, n):
            raise ParameterError(f"matrix must have shape ({n}, {n}) for a {grid.nx}x{grid.ny} "
                                 f"grid, got {m.shape}")
        if m.nnz and (not np.isfinite(m.data).all() or (m.data < 0).any()):
            raise ParameterError("matrix entries must be finite and >= 0")
        rows = np.asarray(m.sum(axis=1)).ravel()
        bad = np.flatnonzero(np.abs(rows - 1.0) > 1e-9)
        if bad.size:
            raise ParameterError(f"matrix rows must sum to 1; row {bad[0]} sums to {rows[bad[0]]}")
        m.sort_indices()
        self.grid = grid
        self.matrix = m
        self._mt = m.T.tocsr()
        self.meta = dict(meta or {})

    @classmethod
    def from_counts(cls, counts: Any, *, grid: TemporalGrid, empty_rows: str = "self",
                    smoothing: float = 0.0, prior_weight: float = 0.0,
                    prior_scale_m: float | None = None,
                    meta: dict[str, Any] | None = None) -> "MarkovModel":
        """Row-normalise transition counts, optionally smoothed towards a public prior.

        A model learned from some users treats every cell those users never left as
        absorbing (``empty_rows="self"``), and moves the training users never made
        (into cells they never entered) get probability 0: a held-out user who makes one
        drifts out of the delta-location set (issue 16: 6-17 % of held-out fixes in such
        cells raised the drift from 0.02 to 0.16-0.46). ``prior_weight = w`` in (0, 1)
        mixes every row with the public :func:`distance_decay_prior`:
        ``row_i = (1 - w) counts_i / n_i + w P0_i`` (rows without data are ``P0_i``), so
        every move to a nearby cell keeps at least ``w P0_i`` and no cell is absorbing.

        Parameters
        ----------
        counts : sparse or dense (n_cells, n_cells), non-negative
        empty_rows : {"self", "uniform"}
            What a cell never left in the data does: stay put with probability 1
            (``"self"``, default: keeps the matrix sparse), or move uniformly anywhere
            (``"uniform"``: a dense row per empty cell).
        smoothing : float, default 0
            Add this pseudo-count to the self-transition of *every* cell before
            normalising (keeps rows with data sparse).
        prior_weight : float in [0, 1), default 0
            Weight of :func:`distance_decay_prior` in every row (0: the counts alone).
        prior_scale_m : float, optional
            Its length scale (default: the larger side of a cell).
        """
        empty_rows = check_choice(empty_rows, "empty_rows", EMPTY_ROWS)
        smoothing = check_nonnegative(smoothing, "smoothing")
        prior_weight = check_nonnegative(prior_weight, "prior_weight")
        n = grid.n_cells
        c = sp.csr_matrix(counts, dtype=np.float64)
        if c.shape != (n, n):
            raise ParameterError(f"counts must have shape ({n}, {n}), got {c.shape}")
        if c.nnz and (c.data < 0).any():
            raise ParameterError("counts must be >= 0")
        n_empty_data = int(np.count_nonzero(np.asarray(c.sum(axis=1)).ravel() <= 0))
        if smoothing > 0:
            c = c + smoothing * sp.identity(n, format="csr")
        if not prior_weight < 1:
            raise ParameterError(f"prior_weight must be in [0, 1), got {prior_weight}")
        rows = np.asarray(c.sum(axis=1)).ravel()
        empty = rows <= 0
        inv = np.zeros(n)
        inv[~empty] = 1.0 / rows[~empty]
        m = sp.diags(inv) @ c
        idx = np.flatnonzero(empty)
        if prior_weight > 0:
            prior = distance_decay_prior(grid, prior_scale_m)
            wrow = np.where(empty, 1.0, prior_weight)
            m = (sp.diags(1.0 - wrow) @ m + sp.diags(wrow) @ prior).tocsr()
            prior_scale_m = float(max(grid.cell_size_m)) if prior_scale_m is None else float(
                prior_scale_m)
            idx = np.zeros(0, dtype=np.int64)      # no empty row is left
        if idx.size:
            if empty_rows == "self":
                m = m + sp.csr_matrix((np.ones(idx.size), (idx, idx)), shape=(n, n))
            else:
                rr = np.repeat(idx, n)
                cc = np.tile(np.arange(n), idx.size)
                m = m + sp.csr_matrix((np.full(rr.size, 1.0 / n), (rr, cc)), shape=(n, n))
        info = {"empty_rows": empty_rows, "smoothing": smoothing,
                "prior_weight": prior_weight,
                "prior_scale_m": prior_scale_m if prior_weight > 0 else None,
                "n_unseen_cells": n_empty_data,
                "n_empty_rows": int(idx.size), "n_transitions": float(np.asarray(
                    counts.sum() if hasattr(counts, "sum") else np.sum(counts)))}
        info.update(meta or {})
        return cls(grid=grid, matrix=m.tocsr(), meta=info)

    @classmethod
    def from_trajectories(cls, cell_sequences: Iterable[Any], *, grid: TemporalGrid,
                          empty_rows: str = "self", smoothing: float = 0.0,
                          prior_weight: float = 0.0, prior_scale_m: float | None = None,
                          meta: dict[str, Any] | None = None) -> "MarkovModel":
        """Learn ``M`` by counting consecutive-fix cell transitions (self-transitions kept).

        Pass all users' sequences for a *popular* model, one user's for a *personal*
        model. ``-1`` entries (outside the grid) break a sequence.
        """
        counts = transition_counts(cell_sequences, grid.n_cells)
        return cls.from_counts(counts, grid=grid, empty_rows=empty_rows, smoothing=smoothing,
                               prior_weight=prior_weight, prior_scale_m=prior_scale_m,
                               meta=meta)

    # -- use -----------------------------------------------------------------------
    @property
    def n_cells(self) -> int:
        return self.grid.n_cells

    def step(self, p: np.ndarray) -> np.ndarray:
        """One prior update: returns ``p @ M`` (a row vector times the matrix)."""
        return self._mt @ p

    def to_dense(self) -> np.ndarray:
        return self.matrix.toarray()

    def check_grid(self, grid: TemporalGrid) -> None:
        """Raise ParameterError unless ``grid`` is exactly the model's grid."""
        if grid != self.grid:
            raise ParameterError(f"the model was learned on grid {self.grid.to_dict()} but the "
                                 f"data use grid {grid.to_dict()}; learn a model on this grid")

    # -- persistence ------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Save to ``.npz`` (CSR arrays + the grid and provenance as JSON), atomically."""
        path = Path(path)
        tmp = path.with_name(f".veil-tmp-{path.name}")
        try:
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, data=self.matrix.data, indices=self.matrix.indices,
                                    indptr=self.matrix.indptr,
                                    grid=np.array(json.dumps(self.grid.to_dict())),
                                    meta=np.array(json.dumps(self.meta)),
                                    format=np.array("veil.markov.v1"))
            tmp.replace(path)
        except BaseException:  # a full disk or an interrupt leaves no temporary file
            tmp.unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | Path) -> "MarkovModel":
        """Load a model written by :meth:`save` (DataError if the file is not one)."""
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as z:
                if "format" not in z or str(z["format"]) != "veil.markov.v1":
                    raise DataError("not a veil Markov model (.npz from "
                                    "`veil trajectory model`)", path=str(path))
                grid = TemporalGrid.from_dict(json.loads(str(z["grid"])))
                n = grid.n_cells
                m = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=(n, n))
                meta = json.loads(str(z["meta"]))
        except (OSError, ValueError, KeyError) as exc:
            if isinstance(exc, DataError):
                raise
            raise DataError(f"cannot read the model: {exc}", path=str(path)) from None
        return cls(grid=grid, matrix=m, meta=meta)

    def __repr__(self) -> str:
        return (f"MarkovModel({self.grid.nx}x{self.grid.ny} cells, nnz={self.matrix.nnz}, "
                f"meta={self.meta})")
