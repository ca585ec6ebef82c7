"""Built-in engine tasks. Capability tasks are registered here with lazy imports."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError
from ..samplers import discrete_laplace
from ..validation import check_epsilon
from .registry import Task, register_task


#: The row that counts the check-ins outside the public categories (`veil batch counts`)
OTHER = "__other__"


def _validate_count_noise(p: dict[str, Any]) -> dict[str, Any]:
    cats = p.get("categories")
    if not cats or not all(isinstance(c, str) for c in cats):
        raise ParameterError("categories must be a non-empty list of category names (public: "
                             "never taken from the data)")
    if len(set(cats)) != len(cats):
        raise ParameterError("categories must not repeat")
    if OTHER in cats:  # two rows named __other__ per user: the listed one and the catch-all
        raise ParameterError(f"{OTHER!r} is reserved for the check-ins outside the listed "
                             "categories; rename that category")
    out = {"categories": list(cats), "epsilon": check_epsilon(p.get("epsilon"), "epsilon")}
    if p.get("max_records") is not None:
        from ..validation import check_int

        out["max_records"] = check_int(p["max_records"], "max_records", minimum=1)
    return out


def _repeated_names(names, times: int):
    """The category names repeated ``times`` times, as an Arrow string column.

    Built from int32 codes and the dictionary of names, then cast to plain strings: the
    published column is ``string`` as before, without the fixed-width numpy unicode array
    (4 bytes x the longest name per row) that dominated a bucket's memory.
    """
    import pyarrow as pa

    dictionary = pa.array([str(c) for c in names], type=pa.string())
    codes = pa.array(np.tile(np.arange(len(dictionary), dtype=np.int32), times))
    return pa.DictionaryArray.from_arrays(codes, dictionary).cast(pa.string())


def _count_noise_bucket(arrays: dict[str, np.ndarray], params: dict[str, Any],
                        rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Each user's category counts plus exact discrete Laplace noise, all users at once.

    Why private: one check-in changes one count of its user by 1, so adding
    discrete Laplace noise of scale 1/epsilon to every (user, category) count is
    epsilon-DP per user at the level of single check-ins (event-level). With
    ``max_records = m`` the engine keeps at most m check-ins per user (sampled uniformly
    while staging, :func:`veil.engine.job.staging_source`), so all of a user's check-ins
    change that user's counts by at most m in L1 norm, and noise of scale m/epsilon makes
    the release epsilon-DP for everything the user contributed (user level). Categories
    outside the public list are counted in ``__other__``.
    """
    cats = list(params["categories"]) + [OTHER]
    index = {c: i for i, c in enumerate(cats[:-1])}
    dictionary = arrays["category.dictionary"]
    to_public = np.array([index.get(str(v), len(cats) - 1) for v in dictionary], dtype=np.int64)
    cidx = to_public[arrays["category"]]
    uidx = arrays["user"]
    n_users = int(uidx[-1]) + 1
    k = len(cats)
    counts = np.bincount(uidx * k + cidx, minlength=n_users * k).reshape(n_users, k)
    sensitivity = float(params.get("max_records") or 1)
    noisy = counts + discrete_laplace(sensitivity / params["epsilon"], counts.shape, rng)
    return {"user": np.repeat(np.arange(n_users), k),
            "category": _repeated_names(cats, n_users),
            "noisy_count": noisy.ravel()}


register_task(Task(
    name="count-noise", columns=("category",), per_bucket=_count_noise_bucket,
    epsilon=lambda p: float(p["epsilon"]), validate=_validate_count_noise,
    column_kinds={"category": "category"},
    description="per-user category counts with exact discrete Laplace noise"))


# --------------------------------------------------------------------------- visits-hide
#: The largest public resample size, below 2^53 like every visit count
#: (:class:`veil.visits.Resample`): the resampling and its quality loss compute with float64,
#: exact for whole numbers below 2^53 (numpy's sampler itself overflows past 2^63 - 1).
MAX_RESAMPLE_SIZE = 2 ** 53 - 1


def check_resample_size(value: Any, name: str = "resample_size") -> int:
    """A resample size: an integer in [1, 2^53 - 1] (clear error naming ``name`` otherwise)."""
    from ..validation import check_int

    v = check_int(value, name, minimum=1)
    if v > MAX_RESAMPLE_SIZE:
        raise ParameterError(
            f"{name} must be between 1 and 2^53 - 1 = {MAX_RESAMPLE_SIZE} (the resampling and "
            "its quality loss compute in float64, exact for whole numbers below 2^53), "
            f"got {v}")
    return v


