"""Per-bucket trajectory release for the batch engine (``veil.engine``).

:func:`release_bucket` has the engine's per-bucket signature ``f(arrays, params, rng)``:
``arrays`` holds integer user codes ``user`` (sorted, 0..n-1 within the bucket) and the
columns ``t`` (float64 seconds), ``lat``, ``lon`` sorted by user then by the exact time, and
``t.raw``, the time column as read (an Arrow array: integer, timestamp or text); every
user's trajectory is released independently by :func:`~veil.geo.temporal.release_trajectory`
with its own child random stream, and its times are written back as read (``t.raw``; float
seconds only when the arrays have no ``t.raw``). The engine owner registers it, e.g.::

    register_task(Task(name="trajectories", columns=("t", "lat", "lon"), order_by=("t",),
                       per_bucket=release_bucket, validate=validate_params,
                       epsilon=lambda p: p["epsilon_step_bound"],   # per timestamp
                       description="PIM/LM release per user (eps per timestamp)"))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import DataError, ParameterError
from ...random import spawn
from ...validation import check_choice, check_delta, check_epsilon
from .markov import MarkovModel
from .release import release_trajectory

__all__ = ["validate_params", "release_bucket"]


def validate_params(p: dict[str, Any]) -> dict[str, Any]:
    """Check ``model`` (a MarkovModel or a path to one), ``epsilon``, ``delta``, ``mechanism``,
    ``on_invalid`` before any work starts."""
    model = p.get("model")
    if model is None:
        raise ParameterError("params['model'] is required (a MarkovModel or a .npz path)")
    if not isinstance(model, MarkovModel):
        model = MarkovModel.load(model)
    from .release import trajectory_budget_bound

    out = {"model": model, "epsilon": check_epsilon(p.get("epsilon"), "epsilon"),
           "delta": check_delta(p.get("delta"), "delta"),
           "mechanism": check_choice(p.get("mechanism", "pim"), "mechanism", ("pim", "lm")),
           "on_invalid": check_choice(p.get("on_invalid", "error"), "on_invalid",
                                      ("error", "drop"))}
    # what one timestamp spends at most: epsilon plus the public bound of the float64
    # snapping correction on this grid (the ledger and the manifest charge this)
    out["epsilon_step_bound"] = trajectory_budget_bound(
        model.grid, epsilon=out["epsilon"], n_steps=1, mechanism=out["mechanism"])
    return out


_MODELS: dict[tuple[str, float], MarkovModel] = {}


def _load_model(path: str) -> MarkovModel:
    import os

    key = (os.path.abspath(path), os.path.getmtime(path))
    if key not in _MODELS:
        _MODELS.clear()
        _MODELS[key] = MarkovModel.load(path)
    return _MODELS[key]


def validate_job_params(p: dict[str, Any]) -> dict[str, Any]:
    """Like :func:`validate_params` but keeps the model as a path (jobs record and ship
    their parameters; workers load the model once each)."""
    model = p.get("model")
    if model is None or isinstance(model, MarkovModel):
        raise ParameterError("a batch job needs params['model'] as the path of a saved model "
                             "(veil trajectory model ... -o model.npz)")
    out = validate_params(p)
    out["model"] = str(model)
    return out


def release_bucket(arrays: dict[str, np.ndarray], params: dict[str, Any],
                   rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Release every user's trajectory in one bucket; returns user, t, lat, lon, set_size.

    ``t`` is ``arrays["t.raw"]`` (the time column as read, its type kept) for the points
    released, else the float seconds ``arrays["t"]``.

    Why private: each user's release is the per-timestamp eps-DP PIM/LM loop (see
    :func:`release_trajectory`) run on that user's data only, with an independent random
    stream; users do not affect each other's output.

    Examples
    --------
    >>> from veil.geo.temporal import TemporalGrid, MarkovModel
    >>> g = TemporalGrid(lat_min=0.0, lon_min=0.0, lat_max=0.05, lon_max=0.05, nx=5, ny=5)
    >>> m = MarkovModel.from_trajectories([[0, 1, 2, 7, 12]], grid=g)
    >>> latlon = g.to_latlon(g.centers_m[[0, 1, 2, 0, 5]])
    >>> arrays = {"user": np.array([0, 0, 0, 1, 1]), "t": np.arange(5.0),
    ...           "lat": latlon[:, 0], "lon": latlon[:, 1]}
    >>> out = release_bucket(arrays, validate_params({"model": m, "epsilon": 1, "delta": 0.1}),
    ...                      np.random.default_rng(0))
    >>> out["user"].tolist(), list(out)
    ([0, 0, 0, 1, 1], ['user', 't', 'lat', 'lon', 'set_size'])
    """
    model = params["model"]
    if not isinstance(model, MarkovModel):  # a path: load once per worker process
        model = _load_model(str(model))
    user = np.asarray(arrays["user"])
    t = np.asarray(arrays["t"], dtype=np.float64)
    raw = arrays.get("t.raw")  # the times as read: written back unchanged
    cells = model.grid.cell_of(arrays["lat"], arrays["lon"])
    # a point without a time is invalid too (it was released with t = NaN, or an empty t)
    no_time = ~np.isfinite(t)
    if raw is not None:
        no_time |= np.asarray(raw.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    bad = (cells < 0) | no_time
    if bad.any() and params.get("on_invalid", "error") == "error":
        i = int(np.flatnonzero(bad)[0])
        shown = t[i] if raw is None else raw[i].as_py()
        raise DataError(f"{int(bad.sum())} point(s) are NaN, outside the model's grid or "
                        f"without a time (first: user code {user[i]}, t={shown}); pass "
                        "on_invalid='drop' to drop them")
    keep = ~bad
    user, t, cells = user[keep], t[keep], cells[keep]
    if user.size == 0:
        return {"user": user, "t": t, "lat": t.copy(), "lon": t.copy(),
                "set_size": np.zeros(0, np.int64)}
    if raw is not None:
        import pyarrow as pa

        raw = raw.filter(pa.array(keep)) if bad.any() else raw
    starts = np.flatnonzero(np.r_[True, user[1:] != user[:-1]])
    ends = np.r_[starts[1:], user.size]
    streams = spawn(rng, starts.size)
    lon = np.empty(user.size)
    lat = np.empty(user.size)
    size = np.empty(user.size, dtype=np.int64)
    for a, b, g in zip(starts, ends, streams):
        if np.any(np.diff(t[a:b]) < 0):
            raise DataError(f"timestamps of user code {user[a]} are not sorted")
        r = release_trajectory(cells[a:b], model=model, epsilon=params["epsilon"],
                               delta=params["delta"], mechanism=params["mechanism"], rng=g)
        lat[a:b], lon[a:b] = r.released_latlon[:, 0], r.released_latlon[:, 1]
        size[a:b] = r.set_sizes
    return {"user": user, "t": t if raw is None else raw, "lat": lat, "lon": lon,
            "set_size": size}
