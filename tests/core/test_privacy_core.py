"""Errors, validation, budgets, accountant, Release, RNG policy, distances."""

import json
import math

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

import veil
from veil import Accountant, GeoDP, PureDP, Release
from veil.distances import (BIN_DISTANCES, bin_terms, haversine_m, histogram_distance,
                            planar_distance)
from veil.errors import BudgetExceededError, DataError, ParameterError, VeilError
from veil.random import make_rng, spawn
from veil.validation import (check_choice, check_counts, check_delta, check_epsilon,
                             check_finite_array, check_int, check_probability_vector)


def test_public_api_all_resolves():
    for name in veil.__all__:
        assert hasattr(veil, name), name
    assert veil.__version__.count(".") == 2


def test_errors_subclass_builtins_and_name_location():
    e = DataError("bad value 'x'", path="in.csv", row=3, column="lat")
    assert isinstance(e, ValueError) and isinstance(e, VeilError)
    assert str(e) == "file in.csv, row 3, column 'lat': bad value 'x'"
    assert issubclass(ParameterError, ValueError)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "1", None, True])
def test_epsilon_rejected(bad):
    with pytest.raises(ParameterError, match="epsilon"):
        check_epsilon(bad)


def test_epsilon_inf_only_on_request():
    assert check_epsilon(math.inf, allow_inf=True) == math.inf


@pytest.mark.parametrize("bad", [0, 1, -0.1, 1.5, float("nan")])
def test_delta_rejected(bad):
    with pytest.raises(ParameterError, match="delta"):
        check_delta(bad)


@pytest.mark.parametrize("bad, msg", [
    ([1, -2, 3], r"counts\[1\] must be >= 0, got -2"),
    ([1.5, 2], r"counts\[0\] must be an integer count"),
    ([], "empty"),
    ([[1, 2]], "one-dimensional"),
    ([1, float("nan")], "finite"),
    (["a", "b"], "integer counts"),
])
def test_counts_rejected(bad, msg):
    with pytest.raises(ParameterError, match=msg):
        check_counts(bad)


def test_counts_accept_integral_floats():
    assert check_counts([1.0, 2.0]).dtype == np.int64


def test_finite_array_reports_index():
    with pytest.raises(ParameterError, match="index 2"):
        check_finite_array([0.0, 1.0, np.inf], "xs")


def test_int_and_choice():
    assert check_int(3.0, "k") == 3
    with pytest.raises(ParameterError, match="k must be >= 2, got 1"):
        check_int(1, "k", minimum=2)
    with pytest.raises(ParameterError, match="did you mean 'noisefirst'"):
        check_choice("noisefirts", "method", ("identity", "noisefirst"))


def test_probability_vector():
    with pytest.raises(ParameterError, match="sum to 1"):
        check_probability_vector([0.5, 0.6], "p")


def test_budget_frozen_validated_and_split_never_exceeds():
    with pytest.raises(ParameterError):
        PureDP(0)
    with pytest.raises(ParameterError):
        GeoDP(float("nan"))
    # an infinite budget was accepted (docs/core.md says refused): no privacy, refused now
    for budget in (PureDP, GeoDP):
        with pytest.raises(ParameterError, match="inf"):
            budget(float("inf"))
    b = PureDP(0.3)
    with pytest.raises(Exception):
        b.epsilon = 2  # frozen
    for w in ([1, 1, 1], [0.1, 0.7, 0.2], [3, 7], [1] * 13):
        parts = b.split(w)
        assert math.fsum(p.epsilon for p in parts) <= 0.3
        assert math.isclose(math.fsum(p.epsilon for p in parts), 0.3, rel_tol=1e-12)
    with pytest.raises(ParameterError, match="weights"):
        b.split([1, 0])
    assert GeoDP(0.01).at(100) == pytest.approx(1.0)


def test_accountant_ledger():
    acc = Accountant(PureDP(1.0))
    acc.spend(0.25, "a")
    acc.spend(PureDP(0.75), "b")
    assert acc.remaining == pytest.approx(0.0)
    with pytest.raises(BudgetExceededError, match="'c'"):
        acc.spend(0.01, "c")
    assert [e.label for e in acc.ledger] == ["a", "b"]
    assert json.dumps(acc.to_dict())


def test_release_metadata_is_json():
    r = Release(np.arange(3), "x", PureDP(1.0), {"k": np.int64(3)}, {"a": 0.5},
                noise_scale=1.0, noise_variance=2.0, notes=("n",))
    meta = json.loads(r.sidecar_json())
    assert meta["budget"] == {"kind": "pure-dp", "epsilon": 1.0}
    assert meta["parameters"] == {"k": 3}
    assert "value_shape=(3,)" in repr(r)


