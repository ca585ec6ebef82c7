"""A per-user budget for repeated location reports: caching, a predictive test, and a fixed
budget per time window.

A user who reports her location again and again spends geo-indistinguishability budget on
every fresh report. :class:`ReportBudgetManager` bounds what each user spends in each time
window and spends it sparingly, in three ways:

1. **Cache** (as Location Guard caches per privacy level): a report from a (user, public
   cell, window) that already has one returns the same output, at no cost. It reveals that
   the two reports come from the same public cell (the price of every caching defence),
   nothing about where inside it.
2. **Predictive test** (Chatzikokolakis, Palamidessi and Stronati, PETS 2014): before a fresh
   report, test whether the previous *reported* location ``z_prev`` is still close to the
   true location: ``d(x, z_prev) + Lap(1 / eps_test) <= threshold_m``. If so, report
   ``z_prev`` again (cost ``eps_test``: the distance moves by at most ``d(x, x')`` between
   inputs, so the noisy test is ``eps_test``-geo-indistinguishable); else report fresh
   planar Laplace noise (cost ``eps_test + eps_report``).
3. **Budget per window**: each (user, window) may spend at most ``budget_per_window``
   (sequential composition). When the next step would exceed it, the previous report is
   repeated at no cost (status ``"exhausted"``), or nothing is reported if there is none
   (``"withheld"``, NaN).

The Release records, per user and window, what was spent, and the total.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from ..budget import GeoDP
from ..errors import ParameterError
from ..random import make_rng
from ..release import Release
from ..validation import check_positive
from ._kernels import displace_turn
from .geoind import PublicCells, _as_points, geo_epsilon
from .geometry import EARTH_RADIUS_M
from .snapping import (DEFAULT_RESOLUTION_M, check_resolution, lattice_note,
                       latlon_snapping_correction, snap_latlon)

__all__ = ["ReportBudgetManager", "STATUSES"]

STATUSES = ("fresh", "predicted", "cached", "exhausted", "withheld")


class ReportBudgetManager:
    """Spend a fixed geo-indistinguishability budget per user and time window, sparingly.

    Parameters
    ----------
    epsilon_report : float or GeoDP
        Per metre, spent by each fresh planar Laplace report.
    budget_per_window : float or GeoDP
        Per metre: the most one user may spend in one window (>= ``epsilon_report``).
    window_s : float
        Window length in seconds.
    epsilon_test : float or GeoDP, optional
        Per metre, spent by each predictive test; ``None`` disables the test.
    threshold_m : float, optional
        Distance under which the previous report is reused (default ``2 / epsilon_report``,
        the mean error of one fresh report).
    cell_m : float, default 100
        Public cells of the cache (:class:`veil.geo.geoind.PublicCells`).
    resolution : float, default 1.0
        Public output lattice (metres).

    Examples
    --------
    >>> mgr = ReportBudgetManager(epsilon_report=0.01, budget_per_window=0.03,
    ...                           window_s=3600, epsilon_test=0.002)
    >>> rel = mgr.report_stream([[45.0, 7.0]] * 5, t=[0, 60, 120, 180, 240], user="ann",
    ...                         rng=make_rng(seed=0))
    >>> rel.parameters["status_counts"]["cached"]
    4
    >>> rel.parameters["spent_total"] <= 0.03
    True
    """

    def __init__(self, *, epsilon_report: float | GeoDP, budget_per_window: float | GeoDP,
                 window_s: float, epsilon_test: float | GeoDP | None = None,
                 threshold_m: float | None = None, cell_m: float = 100.0,
                 resolution: float = DEFAULT_RESOLUTION_M):
        self.epsilon_report = geo_epsilon(epsilon_report, "epsilon_report")
        self.budget = geo_epsilon(budget_per_window, "budget_per_window")
        self.window_s = check_positive(window_s, "window_s")
        self.epsilon_test = None if epsilon_test is None else geo_epsilon(epsilon_test,
                                                                           "epsilon_test")
        need = self.epsilon_report + (self.epsilon_test or 0.0)
        if self.budget < need * (1 - 1e-12):
            raise ParameterError(f"budget_per_window {self.budget:g} is below the cost of one "
                                 f"fresh report ({need:g} per metre)")
        self.threshold_m = (2.0 / self.epsilon_report if threshold_m is None
                            else check_positive(threshold_m, "threshold_m"))
        self.cells = PublicCells(cell_m)
        self.resolution = check_resolution(resolution)
        self._corr = latlon_snapping_correction(self.epsilon_report, self.resolution)
        self.reset()

    def reset(self) -> None:
        """Forget every user's state (cache, last report, spending)."""
        self._cache: dict[tuple, np.ndarray] = {}
        self._last: dict[str, np.ndarray] = {}
        self._spent: dict[tuple[str, int], float] = defaultdict(float)

    def _fresh(self, lat: float, lon: float, rng: np.random.Generator) -> np.ndarray:
        from ._kernels import planar_laplace_draws

        u, f = planar_laplace_draws(1, rng)
        z = displace_turn(np.array([[lat, lon]]), u, f, self.epsilon_report, EARTH_RADIUS_M,
                          use_numba=False)
        return snap_latlon(z, self.resolution)[0]

    def report(self, lat: float, lon: float, t: float, *, user: Any = "",
               rng: np.random.Generator | None = None) -> tuple[np.ndarray, str, float]:
        """One report: ``(output [lat, lon], status, epsilon spent)``; see the class doc."""
        rng = make_rng(rng)
        user = str(user)
        (row,), (col,) = self.cells.cell_of([lat], [lon])
        w = int(math.floor(float(t) / self.window_s))
        key = (user, int(row), int(col), w)
        if key in self._cache:
            return self._cache[key], "cached", 0.0
        spent = self._spent[(user, w)]
        last = self._last.get(user)
        cost_test = self.epsilon_test or 0.0
        out, status, cost = None, "", 0.0
        if last is not None and self.epsilon_test is not None and (
                spent + cost_test <= self.budget * (1 + 1e-12)):
            from ..distances import haversine_m

            d = float(haversine_m(lat, lon, last[0], last[1]))
            cost = cost_test
            if d + rng.laplace(0.0, 1.0 / self.epsilon_test) <= self.threshold_m:
                out, status = last, "predicted"
        if out is None:
            if spent + cost + self.epsilon_report <= self.budget * (1 + 1e-12):
                out, status = self._fresh(lat, lon, rng), "fresh"
                cost += self.epsilon_report
            elif last is not None:
                out, status = last, "exhausted"
            else:
                out, status = np.array([np.nan, np.nan]), "withheld"
        self._spent[(user, w)] = spent + cost
        if status != "withheld":
            self._cache[key] = out
            self._last[user] = out
        return out, status, cost

    def report_stream(self, points: Any, *, t: Any, user: Any = "",
                      rng: np.random.Generator | None = None) -> Release:
        """Report a stream of ``[lat, lon]`` points at times ``t`` (one user label per point
        or one for all), in order; the Release holds the outputs, each report's status and
        cost, and the budget spent per (user, window).

        The loop is sequential on purpose: each decision depends on the previous report.
        """
        lat, lon = _as_points(points)
        tt = np.asarray(t, dtype=np.float64).reshape(-1)
        if tt.size == 1 and lat.size > 1:
            tt = np.full(lat.size, tt[0])
        if tt.shape != lat.shape or not np.isfinite(tt).all():
            raise ParameterError("t must be finite times, one per point (or one for all)")
        users = np.asarray(user, dtype=object).reshape(-1)
        if users.size == 1:
            users = np.full(lat.size, users[0], dtype=object)
        if users.shape != lat.shape:
            raise ParameterError(f"user must have one label per point ({lat.size})")
        rng = make_rng(rng)
        out = np.empty((lat.size, 2))
        status = np.empty(lat.size, dtype=object)
        cost = np.empty(lat.size)
        for i in range(lat.size):
            out[i], status[i], cost[i] = self.report(lat[i], lon[i], tt[i], user=users[i],
                                                     rng=rng)
        per = {f"{u}@{w}": float(v) for (u, w), v in sorted(self._spent.items())}
        worst = max(per.values(), default=0.0)
        counts = {s: int((status == s).sum()) for s in STATUSES}
        return Release(out, "planar-laplace-budgeted", GeoDP(worst + self._corr),
                       parameters={"epsilon_report": self.epsilon_report,
                                   "epsilon_test": self.epsilon_test,
                                   "threshold_m": self.threshold_m,
                                   "budget_per_window": self.budget,
                                   "window_s": self.window_s, "cell_m": self.cells.cell_m,
                                   "resolution_m": self.resolution,
                                   "status": status.astype(str).tolist(),
                                   "cost": cost.tolist(), "status_counts": counts,
                                   "spent_per_user_window": per,
                                   "spent_total": float(sum(per.values()))},
                       budget_split={"largest (user, window) total": worst,
                                     **({"float64 snapping correction": self._corr}
                                        if self._corr else {})},
                       noise_scale=1.0 / self.epsilon_report,
                       notes=("budget: the largest total spent by one user in one window "
                              "(sequential composition); cached reports reveal that two "
                              "reports share a public cell",
                              lattice_note(self.resolution, self._corr)),
                       columns=("lat", "lon"))


