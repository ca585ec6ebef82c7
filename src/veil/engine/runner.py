"""Validation, staging, per-bucket execution, verification and commit of a batch job.

Where things live (``OUT`` is the output folder, ``WORK`` the job's private work folder,
by default ``.OUT.veil-work`` beside it, mode 0700):

* ``WORK/veil-work-folder``: written first in a work folder veil makes; veil clears and
  removes only a folder that holds it (or, from an older veil, only a work folder's own
  names): ``--work-dir`` naming a folder of the user's is refused, never emptied;
* ``WORK/lock`` and ``WORK/workers.lock``: one job per output folder, no orphan beside it
  (:mod:`veil.engine.lock`);
* ``WORK/job.json``: the job's state (fingerprint, per-bucket content digests of what was
  staged, phase); ``WORK/job-id``: the id of the job owning the folder, which every bucket
  checks before it runs (``job.json`` grows with the buckets: reading it per bucket made a
  job quadratic in them); ``WORK/key``: the noise key (:mod:`veil.engine.keys`);
* ``WORK/staging/bucket=B/*.parquet``: the input's needed columns hashed into buckets (raw
  rows: never in ``OUT``);
* ``WORK/parts/part-B.parquet`` and ``WORK/markers/part-B.json``: finished buckets and their
  row counts and SHA-256, not yet published. A bucket without published rows (no user, or
  every user left out by the task) has a marker and no part.

``OUT`` does not exist (or stays empty) until every part is verified: then
``WORK/parts`` with its ``_manifest.json`` is renamed to ``OUT`` in one step, and ``WORK`` is
removed (raw rows and key with it). A reader of ``OUT`` sees nothing or the complete, verified
job; a run killed anywhere resumes from ``WORK``.
"""

from __future__ import annotations

import errno
import hashlib
import importlib
import json
import math
import os
import secrets
import shlex
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..errors import DataError, ParameterError, VeilError
from ..io import sql
from ..io.read import private_spill
from ..release import to_jsonable
from . import fsutil
from .fsutil import fault, private_dir, remove_tree, sha256_file, write_file
from .job import ledger_path as job_ledger_path
from .job import (MANIFEST, Job, JobResult, commit_ledger, job_epsilon, read_manifest,
                  release_ledger, reserve_ledger, staging_source)
from .keys import KEY_FILE, bucket_entropy, bucket_rng, create_key, load_key, seed_key
from .lock import LOCK, WORKERS_LOCK, JobLock, bucket_lock, wait_for_orphans
from .pool import WorkerLostError
from .registry import get_task

__all__ = ["run_job", "run_bucket", "bucket_arrays", "work_dir_for", "verify_output",
           "preflight", "StagingDamagedError", "InputChangedError", "USERS_PER_BUCKET"]

USERS_PER_BUCKET = 10_000
MIN_BUCKETS = 16
WORK_SUFFIX = ".veil-work"
STATE = "job.json"
#: ``WORK/job-id``: the id of the job that owns the work folder (a few bytes, written with the
#: state): each bucket checks it, so its cost does not grow with the number of buckets
OWNER = "job-id"
STAGING = "staging"
PARTS = "parts"
MARKERS = "markers"
TMP = "tmp"
FORMAT = 2
#: the first file of every work folder veil creates (see the module's docstring)
WORK_MARK = "veil-work-folder"
#: the names a work folder made by an older veil (without :data:`WORK_MARK`) can hold
_WORK_NAMES = frozenset({LOCK, WORKERS_LOCK, STATE, OWNER, STAGING, STAGING + ".tmp", PARTS,
                         MARKERS, TMP, KEY_FILE})


class StagingDamagedError(VeilError, RuntimeError):
    """A staged bucket is missing or does not match what was staged."""


class InputChangedError(DataError):
    """The input's content differs from what an interrupted run staged."""


# --------------------------------------------------------------------------- input
def _source_sql(files: list[str], text_columns: list[str] | tuple[str, ...] = ()) -> str:
    """The DuckDB relation reading ``files``; ``text_columns`` of a CSV are read as text (the
    time columns whose text the job writes back as read)."""
    kinds = {Path(f).suffix.lower() for f in files}
    lst = sql.paths(files)
    if kinds <= {".parquet"}:
        return sql.read_parquet(lst)
    if kinds <= {".csv", ".tsv", ".txt"}:
        if text_columns:
            types = ", ".join(f"{sql.literal(c)}: 'VARCHAR'" for c in text_columns)
            return f"read_csv({lst}, header=true, types={{{types}}})"
        return f"read_csv({lst}, header=true)"
    if kinds <= {".json", ".jsonl", ".ndjson"}:
        return sql.read_json(files)
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


def _raw_names(files: list[str], con) -> list[str] | None:
    """Column names as the file spells them (DuckDB renames duplicates to ``x_1``)."""
    f = files[0]
    low = f.lower()
    try:
        if low.endswith(".parquet"):
            import pyarrow.parquet as pq

            return list(pq.read_schema(f).names)
        if low.endswith((".csv", ".tsv", ".txt")):
            import csv

            delim, quote = con.execute(
                f"SELECT Delimiter, Quote FROM sniff_csv({sql.path(f)})").fetchall()[0]
            delim = delim if delim and len(delim) == 1 else ","
            quote = quote if quote and len(quote) == 1 else '"'
            with open(f, newline="", encoding="utf-8", errors="replace") as fh:
                return next(csv.reader(fh, delimiter=delim, quotechar=quote), [])
    except Exception:  # noqa: BLE001 - only a better message is lost; DuckDB reports the rest
        return None
    return None


_INTS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}
_FLOATS = {"FLOAT", "DOUBLE", "REAL"}
_TIMES = ("TIMESTAMP", "DATE")
#: The staged companions of a task column of kind ``time`` (``t``: float64 seconds): ``t.raw``
#: the value as read (written back by the task), ``t.key`` its exact order when the value is
#: text (a CSV's timestamps); a typed value orders itself exactly
RAW, KEY = ".raw", ".key"


def _nested(dtype: str) -> bool:
    d = dtype.upper()
    return d.endswith("]") or d.startswith(("STRUCT", "MAP", "UNION"))


def _staged_expr(kind: str, col: str, dtype: str, path: str) -> str:
    """The SQL expression staging ``col`` for a task column of ``kind`` (type checked)."""
    q = sql.ident(col)
    d = dtype.upper()
    if _nested(d):
        what = {"user": "a user identifier (text or integer)", "category": "a category name",
                "number": "a number", "time": "a number or a timestamp"}.get(kind, "a plain value")
        raise DataError(f"holds {dtype} values (lists or records); this column must hold {what} "
                        "in every row", path=path, column=col)
    if kind == "user":
        if d == "VARCHAR" or d == "UBIGINT":
            return q
        if d in _INTS:
            return f"CAST({q} AS BIGINT)"
        return f"CAST({q} AS VARCHAR)"
    if kind == "category":
        return q if d == "VARCHAR" else f"CAST({q} AS VARCHAR)"
    numeric = d in _INTS or d in _FLOATS or d in {"UBIGINT", "HUGEINT", "UHUGEINT"} \
        or d.startswith("DECIMAL")
    if kind == "number":
        if not numeric:
            raise DataError(f"holds {dtype} values; a number is needed", path=path, column=col)
        return f"CAST({q} AS DOUBLE)"
    if kind == "time":
        if numeric:
            return f"CAST({q} AS DOUBLE)"
        if d.startswith(_TIMES):
            return f"CAST(epoch({q}) AS DOUBLE)"
        raise DataError(f"holds {dtype} values; a number (seconds) or a timestamp is needed",
                        path=path, column=col)
    return q


