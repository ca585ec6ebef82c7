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
