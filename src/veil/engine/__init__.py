"""Per-user batch jobs: the same per-user function on one machine or on a Dask cluster.

A job is (input dataset, user column, task = per-user function and its
parameters, output folder). The input is read by DuckDB and hashed once into
user buckets (Parquet staging); a bucket is the unit of work, of
checkpointing and of retry. Each finished bucket is written atomically as one
Parquet part plus a small marker holding its row count and SHA-256, so an
interrupted run resumed with the same command redoes exactly the missing or
damaged buckets: no user lost, none duplicated. With a seed (experiments
only) bucket ``b`` always uses the child stream ``b`` of the seed, so a resumed
run's output equals an uninterrupted one.
"""

from .job import Job, JobResult
from .registry import Task, get_task, register_task, task_names
from .runner import run_job

__all__ = ["Job", "JobResult", "Task", "register_task", "get_task", "task_names", "run_job"]