def _raw_time_expr(col: str, dtype: str) -> str:
    """The staged value of a typed time column as read, in a type that a Parquet round trip
    keeps (the resume check hashes the input against the staged files)."""
    q = sql.ident(col)
    d = dtype.upper()
    if d in ("TIMESTAMP_S", "TIMESTAMP_MS"):  # stored by DuckDB as microseconds
        return f"CAST({q} AS TIMESTAMP)"
    if d in ("HUGEINT", "UHUGEINT"):  # no 128-bit integer in Parquet (beyond any epoch)
        return f"CAST({q} AS DOUBLE)"
    return q


def _text_time_exprs(col: str, dtype: str, fmt: str | None) -> tuple[str, str, str]:
    """``(seconds, raw, key)`` of a CSV time column read as text whose sniffed type ``dtype``
    is a timestamp or a date (``fmt``: the format the sniffer found, ``None`` for ISO 8601).

    The seconds are what DuckDB's typed reading gave (``epoch`` of the value); the raw value
    is the text of the file; the key is exact nanoseconds since 1970 (DECIMAL(38,0)): the
    typed value's microseconds and, for ISO text, the nanoseconds within that microsecond
    (the 7th to 9th digits of the fraction), which the microsecond types drop. They are read
    from the text as a TIMESTAMP_NS (its wall clock: an offset, whole minutes, never
    touches them), else, outside the years 1677-2262, from the digits themselves.
    """
    q = sql.ident(col)
    d = dtype.upper()
    typed = f"CAST(strptime({q}, {sql.literal(fmt)}) AS {d})" if fmt else f"CAST({q} AS {d})"
    seconds = f"CAST(epoch({typed}) AS DOUBLE)"
    if d.startswith("DATE"):
        key = f"CAST(epoch_us(CAST({typed} AS TIMESTAMP)) AS HUGEINT) * 1000"
    elif d.endswith("_NS"):
        key = f"CAST(epoch_ns({typed}) AS HUGEINT)"
    else:
        sub = "0" if fmt else (
            f"COALESCE((epoch_ns(TRY_CAST({q} AS TIMESTAMP_NS)) % 1000 + 1000) % 1000, "
            f"TRY_CAST(rpad(regexp_extract({q}, ':[0-9]{{2}}[.,]([0-9]+)', 1), 9, "
            f"'0')[7:9] AS INTEGER), 0)")
        key = f"CAST(epoch_us({typed}) AS HUGEINT) * 1000 + {sub}"
    return seconds, q, f"CAST({key} AS DECIMAL(38,0))"


def _csv_time_formats(path: str, con) -> tuple[str | None, str | None]:
    """The date and timestamp formats DuckDB's sniffer finds in a CSV (``None``: ISO 8601)."""
    try:
        date_fmt, ts_fmt = con.execute(
            f"SELECT DateFormat, TimestampFormat FROM sniff_csv({sql.path(path)})").fetchall()[0]
    except Exception:  # noqa: BLE001 - then ISO 8601; a value that does not parse is an error
        return None, None
    return date_fmt or None, ts_fmt or None


@dataclass
class Plan:
    """What staging reads: the source, the staged expressions and their aliases."""

    files: list[str]
    src: str
    exprs: list[str]     # SQL expression per staged column, in order (user first)
    aliases: list[str]   # staged column names: "user", the task's columns, then the companions
    #                      of its time columns (``t.raw``, ``t.key``)
    rows: int
    users_estimate: int
    read: list[str] = field(default_factory=list)  # the input columns the job reads
    max_rows_per_user: int | None = None  # kept rows of the busiest user (per-timestamp tasks)

    @property
    def select(self) -> str:
        return ", ".join(f"{e} AS {sql.ident(a)}" for e, a in zip(self.exprs, self.aliases))


def _interrupted(exc: BaseException) -> bool:
    """DuckDB reports Ctrl-C during a query as ``InterruptException`` or, in its 2.0 Python
    client, as a plain ``RuntimeError('Query interrupted')``."""
    import duckdb

    return isinstance(exc, (KeyboardInterrupt, duckdb.InterruptException)) or \
        (isinstance(exc, RuntimeError) and str(exc).strip() == "Query interrupted")


def _duckdb_error(exc: BaseException, what: str, path: str) -> BaseException:
    """Turn a DuckDB exception into what veil promises (interrupt, disk full, one-line error)."""
    if _interrupted(exc):
        return KeyboardInterrupt()
    if fsutil.no_space(exc):
        return OSError(errno.ENOSPC, f"no space left on device while {what}; free space and "
                                     "rerun the same command", path)
    from ..io.read import _duck_detail, csv_text_error

    # DuckDB's message quotes the row it failed on ("Original Line: ...") and a value whole:
    # veil's reading error for the file's text (not UTF-8, a line too long) or the message's
    # first line with values cut (the raw rows are what the job protects)
    if Path(path).suffix.lower() in (".csv", ".tsv", ".txt"):
        known = csv_text_error(exc, path)
        if known is not None:
            return known
    return DataError(f"cannot read input while {what}: {_duck_detail(str(exc))}", path=path)


