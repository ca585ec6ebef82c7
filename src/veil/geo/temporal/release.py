"""Continual location release under temporal correlations (Algorithm 1 of the PIM paper).

At every timestamp ``t``:

1. prior ``p_t^- = p_{t-1}^+ M`` (``p_1^-`` = the public initial distribution);
2. delta-location set ``DX_t`` = smallest most-probable set with mass ``>= 1 - delta``;
3. if the true cell is not in ``DX_t`` (a *drift*), the surrogate -- the cell of
   ``DX_t`` nearest to it -- is released instead;
4. ``z_t`` = PIM or LM release of the (true or surrogate) cell centre on ``DX_t``;
5. posterior ``p_t^+ ~ p_t^- Pr(z_t | u_t = s_i)``: the exact likelihood of an
   adversary who knows the algorithm, i.e. the mechanism's density around ``s_i``
   for cells of the set and around their surrogate for the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import math

import numpy as np

from ...budget import PureDP
from ...errors import DataError, ParameterError
from ...random import make_rng
from ...release import Release, TabularMixin
from ...validation import check_choice, check_delta, check_epsilon, check_finite_array
from .hmm import delta_location_set, grid_surrogates, posterior_update
from .knorm import MECHANISMS, pure_epsilon
from .markov import MarkovModel

__all__ = ["TrajectoryRelease", "release_trajectory", "ReleaseStepper", "trajectory_budget_bound",
           "public_step_correction"]



def public_step_correction(grid, mech) -> float:
    """The public upper bound of one step's float64 correction on ``grid`` for ``mech``.

    A function of the grid (cell size, diameter), epsilon and the resolution only: what a
    ledger reserves per timestamp on top of epsilon, before the release runs (see
    :meth:`veil.geo.temporal.knorm.PlanarIsotropicMechanism.public_float_correction`).
    """
    cw, ch = grid.cell_size_m
    return mech.public_float_correction((cw, ch), math.hypot(grid.nx * cw, grid.ny * ch))


def trajectory_budget_bound(grid, *, epsilon: float, n_steps: int, mechanism: str = "pim",
                            resolution_m: float = 1.0) -> float:
    """Epsilon a release of ``n_steps`` timestamps spends at most (public quantities only).

    ``n_steps x (epsilon + public_step_correction)``: every released trajectory's budget
    (``Release.budget``) is at most this, so a ledger can reserve it before the release.

    Examples
    --------
    >>> from veil.geo.temporal import beijing_grid
    >>> b = trajectory_budget_bound(beijing_grid(20), epsilon=1.0, n_steps=96)
    >>> 96.0 < b < 96.001
    True
    """
    mech = MECHANISMS[check_choice(mechanism, "mechanism", tuple(MECHANISMS))](
        epsilon=pure_epsilon(epsilon), pad=grid.cell_size_m, resolution=resolution_m)
    return float(n_steps) * (mech.epsilon + public_step_correction(grid, mech))


@dataclass
class TrajectoryRelease(TabularMixin):
    """Everything one run of the release loop produced.

    Attributes
    ----------
    released_m : (T, 2) released points in the grid's metric plane (x east, y north).
    released_latlon : (T, 2) the same as ``[lat, lon]`` (``released_lonlat``: deprecated
        alias in the old (lon, lat) order).
    true_cells, released_cells : (T,) the true cell and the cell actually perturbed
        (the surrogate after a drift).
    drift : (T,) bool -- the true cell was outside the delta-location set.
    set_sizes, hull_areas_m2, noise_scales_m : (T,) per-step parameters.
    degenerate : (T,) str -- "", "single" or "collinear".
    posteriors : (T, m) the adversary's posterior (``None`` unless kept).
    adversary_map : (T,) most probable cell under the posterior.
    adversary_error_m : (T,) the adversary's expected error sum_i p_t^+[i] d(s_i, x_t*).
    release : Release -- the released lon/lat with budget and parameters.
    """

    released_m: np.ndarray
    released_latlon: np.ndarray
    true_cells: np.ndarray
    released_cells: np.ndarray
    drift: np.ndarray
    set_sizes: np.ndarray
    hull_areas_m2: np.ndarray
    noise_scales_m: np.ndarray
    degenerate: np.ndarray
    adversary_map: np.ndarray
    adversary_error_m: np.ndarray
    release: Release
    posteriors: np.ndarray | None = None
    log_likelihoods: np.ndarray | None = field(default=None, repr=False)

    @property
    def released_lonlat(self) -> np.ndarray:
        """Deprecated: the released points as ``[lon, lat]`` (use ``released_latlon``)."""
        import warnings

        warnings.warn("TrajectoryRelease.released_lonlat is deprecated: veil uses (lat, lon) "
                      "everywhere; use released_latlon", DeprecationWarning, stacklevel=2)
        return self.released_latlon[:, ::-1]

    def to_arrow(self):
        """What is published: one row per timestamp, ``step, lat, lon`` (released points)."""
        import pyarrow as pa

        ll = np.asarray(self.released_latlon, dtype=np.float64)
        return pa.table({"step": np.arange(len(ll), dtype=np.int64), "lat": ll[:, 0],
                         "lon": ll[:, 1]})

    @property
    def drift_ratio(self) -> float:
        return float(self.drift.mean()) if self.drift.size else 0.0

    def errors_m(self, grid) -> np.ndarray:
        """Euclidean distance (metres) between released points and true cell centres."""
        return np.hypot(*(self.released_m - grid.centers_m[self.true_cells]).T)


class ReleaseStepper:
    """The per-timestamp state machine of the release loop (prior -> set -> release -> posterior).

    Parameters
    ----------
    model : MarkovModel
        The public mobility model.
    epsilon : float
        Budget per timestamp.
    delta : float in (0, 1)
        Mass left outside the delta-location set.
    mechanism : {"pim", "lm"}
    initial : array (m,), optional
        Public initial distribution ``p_1^-`` (default: uniform over all cells).
    keep_likelihoods : bool
        Also return each step's log-likelihood vector (for audits/tests).
    resolution_m : float, default 1.0
        Released points are snapped to this public lattice (metres), so the low-order bits
        of the float64 sample are not published; the float64 correction of each step
        (:meth:`PlanarIsotropicMechanism.float_correction`) is added to the budget. ``0``
        is the explicit opt-in to raw float output (:mod:`veil.geo.snapping`).
    """

    def __init__(self, *, model: MarkovModel, epsilon: float, delta: float,
                 mechanism: str = "pim", initial: Any = None, keep_likelihoods: bool = False,
                 resolution_m: float = 1.0):
        if not isinstance(model, MarkovModel):
            raise ParameterError(f"model must be a MarkovModel, got {type(model).__name__}")
        self.model = model
        self.epsilon = pure_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.mechanism_name = check_choice(mechanism, "mechanism", tuple(MECHANISMS))
        self.mech = MECHANISMS[self.mechanism_name](epsilon=self.epsilon,
                                                    pad=model.grid.cell_size_m,
                                                    resolution=resolution_m)
        self.correction_bound = public_step_correction(model.grid, self.mech)
        m = model.n_cells
        if initial is None:
            p0 = np.full(m, 1.0 / m)
        else:
            p0 = check_finite_array(initial, "initial", ndim=1)
            if p0.shape != (m,) or (p0 < 0).any() or not p0.sum() > 0:
                raise ParameterError(f"initial must be a non-negative vector of length {m} with a"
                                     " positive sum")
            p0 = p0 / p0.sum()
        self.initial = p0
        self.resolution = self.mech.resolution
        self.centers = model.grid.centers_m
        self.keep_likelihoods = keep_likelihoods
        self.reset()

    def reset(self) -> None:
        self.posterior: np.ndarray | None = None

    def _hull_candidates(self, dset: np.ndarray) -> np.ndarray:
        """The first and last cell of each grid row of the set: same convex hull, fewer points."""
        ds = np.sort(dset)
        rows = ds // self.model.grid.nx
        b = np.flatnonzero(np.diff(rows))
        return np.unique(np.concatenate((ds[np.r_[0, b + 1]], ds[np.r_[b, ds.size - 1]])))

    def prior(self) -> np.ndarray:
        return self.initial if self.posterior is None else self.model.step(self.posterior)

    def step(self, true_cell: int, rng: np.random.Generator) -> dict[str, Any]:
        """One timestamp: returns a dict with the released point and the step's parameters."""
        prior = self.prior()
        dset = delta_location_set(prior, self.delta, validate=False)
        pts = self.centers[dset]
        in_set = np.zeros(prior.size, dtype=bool)
        in_set[dset] = True
        # one public surrogate map per step: used for the true cell AND the likelihood
        sur = grid_surrogates(self.model.grid, in_set)
        drift = not in_set[true_cell]
        used = int(sur[true_cell])
        hull = self.mech.noise_hull(self.centers[self._hull_candidates(dset)], validate=False)
        z = self.mech.snap(self.centers[used] + self.mech.noise(hull, 1, rng)[0])
        corr = self.mech.float_correction(hull, pts)
        if corr > self.correction_bound:  # the public bound is a theorem: never exceeded
            raise RuntimeError(f"float64 correction {corr} exceeds its public bound "
                               f"{self.correction_bound}")
        # likelihood of z for every possible cell: the mechanism's density around the
        # cell itself (cells of the set) or around its surrogate (other cells)
        support = np.flatnonzero(prior > 0)
        ll_cells = np.full(prior.size, -np.inf)
        ll_cells[dset] = -self.epsilon * hull.norm(z - pts)
        ll = np.full(prior.size, -np.inf)
        ll[support] = ll_cells[sur[support]]
        post = posterior_update(prior, ll)
        self.posterior = post
        return {"z": z, "drift": drift, "used": used, "set_size": dset.size, "correction": corr,
                "area": hull.area, "degenerate": hull.degenerate or "",
                "scale": self.mech._scale(hull), "posterior": post,
                "ll": ll if self.keep_likelihoods else None}


