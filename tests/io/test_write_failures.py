"""Exit codes of failed writes and interrupts (issue 20, defect 10 outside the engine).

Every non-batch command that writes a file, run against a full disk (the file-size limit
``RLIMIT_FSIZE``, which every Linux process can lower for itself, makes ``write`` fail with
EFBIG exactly where a full disk fails with ENOSPC; a real small tmpfs when the tests run as
root, in the slow suite) and against a read-only folder: exit 2, ONE line ``veil: error:``
naming the output or saying what failed, no "internal error", and the folder exactly as it
was (no partial output, no temporary file). SIGINT while a command reads or writes: exit
130, ``veil: interrupted``, nothing left behind.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from cli_cases import CASES, PLAIN_COL, PLAIN_STEM, listing, run_veil  # noqa: E402


def _data_synth(d, col, stem):
    return ["data", "synth", "census", "--rows", "400", "--seed", "1", "-o", "out.csv"], \
        ["out.csv"]


def _report(d, col, stem):
    from veil.report.core import Section
    from veil.report.html import save_report

    save_report(d / "run", [Section("alpha", "Alpha", "x " * 2000)], title="t")
    (d / "run" / "index.html").unlink()
    return ["report", "run"], ["run/index.html"]


WRITERS = [(c.id, c.build) for c in CASES if not c.stdout] + [
    ("data-synth", _data_synth), ("report", _report)]


@contextlib.contextmanager
def file_size_limit(nbytes: int):
    """Lower this process's file-size limit: writes beyond ``nbytes`` fail (EFBIG)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)


def _assert_failed_cleanly(res, before, after, argv):
    assert "internal error" not in res.err and "Traceback" not in res.err, (argv, res.err)
    lines = res.err.strip().splitlines()
    assert res.code == 2, (argv, res.code, res.err)
    assert len(lines) == 1 and lines[0].startswith("veil: error: "), (argv, res.err)
    assert after == before, (argv, sorted(set(after) ^ set(before)))


def _grow_input(d: Path, argv: list[str]) -> None:
    """Make the input big enough that every output exceeds the limit (rows repeated)."""
    for a in argv:
        p = d / a
        if p.suffix == ".csv" and p.is_file() and p.name != "train.csv":
            lines = p.read_text(encoding="utf-8").splitlines(keepends=True)
            if len(lines) < 2 or argv[0] == "trajectory":  # times must increase: keep it
                continue
            if argv[0] == "visits":  # one output row per (user, category): more users
                body = "".join(f"{i}" + line for i in range(60) for line in lines[1:])
            else:
                body = "".join(lines[1:]) * 60
            p.write_text(lines[0] + body, encoding="utf-8")


@pytest.mark.parametrize("writer", WRITERS, ids=[w[0] for w in WRITERS])
def test_full_disk_exits_2_and_leaves_nothing(writer, tmp_path):
    wid, build = writer
    argv, outputs = build(tmp_path, PLAIN_COL, PLAIN_STEM)
    _grow_input(tmp_path, argv)
    before = listing(tmp_path)
    limit = 300 if wid == "table-risk" else 600  # its JSON does not grow with the rows
    with file_size_limit(limit):
        res = run_veil(argv, tmp_path)
    after = listing(tmp_path)
    if res.code == 0:  # an output smaller than the limit: the check would prove nothing
        sizes = {o: (tmp_path / o).stat().st_size for o in outputs}
        pytest.fail(f"{wid}: every output fitted in {limit} bytes ({sizes}); grow the input")
    _assert_failed_cleanly(res, before, after, argv)
    # a DP command first writes its reservation to the privacy ledger, which the limit stops
    # as well: then the ledger is named and nothing is released (the read-only test below
    # reaches the outputs' own write errors, the ledger living elsewhere)
    named_output = "File too large" in res.err and any(Path(o).name in res.err
                                                        for o in outputs)
    named_ledger = "cannot write the privacy ledger" in res.err and "nothing was released" \
        in res.err
    assert named_output or named_ledger, res.err


