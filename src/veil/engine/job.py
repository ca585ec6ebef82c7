"""Job specification, fingerprint, manifest and the privacy ledger."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BudgetExceededError, DataError, ParameterError
from ..release import to_jsonable
from ..validation import check_choice, check_int

MANIFEST = "manifest.json"


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
        ``manifest.json``.
    task : str
        Registered task name (see :func:`veil.engine.task_names`).
    params : dict
        The task's public parameters.
    user_column : str
        Column holding the user identifier.
    columns : dict, optional
        Map from the task's column names to the input's, when they differ.
    buckets : int, optional
        Number of user buckets (units of work). Default: about 200,000 input
        rows per bucket, at least 16.
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
        Privacy ledger file (default ``$VEIL_LEDGER`` or
        ``~/.local/share/veil/ledger.json``).
    progress : bool
        Show a progress bar.
    work_dir : str or Path, optional
        The private work folder (staging, unpublished parts, the noise key). Default
        ``.NAME.veil-work`` beside the output folder ``NAME``, on the same file system.
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

    @property
    def users_per_second(self) -> float:
        return self.users / self.seconds if self.seconds > 0 else float("inf")


def _atomic_write_text(path: Path, text: str) -> None:
    from .fsutil import write_file

    write_file(Path(path), text.encode())


def read_manifest(output: Path) -> dict[str, Any] | None:
    """The manifest of an output folder (``None`` if it has none; a link is refused)."""
    p = Path(output) / MANIFEST
    if not os.path.lexists(p):
        return None
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            man = json.loads(fh.read().decode())
        if not isinstance(man, dict):
            raise ValueError("not a JSON object")
        return man
    except (OSError, ValueError) as exc:
        raise DataError(f"manifest is unreadable ({exc}); remove the folder or choose another "
                        "--output", path=str(p)) from None


# --------------------------------------------------------------------------- ledger
def ledger_path(job: Job) -> Path:
    if job.ledger:
        return Path(job.ledger)
    env = os.environ.get("VEIL_LEDGER")
    if env:
        return Path(env)
    return Path.home() / ".local" / "share" / "veil" / "ledger.json"


def check_and_record_ledger(job: Job, epsilon: float, fingerprint: str) -> None:
    """Refuse a second release of the same input's users unless ``spend_again``.

    The ledger maps an input identity (absolute paths, sizes, modification
    times) to the releases made from it. A release is recorded when the job
    starts: a partial release already spent budget.
    """
    if epsilon <= 0:
        return
    path = ledger_path(job)
    key = hashlib.sha256(json.dumps(job.input_identity(), sort_keys=True).encode()).hexdigest()[:32]
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise DataError(f"privacy ledger is unreadable ({exc})", path=str(path)) from None
    entries = data.get(key, [])
    here = str(Path(job.output).resolve())

    def same_release(e: dict[str, Any]) -> bool:  # the same job into the same folder (a resume)
        return e.get("job_fingerprint") == fingerprint and e.get("output") == here

    previous = [e for e in entries if not same_release(e)]
    if previous and not job.spend_again:
        spent = sum(float(e["epsilon_per_user"]) for e in entries)
        raise BudgetExceededError(
            f"the users of {job.input} already received {len(previous)} release(s) spending "
            f"epsilon {spent:g} per user (ledger {path}); a fresh release spends {epsilon:g} more "
            "per user: pass --spend-again to accept that")
    if not any(same_release(e) for e in entries):
        entries.append({"job_fingerprint": fingerprint, "task": job.task,
                        "epsilon_per_user": epsilon, "output": here,
                        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        data[key] = entries
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True))
