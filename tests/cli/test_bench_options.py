"""`veil bench ...`: a bad option is one clear line naming it, before any benchmarking.

Before: ``--datasets ,`` and ``--trials -3`` stopped with "internal error: StopIteration"
after the run had begun, ``--trials 0`` printed the table header and failed after loading the
data, ``--model-kind foo`` ran the personal models silently, ``--reps 0`` said "need at least
one array to concatenate", ``--fit-auto`` of a bad file did not name it, and ``--runs -1
--quick`` / ``--repeats 0 --quick`` were accepted. Each case must fail fast: a spy on the
benchmark drivers checks that none of them started.
"""

from __future__ import annotations

import pytest

from cli_cases import run_veil

CASES = [
    (["histograms", "--accuracy", "--trials", "0"], ["--trials", "0"]),
    (["histograms", "--accuracy", "--trials", "-3"], ["--trials", "-3"]),
    (["histograms", "--accuracy", "--datasets", ","], ["--datasets", "no dataset name"]),
    (["histograms", "--accuracy", "--datasets", "HEPTH.n4096,nope"],
     ["--datasets", "'nope'", "HEPTH.n4096"]),
    (["histograms", "--accuracy", "--n-bins", "0"], ["--n-bins", "0"]),
    (["histograms", "--accuracy", "--n-bins", "5000"], ["--n-bins", "divide 4096"]),
    (["histograms", "--fit-auto", "missing.json"], ["file missing.json", "not found"]),
    (["histograms", "--fit-auto", "notjson.json"], ["file notjson.json", "accuracy run"]),
    (["histograms", "--fit-auto", "nokey.json"], ["file nokey.json", "accuracy run"]),
    (["maps", "--runs", "-1", "--quick"], ["--runs", "-1"]),
    (["maps", "--runs", "0"], ["--runs", "0"]),
    (["tables", "--repeats", "0", "--quick"], ["--repeats", "0"]),
    (["tables", "--quick", "-o", "nokey.json"], ["nokey.json", "already exists"]),
    (["location", "--epsilons", ""], ["--epsilons", "numbers"]),
    (["location", "--epsilons", "0.001,x"], ["--epsilons", "numbers"]),
    (["temporal", "--epsilons", ""], ["--epsilons", "numbers"]),
    (["temporal", "--epsilons", "1,-1"], ["--epsilons", "-1"]),
    (["temporal", "--deltas", "2"], ["--deltas", "(0, 1)"]),
    (["temporal", "--steps", "0"], ["--steps", "0"]),
    (["temporal", "--reps", "0"], ["--reps", "0"]),
    (["temporal", "--max-trajectories", "0"], ["--max-trajectories", "0"]),
    (["temporal", "--model-kind", "foo"], ["--model-kind", "'foo'", "'personal'"]),
]


@pytest.fixture
def no_benchmark_runs(monkeypatch):
    """Fail the test if a benchmark driver starts (the check must come first)."""
    import veil.geo.temporal.experiment as temporal
    import veil.histograms.bench as hist
    import veil.maps.bench as maps
    import veil.tables.experiment as tables

    def started(*a, **k):
        raise AssertionError("the benchmark started before the options were checked")

    for mod, name in ((hist, "accuracy_benchmark"), (maps, "accuracy_table"),
                      (tables, "run_experiment"), (temporal, "run_geolife_experiment"),
                      (temporal, "load_beijing")):
        monkeypatch.setattr(mod, name, started)


@pytest.mark.parametrize("argv, expect", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_a_bad_bench_option_is_one_line_naming_it(argv, expect, tmp_path, no_benchmark_runs):
    (tmp_path / "notjson.json").write_text("not json")
    (tmp_path / "nokey.json").write_text('{"rows": []}')
    before = sorted(p.name for p in tmp_path.iterdir())
    res = run_veil(["bench", *argv], tmp_path)
    assert res.code == 2, (res.out, res.err)
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("veil: error: "), res.err
    for piece in expect:
        assert piece in lines[0], lines[0]
    assert "internal error" not in res.err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_temporal_experiment_names_too_many_steps():
    """More steps than any GeoLife run has: said "need at least one array to concatenate"."""
    from veil.datasets import shared_data_path
    from veil.errors import ParameterError
    from veil.geo.temporal.experiment import run_geolife_experiment

    try:
        shared_data_path("geolife")
    except Exception:  # pragma: no cover - the shared data is beside the checkout in CI
        pytest.skip("no shared GeoLife data")
    with pytest.raises(ParameterError, match=r"steps=10000000: .*longest run has \d+"):
        run_geolife_experiment(steps=10**7, reps=1, max_trajectories=1)
    with pytest.raises(ParameterError, match="model_kind"):
        run_geolife_experiment(model_kind="nope")