@contextlib.contextmanager
def read_only(folder: Path):
    """Make ``folder`` read-only for this process: a read-only mount as root, else chmod."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    rc = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)],
                        capture_output=True).returncode
    if rc != 0:
        pytest.skip("running as root without permission to mount a read-only folder")
    try:
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("writer", WRITERS, ids=[w[0] for w in WRITERS])
def test_read_only_output_folder_exits_2(writer, tmp_path):
    wid, build = writer
    argv, outputs = build(tmp_path, PLAIN_COL, PLAIN_STEM)
    ro = tmp_path / "ro"
    ro.mkdir()
    if wid == "report":
        target = ["report", "ro"]
    else:
        i = argv.index("-o")
        target = argv[:i + 1] + ["ro/" + argv[i + 1]] + argv[i + 2:]
    with read_only(ro):
        before = listing(tmp_path)
        res = run_veil(target, tmp_path)
        after = listing(tmp_path)
    _assert_failed_cleanly(res, before, after, target)
    if wid != "report":
        assert "ro" in res.err


# ----------------------------------------------------------------------------- SIGINT

def _big_counts(d: Path, rows: int = 1_500_000) -> Path:
    import duckdb

    p = d / "big.csv"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT 'b' || i AS bin, i % 97 AS count FROM range({rows}) t(i)) "
                f"TO '{p}' (FORMAT csv, HEADER true)")
    con.close()
    return p


def _same_veil_env() -> dict:
    """Environment in which ``python -m veil`` imports the veil these tests import."""
    import veil

    src = str(Path(veil.__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _wait_for(pred, proc, timeout=60.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        if pred():
            return True
        time.sleep(0.005)
    return False


def _opened(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path)
                   for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def _stop_midway(work: Path, when: str, sig, env: dict):
    """Run `noise counts` on a large input in ``work`` and send ``sig`` while it reads its
    input or writes its output; returns (exit code, stderr)."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to see when the command reads its input")
    big = work / "big.csv"
    proc = subprocess.Popen([sys.executable, "-m", "veil", "noise", "counts", str(big), "-c",
                             "count", "-e", "1", "-o", str(work / "out.csv")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if when == "reading":
        seen = _wait_for(lambda: _opened(proc.pid, big), proc)
    else:
        seen = _wait_for(lambda: any(".veil-tmp" in n for n in os.listdir(work)), proc)
    assert seen, f"the command finished before it could be interrupted ({proc.poll()})"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


@pytest.mark.parametrize("when", ["reading", "writing"])
def test_sigint_exits_130_and_leaves_nothing(tmp_path, when):
    _big_counts(tmp_path)
    before = listing(tmp_path)
    code, err = _stop_midway(tmp_path, when, signal.SIGINT, _same_veil_env())
    assert code == 130, (code, err)
    assert err.strip().splitlines()[-1:] == ["veil: interrupted"], err
    assert listing(tmp_path) == before


@pytest.mark.parametrize("raised", ["InterruptException", "Query interrupted"])
def test_duckdb_interrupt_is_an_interrupt(tmp_path, monkeypatch, raised):
    """DuckDB turns SIGINT into ``InterruptException``, and inside a query (the content-identity
    pass, the output COPY) into ``RuntimeError: Query interrupted``: both are exit 130, not a data
    error (the second said `veil: internal error: RuntimeError: Query interrupted`, exit 1)."""
    import duckdb

    import veil.io.read as read

    (tmp_path / "h.csv").write_text("count\n1\n")

    class Interrupting:
        def __init__(self, con):
            self._con = con

        def sql(self, query, *a, **k):
            if raised == "InterruptException":
                raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")
            raise RuntimeError(raised)

        def __getattr__(self, name):
            return getattr(self._con, name)

    real = read._connect
    monkeypatch.setattr(read, "_connect", lambda: Interrupting(real()))
    res = run_veil(["noise", "counts", "h.csv", "-c", "count", "-e", "1", "-o", "o.csv"],
                   tmp_path)
    assert res.code == 130 and res.err.strip() == "veil: interrupted", res.err
    assert listing(tmp_path) == ["h.csv"]


# ----------------------------------------------------------------------------- real disk

@pytest.mark.slow
@pytest.mark.parametrize("writer", WRITERS, ids=[w[0] for w in WRITERS])
def test_full_tmpfs_exits_2(writer, tmp_path):
    """The same as the file-size limit, on a real full file system (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    wid, build = writer
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        argv, outputs = build(mnt, PLAIN_COL, PLAIN_STEM)
        _grow_input(mnt, argv)
        with contextlib.suppress(OSError):  # fill what is left of the disk
            with open(mnt / "filler", "wb") as fh:
                fh.write(b"x" * (1 << 20))
        before = listing(mnt)
        res = run_veil(argv, mnt)
        _assert_failed_cleanly(res, before, listing(mnt), argv)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def _ledger_states(home: Path) -> list[str]:
    import sqlite3

    db = home / "ledger.sqlite"
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("SELECT state FROM entries")]
    finally:
        con.close()


@pytest.mark.parametrize("when", ["reading", "writing"])
def test_sigterm_is_handled_like_ctrl_c(tmp_path, when):
    """SIGTERM (what `timeout`, `docker stop`, systemd and CI cancels send) killed veil as is:
    the ledger kept a pending reservation (the next run was refused until `veil budget release
    ID`) and DuckDB's temporary file of the output, holding noisy rows, stayed in the folder.
    It is now handled like Ctrl-C: exit 143, nothing left, the reservation cancelled."""
    work = tmp_path / "w"
    work.mkdir()
    home = tmp_path / "home"
    _big_counts(work)
    before = listing(work)
    code, err = _stop_midway(work, when, signal.SIGTERM,
                             {**_same_veil_env(), "VEIL_HOME": str(home)})
    assert code == 143, (code, err)
    assert err.strip().splitlines()[-1:] == ["veil: terminated"], err
    assert listing(work) == before
    assert "reserved" not in _ledger_states(home)


def test_a_temporary_file_that_cannot_be_removed_keeps_the_charge(tmp_path, monkeypatch):
    """A folder made read-only while the release was written: the rename failed, the cleanup
    failed too (its PermissionError, naming the temporary file, replaced the real error), and
    the ledger returned the budget while the whole noisy release sat in the folder. Now the
    charge is kept, a privacy warning names the file, and `budget release` refuses while it
    exists."""
    import veil.io.write as write
    from veil.ledger import Ledger

    monkeypatch.setenv("VEIL_HOME", str(tmp_path / "home"))
    (tmp_path / "h.csv").write_text("count\n1\n2\n3\n")
    real_replace = os.replace

    def failing_replace(src, dst, *a, **k):
        if ".veil-tmp-o.csv." in os.fspath(src):
            raise PermissionError(13, "Permission denied", os.fspath(dst))
        return real_replace(src, dst, *a, **k)

    monkeypatch.setattr(write.os, "replace", failing_replace)
    monkeypatch.setattr(write, "_unlink_quietly", lambda p: None)   # the folder is read-only
    res = run_veil(["noise", "counts", "h.csv", "-c", "count", "-e", "1", "-o", "o.csv"],
                   tmp_path)
    assert res.code == 2 and "o.csv" in res.err, res.err
    assert any("holds noisy values" in str(w.message) for w in res.warnings), res.warnings
    left = [n for n in listing(tmp_path) if n.startswith(".veil-tmp-o.csv.")]
    assert left and not (tmp_path / "o.csv").exists()
    led = Ledger(tmp_path / "home" / "ledger.sqlite")
    try:
        states = [r[0] for r in led._con.execute("SELECT state FROM entries")]
        assert states == ["committed"], states
    finally:
        led.close()


def test_a_run_killed_while_writing_keeps_its_reservation_until_the_file_is_gone(tmp_path):
    """SIGKILL while COPY wrote the output: DuckDB's own temporary file (`tmp_.veil-tmp-...`,
    holding the noisy rows, cut mid-row) stayed in the folder, and `veil budget release ID`
    returned the budget because the named output did not exist; a new run then published a
    second independent release beside the first. Now COPY writes into veil's one temporary
    file, and the reservation cannot be released while that file exists."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to see when the command writes")
    from veil.ledger import Ledger

    work = tmp_path / "w"
    work.mkdir()
    home = tmp_path / "home"
    big = _big_counts(work)
    env = {**_same_veil_env(), "VEIL_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "veil", "noise", "counts", str(big), "-c",
                             "count", "-e", "1", "-o", str(work / "out.csv")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen = _wait_for(lambda: any(".veil-tmp" in n and os.path.getsize(work / n) > 0
                                 for n in os.listdir(work)), proc)
    assert seen, f"the command finished before it could be killed ({proc.poll()})"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    left = [n for n in os.listdir(work) if "veil-tmp" in n]
    assert left and all(n.startswith(".veil-tmp-out.csv.") for n in left), left
    assert _ledger_states(home) == ["reserved"]
    led = Ledger(home / "ledger.sqlite")
    try:
        rid = led._con.execute("SELECT id FROM entries").fetchone()[0]
    finally:
        led.close()
    res = subprocess.run([sys.executable, "-m", "veil", "budget", "release", rid],
                         capture_output=True, text=True, env=env)
    assert res.returncode == 2 and "temporary file of its release" in res.stderr, res.stderr
    assert _ledger_states(home) == ["reserved"]
    for n in left:
        os.unlink(work / n)
    res = subprocess.run([sys.executable, "-m", "veil", "budget", "release", rid],
                         capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert _ledger_states(home) == ["released"]


def test_a_ledger_write_that_fails_half_way_names_the_ledger(tmp_path):
    """With a file-size limit the ledger's journal hit (ulimit -f 64), the reservation's write
    failed inside a transaction: `veil: internal error: OperationalError: disk I/O error`,
    exit 1. It is now the same one-line error as a ledger that cannot be created."""
    (tmp_path / "v.csv").write_text("v\n" + "".join(f"{i}\n" for i in range(12)))

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    res = subprocess.run([sys.executable, "-m", "veil", "histogram", "publish", "v.csv", "-c",
                          "v", "-e", "1", "-o", "o.csv", "--bins", "0:12:12", "-m", "hb"],
                         cwd=tmp_path, capture_output=True, text=True, preexec_fn=limit,
                         env={**_same_veil_env(), "VEIL_HOME": str(tmp_path / "home")})
    assert res.returncode == 2, res.stderr
    assert "cannot write the privacy ledger" in res.stderr and "ledger.sqlite" in res.stderr
    assert not (tmp_path / "o.csv").exists()


def _signal_once_inside(tmp_path, monkeypatch, sig, name, when):
    """Run `noise counts h.csv -o o.csv` with ``veil.io.write.os.<name>`` wrapped to send
    ``sig`` to this process once, right after the first call for which ``when(*args)``
    holds (the handler runs at Python's next check: right there). Returns (result, sent)."""
    import veil.io.write as write

    monkeypatch.setenv("VEIL_HOME", str(tmp_path / "home"))
    (tmp_path / "h.csv").write_text("count\n1\n2\n3\n")
    real = getattr(os, name)
    sent = []

    def wrapped(*args, **kwargs):
        out = real(*args, **kwargs)
        if not sent and when(*args):
            sent.append(args)
            os.kill(os.getpid(), sig)
        return out

    monkeypatch.setattr(write.os, name, wrapped)
    res = run_veil(["noise", "counts", "h.csv", "-c", "count", "-e", "1", "-o", "o.csv"],
                   tmp_path)
    return res, sent


@pytest.mark.parametrize("sig,code,last", [(signal.SIGINT, 130, "veil: interrupted"),
                                           (signal.SIGTERM, 143, "veil: terminated")],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_between_the_renames_leaves_both_files_or_neither(tmp_path, monkeypatch, sig,
                                                                   code, last):
    """Ctrl-C (or SIGTERM) landing just after the data file's rename, before atomic_paths noted
    it, published the data file without its sidecar, and the ledger charged the run (an outside
    probe held the rename with strace). The signals are now held during the renames and raised
    after the last one, where the clean-up removes the set: neither file, nothing charged."""
    home = tmp_path / "home"
    res, sent = _signal_once_inside(
        tmp_path, monkeypatch, sig, "replace",
        lambda src, dst, *a: os.path.basename(os.fspath(dst)) == "o.csv")
    assert sent, "the data file was never renamed"
    assert res.code == code and res.err.strip().splitlines()[-1:] == [last], res.err
    assert [n for n in listing(tmp_path) if not n.startswith("home")] == ["h.csv"]
    assert set(_ledger_states(home)) <= {"released"}, _ledger_states(home)  # none spent


@pytest.mark.parametrize("sig,code,last", [(signal.SIGINT, 130, "veil: interrupted"),
                                           (signal.SIGTERM, 143, "veil: terminated")],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_right_after_a_temp_file_is_created_leaves_nothing(tmp_path, monkeypatch, sig,
                                                                    code, last):
    """CI caught `test_sigint_exits_130_and_leaves_nothing[writing]` once with
    `.veil-tmp-out.csv.*.tmp` left behind: the signal (sent as soon as the temporary file
    appears) landed between mkstemp's create and atomic_paths noting the file. The file is now
    noted before it is created. Here the signal lands deterministically right after the
    create (the first ``os.close`` of a descriptor the writer opened)."""
    res, sent = _signal_once_inside(
        tmp_path, monkeypatch, sig, "close",
        lambda fd: any(".veil-tmp-o.csv" in n for n in os.listdir(tmp_path)))
    assert sent, "no temporary file was created"
    assert res.code == code and res.err.strip().splitlines()[-1:] == [last], res.err
    assert [n for n in listing(tmp_path) if not n.startswith("home")] == ["h.csv"]