def test_rng_default_is_not_fixed_and_seed_is_reproducible():
    a = make_rng().integers(0, 2**62, size=4)
    b = make_rng().integers(0, 2**62, size=4)
    assert not np.array_equal(a, b)
    assert np.array_equal(make_rng(seed=7).integers(0, 2**62, 4),
                          make_rng(seed=7).integers(0, 2**62, 4))
    g = make_rng(seed=1)
    kids = spawn(g, 3)
    draws = [k.integers(0, 2**62, 4) for k in kids]
    assert len({tuple(d) for d in draws}) == 3
    with pytest.raises(ParameterError):
        make_rng(seed=-1)
    with pytest.raises(ParameterError):
        make_rng("abc")


def test_js_matches_scipy_squared_and_decomposes():
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = rng.dirichlet(np.ones(7))
        q = rng.dirichlet(np.ones(7))
        assert bin_terms(p, q, "js").sum() == pytest.approx(jensenshannon(p, q) ** 2, rel=1e-9)
    assert histogram_distance([3, 1], [3, 1], "js") == 0
    assert histogram_distance([1, 0], [0, 1], "l1") == pytest.approx(2.0)
    assert histogram_distance([1, 0], [0, 1], "hellinger") == pytest.approx(1.0)
    assert histogram_distance([1, 1], [1, 0], "kl") == math.inf or np.isinf(
        histogram_distance([1, 1], [1, 0], "kl"))
    assert set(BIN_DISTANCES) == {"js", "kl", "l1", "l2", "chi2", "hellinger"}
    with pytest.raises(ParameterError, match="different domains"):
        histogram_distance([1, 2], [1, 2, 3])


def test_point_distances():
    # one degree of latitude is about 111.2 km
    assert haversine_m(0, 0, 1, 0) == pytest.approx(111_195, rel=1e-3)
    assert planar_distance([[0, 0]], [[3, 4]])[0] == 5


def test_geometric_values_near_the_int64_limit_are_refused_not_wrapped(tmp_path, capsys):
    """A count of 9223372036854775000 came back as -9223372036854690967: int64 addition of
    the noise wrapped silently. Values above 2**62 in absolute value are now refused before
    any noise (and, in `veil noise counts`, before the ledger is charged, naming the row)."""
    from veil.cli import main
    from veil.ledger import open_ledger
    from veil.mechanisms import GEOMETRIC_MAX_VALUE, geometric_mechanism

    for bad in ([2**62 + 1], [-(2**62) - 1], np.array([1e30]), np.array([2**63 - 1000])):
        with pytest.raises(ParameterError, match=r"at most 2\*\*62"):
            geometric_mechanism(bad, epsilon=1e-6, rng=make_rng(seed=0))
    ok = geometric_mechanism(np.array([GEOMETRIC_MAX_VALUE, -GEOMETRIC_MAX_VALUE]),
                             epsilon=1e-6, rng=make_rng(seed=0)).value
    assert ok[0] > 2**61 and ok[1] < -(2**61)
    f = tmp_path / "c.csv"
    f.write_text("count\n5\n9223372036854775000\n")
    with pytest.raises(SystemExit) as exc:
        main(["noise", "counts", str(f), "-c", "count", "-e", "1", "-o", str(tmp_path / "o.csv")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "row 2" in err and "above 2**62" in err and not (tmp_path / "o.csv").exists()
    with open_ledger() as led:
        assert led.datasets() == []


def test_counts_whose_total_passes_2_62_are_refused_before_the_charge(tmp_path, capsys):
    """Two bins of 2**62 - 1: HB's tree sums wrapped or failed inside the mechanism after the
    ledger was charged (identity and DAWA published, HB and AHP stopped); the total is now
    checked with the counts, before anything is charged."""
    from veil.cli import main
    from veil.ledger import open_ledger

    with pytest.raises(ParameterError, match=r"total about 9\.223e\+18, above 2\*\*62"):
        check_counts([2**62 - 1, 2**62 - 1, 3])
    assert check_counts([2**61, 2**61]).sum() == 2**62
    f = tmp_path / "c.csv"
    f.write_text(f"count\n{2**62 - 1}\n{2**62 - 1}\n3\n")
    for method in ("identity", "hb"):
        with pytest.raises(SystemExit) as exc:
            main(["histogram", "publish", str(f), "-c", "count", "--counts", "-e", "1", "-m",
                  method, "-o", str(tmp_path / "o.csv")])
        assert exc.value.code == 2 and "above 2**62" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()
    with open_ledger() as led:
        assert led.datasets() == []
