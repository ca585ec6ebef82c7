"""Tasks used by the engine tests (importable by worker processes)."""

import numpy as np

from veil.engine.registry import Task, per_user, register_task


def _row_count(user, arrays, params, rng):
    return {"rows": np.array([arrays["category"].size]),
            "distinct": np.array([np.unique(arrays["category"]).size])}


ROW_COUNT = register_task(Task(name="test-row-count", columns=("category",),
                               per_bucket=per_user(_row_count)))


def _boom(arrays, params, rng):
    raise RuntimeError("task failed on purpose")


BOOM = register_task(Task(name="test-boom", columns=("category",), per_bucket=_boom))


def _slow_count(arrays, params, rng):
    import time

    time.sleep(params.get("sleep", 0.3))
    users = arrays["user"]
    n = int(users[-1]) + 1
    return {"user": np.arange(n), "rows": np.bincount(users, minlength=n)}


SLOW = register_task(Task(name="test-slow-count", columns=("category",), per_bucket=_slow_count))


def _slow_noise(arrays, params, rng):
    """Per-user row counts plus exact discrete Laplace noise, slowly (for fault tests)."""
    import time

    from veil.samplers import discrete_laplace

    time.sleep(params.get("sleep", 0.05))
    users = arrays["user"]
    n = int(users[-1]) + 1
    counts = np.bincount(users, minlength=n)
    return {"user": np.arange(n), "noisy": counts + discrete_laplace(1.0, n, rng)}


SLOW_NOISE = register_task(Task(name="test-slow-noise", columns=("category",),
                                per_bucket=_slow_noise, epsilon=lambda p: 1.0))