def _validate_visits_hide(p: dict[str, Any]) -> dict[str, Any]:
    from ..visits.hide import check_hide_distance

    cats = p.get("categories")
    if not cats or not all(isinstance(c, str) for c in cats) or len(set(cats)) != len(cats):
        raise ParameterError("categories must be a non-empty list of distinct category names: "
                             "the public domain of the histograms (never taken from the data)")
    sens = p.get("sensitive")
    if not sens:
        raise ParameterError("sensitive must name at least one category to hide")
    allow = bool(p.get("allow_unmatched", False))
    unknown = [s for s in sens if s not in set(cats)]
    if unknown and not allow:
        import difflib

        hint = difflib.get_close_matches(unknown[0], cats, n=1)
        extra = f"; did you mean {hint[0]!r}?" if hint else ""
        raise ParameterError(f"sensitive category {unknown[0]!r} is not in the domain{extra} "
                             "(to ignore names outside the domain: --allow-unmatched on the "
                             "command line, allow_unmatched=True in a library call)")
    sens = sorted(set(sens) - set(unknown))
    if len(sens) == len(cats):
        raise ParameterError("every category is sensitive: there is nowhere to move visits to")
    out = {"categories": list(cats), "sensitive": sens,
           "distance": check_hide_distance(p.get("distance", "js")),
           "forbid_unvisited": bool(p.get("forbid_unvisited", False))}
    if allow:
        out["allow_unmatched"] = True
    if p.get("resample_size") is not None or p.get("resample_mix"):
        from ..visits.hide import check_mitigation
        from ..visits.mitigation import Resample

        if p.get("resample_size") is None:
            raise ParameterError("resample_mix needs resample_size")
        check_resample_size(p["resample_size"], "resample_size")
        m = check_mitigation(Resample(size=p["resample_size"], mix=p.get("resample_mix", 0.0)),
                             out["forbid_unvisited"])
        out.update(resample_size=m.size, resample_mix=m.mix)
    return out