def inspect_input(job: Job, task, params: dict[str, Any], con) -> Plan:
    """Check the whole input before anything is written; return the staging plan.

    Readable, one schema, the needed columns present once each with usable types, at least
    one row, no empty user id or category, every category inside a closed public domain.
    """
    files = job.input_files()
    _check_schemas(files)
    src = _source_sql(files)
    path = files[0]
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall()
    except Exception as exc:  # duckdb raises its own exception types
        raise _duckdb_error(exc, "reading its schema", path) from None
    cols = [r[0] for r in described]
    types = {r[0]: str(r[1]) for r in described}
    needed = {"user": job.user_column}
    for c in task.columns:
        needed[c] = job.columns.get(c, c)
    raw = _raw_names(files, con) or cols
    for alias, name in needed.items():
        same = [n for n in raw if n.lower() == name.lower()]
        if len(same) > 1:
            raise DataError(f"the input has {len(same)} columns named {same} (names that differ "
                            f"only by case are the same column in SQL); rename them so that "
                            f"{name!r} (for {alias}) is unambiguous", path=path)
    missing = [f"{v!r} (for {k})" for k, v in needed.items() if v not in cols]
    if missing:
        raise DataError(f"missing column(s) {', '.join(missing)}; the input has {cols}", path=path)
    kinds = {"user": "user", **{c: task.column_kinds.get(c, "any") for c in task.columns}}
    exprs = [_staged_expr(kinds[a], n, types[n], path) for a, n in needed.items()]
    aliases = list(needed)
    # the companions of every time column (RAW, KEY): its value as read, written back by the
    # task, and its exact order; a CSV's timestamps are read as text (DuckDB's typed reading
    # keeps microseconds: the text of the file keeps every digit)
    companions: list[tuple[str, str]] = []
    date_fmt = ts_fmt = None
    text_times = [n for a, n in needed.items() if kinds[a] == "time"
                  and types[n].upper().startswith(_TIMES)
                  and Path(path).suffix.lower() in (".csv", ".tsv", ".txt")]
    if text_times:
        src = _source_sql(files, text_times)
        date_fmt, ts_fmt = _csv_time_formats(path, con)
    for i, (a, n) in enumerate(needed.items()):
        if kinds[a] != "time":
            continue
        if n in text_times:
            d = types[n].upper()
            exprs[i], raw, key = _text_time_exprs(n, d, date_fmt if d == "DATE" else ts_fmt)
            companions += [(a + RAW, raw), (a + KEY, key)]
        else:
            companions.append((a + RAW, _raw_time_expr(n, types[n])))
    domains = task.input_domain(params) if task.input_domain else {}
    # the users that size the default number of buckets: those the task publishes, so that
    # the published folder does not depend on users it leaves out (Task.published_if)
    shown = task.published_if(params) if task.published_if else {}
    where = " AND ".join(
        f"list_contains([{', '.join(sql.literal(v) for v in vals)}], "
        f"{exprs[aliases.index(a)]})" if vals else "false"
        for a, vals in shown.items()) or "true"
    # the rows the task keeps (Task.kept_rows): the rows it drops count nowhere
    kept = f"({task.kept_rows(params, dict(zip(aliases, exprs))) if task.kept_rows else 'true'})"
    where = f"({where}) AND {kept}"
    aggs = ["count(*)", f"count(*) FILTER (WHERE {exprs[0]} IS NULL)",
            f"approx_count_distinct({exprs[0]}) FILTER (WHERE {where})"]
    checks: list[tuple[str, str]] = []
    for a, e in zip(aliases[1:], exprs[1:]):
        if kinds[a] == "category":
            checks.append((a, "null"))
            aggs.append(f"count(*) FILTER (WHERE {e} IS NULL)")
    try:
        res = list(con.execute(f"SELECT {', '.join(aggs)} FROM {src}").fetchall()[0])
        vals = dict(zip(checks, res[3:]))
        for a, e in zip(aliases[1:], exprs[1:]):
            if a in domains:  # checked on the distinct values: one cheap GROUP BY
                dom = "[" + ", ".join(sql.literal(v) for v in domains[a]) + "]"
                n, example = con.execute(
                    f"SELECT sum(n), min(v) FROM (SELECT {e} AS v, count(*) AS n FROM {src} "
                    f"GROUP BY 1) WHERE v IS NOT NULL AND NOT list_contains({dom}, v)"
                ).fetchall()[0]
                vals[(a, "domain")], vals[(a, "example")] = int(n or 0), example
    except Exception as exc:  # noqa: BLE001
        raise _duckdb_error(exc, "checking it", path) from None
    rows, null_users, users = int(res[0]), int(res[1]), int(res[2] or 0)
    if rows == 0:
        raise DataError("input has no rows", path=path)
    if null_users:
        raise DataError(f"{null_users} row(s) have an empty user identifier", path=path,
                        column=job.user_column)
    for a in aliases[1:]:
        name = needed[a]
        if vals.get((a, "null")):
            raise DataError(f"{vals[(a, 'null')]} row(s) have an empty {a} (no value); every "
                            f"row needs one", path=path, column=name)
        if vals.get((a, "domain")):
            raise DataError(f"{vals[(a, 'domain')]} row(s) hold a {a} that is not in the job's "
                            f"category domain (e.g. {vals[(a, 'example')]!r}); add it to "
                            "--categories (the public domain) or remove those rows",
                            path=path, column=name)
    # max_records: at most m rows per user are staged (and checked again on resume)
    src = staging_source(job, src, list(needed.values()))
    most = None
    if task.extra.get("epsilon_unit") == "per timestamp":
        # T, the most timestamps of a user: the rows the task keeps, as staged (a NaN
        # position is not kept: sql.read_parquet)
        try:
            most = con.execute(f"SELECT max(n) FROM (SELECT count(*) AS n FROM {src} "
                               f"WHERE {kept} GROUP BY {exprs[0]})").fetchall()[0][0]
        except Exception as exc:  # noqa: BLE001
            raise _duckdb_error(exc, "counting each user's rows", path) from None
    for alias, expr in companions:
        aliases.append(alias)
        exprs.append(expr)
    return Plan(files, src, exprs, aliases, rows, users, read=list(needed.values()),
                max_rows_per_user=None if most is None else int(most))


def default_buckets(users: int) -> int:
    """Buckets for about :data:`USERS_PER_BUCKET` users each, at least :data:`MIN_BUCKETS`.

    ``users`` counts the users the task publishes (``Task.published_if``: a user whose
    visits are all sensitive is not counted), which the output shows anyway (each published
    user gets rows); the number of input rows (private under event-level DP) and the users a
    task leaves out never shape the published folder.
    """
    return max(MIN_BUCKETS, math.ceil(users / USERS_PER_BUCKET))


def _digest_sql(src: str, exprs: list[str], buckets: int) -> str:
    return (f"SELECT hash({exprs[0]}) % {int(buckets)} AS b, count(*), "
            f"sum(hash({', '.join(exprs)})) FROM {src} GROUP BY 1")


def _digests(con, src: str, exprs: list[str], buckets: int, what: str,
             path: str) -> dict[int, dict[str, Any]]:
    """Per bucket: row count and an order-free content digest (sum of 64-bit row hashes)."""
    try:
        res = con.execute(_digest_sql(src, exprs, buckets)).fetchall()
    except Exception as exc:  # noqa: BLE001
        raise _duckdb_error(exc, what, path) from None
    out = {b: {"rows": 0, "digest": "0"} for b in range(buckets)}
    for b, n, s in res:
        out[int(b)] = {"rows": int(n), "digest": format(int(s) % (1 << 128), "x")}
    return out


def _stage(con, plan: Plan, buckets: int, work: Path) -> dict[str, Any]:
    """Hash users into buckets under ``WORK/staging``; return the staging record."""
    tmp = work / (STAGING + ".tmp")
    remove_tree(tmp)
    user = plan.exprs[0]
    spill = work / TMP / "duckdb-spill"
    spill.mkdir(parents=True, exist_ok=True, mode=0o700)
    con.execute(f"SET temp_directory = {sql.literal(str(spill))}")
    fault("staging")
    try:
        con.execute(f"COPY (SELECT {plan.select}, hash({user}) % {int(buckets)} AS bucket "
                    f"FROM {plan.src}) TO {sql.literal(os.path.abspath(tmp))} "
                    "(FORMAT parquet, PARTITION_BY (bucket))")  # COPY TO never globs: literal
    except Exception as exc:  # noqa: BLE001
        remove_tree(tmp)
        raise _duckdb_error(exc, f"staging it into {work}", plan.files[0]) from None
    fault("staged")
    staged = [str(p) for p in sorted(tmp.glob("bucket=*/*.parquet"))]
    aliases = [sql.ident(a) for a in plan.aliases]
    per = _digests(con, sql.read_parquet(sql.paths(staged)), aliases, buckets,
                   "digesting the staged rows", plan.files[0])
    for b in range(buckets):
        folder = tmp / f"bucket={b}"
        per[b]["files"] = {p.name: sha256_file(p) for p in sorted(folder.glob("*.parquet"))}
        if sum(1 for _ in per[b]["files"]) == 0 and per[b]["rows"]:
            raise StagingDamagedError(f"staging lost bucket {b}")
    final = work / STAGING
    remove_tree(final)
    os.replace(tmp, final)
    fsutil.fsync_dir(work)
    return {"buckets": buckets, "rows": plan.rows, "columns": list(plan.aliases),
            "per_bucket": {str(b): v for b, v in per.items()}}


