"""Staging, per-bucket execution, checkpoints, and the local and Dask engines."""

from __future__ import annotations

import glob
import importlib
import hashlib
import json
import math
import os
import shutil
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import DataError, ParameterError
from ..io import sql
from .job import (Job, JobResult, check_and_record_ledger, new_manifest,
                  read_manifest, write_manifest)
from .registry import get_task

STAGING = "_staging"
ROWS_PER_BUCKET = 200_000


_sql_str = sql.literal


def _source_sql(files: list[str]) -> str:
    kinds = {Path(f).suffix.lower() for f in files}
    lst = sql.paths(files)
    if kinds <= {".parquet"}:
        return f"read_parquet({lst})"
    if kinds <= {".csv", ".tsv", ".txt"}:
        return f"read_csv({lst}, header=true)"
    if kinds <= {".json", ".jsonl", ".ndjson"}:
        return f"read_json_auto({lst})"
    raise DataError(f"cannot mix or read input kinds {sorted(kinds)}; use CSV, Parquet or JSON",
                    path=files[0])


def _check_schemas(files: list[str]) -> None:
    if not all(f.endswith(".parquet") for f in files) or len(files) < 2:
        return
    import pyarrow.parquet as pq

    first = pq.read_schema(files[0])
    for f in files[1:]:
        s = pq.read_schema(f)
        if s.names != first.names or s.types != first.types:
            diff = {n: (str(first.field(n).type) if n in first.names else None,
                        str(s.field(n).type) if n in s.names else None)
                    for n in set(first.names) | set(s.names)
                    if (n not in first.names or n not in s.names
                        or first.field(n).type != s.field(n).type)}
            raise DataError(f"schema differs from {files[0]}: {diff}; all partitions must share "
                            "one schema", path=f)


def _inspect(job: Job, task, con) -> tuple[str, dict[str, str], int]:
    """Check the input before anything is written: readable, one schema, columns, rows."""
    files = job.input_files()
    _check_schemas(files)
    src = _source_sql(files)
    try:
        cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall()]
        rows = con.execute(f"SELECT count(*) FROM {src}").fetchall()[0][0]
    except Exception as exc:  # duckdb raises its own exception types
        raise DataError(f"cannot read input: {' '.join(str(exc).split())}", path=files[0]) from None
    needed = {"user": job.user_column}
    for c in task.columns:
        needed[c] = job.columns.get(c, c)
    missing = [f"{v!r} (for {k})" for k, v in needed.items() if v not in cols]
    if missing:
        raise DataError(f"missing column(s) {', '.join(missing)}; the input has {cols}",
                        path=files[0])
    if rows == 0:
        raise DataError("input has no rows", path=files[0])
    nulls = con.execute(f'SELECT count(*) FROM {src} WHERE {sql.ident(job.user_column)} IS NULL'
                        ).fetchall()[0][0]
    if nulls:
        raise DataError(f"{nulls} row(s) have an empty user identifier", path=files[0],
                        column=job.user_column)
    return src, needed, int(rows)


