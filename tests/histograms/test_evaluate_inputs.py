"""`veil histogram evaluate` on extreme inputs: one clear line, exit 2 (each case was wrong
before, see the docstrings)."""

from __future__ import annotations

import numpy as np
import pytest

from cli_cases import run_veil


@pytest.fixture
def files(tmp_path):
    (tmp_path / "t.csv").write_text("count\n1\n2\n3\n")
    (tmp_path / "huge.csv").write_text("count\n1e308\n1e308\n1e308\n")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (tmp_path / "garbage.npy").write_text("garbage\n")
    np.save(tmp_path / "ok.npy", np.array([1, 2, 3]))
    return tmp_path


CASES = [
    # "scaled_error": "inf" with exit 0 (and a numpy overflow warning)
    (["huge.csv", "--true", "t.csv"], ["huge.csv", "too large", "overflow"]),
    # 2 x 10^7 ranges took 1.3 GB
    (["t.csv", "--true", "t.csv", "--workload", "random", "--queries", "20000000"],
     ["--queries", "<= 1000000"]),
    (["t.csv", "--true", "t.csv", "--workload", "random", "--queries", "0"], ["--queries"]),
    # numpy's text advised loading the file "unsafely" with allow_pickle
    (["t.csv", "--true", "obj.npy"], ["obj.npy", "Python objects"]),
    (["t.csv", "--true", "garbage.npy"], ["garbage.npy", "not a .npy file"]),
]


@pytest.mark.parametrize("argv, expect", CASES, ids=[" ".join(c[0][:1] + c[0][-2:]) for c in CASES])
def test_evaluate_refuses_cleanly(files, argv, expect):
    res = run_veil(["histogram", "evaluate", *argv], files)
    assert res.code == 2, (res.out, res.err)
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("veil: error: "), res.err
    for piece in expect:
        assert piece in lines[0], lines[0]
    assert "allow_pickle" not in res.err and not res.warnings


def test_evaluate_reads_a_npy_of_numbers(files):
    res = run_veil(["histogram", "evaluate", "t.csv", "--true", "ok.npy", "--json"], files)
    assert res.code == 0, res.err
    assert '"scaled_error": 0.0' in res.out
