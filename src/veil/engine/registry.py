"""Tasks the engine can run: a per-user (or per-bucket) function and its budget rule."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import ParameterError
from ..validation import check_choice

PerUser = Callable[[str, dict[str, np.ndarray], dict[str, Any], np.random.Generator],
                   dict[str, np.ndarray]]
PerBucket = Callable[[dict[str, np.ndarray], dict[str, Any], np.random.Generator],
                     dict[str, np.ndarray]]


@dataclass(frozen=True)
class Task:
    """A unit of per-user work.

    Attributes
    ----------
    name : str
    columns : tuple of str
        Input columns the task needs besides the user column (in this order).
    per_bucket : callable
        ``f(arrays, params, rng) -> dict of output columns`` over one bucket whose
        arrays are sorted by user (``arrays["user"]`` included). Output must
        contain a ``user`` column.
    epsilon : callable
        ``params -> float``: the budget each user's release spends (0 for
        non-DP tasks such as deterministic sanitization).
    order_by : tuple of str
        Secondary sort keys inside a user (e.g. time).
    validate : callable
        ``params -> params``: checks parameters before any work starts.
    column_kinds : dict
        What each input column must hold, checked on the whole input before any
        bucket runs: ``"category"`` (staged as text; no empty cell), ``"number"``
        (staged as float64), ``"time"`` (a number or a timestamp, staged as float64
        seconds for checks, plus ``c.raw``, the value as read, which the task receives and
        may write back, and for a CSV's timestamp text ``c.key``, its exact order); other
        columns are staged as they are (lists and records refused).
    input_domain : callable, optional
        ``params -> {column: [allowed values]}``: a closed public domain; a row outside it
        is an error before any bucket runs.
    published_if : callable, optional
        For a task that leaves some users out of its output: ``params -> {column: [values]}``,
        a user is published iff one of their rows holds one of the listed values in every
        listed column. The engine sizes the default number of buckets on the users that
        will be published, so that the published folder does not depend on users it leaves
        out (default: every user with a row is published).
    kept_rows : callable, optional
        For a task that drops some rows (``--on-invalid drop``): ``(params, columns) -> SQL
        predicate``, where ``columns`` maps each staged column (``user``, the task's columns)
        to its SQL expression; a row is kept iff the predicate is true. The engine counts
        only kept rows where a count shapes what is published (the users that size the
        default buckets; ``T``, the most timestamps of a user, of a per-timestamp task), so
        that rows the task drops never show (default: every row is kept).
    """

    name: str
    columns: tuple[str, ...]
    per_bucket: PerBucket
    epsilon: Callable[[dict[str, Any]], float] = lambda p: 0.0
    order_by: tuple[str, ...] = ()
    validate: Callable[[dict[str, Any]], dict[str, Any]] = lambda p: p
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    column_kinds: dict[str, str] = field(default_factory=dict)
    input_domain: Callable[[dict[str, Any]], dict[str, list[str]]] | None = None
    published_if: Callable[[dict[str, Any]], dict[str, list[str]]] | None = None
    kept_rows: Callable[[dict[str, Any], dict[str, str]], str] | None = None


_TASKS: dict[str, Task] = {}
# Tasks provided by capability modules, imported on first use.
_LAZY = {
    "visits-hide": "veil.engine.tasks",
    "visits-hide-report": "veil.engine.tasks",
    "trajectories": "veil.engine.tasks",
    "count-noise": "veil.engine.tasks",
}


def register_task(task: Task) -> Task:
    """Register ``task`` under its name (re-registering the same name replaces it)."""
    _TASKS[task.name] = task
    return task


def task_names() -> list[str]:
    return sorted(set(_TASKS) | set(_LAZY))


def get_task(name: str) -> Task:
    """Return the task called ``name`` (did-you-mean error otherwise)."""
    if name not in _TASKS and name in _LAZY:
        importlib.import_module(_LAZY[name])
    if name not in _TASKS:
        check_choice(name, "task", tuple(task_names()))
        raise ParameterError(f"task {name!r} is not available")
    return _TASKS[name]


def per_user(fn: PerUser) -> PerBucket:
    """Lift a per-user function to a per-bucket one over user-sorted arrays.

    ``fn(user, arrays_of_that_user, params, rng) -> dict of output columns``
    is called once per user on views (no copies) of the sorted arrays; its
    outputs are concatenated. A ``user`` column is added.
    """

    def bucket(arrays: dict[str, np.ndarray], params: dict[str, Any],
               rng: np.random.Generator) -> dict[str, np.ndarray]:
        users = arrays["user"]
        if users.size == 0:
            return {"user": users[:0]}
        starts = np.flatnonzero(np.r_[True, users[1:] != users[:-1]])
        ends = np.r_[starts[1:], users.size]
        parts: list[dict[str, np.ndarray]] = []
        for s, e in zip(starts.tolist(), ends.tolist()):
            view = {k: v[s:e] for k, v in arrays.items()}
            out = fn(users[s], view, params, rng)
            m = len(next(iter(out.values()))) if out else 0
            out = {"user": np.repeat(users[s:s + 1], m), **out}
            parts.append(out)
        keys = parts[0].keys()
        return {k: np.concatenate([p[k] for p in parts]) for k in keys}

    bucket.__name__ = getattr(fn, "__name__", "per_user")
    return bucket
