"""Built-in engine tasks. Capability tasks are registered here with lazy imports."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError
from ..samplers import discrete_laplace
from ..validation import check_epsilon
from .registry import Task, register_task


def _validate_count_noise(p: dict[str, Any]) -> dict[str, Any]:
    cats = p.get("categories")
    if not cats or not all(isinstance(c, str) for c in cats):
        raise ParameterError("categories must be a non-empty list of category names (public: "
                             "never taken from the data)")
    if len(set(cats)) != len(cats):
        raise ParameterError("categories must not repeat")
    return {"categories": list(cats), "epsilon": check_epsilon(p.get("epsilon"), "epsilon")}


def _count_noise_bucket(arrays: dict[str, np.ndarray], params: dict[str, Any],
                        rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Each user's category counts plus exact discrete Laplace noise, all users at once.

    Why private: one check-in changes one count of its user by 1, so adding
    discrete Laplace noise of scale 1/epsilon to every (user, category) count is
    epsilon-DP per user at the level of single check-ins (event-level). Categories
    outside the public list are counted in ``__other__``.
    """
    cats = list(params["categories"]) + ["__other__"]
    index = {c: i for i, c in enumerate(cats[:-1])}
    dictionary = arrays["category.dictionary"]
    to_public = np.array([index.get(str(v), len(cats) - 1) for v in dictionary], dtype=np.int64)
    cidx = to_public[arrays["category"]]
    uidx = arrays["user"]
    n_users = int(uidx[-1]) + 1
    k = len(cats)
    counts = np.bincount(uidx * k + cidx, minlength=n_users * k).reshape(n_users, k)
    noisy = counts + discrete_laplace(1.0 / params["epsilon"], counts.shape, rng)
    return {"user": np.repeat(np.arange(n_users), k),
            "category": np.tile(np.asarray(cats, dtype=object), n_users).astype(str),
            "noisy_count": noisy.ravel()}


register_task(Task(
    name="count-noise", columns=("category",), per_bucket=_count_noise_bucket,
    epsilon=lambda p: float(p["epsilon"]), validate=_validate_count_noise,
    description="per-user category counts with exact discrete Laplace noise"))


# --------------------------------------------------------------------------- visits-hide
def _validate_visits_hide(p: dict[str, Any]) -> dict[str, Any]:
    from ..visits.costs import check_distance

    cats = p.get("categories")
    if not cats or not all(isinstance(c, str) for c in cats) or len(set(cats)) != len(cats):
        raise ParameterError("categories must be a non-empty list of distinct category names: "
                             "the public domain of the histograms (never taken from the data)")
    sens = p.get("sensitive")
    if not sens:
        raise ParameterError("sensitive must name at least one category to hide")
    unknown = [s for s in sens if s not in set(cats)]
    if unknown:
        import difflib

        hint = difflib.get_close_matches(unknown[0], cats, n=1)
        extra = f"; did you mean {hint[0]!r}?" if hint else ""
        raise ParameterError(f"sensitive category {unknown[0]!r} is not in the domain{extra}")
    if len(set(sens)) == len(cats):
        raise ParameterError("every category is sensitive: there is nowhere to move visits to")
    return {"categories": list(cats), "sensitive": sorted(set(sens)),
            "distance": check_distance(p.get("distance", "js"), "distance"),
            "forbid_unvisited": bool(p.get("forbid_unvisited", False))}


def _visits_hide_bucket(arrays: dict[str, np.ndarray], params: dict[str, Any],
                        rng: np.random.Generator) -> dict[str, np.ndarray]:
    """SLH for every user of a bucket (deterministic: no budget is spent).

    Builds each user's histogram over the public category domain, hides the
    sensitive categories with :func:`veil.visits.hide.hide_many` (exact), and
    returns the sanitized non-zero counts with each user's quality loss. The
    original counts are not written: the output is what may be published.
    Users whose visits are all sensitive get status ``infeasible`` and no counts.
    """
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
    cidx = to_dom[arrays["category"]]
    uidx = arrays["user"]
    n_users, k = int(uidx[-1]) + 1, len(cats)
    sens = np.array([index[s] for s in params["sensitive"]], dtype=np.int64)
    out_u, out_c, out_n, q_all, st_all = [], [], [], [], []
    step = max(1, 2_000_000 // k)  # users per dense block: bounded memory
    for lo in range(0, n_users, step):
        hi = min(n_users, lo + step)
        sel = slice(np.searchsorted(uidx, lo), np.searchsorted(uidx, hi))
        H = np.bincount((uidx[sel] - lo) * k + cidx[sel], minlength=(hi - lo) * k)
        H = H.reshape(hi - lo, k)
        out, q, st = hide_many(H, sensitive=sens, distance=params["distance"],
                               forbid_unvisited=params["forbid_unvisited"])
        ok = np.array([s == "" for s in st])
        r, c = np.nonzero((out > 0) & ok[:, None])
        out_u.append(r + lo)
        out_c.append(c)
        out_n.append(out[r, c])
        q_all.append(q)
        st_all.append(np.where(ok, "ok", "infeasible"))
    users = np.concatenate(out_u)
    quality = np.concatenate(q_all)
    status = np.concatenate(st_all)
    # infeasible users get one row with no category so they are visible in the output
    bad = np.flatnonzero(status != "ok")
    users_all = np.concatenate([users, bad])
    cat_names = np.asarray(cats, dtype=object)
    category = np.concatenate([cat_names[np.concatenate(out_c)], np.full(bad.size, None)])
    count = np.concatenate([np.concatenate(out_n), np.zeros(bad.size, dtype=np.int64)])
    order = np.argsort(users_all, kind="stable")
    users_all = users_all[order]
    return {"user": users_all, "category": category[order], "sanitized": count[order],
            "quality_loss": quality[users_all], "status": status[users_all]}


register_task(Task(
    name="visits-hide", columns=("category",), per_bucket=_visits_hide_bucket,
    epsilon=lambda p: 0.0, validate=_validate_visits_hide,
    description="sensitive location hiding (SLH) of every user's visit histogram"))


# --------------------------------------------------------------------------- trajectories
def _register_trajectories() -> None:
    from ..geo.temporal.batch import release_bucket, validate_job_params

    register_task(Task(
        name="trajectories", columns=("t", "lat", "lon"), order_by=("t",),
        per_bucket=release_bucket, validate=validate_job_params,
        epsilon=lambda p: float(p["epsilon"]),
        description="PIM/LM release of every user's trajectory (epsilon per timestamp)",
        extra={"epsilon_unit": "per timestamp"}))


_register_trajectories()