# --------------------------------------------------------------------------- one bucket
def bucket_arrays(tbl, cols: list[str]):
    """Numpy arrays of one user-sorted bucket, as tasks receive them.

    ``arrays["user"]`` holds dense int64 user codes 0..U-1 in sorted order (the
    engine maps them back to the identifiers on output); a string column ``c``
    arrives dictionary-encoded as int32 codes ``arrays[c]`` with its values in
    ``arrays[c + ".dictionary"]``; numeric columns arrive as they are. A column ``c``
    of kind ``time`` (float64 seconds, sorted by its exact value) also arrives as read in
    ``arrays[c + ".raw"]``, an Arrow array (added by :func:`run_bucket`): a task that
    writes times writes that array back (an integer stays an integer, a timestamp a
    timestamp, a CSV's text its text).
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


def _raw_array(col):
    """A time column as read (an Arrow array, handed to the task as it is): a timestamp with
    a time zone is labelled UTC, so that a part does not depend on the worker's zone."""
    import pyarrow as pa

    arr = col.combine_chunks()
    if pa.types.is_timestamp(arr.type) and arr.type.tz is not None:
        arr = arr.cast(pa.timestamp(arr.type.unit, tz="UTC"))
    return arr


_CONNECTION = None
#: DuckDB memory limit of the parent's staging connection (at 1 GB staging 25 million
#: check-ins runs at full speed, 0.99 GB peak; 500 MB halves the peak at 2.5x the time)
STAGING_MEMORY = "1GB"
_MEMORY_SET = False


def _return_freed_memory() -> None:
    """Let Arrow's allocator give freed memory back at once (a worker's peak is one bucket).

    By default jemalloc keeps freed pages for seconds, so a worker's resident memory grows
    to the sum of consecutive buckets; with decay 0 it stays near one bucket's.
    """
    global _MEMORY_SET
    if not _MEMORY_SET:
        import pyarrow as pa

        try:
            pa.jemalloc_set_decay_ms(0)
        except (NotImplementedError, AttributeError):  # a pyarrow built without jemalloc
            pass
        _MEMORY_SET = True


def _worker_connection():
    """One DuckDB connection per process (opening one costs about 50 ms)."""
    global _CONNECTION
    if _CONNECTION is None:
        import duckdb

        _CONNECTION = private_spill(duckdb.connect())
    return _CONNECTION


def _part_name(b: int) -> str:
    return f"part-{b:05d}.parquet"


def _marker_name(b: int) -> str:
    return f"part-{b:05d}.json"


def _read_json(path: Path) -> Any:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            return json.loads(fh.read().decode())
    except (OSError, ValueError):
        return None


