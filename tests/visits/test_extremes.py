"""Extreme but legal inputs of the visit commands (each case was wrong before: see the
docstrings); every CLI failure is one line, exit 2, and writes nothing."""

from __future__ import annotations

import json
from decimal import Decimal, getcontext

import numpy as np
import pytest
from cli_cases import run_main as run

from veil.distances import BIN_DISTANCES, bin_terms
from veil.errors import ParameterError
from veil.visits import Resample, hide


def fails_cleanly(tmp_path, capsys, argv, *pieces):
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = run(argv, capsys)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("veil: error: "), err
    assert "internal error" not in err
    for piece in pieces:
        assert piece in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    return err


# ------------------------------------------------------------------ step of the quality cost
@pytest.mark.parametrize("distance", sorted(BIN_DISTANCES))
def test_step_terms_equal_the_difference_of_terms(distance):
    from veil.distances import step_terms

    g = np.random.default_rng(3)
    p = g.random(4000)
    q = g.random(4000)
    p[::7] = 0
    q[::5] = 0
    for d in (1e-1, 1e-3):
        direct = bin_terms(p, q + d, distance) - bin_terms(p, q, distance)
        step = step_terms(p, q, d, distance)
        fin = np.isfinite(direct)
        assert np.array_equal(np.isfinite(step), fin)
        assert np.allclose(step[fin], direct[fin], rtol=1e-9, atol=1e-15)


def _js_cost(h: int, N: int, x: int, S: int) -> Decimal:
    """The js term of one bin in 50-digit decimals."""
    p, q = Decimal(h) / Decimal(N), Decimal(x) / Decimal(S)
    m = (p + q) / 2
    t = Decimal(0)
    if p:
        t += p * (p / m).ln()
    if q:
        t += q * (q / m).ln()
    return t / 2


@pytest.mark.parametrize("r", [10**6, 10**10, 10**15])
def test_hide_is_exact_with_a_huge_redistribution(r):
    """The allocation is optimal (no unit can move to a cheaper bin, checked in 50-digit
    decimals). With 10^15 visits to place it returned [618119874475207, 381880125524801] --
    its js loss 0.0749041 against 0.0748818 at the optimum -- and reported it exact: the
    marginal cost was the difference of two float costs."""
    getcontext().prec = 50
    h = [5, 3, 0, 2]
    res = hide(h, sensitive=[3], r=r)
    out = res.histogram.tolist()
    N, S = sum(h), sum(out)
    assert S == N - 2 + r and out[3] == 0
    free = [0, 1, 2]
    up = {i: _js_cost(h[i], N, out[i] + 1, S) - _js_cost(h[i], N, out[i], S) for i in free}
    down = {i: _js_cost(h[i], N, out[i], S) - _js_cost(h[i], N, out[i] - 1, S)
            for i in free if out[i] > h[i]}
    assert max(down.values()) <= min(up.values()) * (1 + Decimal("1e-12")), (out, down, up)
    if r == 10**15:
        assert out == [625000000000005, 375000000000003, 0, 0]


def test_hide_refuses_a_size_float64_cannot_hold():
    """r = 10^20 stopped with "internal error: OverflowError"; 2^63 - 1 said "only
    -4611686018427387904 of ... units can be placed"."""
    for r in (10**20, 2**63 - 1, 2**53):
        with pytest.raises(ParameterError, match=r"below 2\^53"):
            hide([5, 3, 0, 2], sensitive=[3], r=r)
    with pytest.raises(ParameterError, match="resample size must be <= 9007199254740991"):
        Resample(size=10**20)


# ------------------------------------------------------------------ files and options
def test_rollup_depth_below_zero_is_an_error(tmp_path, capsys):
    """--rollup-depth -1 looped for ever past the taxonomy's root."""
    (tmp_path / "tax.csv").write_text("name,parent\nPlaces,\nBar,Places\nChurch,Places\n")
    (tmp_path / "h.json").write_text(json.dumps({"Bar": 5, "Church": 2}))
    fails_cleanly(tmp_path, capsys, ["visits", "hide", tmp_path / "h.json", "-s", "Church",
                                     "--taxonomy", tmp_path / "tax.csv", "--rollup-depth", "-1",
                                     "-o", tmp_path / "o.csv"], "--rollup-depth", "-1")
    from veil.visits.taxonomy import Taxonomy

    tax = Taxonomy.from_nested({"Places": {"Bar": {}, "Church": {}}})
    assert tax.ancestor("Bar", 0) == "Places"
    with pytest.raises(ParameterError, match="depth must be >= 0"):
        tax.ancestor("Bar", -1)


