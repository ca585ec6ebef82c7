"""Records in, histogram out (issue 14, defect 4), and user-level releases (protects="user")."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from veil.audit import dp_ratio_audit, events_threshold
from veil.errors import ParameterError
from veil.histograms import histogram_of, publish, publish_records
from veil.random import make_rng


def test_d4_a_column_of_records_is_not_taken_as_counts():
    df = pd.DataFrame({"age": [23, 35, 35, 71, 44, 19]})
    with pytest.raises(ParameterError, match=r"pandas Series 'age'.*publish\(values=\.\.\., "
                                             r"bins="):
        publish(df["age"], epsilon=0.5)
    with pytest.raises(ParameterError, match="DataFrame"):
        publish(df, epsilon=0.5)
    # said explicitly, both readings work and give what they say
    r = publish(values=df["age"], bins=[0, 30, 60, 90], epsilon=0.5, method="identity",
                rng=make_rng(seed=1))
    assert r.value.shape == (3,) and r.protects == "record"
    assert r.parameters["bins"] == [0.0, 30.0, 60.0, 90.0]
    counts = pd.Series([4, 0, 2], index=["0-29", "30-59", "60-89"])
    assert publish(counts=counts, epsilon=0.5, method="identity", rng=make_rng(seed=1)
                   ).value.shape == (3,)


@pytest.mark.parametrize("bad, match", [
    ({"counts": [1, 2], "values": [1.0]}, "exactly one"),
    ({}, "neither"),
    ({"counts": [1.5, 2]}, "integer count"),
    ({"counts": [-1, 2]}, ">= 0"),
    ({"values": [1.0, 2.0]}, "bins must be public bin edges"),
    ({"values": [1.0, 2.0], "bins": 10}, "would take its range from the private data"),
    ({"values": [1.0, np.nan], "bins": [0, 1, 2]}, "finite"),
    ({"values": [1.0, 2.0], "bins": [0, 2, 1]}, "increasing"),
    ({"counts": [1, 2], "bins": [0, 1, 2]}, "apply to values"),
    ({"values": [1.0, 2.0], "bins": [0, 3], "users": ["a", "b"]}, "go together"),
    ({"values": [1.0, 2.0], "bins": [0, 3], "users": ["a"], "max_records": 1}, "entries"),
    ({"values": [1.0, 2.0], "bins": [0, 3], "users": ["a", "b"], "max_records": 0}, ">= 1"),
])
def test_bad_inputs_are_refused_loudly(bad, match):
    with pytest.raises(ParameterError, match=match):
        publish(epsilon=1.0, **bad)


def test_histogram_of_counts_only_inside_public_bins():
    counts, edges = histogram_of([1.0, 2.5, 2.5, 9.0, 99.0, -3.0], [0, 2, 4, 10])
    assert counts.tolist() == [1, 2, 1] and edges.tolist() == [0, 2, 4, 10]


def test_record_level_release_matches_publish_of_the_counts():
    g = np.random.default_rng(0)
    values = g.uniform(0, 100, 500)
    bins = np.linspace(0, 100, 11)
    a = publish_records(values, bins=bins, epsilon=0.7, method="hb", rng=make_rng(seed=4))
    b = publish(counts=np.histogram(values, bins=bins)[0], epsilon=0.7, method="hb",
                rng=make_rng(seed=4))
    assert np.array_equal(a.value, b.value) and a.budget == b.budget


def test_user_level_release_bounds_each_user_and_scales_epsilon():
    g = np.random.default_rng(1)
    # 200 users with a few records each, and one user with 10^4 records in the first bin
    users = np.concatenate([np.repeat(np.arange(200).astype(str), 3), np.full(10_000, "heavy")])
    values = np.concatenate([g.uniform(0, 100, 600), np.full(10_000, 5.0)])
    r = publish_records(values, bins=np.linspace(0, 100, 11), users=users, max_records=4,
                        epsilon=1.0, method="identity", rng=make_rng(seed=2))
    assert r.protects == "user" and r.epsilon == 1.0
    assert r.parameters["max_records"] == 4 and r.parameters["epsilon_per_record"] == 0.25
    assert r.noise_scale == pytest.approx(4.0, rel=1e-5)       # m / epsilon
    assert sum(r.budget_split.values()) == pytest.approx(1.0)  # per user
    assert any("group privacy" in n for n in r.notes)
    # with no noise to speak of, the heavy user moved the first bin by at most 4 records
    exact = publish_records(values, bins=np.linspace(0, 100, 11), users=users, max_records=4,
                            epsilon=1e11, method="identity", rng=make_rng(seed=2))
    light = publish_records(values[:600], bins=np.linspace(0, 100, 11), users=users[:600],
                            max_records=4, epsilon=1e11, method="identity", rng=make_rng(seed=2))
    diff = np.abs(np.asarray(exact.value) - np.asarray(light.value))
    assert diff[0] == 4 and diff[1:].sum() == 0


def _user_level(extra_user_records: int, m: int | None):
    """Sampler of the first bin of a user-level release; neighbours differ in one user."""
    base_users = np.repeat(np.arange(30).astype(str), 2)
    base_vals = np.tile([5.0, 55.0], 30)

    def sample(n, g):
        users = np.concatenate([base_users, np.full(extra_user_records, "u*")])
        vals = np.concatenate([base_vals, np.full(extra_user_records, 5.0)])
        out = np.empty(n)
        for i in range(n):
            if m is None:  # the broken twin: no bound on the user's records
                r = publish_records(vals, bins=[0, 50, 100], epsilon=1.0, method="identity",
                                    rng=g)
            else:
                r = publish_records(vals, bins=[0, 50, 100], users=users, max_records=m,
                                    epsilon=1.0, method="identity", rng=g)
            out[i] = r.value[0]
        return out

    return sample


@pytest.mark.parametrize("n, heavy", [pytest.param(150, 300, id="fast"),
                                      pytest.param(3000, 10_000, id="slow",
                                                   marks=pytest.mark.slow)])
def test_user_level_audit_passes_and_unbounded_twin_fails(n, heavy):
    """Neighbours: with or without one user who has many records (10^4 in the slow run), all
    in bin 0. Family-wise alpha 1e-6; the broken twin (no bound) must fail the same audit."""
    events = events_threshold(lambda z: z, [30, 32, 34, 36, 38, 40], "bin0")
    ok = dp_ratio_audit(_user_level(0, 3), _user_level(heavy, 3), events, claimed_epsilon=1.0,
                        n=n, seed=7)
    assert ok.passed, ok.summary()
    broken = dp_ratio_audit(_user_level(0, None), _user_level(heavy, None), events,
                            claimed_epsilon=1.0, n=n, seed=7)
    assert not broken.passed and broken.eps_lower_bound > 1.0, broken.summary()


def test_cli_user_level_histogram_equals_the_library(tmp_path, capsys):
    from veil.cli import main

    g = np.random.default_rng(5)
    users = np.concatenate([np.repeat(np.arange(50), 4), np.full(10_000, 999)])
    lat = np.concatenate([g.uniform(40, 41, 200), np.full(10_000, 40.05)])
    pd.DataFrame({"uid": users, "lat": lat}).to_csv(tmp_path / "ci.csv", index=False)
    argv = ["histogram", "publish", str(tmp_path / "ci.csv"), "-c", "lat", "--bins",
            "40:41:10", "--user-column", "uid", "--max-records", "3", "-e", "1",
            "--method", "identity", "-o", str(tmp_path / "h.csv"), "--seed", "9"]
    main(argv)
    got = pd.read_csv(tmp_path / "h.csv")["count"].to_numpy()
    want = publish_records(lat, bins=np.linspace(40, 41, 11), users=users.astype(str),
                           max_records=3, epsilon=1.0, method="identity", rng=make_rng(seed=9))
    assert np.array_equal(got, np.asarray(want.value, dtype=float))
    meta = json.loads((tmp_path / "h.csv.meta.json").read_text())
    assert meta["protects"] == "user" and meta["parameters"]["input"]["max_records"] == 3
    assert meta["budget"]["epsilon"] == 1.0
    from veil.ledger import open_ledger

    with open_ledger() as led:
        (ds,) = led.datasets()
        (e,) = led.summary(ds).entries
    assert (e["amount"], e["unit"]) == (1.0, "user")
    capsys.readouterr()