def _read_owner(work: Path) -> str | None:
    """The id of the job owning ``work`` (``WORK/job-id``), ``None`` if there is none."""
    try:
        fd = os.open(work / OWNER, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            return fh.read(200).decode("ascii", "replace").strip() or None
    except OSError:
        return None


def _write_owner(work: Path, job_id: str) -> None:
    """Record the job owning ``work`` for its buckets (rewritten by every run of the job)."""
    if _read_owner(work) != job_id:
        write_file(work / OWNER, job_id.encode("ascii"), mode=0o600)


def run_bucket(spec: dict[str, Any], b: int, extra: dict[str, Any]) -> dict[str, Any]:
    """Process bucket ``b`` (runs in a worker process; also used by Dask).

    ``extra`` holds what the parent knows of the bucket: its staged files and their SHA-256,
    its row count and the 256-bit value its noise is drawn from. The staged files are
    verified before they are read; the part and its marker are written atomically into the
    private work folder, never into the output.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    _return_freed_memory()
    work = Path(spec["work"])
    with bucket_lock(work):
        if _read_owner(work) != spec["job_id"]:
            raise StagingDamagedError(f"bucket {b} belongs to a run that no longer owns {work}")
        if spec.get("task_module"):
            importlib.import_module(spec["task_module"])  # registers the task in this process
        task = get_task(spec["task"])
        folder = work / STAGING / f"bucket={b}"
        files = []
        for name, digest in sorted(extra["files"].items()):
            f = folder / name
            try:
                ok = sha256_file(f) == digest
            except OSError:
                ok = False
            if not ok:
                raise StagingDamagedError(f"staged bucket {b} is damaged or missing ({f})")
            files.append(str(f))
        cols = ["user", *task.columns]
        staged = spec.get("staged") or cols
        raws = [c for c in task.columns if c + RAW in staged]
        if files:
            # a time column orders by its exact value (its key, else its value as read), not
            # by its float64 seconds (two fixes 100 ns apart are one float); every staged
            # column follows, so that ties are always in the same order
            first = ["user", *(c + KEY if c + KEY in staged else c + RAW if c + RAW in staged
                               else c for c in task.order_by)]
            order = ", ".join(sql.ident(c) for c in dict.fromkeys([*first, *staged]))
            sel = ", ".join(sql.ident(c) for c in [*cols, *(c + RAW for c in raws)])
            tbl = _worker_connection().sql(
                f"SELECT {sel} FROM {sql.read_parquet(sql.paths(files))} ORDER BY {order}"
            ).to_arrow_table()
        else:
            tbl = pa.table({c: pa.array([], pa.string())
                            for c in [*cols, *(c + RAW for c in raws)]})
        if tbl.num_rows != extra["rows"]:
            raise StagingDamagedError(f"staged bucket {b} holds {tbl.num_rows} rows, "
                                      f"{extra['rows']} were staged")
        arrays, user_ids = bucket_arrays(tbl, cols)
        for c in raws:
            arrays[c + RAW] = _raw_array(tbl.column(c + RAW))
        rows_in = int(tbl.num_rows)
        del tbl  # the arrays hold what the task needs: free the Arrow copy before it runs
        rng = bucket_rng(extra["entropy"])
        # "users_out" and "rows_out" count what is PUBLISHED: a task may leave users out (all of
        # a user's visits sensitive, every point invalid), and the manifest must not count them
        info = {"bucket": b, "job_id": spec["job_id"], "rows_in": rows_in,
                "rows_out": 0, "users_out": 0, "sha256": None}
        table = None
        if len(user_ids):
            try:
                out = task.per_bucket(arrays, spec["params"], rng)
            except Exception as exc:
                exc._veil_task_error = True  # type: ignore[attr-defined]
                raise
            codes = np.asarray(out.pop("user"))
            del arrays
            table = pa.table({"user": user_ids.take(pa.array(codes)),
                              **{k: v if isinstance(v, pa.Array) else pa.array(v)
                                 for k, v in out.items()}})
            info["users_out"] = int(np.unique(codes).size)
            del out, codes
        # a part exists iff the bucket has published rows: which parts exist is then a
        # function of the published rows alone (every part has the task's full schema), never
        # of users the task left out nor of an empty bucket's missing schema
        if table is not None and table.num_rows:
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink)
            data = sink.getvalue().to_pybytes()
            del sink
            write_file(work / PARTS / _part_name(b), data, tmp_dir=work / TMP,
                       fault_point="worker-part", durable=False)  # fsynced when published
            info.update(rows_out=table.num_rows, sha256=hashlib.sha256(data).hexdigest())
        write_file(work / MARKERS / _marker_name(b), json.dumps(info).encode(), mode=0o600,
                   tmp_dir=work / TMP, fault_point="worker-marker", durable=False)
        fault("bucket-done")
        return info


# --------------------------------------------------------------------------- folders
def _resolved(path: str | Path) -> Path:
    """``path`` with the links of its folder resolved but not a link at its end (which the
    callers refuse: veil never writes through a link)."""
    p = Path(os.fspath(path))
    if p.name in ("", ".", ".."):
        return Path(os.path.realpath(p))
    return Path(os.path.realpath(p.parent)) / p.name


def work_dir_for(output: str | Path, work_dir: str | Path | None = None) -> Path:
    """The private work folder of the job writing ``output`` (default: a hidden sibling)."""
    out = _resolved(output)
    if work_dir is not None:
        return _resolved(work_dir)
    return out.parent / f".{out.name}{WORK_SUFFIX}"


def _resolve_output(job: Job) -> Path:
    """The output folder, resolved once (links in its folder's path are followed here only; a
    link as the output itself is refused: ``-o LINK`` wrote the parts into the link's target,
    and a dangling link created its target)."""
    given = Path(job.output)
    opt = job.output_option
    out = _resolved(given)
    if os.path.islink(out):
        raise ParameterError(f"{opt}: {str(given)!r} is a symbolic link; veil never writes "
                             "through a link")
    if not out.parent.is_dir():
        raise ParameterError(f"{opt}: folder {str(given.parent)!r} does not exist")
    if os.path.lexists(out) and not out.is_dir():
        raise DataError(f"{opt} exists and is not a folder; {opt} names a folder to create",
                        path=str(given))
    return out


def _foreign_in_work(work: Path) -> str | None:
    """The first entry of an existing folder that shows it is not a veil work folder (None
    when it is one, or is empty): veil clears and removes its work folder, so a folder the
    user named with ``--work-dir`` that holds their files must never be taken for one."""
    try:
        names = sorted(e.name for e in os.scandir(work))
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not names or WORK_MARK in names:
        return None
    if all(n.startswith(f".{WORK_MARK}{fsutil.TMP_MARK}") for n in names):
        # another job is writing its mark right now (claim_work_dir, started together with
        # this one): the folder is veil's, and the job lock decides which of the two runs
        return None
    foreign = [n for n in names if n not in _WORK_NAMES and not fsutil.is_tmp_name(n)]
    if foreign:
        return foreign[0]
    return None if LOCK in names else names[0]  # an older veil's folder always has its lock


def _check_work_ours(work: Path) -> None:
    if os.path.islink(work) or not os.path.isdir(work):
        return  # private_dir refuses a link or a file with its own message
    name = _foreign_in_work(work)
    if name is not None:
        raise DataError(f"the work folder holds {name!r}, which veil did not write: it is not "
                        "a veil work folder, so nothing in it was touched; give --work-dir a "
                        "new or empty folder", path=str(work))


def claim_work_dir(work: Path) -> Path:
    """Create the private work folder (or take an existing one that is veil's) and mark it."""
    _check_work_ours(work)
    private_dir(work)
    if not os.path.lexists(work / WORK_MARK):
        write_file(work / WORK_MARK, b"a veil batch work folder (private; removed when the job "
                                     b"completes or is discarded)\n", mode=0o600)
    return work


def _inside(child: str, parent: str) -> bool:
    try:
        return os.path.commonpath([child, parent]) == parent
    except ValueError:
        return False


def _check_not_over_input(job: Job, out: Path, work: Path) -> None:
    given = str(job.input)
    roots = [os.path.realpath(given)] if os.path.exists(given) else []
    files = [os.path.realpath(f) for f in job.input_files()]
    for place, name in ((out, "output folder"), (work, "work folder")):
        p = str(place)
        for f in roots + files:
            if _inside(f, p) or _inside(p, f) and os.path.isdir(f) or p == f:
                raise ParameterError(f"the {name} {p} overlaps the input {f}; veil never writes "
                                     f"over or inside its input: choose another "
                                     f"{job.output_option}")


def _empty_dir(path: Path) -> bool:
    try:
        return not any(os.scandir(path))
    except FileNotFoundError:
        return True


def _write_state(work: Path, state: dict[str, Any], fault_point: str | None = None) -> None:
    write_file(work / STATE, json.dumps(to_jsonable(state), sort_keys=True).encode(), mode=0o600,
               fault_point=fault_point)


def _clear_work(work: Path) -> None:
    """Remove everything in a work folder but its lock files and mark (a run that never got
    going)."""
    for entry in os.scandir(work):
        if entry.name in (LOCK, WORKERS_LOCK, WORK_MARK):
            continue
        remove_tree(Path(entry.path))


def verify_output(out: Path, manifest: dict[str, Any]) -> list[str]:
    """Problems of a completed output folder (empty when every part matches the manifest)."""
    problems = []
    parts = manifest.get("parts") or {}
    for name, info in sorted(parts.items()):
        p = out / name
        if os.path.islink(p):
            problems.append(f"{name} is a symbolic link")
        elif not p.exists():
            problems.append(f"{name} is missing")
        elif sha256_file(p) != info.get("sha256"):
            problems.append(f"{name} does not match its SHA-256")
    for p in sorted(out.glob("part-*.parquet")):
        if p.name not in parts:
            problems.append(f"{p.name} is not part of this job")
    return problems


# --------------------------------------------------------------------------- engines
class _Progress:
    def __init__(self, enabled: bool, total: int, done: int) -> None:
        self.enabled = enabled
        self._p = None
        if enabled:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            # progress is status: on stderr, never mixed with data on stdout (docs/cli.md)
            self._p = Progress(TextColumn("[bold]veil batch[/]"), BarColumn(),
                               MofNCompleteColumn(), TextColumn("buckets"),
                               TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                               TextColumn("ETA"), TimeRemainingColumn(), transient=False,
                               console=Console(stderr=True))
            self._p.start()
            self._t = self._p.add_task("job", total=total, completed=done, rate="")
        self.users = 0
        self.start = time.perf_counter()

    def advance(self, info: dict[str, Any]) -> None:
        self.users += info.get("users_out", 0)
        if self._p is not None:
            rate = self.users / max(1e-9, time.perf_counter() - self.start)
            self._p.update(self._t, advance=1, rate=f"{rate:,.0f} users/s")

    def close(self) -> None:
        if self._p is not None:
            self._p.stop()


def _run_local(spec, items, workers, on_done) -> None:
    if workers == 1 or len(items) <= 1:
        for b, extra in items:
            on_done(run_bucket(spec, b, extra))
        return
    from .pool import run_pool

    run_pool(spec, items, workers, on_done)


def _insecure(address: str) -> bool:
    return "://" not in address or address.split("://", 1)[0] in ("tcp", "ws", "inproc")


def _run_dask(spec, items, workers, scheduler, on_done) -> None:
    try:
        from distributed import Client, LocalCluster, as_completed
        from distributed.scheduler import KilledWorker
    except ImportError:
        raise ParameterError("--engine dask needs the dask extra: pip install 'veil[dask]'") from None
    cluster = None
    if scheduler:
        client = Client(scheduler, timeout=30)  # TLS settings come from the Dask configuration
    else:
        try:
            from distributed.security import Security

            security = Security.temporary()  # in-memory self-signed certificates, this job only
        except ImportError:
            raise ParameterError("--engine dask needs the 'cryptography' package for its TLS "
                                 "certificates: pip install 'veil[dask]'") from None
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, security=security, protocol="tls://",
                               host="127.0.0.1")
        client = Client(cluster, security=security)
    futures = []
    try:
        futures = client.map(run_bucket, [spec] * len(items), [b for b, _ in items],
                             [e for _, e in items], pure=False)
        try:
            for fut in as_completed(futures):
                on_done(fut.result())
        except KilledWorker as exc:
            raise WorkerLostError(f"a bucket killed its Dask worker repeatedly ({exc}); rerun with "
                             "--resume, or with more --buckets in a new job") from None
    finally:
        if futures:
            client.cancel(futures)
        client.close()
        if cluster is not None:
            cluster.close()


# --------------------------------------------------------------------------- the job
def _ledger_reserve(job: Job, epsilon: float, fingerprint: str, unit: str, plan: Plan,
                    resume: bool = False) -> None:
    """Privacy ledger: reserve the release before any noise is drawn (see veil.engine.job);
    :func:`commit_ledger` once it is published, :func:`release_ledger` if it never is."""
    reserve_ledger(job, epsilon, fingerprint, unit=unit, read=list(plan.read), resume=resume)


def _per_timestamp(task, params: dict[str, Any], epsilon: float) -> dict[str, Any]:
    """Manifest fields of a per-timestamp task: epsilon per step and the T it was multiplied by."""
    if task.extra.get("epsilon_unit") != "per timestamp" or epsilon <= 0:
        return {}
    step = float(task.epsilon(params))
    return {"epsilon_per_timestamp": step, "max_timestamps_per_user": round(epsilon / step)}


def _new_state(job: Job, fingerprint: str, epsilon: float, epsilon_unit: str,
               staging: dict[str, Any]) -> dict[str, Any]:
    return {"format": FORMAT, "job_id": secrets.token_hex(16), "fingerprint": fingerprint,
            "task": job.task, "job": job.describe(), "epsilon": epsilon,
            "epsilon_unit": epsilon_unit, "seeded": job.seed is not None,
            "ledger": str(job_ledger_path(job)),  # private state: where the job's charge is
            "output": str(Path(os.path.realpath(job.output))),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "runs": 1, "phase": "running",
            "staging": staging}


def _pending(work: Path, state: dict[str, Any]) -> tuple[list[int], dict[int, dict]]:
    """Buckets whose part is missing or does not match its marker; the valid markers."""
    per = state["staging"]["per_bucket"]
    done: dict[int, dict] = {}
    pending = []
    for b in range(int(state["staging"]["buckets"])):
        info = _read_json(work / MARKERS / _marker_name(b))
        part = work / PARTS / _part_name(b)
        ok = (isinstance(info, dict) and info.get("job_id") == state["job_id"]
              and info.get("rows_in") == per[str(b)]["rows"] and not os.path.islink(part)
              and (part.is_file() and sha256_file(part) == info.get("sha256")
                   if info.get("sha256") else not os.path.lexists(part)
                   and info.get("rows_out") == 0)  # no published row: no part
              # a marker of an earlier veil (it counted the users in, "users", and kept a
              # part without rows) is redone: bit-identically, counting published users
              and "users_out" in info and (bool(info.get("rows_out")) or not info.get("sha256")))
        if ok:
            done[b] = info
        else:
            pending.append(b)
            (work / MARKERS / _marker_name(b)).unlink(missing_ok=True)
            part.unlink(missing_ok=True)
    return pending, done


def _staging_ok(work: Path, state: dict[str, Any], buckets: list[int]) -> bool:
    per = state["staging"]["per_bucket"]
    for b in buckets:
        for name, digest in per[str(b)].get("files", {}).items():
            f = work / STAGING / f"bucket={b}" / name
            try:
                if sha256_file(f) != digest:
                    return False
            except OSError:
                return False
    return True


def _check_staging_layout(job: Job, task, work: Path, state: dict[str, Any]) -> None:
    """Refuse to resume a run whose staging lacks what this veil stages: the value as read
    of each time column (an older veil staged float64 seconds only, and its finished parts
    hold those; its input digests cover other columns)."""
    staged = state["staging"].get("columns")
    times = [c for c in task.columns if task.column_kinds.get(c) == "time"]
    if times and (not isinstance(staged, list) or any(c + RAW not in staged for c in times)):
        raise DataError(f"the work folder {work} holds an interrupted run staged by an older "
                        "veil (its times were staged as float64 seconds only, this veil writes "
                        "them back as read): finish it with that version, or discard it (veil "
                        f"batch discard {shlex.quote(str(job.output))} --yes) and start a new "
                        "job (nothing of it was published)", path=str(job.output))


def _check_same_input(con, plan: Plan, state: dict[str, Any]) -> None:
    """Identity by content: the input must still hold exactly what was staged."""
    staging = state["staging"]
    buckets = int(staging["buckets"])
    now = _digests(con, plan.src, plan.exprs, buckets, "checking it against the staged copy",
                   plan.files[0])
    changed = [b for b in range(buckets)
               if (now[b]["rows"], now[b]["digest"]) != (staging["per_bucket"][str(b)]["rows"],
                                                         staging["per_bucket"][str(b)]["digest"])]
    if changed:
        raise InputChangedError(
            f"the input's content changed since this job staged it ({len(changed)} of "
            f"{buckets} buckets differ, e.g. bucket {changed[0]}); an interrupted run only "
            "resumes on the same rows: restore the input, or discard the run (veil batch "
            "discard) and start a new job", path=plan.files[0])


def _commit(out: Path, work: Path, state: dict[str, Any], manifest: dict[str, Any]) -> None:
    """Publish: ``WORK/parts`` (parts + manifest) becomes ``OUT`` in one rename."""
    parts = work / PARTS
    if parts.is_dir():
        for entry in os.scandir(parts):  # only parts and the manifest are published
            if entry.name != MANIFEST and not (entry.name.startswith("part-")
                                               and entry.name.endswith(".parquet")):
                remove_tree(Path(entry.path))
            elif entry.name != MANIFEST:
                fsutil.fsync_file(Path(entry.path))  # durable before anyone can see it
        write_file(parts / MANIFEST, json.dumps(to_jsonable(manifest), indent=2,
                                                sort_keys=True).encode(), fault_point="manifest")
    state["phase"] = "committing"
    _write_state(work, state)
    fault("commit")
    if parts.is_dir():
        try:
            if os.path.lexists(out) and not _empty_dir(out):
                raise OSError(errno.ENOTEMPTY, "not empty")
            os.rename(parts, out)
            fsutil.fsync_dir(out.parent)
        except OSError:
            _copy_commit(parts, out)
    fault("cleanup")


def _copy_commit(parts: Path, out: Path) -> None:
    """Fallback when the rename cannot be done (another file system, a mount point)."""
    os.makedirs(out, exist_ok=True)
    fsutil.reject_links(out)
    for entry in os.scandir(out):
        if fsutil.is_tmp_name(entry.name):
            os.unlink(entry.path)
    names = sorted(n for n in os.listdir(parts) if n != MANIFEST) + [MANIFEST]
    for i, name in enumerate(names):
        src, dst = parts / name, out / name
        if dst.exists() and sha256_file(dst) == sha256_file(src):
            continue
        with open(src, "rb") as fh:
            fsutil.write_with(dst, lambda o: shutil.copyfileobj(fh, o, 1 << 20))
        if i == 0:
            fault("commit-copy")


def _result_from_manifest(out: Path, man: dict[str, Any], job: Job, t0: float) -> JobResult:
    return JobResult(out, int(man["buckets"]), 0, None, int(man["rows_out"]), int(man["users"]),
                     float(man["epsilon_per_user"]), time.perf_counter() - t0, job.engine,
                     job.workers, parts=len(man["parts"]))


def run_job(job: Job) -> JobResult:
    """Run (or resume) ``job``; returns a :class:`JobResult`.

    Every bucket's noise is derived from the job's private key and the bucket id, so a
    bucket computed twice is bit-identical; nothing appears in ``job.output`` until every part
    is verified, and then all of it appears at once.

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np, pyarrow as pa, pyarrow.parquet as pq
    >>> from veil.engine import Job, run_job
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> pq.write_table(pa.table({"user": np.arange(60) % 20, "category": ["a", "b", "c"] * 20}),
    ...                d / "checkins.parquet")
    >>> res = run_job(Job(d / "checkins.parquet", d / "out", "count-noise",
    ...                   params={"categories": ["a", "b"], "epsilon": 1.0},
    ...                   ledger=d / "ledger.json", progress=False))
    >>> res.users, sorted(p.name for p in (d / "out").iterdir())[-1]
    (20, 'part-00015.parquet')
    """
    t0 = time.perf_counter()
    task = get_task(job.task)
    params = task.validate(dict(job.params))
    job.params = params
    if job.engine == "dask" and job.scheduler and float(task.epsilon(params)) > 0 \
            and _insecure(job.scheduler) \
            and not job.insecure_scheduler:
        raise ParameterError(
            f"--scheduler {job.scheduler} is plain TCP: anyone on the network can read the "
            "per-bucket noise values (and so the true counts) and submit code; use a tls:// "
            "scheduler with certificates in the Dask configuration, or pass "
            "--insecure-scheduler if the network is trusted")
    out = _resolve_output(job)
    work = work_dir_for(out, job.work_dir)
    fingerprint = job.fingerprint()
    _check_not_over_input(job, out, work)
    claim_work_dir(work)
    idle = {LOCK, WORKERS_LOCK, WORK_MARK}  # a work folder with nothing of a run in it
    lock = JobLock(work, str(job.output))
    try:
        lock.acquire()
    except BaseException:
        if {e.name for e in os.scandir(work)} <= {WORK_MARK}:
            remove_tree(work)
        raise
    try:
        return _run_locked(job, task, params, fingerprint, out, work, t0)
    finally:
        lock.release()
        if os.path.isdir(work) and {e.name for e in os.scandir(work)} <= idle:
            remove_tree(work)


def _advice(job: Job) -> str:
    opt = job.output_option
    return f"remove the folder or choose another {opt}"


def _check_output(job: Job, out: Path, work: Path, fingerprint: str, state: Any,
                  man: dict[str, Any] | None) -> bool:
    """Refuse what this job cannot run into ``out`` (read-only; the folders as they are now).

    Returns True when ``out`` already holds this job, complete and verified (``--resume``).
    The run makes these checks under its lock; :func:`preflight` makes them before a
    command runs a first job whose output would appear before this one runs.
    """
    opt = job.output_option
    if man is not None:
        if man.get("job_fingerprint") != fingerprint:
            raise DataError(f"{opt} folder belongs to a different job (other input, task, "
                            "parameters or seed); nothing was overwritten: choose another "
                            f"{opt}", path=str(job.output))
        if man.get("status") != "complete" or man.get("format") != FORMAT:
            raise DataError(f"{opt} folder holds a run made by an older veil; finish it with "
                            "that version or remove the folder", path=str(job.output))
        if not job.resume:
            raise ParameterError(
                f"this job is already complete in {job.output}: a fresh release of the same "
                f"users spends epsilon {man.get('epsilon_per_user')} per user again; use a new "
                f"{opt} together with --spend-again")
        problems = verify_output(out, man)
        if problems:
            raise DataError(f"this completed output is damaged: {'; '.join(problems[:5])}"
                            f"{' ...' if len(problems) > 5 else ''}; the noise key was destroyed "
                            "when the job completed, so the parts cannot be recomputed without a "
                            "second noise draw: restore the folder from a copy",
                            path=str(job.output))
        return True
    committing = isinstance(state, dict) and state.get("phase") == "committing" \
        and state.get("fingerprint") == fingerprint
    if out.is_dir() and not _empty_dir(out) and not committing:
        raise DataError(f"{opt} folder is not empty and holds no veil manifest; nothing was "
                        f"overwritten: choose another {opt}", path=str(job.output))
    if not isinstance(state, dict) or "staging" not in state:
        finished = list((work / MARKERS).glob("part-*.json")) if (work / MARKERS).is_dir() \
            else []
        if finished:
            raise DataError(f"the work folder {work} holds {len(finished)} finished "
                            "bucket(s) but no job state (job.json was removed?): it cannot "
                            f"be resumed safely; discard it (veil batch discard "
                            f"{shlex.quote(str(job.output))} --yes) and start a new job", path=str(job.output))
        return False
    if state.get("fingerprint") != fingerprint:
        raise DataError(f"the work folder {work} holds an interrupted run of a different "
                        "job (other input, task, parameters or seed); resume it with its "
                        "own command, or discard it (veil batch discard "
                        f"{shlex.quote(str(job.output))} --yes) first", path=str(job.output))
    if not job.resume:
        raise ParameterError(f"an interrupted run of this job exists for {job.output}: "
                             "pass --resume to finish it (each user is processed "
                             "exactly once, with the same noise)")
    return False


def preflight(job: Job) -> None:
    """Refuse now, changing nothing, what :func:`run_job` would refuse about ``job``'s output.

    For a command that runs two jobs (``veil batch visits --report``): the second job's
    output is checked before the first one publishes anything. The run checks again under
    its lock (the folders may change in between).
    """
    import dataclasses

    task = get_task(job.task)
    probe = dataclasses.replace(job, params=task.validate(dict(job.params)))
    out = _resolve_output(probe)
    work = work_dir_for(out, probe.work_dir)
    _check_not_over_input(probe, out, work)
    _check_work_ours(work)
    state = _read_json(work / STATE) if work.is_dir() else None
    man = read_manifest(out, advice=_advice(probe)) if out.is_dir() else None
    _check_output(probe, out, work, probe.fingerprint(), state, man)


def _run_locked(job: Job, task, params, fingerprint: str, out: Path, work: Path,
                t0: float) -> JobResult:
    import duckdb

    wait_for_orphans(work)
    state = _read_json(work / STATE)
    man = read_manifest(out, advice=_advice(job)) if out.is_dir() else None
    if _check_output(job, out, work, fingerprint, state, man):
        # killed after publishing but before the ledger's commit: the reservation stayed
        # RESERVED for ever (budget release refuses while the output exists); commit it now
        commit_ledger(job, fingerprint)
        _clear_work(work)  # raw staging of a run killed after its commit
        return _result_from_manifest(out, man, job, t0)
    committing = isinstance(state, dict) and state.get("phase") == "committing" \
        and state.get("fingerprint") == fingerprint
    if out.is_dir():
        fsutil.reject_links(out)
    con = private_spill(duckdb.connect())
    # staging (hash partitioning of every input row) is the parent's one large step: bound
    # DuckDB's memory so that the job's peak is the workers' (_stage spills into the private
    # work folder if the input needs more)
    con.execute(f"SET memory_limit = {sql.literal(STAGING_MEMORY)}")
    fresh = not isinstance(state, dict) or "staging" not in state
    try:
        if fresh:
            _clear_work(work)  # leftovers of a run killed before its state was written
            try:
                plan = inspect_input(job, task, params, con)
                # per user: T x epsilon for trajectories (T counted on the kept rows)
                epsilon, unit = job_epsilon(task, params, plan)
                buckets = job.buckets or default_buckets(plan.users_estimate)
                staging = _stage(con, plan, buckets, work)
                _ledger_reserve(job, epsilon, fingerprint, unit, plan)
                key = seed_key(job.seed) if job.seed is not None else create_key(work)
                state = _new_state(job, fingerprint, epsilon, "per user", staging)
                state["accounting"] = {"protects": unit, **_per_timestamp(task, params, epsilon)}
                _write_state(work, state, fault_point="job-json")
            except BaseException:
                _clear_work(work)  # nothing is left that looks like a job
                release_ledger(job, fingerprint)  # nothing was published: no phantom spend
                raise
        else:
            state["runs"] = int(state.get("runs", 1)) + 1
            key = seed_key(job.seed) if job.seed is not None else load_key(work)
            # what the first run reserved and wrote down (the input is checked to be the same)
            epsilon = float(state["epsilon"])
            if not committing:
                _check_staging_layout(job, task, work, state)
                plan = inspect_input(job, task, params, con)
                _check_same_input(con, plan, state)
                unit = (state.get("accounting") or {}).get("protects") \
                    or job_epsilon(task, params, plan)[1]
                _ledger_reserve(job, epsilon, fingerprint, unit, plan, resume=True)
        buckets = int(state["staging"]["buckets"])
        for sub in (PARTS, MARKERS, TMP):
            (work / sub).mkdir(exist_ok=True, mode=0o777 if sub == PARTS else 0o700)
        for entry in os.scandir(work / TMP):
            remove_tree(Path(entry.path))
        if committing:
            pending, done = [], {}
        else:
            pending, done = _pending(work, state)
            if pending and not _staging_ok(work, state, pending):
                restaged = _stage(con, plan, buckets, work)
                for b in range(buckets):
                    old, new = state["staging"]["per_bucket"][str(b)], restaged["per_bucket"][str(b)]
                    if (old["rows"], old["digest"]) != (new["rows"], new["digest"]):
                        raise InputChangedError("the input no longer matches what was staged",
                                                path=plan.files[0])
                state["staging"] = restaged
            _write_state(work, state)
        _write_owner(work, state["job_id"])  # what each bucket checks (cheaply) before it runs
    except Exception as exc:
        if _interrupted(exc):
            raise KeyboardInterrupt from None
        raise
    finally:
        con.close()
    rows_in = int(state["staging"]["rows"])
    if not committing:
        infos = _execute(job, task, params, work, state, key, pending, done)
        manifest = _manifest(work, state, infos, epsilon)
    else:
        manifest = _read_json(work / PARTS / MANIFEST) or {}
    _commit(out, work, state, manifest)
    commit_ledger(job, fingerprint)  # ledger: the release is complete and verified here
    remove_tree(work / STAGING)
    _clear_work(work)
    return JobResult(out, buckets, len(pending), rows_in, int(manifest.get("rows_out", 0)),
                     int(manifest.get("users", 0)), epsilon, time.perf_counter() - t0,
                     job.engine, job.workers, parts=len(manifest.get("parts") or {}))


def _execute(job: Job, task, params, work: Path, state: dict[str, Any], key: bytes,
             pending: list[int], done: dict[int, dict]) -> dict[int, dict]:
    """Run the pending buckets, then verify every part against the staging record."""
    per = state["staging"]["per_bucket"]
    buckets = int(state["staging"]["buckets"])
    spec = {"work": str(work), "job_id": state["job_id"], "task": job.task, "params": params,
            "task_module": getattr(task.per_bucket, "__module__", None),
            "staged": state["staging"].get("columns")}
    items = [(b, {"files": per[str(b)].get("files", {}), "rows": per[str(b)]["rows"],
                  "entropy": bucket_entropy(key, b)}) for b in pending]
    prog = _Progress(job.progress, buckets, buckets - len(pending))
    infos = dict(done)

    def on_done(info: dict[str, Any]) -> None:
        infos[int(info["bucket"])] = info
        prog.advance(info)

    try:
        if job.engine == "local":
            _run_local(spec, items, job.workers, on_done)
        else:
            _run_dask(spec, items, job.workers, job.scheduler, on_done)
    except BaseException as exc:
        if getattr(exc, "_veil_task_error", False):
            # bad data met by the task itself: nothing was published, so nothing is kept
            remove_tree(work / STAGING)
            _clear_work(work)
            release_ledger(job, job.fingerprint())  # and nothing was spent
        raise
    finally:
        prog.close()
    fault("verify")
    still, good = _pending(work, state)
    if still:
        raise StagingDamagedError(f"buckets {still[:10]} have no valid part after the run; "
                                  "rerun the same command with --resume")
    return good


def _manifest(work: Path, state: dict[str, Any], infos: dict[int, dict],
              epsilon: float) -> dict[str, Any]:
    """The published description of the job: what ran, its budget, every part and its hash.

    Nothing in it depends on the private rows beyond what the parts themselves show (no input
    row count, no content digest; ``users`` and ``rows_out`` count the published users and
    rows, never users a task left out; a part is listed iff its bucket has published rows).
    """
    import pyarrow.parquet as pq

    parts = {}
    for b in sorted(infos):
        i = infos[b]
        if not i["sha256"]:
            continue  # no published row in this bucket: no part
        rows = pq.read_metadata(work / PARTS / _part_name(b)).num_rows
        if rows != i["rows_out"]:
            raise StagingDamagedError(f"part {b} holds {rows} rows, its marker says "
                                      f"{i['rows_out']}")
        parts[_part_name(b)] = {"rows": i["rows_out"], "sha256": i["sha256"]}
    return {"format": FORMAT, "veil_version": __version__, "job_fingerprint": state["fingerprint"],
            "job": state["job"], "epsilon_per_user": epsilon,
            "epsilon_unit": state["epsilon_unit"], **state.get("accounting", {}),
            "seeded": state["seeded"],
            "buckets": int(state["staging"]["buckets"]), "status": "complete",
            "started": state["created"], "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "users": sum(i["users_out"] for i in infos.values()),  # published users only
            "rows_out": sum(i["rows_out"] for i in infos.values()), "parts": parts}



def discard_job(output: str | Path, work_dir: str | Path | None = None) -> dict[str, Any]:
    """Remove the private work folder of an interrupted run of the job writing ``output``.

    Nothing of it was published; its staging (raw rows), unpublished parts and noise key are
    deleted, so the next run is a new job (a new key, a new release). The output folder
    itself is never touched. Refused while a live process holds the job.

    Returns what was removed (the work folder, its task and the number of finished buckets).
    """
    out = _resolved(output)
    work = work_dir_for(out, work_dir)
    if not work.is_dir() or os.path.islink(work):
        raise ParameterError(f"no interrupted run to discard for {output} (no work folder "
                             f"{work})")
    if _empty_dir(work) or _foreign_in_work(work) is not None:
        # `batch discard OUT --work-dir FOLDER` emptied and removed any folder named
        raise ParameterError(f"no interrupted run to discard for {output}: {work} is not a veil "
                             "work folder; nothing in it was touched")
    private_dir(work)
    with JobLock(work, str(output)):
        wait_for_orphans(work)
        state = _read_json(work / STATE) or {}
        finished = len(list((work / MARKERS).glob("part-*.json"))) if (work / MARKERS).is_dir() \
            else 0
        cancelled = _cancel_discarded_reservation(state, out)
        _clear_work(work)
    remove_tree(work)
    return {"work": str(work), "task": state.get("task"), "finished_buckets": finished,
            "reservation_cancelled": cancelled}


def _cancel_discarded_reservation(state: dict[str, Any], out: Path) -> bool:
    """Cancel the ledger reservation of a discarded run: none of its output was published.

    Only for a run that never reached its commit (``phase`` other than ``committing``); the
    reservation is found by the job's key (task, output, fingerprint) in the ledger the job
    used (recorded in its state, else the default one).
    """
    import contextlib

    from ..ledger import Ledger, ledger_path

    if not state.get("fingerprint") or state.get("phase") == "committing":
        return False
    path = ledger_path(state.get("ledger"))
    if not path.exists():
        return False
    key = f"{state.get('task')}|{out}|{state['fingerprint']}"
    with contextlib.closing(Ledger(path)) as led:
        row = led._con.execute("SELECT id FROM entries WHERE job = ? AND state = 'reserved'",
                               (key,)).fetchone()
        if row is None:
            return False
        led.cancel(row[0], force=True, why="the run was discarded (veil batch discard) "
                                           "before anything of it was published")
    return True