def _visits_hide_solve(arrays: dict[str, np.ndarray], params: dict[str, Any],
                       rng: np.random.Generator):
    """Dense histograms of a bucket over the public domain, and their SLH answers."""
    from ..errors import DataError
    from ..visits.hide import hide_many

    cats = params["categories"]
    index = {c: i for i, c in enumerate(cats)}
    dictionary = arrays["category.dictionary"]
    to_dom = np.array([index.get(str(v), -1) for v in dictionary], dtype=np.int64)
    if (to_dom < 0).any():
        bad = str(dictionary[int(np.flatnonzero(to_dom < 0)[0])])
        raise DataError(f"category {bad!r} is not in the job's category domain",
                        column="category")
    mitigation = None
    if params.get("resample_size") is not None:
        from ..visits.mitigation import Resample

        mitigation = Resample(size=params["resample_size"], mix=params.get("resample_mix", 0.0))
    cidx = to_dom[arrays["category"]]
    uidx = arrays["user"]
    n_users, k = int(uidx[-1]) + 1, len(cats)
    sens = np.array([index[s] for s in params["sensitive"]], dtype=np.int64)
    step = max(1, 262_144 // k)  # users per dense block: bounded memory (~2 MB per array)
    for lo in range(0, n_users, step):
        hi = min(n_users, lo + step)
        sel = slice(np.searchsorted(uidx, lo), np.searchsorted(uidx, hi))
        H = np.bincount((uidx[sel] - lo) * k + cidx[sel], minlength=(hi - lo) * k)
        H = H.reshape(hi - lo, k)
        out, q, st = hide_many(H, sensitive=sens, distance=params["distance"],
                               forbid_unvisited=params["forbid_unvisited"],
                               mitigation=mitigation, rng=rng)
        yield lo, H, out, q, np.array([x == "" for x in st], dtype=bool), st, sens


def _visits_hide_bucket(arrays: dict[str, np.ndarray], params: dict[str, Any],
                        rng: np.random.Generator) -> dict[str, np.ndarray]:
    """SLH for every user of a bucket: the PUBLISHED columns only.

    Builds each user's histogram over the public category domain, hides the
    sensitive categories with :func:`veil.visits.hide.hide_many` (exact; with
    ``resample_size``, the randomized mitigation of :mod:`veil.visits.mitigation`)
    and returns ``user, category, sanitized`` with **every** category of the
    domain for every published user, so the part files depend on the input only
    through the sanitized counts. Users whose visits are all sensitive are left
    out (uniform policy); the ``visits-hide-report`` task lists them, privately.
    """
    cat_names = np.asarray(params["categories"], dtype=object)
    k = cat_names.size
    out_u, out_n = [], []
    for lo, _, out, _, ok, _, _ in _visits_hide_solve(arrays, params, rng):
        rows = np.flatnonzero(ok)
        out_u.append(np.repeat(rows + lo, k))
        out_n.append(out[rows].reshape(-1))
    users = np.concatenate(out_u)
    return {"user": users, "category": _repeated_names(cat_names, users.size // k),
            "sanitized": np.concatenate(out_n).astype(np.int64)}


def _visits_hide_report_bucket(arrays: dict[str, np.ndarray], params: dict[str, Any],
                               rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The custodian's PRIVATE per-user report of ``visits-hide`` (never publish it).

    One row per user: ``size``, ``sensitive_visits``, ``quality_loss`` (of the
    deterministic SLH answer) and ``status`` (``ok`` or ``dropped``, with the
    reason in ``message``).
    """
    det = {k: v for k, v in params.items() if k not in ("resample_size", "resample_mix")}
    cols: dict[str, list] = {k: [] for k in ("user", "size", "sensitive_visits", "quality_loss",
                                             "status", "message")}
    for lo, H, _, q, ok, st, sens in _visits_hide_solve(arrays, det, rng):
        cols["user"].append(np.arange(lo, lo + H.shape[0]))
        cols["size"].append(H.sum(axis=1))
        cols["sensitive_visits"].append(H[:, sens].sum(axis=1))
        cols["quality_loss"].append(q)
        cols["status"].append(np.where(ok, "ok", "dropped"))
        cols["message"].append(np.asarray(st, dtype=str))
    return {k: np.concatenate(v) for k, v in cols.items()}


register_task(Task(
    name="visits-hide", columns=("category",), per_bucket=_visits_hide_bucket,
    epsilon=lambda p: 0.0, validate=_validate_visits_hide,
    column_kinds={"category": "category"},
    input_domain=lambda p: {"category": p["categories"]},
    # a user whose visits are all sensitive is left out: only the others size the job
    published_if=lambda p: {"category": [c for c in p["categories"]
                                         if c not in set(p["sensitive"])]},
    description="sensitive location hiding (SLH) of every user's visit histogram (published "
                "columns only)"))

register_task(Task(
    name="visits-hide-report", columns=("category",), per_bucket=_visits_hide_report_bucket,
    epsilon=lambda p: 0.0, validate=_validate_visits_hide,
    column_kinds={"category": "category"},
    input_domain=lambda p: {"category": p["categories"]},
    description="PRIVATE per-user report of visits-hide (sizes, sensitive visits, status)"))


# --------------------------------------------------------------------------- trajectories
def _trajectory_rows_kept(params: dict[str, Any], col: dict[str, str]) -> str:
    """The points :func:`~veil.geo.temporal.batch.release_bucket` releases, in SQL: a finite
    time and a position inside the model's grid (closed box, as ``TemporalGrid.contains``;
    NaN and NULL are outside). The others are invalid: an error, or dropped with
    ``--on-invalid drop``, and then counted nowhere (not in ``T``, not in the users)."""
    from ..geo.temporal import MarkovModel
    from ..io import sql

    g = MarkovModel.load(params["model"]).grid

    def num(x: float) -> str:
        return f"CAST({sql.literal(repr(float(x)))} AS DOUBLE)"

    return (f"isfinite({col['t']}) AND {col['lat']} BETWEEN {num(g.lat_min)} AND "
            f"{num(g.lat_max)} AND {col['lon']} BETWEEN {num(g.lon_min)} AND {num(g.lon_max)}")


def _register_trajectories() -> None:
    from ..geo.temporal.batch import release_bucket, validate_job_params

    register_task(Task(
        name="trajectories", columns=("t", "lat", "lon"), order_by=("t",),
        per_bucket=release_bucket, validate=validate_job_params,
        # "t" is of kind time: sorted by its exact value, it also arrives as read ("t.raw",
        # staged beside the float seconds), which release_bucket writes back unchanged
        # epsilon plus the public bound of the float64 correction, per timestamp
        epsilon=lambda p: float(p["epsilon_step_bound"]),
        column_kinds={"t": "time", "lat": "number", "lon": "number"},
        kept_rows=_trajectory_rows_kept,
        description="PIM/LM release of every user's trajectory (epsilon per timestamp)",
        extra={"epsilon_unit": "per timestamp"}))


_register_trajectories()
