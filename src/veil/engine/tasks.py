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
