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


def _sleep_seconds(params, default):
    """VEIL_TEST_SLEEP (a test process's environment) wins over params: it slows a run down
    without changing the job's parameters, so a resume may run at full speed."""
    import os

    return float(os.environ.get("VEIL_TEST_SLEEP", params.get("sleep", default)))


def _slow_count(arrays, params, rng):
    import time

    time.sleep(_sleep_seconds(params, 0.3))
    users = arrays["user"]
    n = int(users[-1]) + 1
    return {"user": np.arange(n), "rows": np.bincount(users, minlength=n)}


SLOW = register_task(Task(name="test-slow-count", columns=("category",), per_bucket=_slow_count))


def _slow_noise(arrays, params, rng):
    """Per-user row counts plus exact discrete Laplace noise, slowly (for fault tests)."""
    import time

    from veil.samplers import discrete_laplace

    time.sleep(_sleep_seconds(params, 0.05))
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
    return json.loads((Path(out) / "_manifest.json").read_text())


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

    A clean folder is absent, or holds only ``_manifest.json`` and ``part-*.parquet`` files
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
        elif p.name == "_manifest.json":
            continue
        elif p.name.startswith("part-") and p.name.endswith(".parquet"):
            cols = pq.read_schema(p).names
            if cols != part_columns:
                bad.append(f"{p.name}: columns {cols}")
        else:
            bad.append(f"{p.name}: not a published file")
    return bad


JOBRUN = str(Path(__file__).resolve().parent / "jobrun.py")


def launch(spec: dict, env_extra=None, **kw):
    """Start ``jobrun.py SPEC`` in a new session (its own process group)."""
    env = dict(os.environ, PYTHONPATH=SRC, **(env_extra or {}))
    return subprocess.Popen([sys.executable, JOBRUN, json.dumps(spec, default=str)], env=env,
                            start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def jobrun(spec: dict, env_extra=None, timeout=300):
    """Run ``jobrun.py SPEC`` to the end; returns the CompletedProcess."""
    env = dict(os.environ, PYTHONPATH=SRC, **(env_extra or {}))
    # its own session: a fault that kills "the whole process group" must not kill the test
    return subprocess.run([sys.executable, JOBRUN, json.dumps(spec, default=str)], env=env,
                          capture_output=True, text=True, timeout=timeout,
                          start_new_session=True)


def wait_until(pred, timeout=60.0, step=0.02):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


def markers_under(*folders) -> list[Path]:
    """Finished-bucket markers wherever the engine keeps them."""
    found = []
    for f in folders:
        try:
            found += [p for p in Path(f).rglob("part-*.json") if p.is_file()]
        except FileNotFoundError:  # the job renamed a folder (staging.tmp) during the walk:
            pass                   # the caller polls again
    return found


def kill_group(proc, sig=None):
    import signal as _signal

    try:
        os.killpg(proc.pid, sig or _signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


def worker_pids(parent: int) -> list[int]:
    """The local engine's worker processes of job process ``parent`` (forked by its
    forkserver, or its direct children)."""
    found = []
    for c in children(parent):
        try:
            with open(f"/proc/{c}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:
            continue
        if b"forkserver" in cmd:
            found += children(c)
        elif b"resource_tracker" not in cmd:
            found.append(c)
    return found


def _noise_truth(arrays, params, rng):
    """Per-user row counts and the same counts with exact discrete Laplace noise (the true
    column lets fault tests check users and counts of unseeded runs; the noisy one is what a
    release would publish)."""
    import time

    from veil.samplers import discrete_laplace

    time.sleep(_sleep_seconds(params, 0.0))
    users = arrays["user"]
    n = int(users[-1]) + 1
    counts = np.bincount(users, minlength=n)
    return {"user": np.arange(n), "rows": counts,
            "noisy": counts + discrete_laplace(1.0, n, rng)}


NOISE_TRUTH = register_task(Task(name="test-noise-truth", columns=("category",),
                                 per_bucket=_noise_truth, epsilon=lambda p: 1.0))


def _count_noise_half(arrays, params, rng):
    """BROKEN on purpose (a canary): count-noise with half the noise scale it claims."""
    from veil.engine.tasks import _count_noise_bucket

    return _count_noise_bucket(arrays, {**params, "epsilon": 2 * params["epsilon"]}, rng)


HALF_NOISE = register_task(Task(name="test-count-noise-half", columns=("category",),
                                per_bucket=_count_noise_half, epsilon=lambda p: p["epsilon"],
                                column_kinds={"category": "category"}))


def _stream_probe(arrays, params, rng):
    """One uniform draw per user, in user order: the bucket's random stream made visible."""
    users = arrays["user"]
    n = int(users[-1]) + 1
    return {"user": np.arange(n), "draw": rng.random(n)}


STREAM_PROBE = register_task(Task(name="test-stream-probe", columns=("category",),
                                  per_bucket=_stream_probe, epsilon=lambda p: 1.0))


def declare_large_totals() -> None:
    """Make every job of this process declare a total of 1e12 for its input first (tests).

    The engine tests rerun, race, kill and resume jobs on one input with ``spend_again``,
    which the ledger allows only under a declared total (issue 14). This patches the
    engine's reservation step to declare one when the dataset has none yet (an existing
    total is kept: tests of the ledger's limits declare their own). The ledger itself is
    the real one; its rules are tested in tests/cli/test_accounting.py and tests/core.
    """
    import contextlib

    import veil.engine.runner as runner
    from veil.engine import job as jobmod

    if getattr(runner.reserve_ledger, "_declares_totals", False):
        return
    original = jobmod.reserve_ledger

    def reserve(job, epsilon, fingerprint, **kw):
        if epsilon > 0:
            from veil.errors import BudgetExceededError, ParameterError
            from veil.identity import identity_of_files
            from veil.ledger import Ledger

            ident = identity_of_files(job.input_files())
            with contextlib.closing(Ledger(jobmod.ledger_path(job))) as led:
                # a total declared by the test itself is kept
                with contextlib.suppress(ParameterError, BudgetExceededError):
                    led.set_total(ident, total=1e12, label=str(job.input))
        return original(job, epsilon, fingerprint, **kw)

    reserve._declares_totals = True
    runner.reserve_ledger = reserve


def report_sigint(conn) -> None:
    """Process target: send back how this process treats SIGINT, before anything else runs."""
    import signal as _signal

    h = _signal.getsignal(_signal.SIGINT)
    conn.send("ignored" if h is _signal.SIG_IGN else "default" if h is _signal.SIG_DFL
              else "python")
