"""Job specification, fingerprint, manifest and the privacy ledger."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataError, ParameterError
from ..release import to_jsonable
from ..validation import check_choice, check_int

#: The manifest's name in an output folder. It starts with "_" so that readers of Parquet
#: datasets (pyarrow, pandas.read_parquet, DuckDB's hive reader) skip it: the folder reads as
#: one table. Folders written before the rename hold :data:`LEGACY_MANIFEST`.
MANIFEST = "_manifest.json"
LEGACY_MANIFEST = "manifest.json"


@dataclass
class Job:
    """A per-user batch job.

    Parameters
    ----------
    input : str or Path
        A CSV, Parquet or JSON file, a folder of Parquet files (partitioned
        folders included) or a glob.
    output : str or Path
        Output folder: ``part-XXXXX.parquet`` partitions, their markers, and
        ``_manifest.json``.
    task : str
        Registered task name (see :func:`veil.engine.task_names`).
    params : dict
        The task's public parameters.
    user_column : str
        Column holding the user identifier.
    columns : dict, optional
        Map from the task's column names to the input's, when they differ.
    buckets : int, optional
        Number of user buckets (units of work). Default: one per about 10,000
        users the task publishes, at least 16 (:func:`veil.engine.runner.default_buckets`).
    seed : int, optional
        **Experiments only**: derives the noise key from the seed, so two jobs with
        the same seed draw the same noise. Never publish seeded output. Without a
        seed the key is 256 random bits kept in the private work folder; a resumed
        run equals an uninterrupted one either way.
    workers : int
        Processes (local) or Dask workers.
    engine : {"local", "dask"}
    scheduler : str, optional
        Address of an existing Dask scheduler (``tls://host:8786``, TLS settings
        from the Dask configuration); default starts a local cluster with TLS.
    insecure_scheduler : bool
        Allow a plain ``tcp://`` scheduler for a DP task (the per-bucket noise
        values then cross the network unencrypted).
    resume : bool
        Continue an interrupted run of the same job in ``output``.
    spend_again : bool
        Allow a new release for users that already received one from the same
        input (each release spends the per-user budget again).
    ledger : str or Path, optional
        Privacy ledger file (default ``$VEIL_LEDGER``, else ``$VEIL_HOME/ledger.sqlite``;
        see :mod:`veil.ledger`).
    progress : bool
        Show a progress bar.
    work_dir : str or Path, optional
        The private work folder (staging, unpublished parts, the noise key). Default
        ``.NAME.veil-work`` beside the output folder ``NAME``, on the same file system.
    output_option : str
        How error messages name ``output`` (the command-line option that gave it, e.g.
        ``--report``); it does not change the job.
    """

    input: str | Path
    output: str | Path
    task: str
    params: dict[str, Any] = field(default_factory=dict)
    user_column: str = "user"
    columns: dict[str, str] = field(default_factory=dict)
    buckets: int | None = None
    seed: int | None = None
    workers: int = 1
    engine: str = "local"
    scheduler: str | None = None
    resume: bool = False
    spend_again: bool = False
    ledger: str | Path | None = None
    progress: bool = True
    work_dir: str | Path | None = None
    insecure_scheduler: bool = False
    output_option: str = "--output"

    def __post_init__(self) -> None:
        self.output = Path(self.output)
        self.workers = check_int(self.workers, "workers", minimum=1)
        check_choice(self.engine, "engine", ("local", "dask"))
        if self.buckets is not None:
            self.buckets = check_int(self.buckets, "buckets", minimum=1, maximum=100_000)
        if self.seed is not None:
            check_int(self.seed, "seed", minimum=0)
        if self.scheduler is not None and self.engine != "dask":
            raise ParameterError("--scheduler only applies to --engine dask")

    def input_files(self) -> list[str]:
        """The concrete input files, in a stable order (clear error when there are none).

        A path that exists is taken literally (its name may hold ``*``, ``?`` or ``[``); only
        a path that does not exist is expanded as a glob.
        """
        p = str(self.input)
        if os.path.isdir(p):
            base = glob.escape(p)
            files = sorted(glob.glob(os.path.join(base, "**", "*.parquet"), recursive=True))
            if not files:
                files = sorted(glob.glob(os.path.join(base, "**", "*.csv"), recursive=True))
        elif os.path.exists(p):
            files = [p]
        elif any(ch in p for ch in "*?["):
            files = sorted(f for f in glob.glob(p, recursive=True) if os.path.isfile(f))
        else:
            files = []
        if not files:
            raise DataError("input not found or holds no .parquet/.csv files", path=p)
        return files

    def input_identity(self) -> dict[str, Any]:
        files = self.input_files()
        return {"files": [[os.path.abspath(f), os.path.getsize(f), int(os.path.getmtime(f))]
                          for f in files]}

    def fingerprint(self) -> str:
        """Identifies the job: same input location, task, parameters, columns and seeding.

        The input's *content* is checked separately, against a digest of what was staged
        (kept in the private work folder), when an interrupted run resumes.
        """
        spec = {"input": os.path.realpath(str(self.input)), "task": self.task,
                "params": to_jsonable(self.params), "user_column": self.user_column,
                "columns": self.columns, "buckets": self.buckets,
                "seeded": self.seed is not None, "seed": self.seed}
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:32]

    def describe(self) -> dict[str, Any]:
        """What defines the job (written in the manifest); how it ran (engine, workers) is not."""
        return {"input": str(self.input), "task": self.task, "params": to_jsonable(self.params),
                "user_column": self.user_column, "columns": dict(self.columns),
                "buckets": self.buckets, "seed": self.seed}


@dataclass
class JobResult:
    """What a finished job reports."""

    output: Path
    buckets: int
    buckets_run: int
    rows_in: int | None  # None when an already complete job was only verified
    rows_out: int
    users: int
    epsilon_per_user: float
    seconds: float
    engine: str
    workers: int
    parts: int | None = None  # the part files published (buckets with published rows)

    @property
    def users_per_second(self) -> float:
        return self.users / self.seconds if self.seconds > 0 else float("inf")


def _atomic_write_text(path: Path, text: str) -> None:
    from .fsutil import write_file

    write_file(Path(path), text.encode())


#: A published part's name (``part-`` and the bucket number): a manifest naming any other
#: file (``../x``, a path) is damaged
PART_NAME = re.compile(r"part-[0-9]{5,}\.parquet")


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def manifest_problem(man: Any) -> str | None:
    """What makes ``man`` no veil manifest (wrong types, a part named outside the folder),
    or ``None``. Fields an older veil did not write may be absent; a complete manifest
    needs the ones a run reports (``buckets``, ``users``, ``rows_out``, ``parts``).

    >>> manifest_problem({"parts": 5})
    "'parts' is 5, not an object of part files"
    """
    if not isinstance(man, dict):
        return f"it holds {type(man).__name__}, not a JSON object"
    for key in ("buckets", "users", "rows_out", "format"):
        if key in man and not _is_count(man[key]):
            return f"{key!r} is {man[key]!r}, not a whole number >= 0"
    for key in ("status", "job_fingerprint", "epsilon_unit", "started", "finished"):
        if key in man and not isinstance(man[key], str):
            return f"{key!r} is {man[key]!r}, not text"
    if "job" in man and not isinstance(man["job"], dict):
        return f"'job' is {man['job']!r}, not an object"
    eps = man.get("epsilon_per_user", 0)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0:
        return f"'epsilon_per_user' is {eps!r}, not a number >= 0"
    parts = man.get("parts", {})
    if not isinstance(parts, dict):
        return f"'parts' is {parts!r}, not an object of part files"
    for name, info in parts.items():
        if not PART_NAME.fullmatch(name):
            return f"'parts' names {name!r}, not a part file of the folder"
        if not isinstance(info, dict) or not _is_count(info.get("rows")) \
                or not isinstance(info.get("sha256"), str):
            return f"part {name!r} is {info!r}, not {{'rows': count, 'sha256': text}}"
    if man.get("status") == "complete":
        missing = [k for k in ("buckets", "users", "rows_out", "parts", "epsilon_per_user")
                   if k not in man]
        if missing:
            return f"it says complete but has no {', '.join(map(repr, missing))}"
    return None


def read_manifest(output: Path, advice: str = "remove the folder or choose another "
                                              "--output") -> dict[str, Any] | None:
    """The manifest of an output folder (``None`` if it has none; a link is refused).

    An unreadable or damaged manifest (not JSON, wrong types) is a :class:`DataError` naming
    the manifest file and ending with ``advice`` (what the caller's user should do).
    """
    p = Path(output) / MANIFEST
    if not os.path.lexists(p):
        p = Path(output) / LEGACY_MANIFEST  # a folder written before the rename
        if not os.path.lexists(p):
            return None
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            man = json.loads(fh.read().decode())
    except (OSError, ValueError) as exc:
        raise DataError(f"manifest is unreadable ({exc}); {advice}", path=str(p)) from None
    problem = manifest_problem(man)
    if problem:
        raise DataError(f"manifest is damaged or not a veil manifest ({problem}); {advice}",
                        path=str(p))
    return man


def staging_source(job: Job, src: str, columns: list[str]) -> str:
    """The rows a job stages: ``src`` itself, or at most ``params["max_records"]`` rows per
    user, sampled uniformly inside DuckDB (:mod:`veil.bounding`), when the task bounds users.

    The sampling key is derived from the job's fingerprint (and so from its seed, if any): the
    same job keeps the same rows when a resumed run checks the input against what it staged.
    Which rows are kept depends only on each user's own rows, as the sensitivity argument
    needs; the key need not be secret (it shapes no noise).
    """
    m = job.params.get("max_records") if isinstance(job.params, dict) else None
    if not m:
        return src
    from ..bounding import bounded_sql

    key = int(hashlib.sha256(b"veil-bounding|" + job.fingerprint().encode()).hexdigest()[:15],
              16)
    return "(" + bounded_sql(src, user=job.user_column, columns=columns, max_records=int(m),
                             key=key) + ")"


# --------------------------------------------------------------------------- ledger
# The engine's side of the privacy ledger (veil.ledger): reserve the job's per-user cost
# before any work, commit it once the manifest is complete, release it when the job fails
# before anything was written. A resumed job finds its own open reservation (same job key)
# and spends nothing more.
def ledger_path(job: Job) -> Path:
    """The ledger the job charges (``job.ledger``, else ``$VEIL_LEDGER``, else the home one)."""
    from ..ledger import ledger_path as _path

    return _path(job.ledger)


def job_epsilon(task, params: dict[str, Any], plan=None) -> tuple[float, str]:
    """What the job spends per user, and the unit its guarantee protects.

    Per-timestamp tasks (trajectories) spend ``T x epsilon`` per user by sequential
    composition, with ``T`` the most rows any user has among the rows the task keeps
    (``plan.max_rows_per_user``, counted by :func:`~veil.engine.runner.inspect_input`; rows
    that ``--on-invalid drop`` removes are never released and never counted: they would
    show in the published budget). ``T`` bounds the timestamps released for that user; the
    timestamps are public in the PIM model, and every released one is in the output.
    Tasks with ``params["max_records"]`` bound every user's contribution and protect users;
    the others protect single records of a user (event level).
    """
    eps = float(task.epsilon(params))
    if eps <= 0:
        return 0.0, "record"
    if task.extra.get("epsilon_unit") == "per timestamp":
        if plan is None or plan.max_rows_per_user is None:
            raise ValueError("a per-timestamp task's budget needs the inspected input (plan)")
        return eps * plan.max_rows_per_user, "user"
    return eps, "user" if params.get("max_records") else "record"


def _job_key(job: Job, fingerprint: str) -> str:
    return f"{job.task}|{Path(job.output).resolve()}|{fingerprint}"


def reserve_ledger(job: Job, epsilon: float, fingerprint: str, *, unit: str = "record",
                   read: list[str] | None = None, resume: bool = False):
    """Reserve ``epsilon`` per user on the job's input dataset before anything runs.

    The dataset is recognized by content (:mod:`veil.identity`) over all input files, so a
    copy, a conversion or a move of the input, or moving the output away and running again,
    is the same dataset. Refused (:class:`~veil.errors.BudgetExceededError`) when the
    dataset already had a release and ``job.spend_again`` is false, when no total is
    declared for it (``veil budget set``), or when the declared total would be exceeded.
    With ``resume=True`` (the job continues its own output folder) the job's own entry is
    found and nothing more is spent. Returns the reservation (``None`` for a job that spends
    nothing).
    """
    if epsilon <= 0:
        return None
    import contextlib

    from ..identity import identity_of_files
    from ..ledger import Ledger, check_other_ledgers

    from ..ledger import legacy_note

    ident = identity_of_files(job.input_files())
    path = ledger_path(job)
    label = str(job.input)
    check_other_ledgers(ident, read, path, label)
    if legacy_note():
        import sys

        print(legacy_note(), file=sys.stderr)
    with contextlib.closing(Ledger(path)) as led:
        return led.reserve(ident, amount=epsilon, unit=unit, command=_command(job),
                           label=label, outputs=[str(job.output)], read=read,
                           spend_again=job.spend_again, job=_job_key(job, fingerprint),
                           resume=resume)


def _open_reservation(led, job: Job, fingerprint: str):
    row = led._con.execute("SELECT id FROM entries WHERE job = ? AND state = 'reserved'",
                           (_job_key(job, fingerprint),)).fetchone()
    return row[0] if row else None


def commit_ledger(job: Job, fingerprint: str) -> None:
    """Commit the job's reservation (call after the manifest is complete and verified)."""
    import contextlib

    from ..ledger import Ledger

    path = ledger_path(job)
    if not path.exists():
        return
    with contextlib.closing(Ledger(path)) as led:
        rid = _open_reservation(led, job, fingerprint)
        if rid is not None:
            led.commit(rid)


def release_ledger(job: Job, fingerprint: str) -> None:
    """Cancel the job's reservation: call only when the job failed before writing any part."""
    import contextlib

    from ..ledger import Ledger

    path = ledger_path(job)
    if not path.exists():
        return
    with contextlib.closing(Ledger(path)) as led:
        rid = _open_reservation(led, job, fingerprint)
        if rid is not None:
            led.cancel(rid, force=True, why="the job failed before writing any output")


def _command(job: Job) -> str:
    """The command line of a `veil batch` run, else a description of the library call."""
    from ..ledger import active_session

    s = active_session()
    if s is not None:
        return s.command
    return f"veil.engine.run_job(task={job.task!r}, input={str(job.input)!r})"