def release_trajectory(cells: Any, *, model: MarkovModel, epsilon: float, delta: float,
                       mechanism: str = "pim", initial: Any = None,
                       rng: np.random.Generator | None = None, keep_posteriors: bool = False,
                       keep_likelihoods: bool = False, resolution_m: float = 1.0
                       ) -> TrajectoryRelease:
    """Release a trajectory of grid cells, one point per timestamp, by PIM or LM.

    Why it is private: at each timestamp the released point is ``epsilon``-DP among
    the cells of the delta-location set (Definition 3.3 of Xiao & Xiong 2015): the set
    is computed from the public prior only (model + earlier *released* points), the
    surrogate replaces a drifted cell by a cell of the set without revealing that it
    did, and PIM/LM are eps-DP on the set (see their docstrings). The whole budget
    ``epsilon`` is spent once per timestamp; a ``T``-step trajectory spends
    ``T * epsilon`` under sequential composition. What is NOT protected: cells outside
    the delta-set (mass ``delta`` of the prior) are only protected through their
    surrogate; the guarantee is relative to the public model.

    Parameters
    ----------
    cells : array (T,) of int
        The true cells (``model.grid`` indices), in time order.
    model : MarkovModel
    epsilon : float or PureDP
        Budget per timestamp.
    delta : float
        In (0, 1).
    mechanism : {"pim", "lm"}
    initial : array (m,), optional
        Public initial distribution (default uniform).
    rng : numpy.random.Generator, optional
    keep_posteriors : bool
        Keep the (T, m) posterior matrix.
    resolution_m : float, default 1.0
        Released points are snapped to this public lattice in the metric plane; the
        float64 correction is in the budget (0: raw float output, an explicit opt-in).

    Returns
    -------
    TrajectoryRelease

    Examples
    --------
    >>> from veil.geo.temporal import TemporalGrid, MarkovModel
    >>> g = TemporalGrid(lat_min=0.0, lon_min=0.0, lat_max=0.05, lon_max=0.05, nx=5, ny=5)
    >>> m = MarkovModel.from_trajectories([[0, 1, 2, 7, 12, 13, 18, 24]], grid=g)
    >>> r = release_trajectory([0, 1, 2, 7], model=m, epsilon=1.0, delta=0.05,
    ...                        rng=make_rng(seed=0))
    >>> r.released_m.shape, r.release.mechanism
    ((4, 2), 'pim-temporal')
    """
    stepper = ReleaseStepper(model=model, epsilon=epsilon, delta=delta, mechanism=mechanism,
                             initial=initial, keep_likelihoods=keep_likelihoods,
                             resolution_m=resolution_m)
    eps = stepper.epsilon
    c = np.asarray(cells)
    if c.ndim != 1 or c.size == 0 or not np.issubdtype(c.dtype, np.integer):
        raise ParameterError(f"cells must be a non-empty 1-d integer array, got dtype {c.dtype} "
                             f"shape {c.shape}")
    m = model.n_cells
    bad = np.flatnonzero((c < 0) | (c >= m))
    if bad.size:
        raise DataError(f"cells must lie in [0, {m - 1}]; found {c[bad[0]]} at position "
                        f"{bad[0]} (drop or clip points outside the grid first)")
    rng = make_rng(rng)
    t_len = c.size
    z = np.empty((t_len, 2))
    used = np.empty(t_len, dtype=np.int64)
    drift = np.zeros(t_len, dtype=bool)
    sizes = np.empty(t_len, dtype=np.int64)
    areas = np.empty(t_len)
    scales = np.empty(t_len)
    degen = np.empty(t_len, dtype=object)
    amap = np.empty(t_len, dtype=np.int64)
    aerr = np.empty(t_len)
    corr = np.zeros(t_len)
    posts = np.empty((t_len, m)) if keep_posteriors else None
    lls = np.empty((t_len, m)) if keep_likelihoods else None
    centers = model.grid.centers_m
    for t in range(t_len):
        s = stepper.step(int(c[t]), rng)
        z[t], used[t], drift[t], sizes[t] = s["z"], s["used"], s["drift"], s["set_size"]
        corr[t] = s["correction"]
        areas[t], scales[t], degen[t] = s["area"], s["scale"], s["degenerate"]
        post = s["posterior"]
        nz = np.flatnonzero(post)
        amap[t] = nz[np.argmax(post[nz])]
        aerr[t] = float(post[nz] @ np.hypot(*(centers[nz] - centers[c[t]]).T))
        if posts is not None:
            posts[t] = post
        if lls is not None:
            lls[t] = s["ll"]
    latlon = model.grid.to_latlon(z)
    corr_total = float(corr.sum())
    split = {f"each of {t_len} timestamps": eps}
    if corr_total:
        split["float64 snapping correction (all steps)"] = corr_total
    rel = Release(
        value=latlon, mechanism=f"{stepper.mechanism_name}-temporal",
        budget=PureDP(eps * t_len + corr_total),
        parameters={"epsilon_per_step": eps, "delta": delta, "mechanism":
                    stepper.mechanism_name, "n_steps": t_len, "grid": model.grid.to_dict(),
                    "initial": "uniform" if initial is None else "given",
                    "resolution_m": stepper.resolution,
                    "median_set_size": float(np.median(sizes)),
                    "n_degenerate": int(sum(bool(d) for d in degen))},
        budget_split=split,
        noise_scale=float(np.median(scales)),
        expected_error={"mean_norm_K_per_step": 2.0 / eps},
        notes=(f"each step is {eps}-DP among the cells of its delta-location set "
               f"(delta={delta}); total {eps * t_len} over {t_len} steps by composition",
               "released points are noisy cell centres (the true location is discretised "
               "to the public grid first); float64 sampler"),
        protects="user", columns=("lat", "lon"))  # the whole trajectory, at T x epsilon
    return TrajectoryRelease(released_m=z, released_latlon=latlon, true_cells=c.astype(np.int64),
                             released_cells=used, drift=drift, set_sizes=sizes,
                             hull_areas_m2=areas, noise_scales_m=scales,
                             degenerate=degen.astype(str), adversary_map=amap,
                             adversary_error_m=aerr, release=rel, posteriors=posts,
                             log_likelihoods=lls)