@pytest.mark.parametrize("name, text", [
    ("big.json", "[9007199254740993, 0, 1]"),
    ("big2.json", '{"a": 9007199254740993, "b": 1}'),
    ("big.csv", "category,count\na,9007199254740993\nb,0\n"),
    ("sum.json", "[4503599627370496, 4503599627370496, 1]"),
])
def test_counts_float64_cannot_hold_are_refused(tmp_path, capsys, name, text):
    """A count of 2^53 + 1 was published as 2^53 (and "the size is kept" failed)."""
    (tmp_path / name).write_text(text)
    cats = ["--categories", "a,b"] if name in ("big2.json", "big.csv") else []
    sens = "b" if cats else "1"
    fails_cleanly(tmp_path, capsys, ["visits", "hide", tmp_path / name, "-s", sens, *cats,
                                     "-o", tmp_path / "o.csv"], name, "2^53")


def test_a_target_with_an_infinite_total_is_refused(tmp_path, capsys):
    """[1e308, 1e308, 1, 1] (finite values, infinite total) gave the input back, "certified
    optimal"."""
    (tmp_path / "h.json").write_text("[6, 2, 0, 2]")
    (tmp_path / "t.json").write_text("[1e308, 1e308, 1, 1]")
    fails_cleanly(tmp_path, capsys, ["visits", "resemble", tmp_path / "h.json", "--target",
                                     tmp_path / "t.json", "--quality-bound", "0.05", "-o",
                                     tmp_path / "o.csv"], "t.json", "scale the weights down")


def test_resemble_refuses_a_target_whose_total_overflows():
    from veil.visits import resemble

    with pytest.raises(ParameterError, match="scale them down"):
        resemble([6, 2, 0, 2], [1e308, 1e308, 1, 1], quality_bound=0.05)


def test_a_json_key_given_twice_is_refused(tmp_path, capsys):
    """{"Bar": 5, "Bar": 3, ...} was read as Bar = 3: five visits vanished."""
    (tmp_path / "d.json").write_text('{"Bar": 5, "Bar": 3, "Church": 1, "Park": 1}')
    fails_cleanly(tmp_path, capsys, ["visits", "hide", tmp_path / "d.json", "-s", "Church",
                                     "--categories", "Bar,Church,Park", "-o",
                                     tmp_path / "o.csv"], "d.json", "'Bar' twice")


def test_user_ids_are_read_as_written(tmp_path, capsys):
    """1000 and 1e3, 2.50 and 2.5 were merged into two users published as 1000.0 and 2.5."""
    (tmp_path / "c.csv").write_text("user,category\n1000,Bar\n1000,Cafe\n1e3,Cafe\n2.50,Cafe\n"
                                    "2.5,Cafe\n2.5,Bar\n")
    code, _, err = run(["visits", "hide", tmp_path / "c.csv", "-s", "Bar", "--categories",
                        "Bar,Cafe", "-o", tmp_path / "o.csv"], capsys)
    assert code == 0, err
    import csv

    with open(tmp_path / "o.csv", newline="") as fh:
        users = {row["user"] for row in csv.DictReader(fh)}
    assert users == {"1000", "1e3", "2.50", "2.5"}


def test_a_checkin_table_without_the_user_column_says_so(tmp_path, capsys):
    """It said only "a CSV histogram needs a category column and a count/weight column"."""
    (tmp_path / "c.csv").write_text("label,category\nu1,Bar\nu2,Cafe\n")
    fails_cleanly(tmp_path, capsys, ["visits", "hide", tmp_path / "c.csv", "-s", "Bar",
                                     "--categories", "Bar,Cafe", "-o", tmp_path / "o.csv"],
                  "c.csv", "--user-column", "'user'")