def _stage(job: Job, task, staging: Path, con) -> tuple[int, int]:
    """Hash users into buckets and write them as Parquet; returns (rows, buckets).

    The bucket count only partitions the work; it is never released.
    """
    marker = staging / "_SUCCESS"
    if marker.exists():
        info = json.loads(marker.read_text())
        return int(info["rows"]), int(info["buckets"])
    if staging.exists():
        shutil.rmtree(staging)
    src, needed, rows = _inspect(job, task, con)
    buckets = job.buckets or max(16, math.ceil(rows / ROWS_PER_BUCKET))
    select = ", ".join(f"{sql.ident(v)} AS {sql.ident(k)}" for k, v in needed.items())
    tmp = staging.with_name(staging.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    con.execute(f"COPY (SELECT {select}, hash({sql.ident(job.user_column)}) % {buckets} AS bucket "
                f"FROM {src}) TO {sql.path(tmp)} (FORMAT parquet, PARTITION_BY (bucket))")
    os.replace(tmp, staging)
    (staging / "_SUCCESS").write_text(json.dumps({"rows": rows, "buckets": buckets}))
    return rows, buckets


def _part_paths(output: Path, b: int) -> tuple[Path, Path]:
    return output / f"part-{b:05d}.parquet", output / f"part-{b:05d}.json"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def part_is_valid(output: Path, b: int) -> bool:
    """A bucket is done iff its part exists and matches the SHA-256 in its marker."""
    part, marker = _part_paths(output, b)
    if not (part.exists() and marker.exists()):
        return False
    try:
        info = json.loads(marker.read_text())
        return info.get("sha256") == _sha256(part)
    except (OSError, json.JSONDecodeError):
        return False


def bucket_arrays(tbl, cols: list[str]):
    """Numpy arrays of one user-sorted bucket, as tasks receive them.

    ``arrays["user"]`` holds dense int64 user codes 0..U-1 in sorted order (the
    engine maps them back to the identifiers on output); a string column ``c``
    arrives dictionary-encoded as int32 codes ``arrays[c]`` with its values in
    ``arrays[c + ".dictionary"]``; numeric columns arrive as they are.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    user = tbl.column("user").combine_chunks()
    n = len(user)
    if n:
        change = pc.not_equal(user.slice(1), user.slice(0, n - 1)).to_numpy(zero_copy_only=False)
        starts = np.flatnonzero(np.r_[True, change])
        codes = np.zeros(n, dtype=np.int64)
        codes[starts[1:]] = 1
        np.cumsum(codes, out=codes)
        ids = user.take(pa.array(starts))
    else:
        codes = np.zeros(0, dtype=np.int64)
        ids = user
    arrays: dict[str, np.ndarray] = {"user": codes}
    for c in cols[1:]:
        col = tbl.column(c).combine_chunks()
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type) or \
                pa.types.is_dictionary(col.type):
            enc = col if pa.types.is_dictionary(col.type) else pc.dictionary_encode(col)
            arrays[c] = enc.indices.to_numpy(zero_copy_only=False).astype(np.int32)
            arrays[c + ".dictionary"] = np.asarray(enc.dictionary.to_pylist(), dtype=object)
        else:
            arrays[c] = col.to_numpy(zero_copy_only=False)
    return arrays, ids


_CONNECTION = None


def _worker_connection():
    """One DuckDB connection per process (opening one costs about 50 ms)."""
    global _CONNECTION
    if _CONNECTION is None:
        import duckdb

        _CONNECTION = duckdb.connect()
    return _CONNECTION


def run_bucket(spec: dict[str, Any], b: int) -> dict[str, Any]:
    """Process bucket ``b`` (runs in a worker process; also used by Dask)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    output = Path(spec["output"])
    if spec.get("task_module"):
        importlib.import_module(spec["task_module"])  # registers the task in this process
    task = get_task(spec["task"])
    files = glob.glob(str(output / STAGING / f"bucket={b}" / "*.parquet"))
    cols = ["user", *task.columns]
    if files:
        order = ", ".join(sql.ident(c) for c in ("user", *task.order_by))
        lst = sql.paths(sorted(files))
        sel = ", ".join(sql.ident(c) for c in cols)
        tbl = _worker_connection().sql(
            f"SELECT {sel} FROM read_parquet({lst}) ORDER BY {order}").to_arrow_table()
    else:
        tbl = pa.table({c: pa.array([], pa.string()) for c in cols})
    arrays, user_ids = bucket_arrays(tbl, cols)
    seed = spec["seed"]
    ss = (np.random.SeedSequence(seed, spawn_key=(b,)) if seed is not None
          else np.random.SeedSequence())
    rng = np.random.default_rng(ss)
    n_users = len(user_ids)
    if n_users:
        out = task.per_bucket(arrays, spec["params"], rng)
        codes = np.asarray(out.pop("user"))
        table = pa.table({"user": user_ids.take(pa.array(codes)),
                          **{k: pa.array(v) for k, v in out.items()}})
    else:
        table = pa.table({"user": user_ids})
    part, marker = _part_paths(output, b)
    tmp = part.with_name(f".{part.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp)
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, part)
    info = {"bucket": b, "rows_in": int(tbl.num_rows), "rows_out": table.num_rows,
            "users": n_users, "sha256": _sha256(part)}
    mtmp = marker.with_name(f".{marker.name}.tmp-{os.getpid()}")
    mtmp.write_text(json.dumps(info))
    os.replace(mtmp, marker)
    return info


def _prepare_output(job: Job, fingerprint: str) -> dict[str, Any] | None:
    out = Path(job.output)
    if out.exists() and not out.is_dir():
        raise DataError("output exists and is not a folder", path=str(out))
    manifest = read_manifest(out) if out.exists() else None
    if manifest is None:
        if out.exists() and any(out.iterdir()):
            raise DataError("output folder is not empty and holds no veil manifest; "
                            "nothing was overwritten: choose another --output", path=str(out))
        return None
    if manifest.get("job_fingerprint") != fingerprint:
        raise DataError("output folder belongs to a different job (other input, task, "
                        "parameters or seed); nothing was overwritten: choose another --output",
                        path=str(out))
    if manifest.get("status") == "complete" and not job.resume:
        raise ParameterError(
            f"this job is already complete in {out}: a fresh release of the same users spends "
            f"epsilon {manifest.get('epsilon_per_user')} per user again; use a new --output "
            "together with --spend-again")
    if manifest.get("status") == "running" and not job.resume:
        raise ParameterError(f"an interrupted run of this job exists in {out}: pass --resume to "
                             "finish it (each user is processed exactly once)")
    return manifest


class _Progress:
    def __init__(self, enabled: bool, total: int, done: int) -> None:
        self.enabled = enabled
        self._p = None
        if enabled:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self._p = Progress(TextColumn("[bold]veil batch[/]"), BarColumn(),
                               MofNCompleteColumn(), TextColumn("buckets"),
                               TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                               TextColumn("ETA"), TimeRemainingColumn(), transient=False)
            self._p.start()
            self._t = self._p.add_task("job", total=total, completed=done, rate="")
        self.users = 0
        self.start = time.perf_counter()

    def advance(self, info: dict[str, Any]) -> None:
        self.users += info.get("users", 0)
        if self._p is not None:
            rate = self.users / max(1e-9, time.perf_counter() - self.start)
            self._p.update(self._t, advance=1, rate=f"{rate:,.0f} users/s")

    def close(self) -> None:
        if self._p is not None:
            self._p.stop()


def _run_local(spec: dict[str, Any], pending: list[int], workers: int,
               on_done: Callable[[dict[str, Any]], None]) -> None:
    if workers == 1:
        for b in pending:
            on_done(run_bucket(spec, b))
        return
    # forkserver: workers fork from a clean server process that preloaded veil, so they
    # start fast and never inherit the parent's DuckDB threads.
    ctx = get_context("forkserver")
    ctx.set_forkserver_preload(["veil.engine.runner", "veil.engine.tasks"])
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as ex:
        todo = iter(pending)
        running = set()
        try:
            for _ in range(workers * 2):  # bounded queue: bounded memory
                b = next(todo, None)
                if b is None:
                    break
                running.add(ex.submit(run_bucket, spec, b))
            while running:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for f in done:
                    on_done(f.result())
                    b = next(todo, None)
                    if b is not None:
                        running.add(ex.submit(run_bucket, spec, b))
        except BaseException:
            for f in running:
                f.cancel()
            raise


def _run_dask(spec: dict[str, Any], pending: list[int], workers: int, scheduler: str | None,
              on_done: Callable[[dict[str, Any]], None]) -> None:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ParameterError("--engine dask needs the dask extra: pip install 'veil[dask]'") from None
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        futures = client.map(run_bucket, [spec] * len(pending), pending, pure=False, retries=3)
        for fut in as_completed(futures):
            on_done(fut.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_job(job: Job) -> JobResult:
    """Run (or resume) ``job``; returns a :class:`JobResult`.

    Examples
    --------
    >>> from veil.engine import Job, run_job   # doctest: +SKIP
    >>> run_job(Job("checkins.parquet", "out/", "count-noise",
    ...             params={"categories": ["a", "b"], "epsilon": 1.0}))  # doctest: +SKIP
    """
    import duckdb

    t0 = time.perf_counter()
    task = get_task(job.task)
    params = task.validate(dict(job.params))
    job.params = params
    epsilon = float(task.epsilon(params))
    fingerprint = job.fingerprint()
    manifest = _prepare_output(job, fingerprint)
    out = Path(job.output)
    if manifest is not None and manifest.get("status") == "complete":  # --resume of a done job
        return JobResult(out, int(manifest["buckets"]), 0, int(manifest["rows_in"]),
                         int(manifest["rows_out"]), int(manifest["users"]), epsilon,
                         time.perf_counter() - t0, job.engine, job.workers)
    con = duckdb.connect()
    try:
        if manifest is None:
            _inspect(job, task, con)  # bad input fails before anything is written
            check_and_record_ledger(job, epsilon, fingerprint)
            out.mkdir(parents=True, exist_ok=True)
            # the manifest comes first, so a run killed while staging is resumable
            manifest = new_manifest(job, fingerprint, epsilon, None,
                                    task.extra.get("epsilon_unit", "per user"))
            write_manifest(out, manifest)
        else:
            manifest["runs"] = int(manifest.get("runs", 1)) + 1
        rows, buckets = _stage(job, task, out / STAGING, con)
    finally:
        con.close()
    manifest["buckets"] = buckets
    write_manifest(out, manifest)
    for leftover in out.glob(".part-*.tmp-*"):
        leftover.unlink(missing_ok=True)
    pending = [b for b in range(buckets) if not part_is_valid(out, b)]
    for b in pending:  # damaged or partial parts are redone from scratch
        for p in _part_paths(out, b):
            p.unlink(missing_ok=True)
    spec = {"output": str(out), "task": job.task, "params": params, "seed": job.seed,
            "task_module": getattr(task.per_bucket, "__module__", None)}
    prog = _Progress(job.progress, buckets, buckets - len(pending))
    try:
        if job.engine == "local":
            _run_local(spec, pending, job.workers, prog.advance)
        else:
            _run_dask(spec, pending, job.workers, job.scheduler, prog.advance)
    finally:
        prog.close()
    infos = [json.loads(_part_paths(out, b)[1].read_text()) for b in range(buckets)]
    bad = [b for b in range(buckets) if not part_is_valid(out, b)]
    if bad:
        raise DataError(f"buckets {bad[:10]} failed validation after the run; rerun with --resume",
                        path=str(out))
    rows_out = sum(i["rows_out"] for i in infos)
    users = sum(i["users"] for i in infos)
    manifest.update({"status": "complete", "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                     "rows_in": rows, "rows_out": rows_out, "users": users,
                     "parts": {f"part-{i['bucket']:05d}.parquet": {"rows": i["rows_out"],
                                                                   "sha256": i["sha256"]}
                               for i in infos}})
    write_manifest(out, manifest)
    shutil.rmtree(out / STAGING, ignore_errors=True)
    return JobResult(out, buckets, len(pending), rows, rows_out, users, epsilon,
                     time.perf_counter() - t0, job.engine, job.workers)
