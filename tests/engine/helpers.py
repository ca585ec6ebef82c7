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


# --------------------------------------------------------------------------- shared utilities
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import duckdb  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

SRC = str(Path(__file__).resolve().parents[2] / "src")
TESTS = str(Path(__file__).resolve().parent)


def checkins(path: Path, n=30_000, users=2_000, seed=0, cats=("a", "b", "c", "d")):
    """A check-in file with columns uid (text) and category."""
    g = np.random.default_rng(seed)
    pq.write_table(pa.table({"uid": np.char.add("u", g.integers(0, users, n).astype(str)),
                             "category": g.choice(list(cats), n)}), path)
    return path


def rows(out: Path):
    """Every row of an output folder's parts, sorted."""
    from veil.io import sql

    files = sorted(str(p) for p in Path(out).glob("part-*.parquet"))
    return duckdb.sql(f"SELECT * FROM read_parquet({sql.paths(files)}) ORDER BY ALL").fetchall()


def manifest(out: Path) -> dict:
    return json.loads((Path(out) / "manifest.json").read_text())


def work_of(out: Path) -> Path:
    from veil.engine.runner import work_dir_for

    return work_dir_for(out)


def veil_cli(*args, env_extra=None, cwd=None, timeout=300):
    """Run ``python -m veil ARGS`` in a subprocess; returns the CompletedProcess."""
    env = dict(os.environ, PYTHONPATH=SRC, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "veil", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def marked_processes(mark: str) -> list[int]:
    """Pids of live processes whose environment holds VEIL_TEST_RUN=mark (orphan count)."""
    needle = f"VEIL_TEST_RUN={mark}".encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
            with open(f"/proc/{d}/stat") as fh:
                zombie = fh.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            continue
        if needle in env and not zombie:
            pids.append(int(d))
    return pids


def published_problems(out: Path, part_columns: list[str]) -> list[str]:
    """What in an output folder is not a published part or the manifest (empty list = clean).

    A clean folder is absent, or holds only ``manifest.json`` and ``part-*.parquet`` files
    whose columns are ``part_columns`` (a raw staging file has other columns: no noise, no
    sanitized counts), and no sub-folder, temporary file or link.
    """
    out = Path(out)
    if not out.exists():
        return []
    bad = []
    for p in sorted(out.iterdir()):
        if p.is_symlink() or p.is_dir():
            bad.append(f"{p.name}: {'link' if p.is_symlink() else 'folder'}")
        elif p.name == "manifest.json":
            continue
        elif p.name.startswith("part-") and p.name.endswith(".parquet"):
            cols = pq.read_schema(p).names
            if cols != part_columns:
                bad.append(f"{p.name}: columns {cols}")
        else:
            bad.append(f"{p.name}: not a published file")
    return bad