def test_an_unknown_category_names_the_target_file(tmp_path, capsys):
    """An unknown category in a per-user --target file was reported against the input file."""
    (tmp_path / "c.csv").write_text("user,category\nu1,Bar\nu1,Cafe\nu2,Cafe\n")
    (tmp_path / "t.csv").write_text("user,category,weight\nu1,Bar,1\nu1,Zoo,2\nu2,Cafe,1\n")
    (tmp_path / "t.json").write_text('{"Bar": 1, "Zoo": 2}')
    for t in ("t.csv", "t.json"):
        err = fails_cleanly(tmp_path, capsys, ["visits", "resemble", tmp_path / "c.csv",
                                               "--target", tmp_path / t, "--categories",
                                               "Bar,Cafe", "--quality-bound", "0.1", "-o",
                                               tmp_path / "o.csv"], "'Zoo'", f"file {tmp_path / t}")
        assert "c.csv" not in err


def test_a_json_checkin_table_is_read_as_checkins(tmp_path, capsys):
    """A JSON array of check-in rows was read as one histogram ("value for 0 must be a
    number"); it gives the same release as the same rows in CSV."""
    rows = [("u1", "Bar"), ("u1", "Cafe"), ("u1", "Cafe"), ("u2", "Cafe"), ("u2", "Bar")]
    (tmp_path / "c.json").write_text(json.dumps([{"user": u, "category": c} for u, c in rows]))
    (tmp_path / "c.csv").write_text("user,category\n" + "".join(f"{u},{c}\n" for u, c in rows))
    outs = []
    for name in ("c.json", "c.csv"):
        out = tmp_path / f"o-{name}.csv"
        code, _, err = run(["visits", "hide", tmp_path / name, "-s", "Bar", "--categories",
                            "Bar,Cafe", "-o", out], capsys)
        assert code == 0, err
        outs.append(out.read_text())
    assert outs[0] == outs[1] and "u2" in outs[0]
    (tmp_path / "n.json").write_text(json.dumps([{"usr": "u1", "category": "Bar"}]))
    fails_cleanly(tmp_path, capsys, ["visits", "hide", tmp_path / "n.json", "-s", "Bar",
                                     "--categories", "Bar,Cafe", "-o", tmp_path / "x.csv"],
                  "n.json", "check-in table", "--user-column")


def test_messages_show_values_as_the_user_wrote_them(tmp_path, capsys):
    """A missing per-user target printed "e.g. np.str_('u2')"; a NaN target weight was said
    to be "not below 2^53"."""
    (tmp_path / "c.csv").write_text("user,category\nu1,Bar\nu1,Cafe\nu2,Cafe\n")
    (tmp_path / "t.csv").write_text("user,category,weight\nu1,Bar,1\n")
    err = fails_cleanly(tmp_path, capsys, ["visits", "resemble", tmp_path / "c.csv", "--target",
                                           tmp_path / "t.csv", "--categories", "Bar,Cafe",
                                           "--quality-bound", "0.1", "-o", tmp_path / "o.csv"],
                        "e.g. 'u2'")
    assert "np." not in err
    (tmp_path / "h.json").write_text("[6, 2, 0, 2]")
    (tmp_path / "n.json").write_text("[1, NaN, 1, 1]")
    fails_cleanly(tmp_path, capsys, ["visits", "resemble", tmp_path / "h.json", "--target",
                                     tmp_path / "n.json", "--quality-bound", "0.1", "-o",
                                     tmp_path / "o.csv"], "n.json", "finite number, got nan")


def test_a_resample_mix_without_a_size_is_refused_even_at_zero(tmp_path, capsys):
    """`visits hide --resample-mix 0` without --resample-size was accepted (and ignored), while
    `batch visits` refuses it: the two commands take the option the same way."""
    (tmp_path / "c.csv").write_text("user,category\nu1,Bar\nu1,Cafe\nu2,Cafe\n")
    fails_cleanly(tmp_path, capsys, ["visits", "hide", tmp_path / "c.csv", "-s", "Bar",
                                     "--categories", "Bar,Cafe", "--resample-mix", "0", "-o",
                                     tmp_path / "o.csv"], "--resample-size")
