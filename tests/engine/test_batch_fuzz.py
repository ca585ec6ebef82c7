"""Fuzzing `veil batch counts|visits` (hypothesis, bounded: a fixed number of small cases).

Random inputs (CSV, Parquet, JSON; hostile column names; user and category columns of every
type, with empty cells, lists and records) and random options (categories, epsilon, buckets,
sensitive sets). Whatever the case, the command either succeeds with a complete, verified
output and no private work folder left, or exits 2 with ONE line `veil: error: ...` and
leaves nothing behind: no output folder, no work folder, no stray file.
"""

import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NAMES = st.sampled_from(["user", "uid", 'u"s', "u's'r", "a b", "ÜSER", "x) OR 1=1 --",
                         'cat"egory', "category", "c[1]*"])
CATS = st.sampled_from(["a", "b", "c", "Café", "x,y", "", "1", "2"])


@st.composite
def tables(draw):
    n = draw(st.integers(0, 40))
    ucol = draw(NAMES)
    ccol = draw(NAMES.filter(lambda c: c.lower() != ucol.lower()))
    # draws 0..4 give plain columns (hypothesis favours small draws), 5.. the odd ones
    ukind = ["int", "str", "int", "str", "float", "null", "list", "struct"][
        draw(st.integers(0, 7))]
    ckind = ["str", "int", "str", "str", "int", "null", "empty", "list"][draw(st.integers(0, 7))]
    users = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    cats = draw(st.lists(CATS, min_size=n, max_size=n))
    if ukind == "str":
        u = pa.array([f"u{x}" for x in users])
    elif ukind == "float":
        u = pa.array([x + 0.5 for x in users])
    elif ukind == "null":
        u = pa.array([None if x == 0 else x for x in users], pa.int64())
    elif ukind == "list":
        u = pa.array([[x] for x in users])
    elif ukind == "struct":
        u = pa.array([{"id": x} for x in users])
    else:
        u = pa.array(users, pa.int64())
    if ckind == "int":
        c = pa.array([len(x) for x in cats], pa.int64())
    elif ckind == "null":
        c = pa.array([None if x == "a" else x for x in cats], pa.string())
    elif ckind == "empty":
        c = pa.array(["" if x == "a" else x for x in cats], pa.string())
    elif ckind == "list":
        c = pa.array([[x] for x in cats])
    else:
        c = pa.array(cats, pa.string())
    fmt = draw(st.sampled_from(["parquet", "csv", "json"]))
    if fmt != "parquet" and (ukind in ("list", "struct") or ckind == "list"):
        fmt = "parquet"
    return pa.table({ucol: u, ccol: c}), ucol, ccol, fmt


@st.composite
def options(draw):
    """Mostly valid options (so most cases reach the engine), one broken option in five."""
    public = st.sampled_from(["a", "b", "c", "Café", "1", "2"])
    cats = draw(st.lists(public, min_size=2, max_size=4, unique=True))
    sens = draw(st.lists(st.sampled_from(cats), min_size=1, max_size=1, unique=True))
    opts = {"command": draw(st.sampled_from(["counts", "visits"])), "categories": cats,
            "sensitive": sens, "epsilon": draw(st.sampled_from(["1", "0.5", "2"])),
            "buckets": draw(st.sampled_from([None, "1", "3"])),
            "workers": draw(st.sampled_from(["1", "2"])), "user_ok": True}
    # hypothesis favours small draws: 0..9 keep the options valid, 10..14 break one of them
    broken = draw(st.integers(0, 14))
    if broken == 10:
        opts["categories"] = draw(st.sampled_from([[], ["a", "a"], [""]]))
    elif broken == 11:
        opts["sensitive"] = draw(st.sampled_from([[], ["zzz"], cats]))
    elif broken == 12:
        opts["epsilon"] = draw(st.sampled_from(["0", "-1", "nan", "inf", "1e300"]))
    elif broken == 13:
        opts["buckets"] = draw(st.sampled_from(["0", "100001"]))
    elif broken == 14:
        opts["user_ok"] = False
    return opts


OPTS = options()


def _write(table, fmt, path):
    if fmt == "parquet":
        pq.write_table(table, path)
    else:
        con = duckdb.connect()
        con.register("t", table)
        from veil.io import sql

        opts = "(HEADER)" if fmt == "csv" else "(FORMAT json)"
        con.execute(f"COPY t TO {sql.literal(str(path))} {opts}")


def _cli(args):
    from veil.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tables(), OPTS)
def test_batch_commands_succeed_completely_or_fail_cleanly(case, opts):
    from veil.engine.status import job_status

    table, ucol, ccol, fmt = case
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        inp = d / f"in.{fmt}"
        _write(table, fmt, inp)
        out = d / "out"
        os.environ["VEIL_LEDGER"] = str(d / "ledger.json")
        args = ["batch", opts["command"], str(inp), "-o", str(out), "--quiet",
                "--categories", ",".join(opts["categories"]), "--category-column", ccol,
                "--user-column", ucol if opts["user_ok"] else ucol + "_nope",
                "--workers", opts["workers"]]
        if opts["buckets"]:
            args += ["--buckets", opts["buckets"]]
        if opts["command"] == "counts":
            args += ["-e", opts["epsilon"], "--spend-again"]
        else:
            args += ["--sensitive", ",".join(opts["sensitive"])]
        before = sorted(p.name for p in d.iterdir())
        code, stdout, stderr = _cli(args)
        assert code in (0, 2), (code, stderr)
        if code == 2:
            lines = stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("veil: error: "), stderr
            assert "internal error" not in stderr and "Traceback" not in stderr
            left = sorted(p.name for p in d.iterdir())
            assert left == before or set(left) - set(before) <= {"ledger.json"}, left
        else:
            st_ = job_status(out)
            assert st_["state"] == "complete", st_
            man = json.loads((out / "_manifest.json").read_text())
            assert man["status"] == "complete"
            assert not (d / ".out.veil-work").exists()
            assert sorted(p.name for p in out.iterdir() if not p.name.startswith("part-")) \
                == ["_manifest.json"]
        shutil.rmtree(d, ignore_errors=True)
