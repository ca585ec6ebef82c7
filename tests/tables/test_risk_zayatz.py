"""Zayatz's population-uniqueness estimate at tiny sampling fractions.

`veil table risk --sampling-fraction 1e-300` was an internal error (the population size, a
Python int above 2^63, reached scipy's hypergeom as an object array) and `1e-15` ran for about
8 minutes on six rows. The estimate is now computed from the telescoped ratio
H(1; i) / H(1; 1) = i prod_{s<i} (1 - (n-1)/(N-s)); these tests compare it with exact rational
arithmetic (math.comb) and with its limit for N -> inf, (c1 / n)^2, without timing anything.
"""

import io
import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from cli_cases import exit_code as run

from veil.tables import reidentification_risk

SMALL = ("age,sex,zip,disease\n30,M,1000,flu\n30,M,1000,cold\n31,F,1001,flu\n31,F,1001,hiv\n"
         "32,M,1002,flu\n32,F,1002,cancer\n")


def exact_zayatz(sizes, pi):
    """(sample uniques in population, population uniques) in exact rational arithmetic."""
    n = sum(sizes)
    c = np.bincount(sizes)
    c1 = int(c[1]) if len(c) > 1 else 0
    if c1 == 0:
        return 0.0, 0.0
    N = max(int(round(n / pi)), n)

    def H(i):  # P(a population class of size i shows exactly 1 row in the sample)
        return Fraction(i * math.comb(N - i, n - 1), math.comb(N, n))

    cond = c1 * H(1) / sum(int(c[i]) * H(i) for i in range(1, len(c)) if c[i])
    u = c1 * cond
    return float(u / n), float(u / Fraction(pi) / N)


def table_of(sizes):
    return pd.DataFrame({"a": [f"v{j}" for j, s in enumerate(sizes) for _ in range(s)]})


def small():
    return pd.read_csv(io.StringIO(SMALL), dtype=str)


@pytest.mark.parametrize("pi", [1e-10, 1e-15, 1e-100, 1e-300, 1e-320, 5e-324])
def test_tiny_fraction_returns_the_limit(pi):
    """N -> inf: every class of size i shows one row with probability ~ i n / N, so the share
    of sample uniques that are population uniques tends to c1 / n; on the 6-row table
    (classes 2, 2, 1, 1) both figures tend to (2/6)^2 = 1/9."""
    u = reidentification_risk(small(), ["age", "sex"], sampling_fraction=pi)["uniqueness"]
    assert u["sample_uniques_in_population"] == pytest.approx(1 / 9, rel=1e-9)
    assert u["population_uniques"] == pytest.approx(1 / 9, rel=1e-9)
    assert u["sample_uniques"] == pytest.approx(2 / 6)


def test_limit_on_larger_tables():
    rng = np.random.default_rng(5)
    sizes = rng.choice([1, 1, 1, 2, 3, 7, 40], 300).tolist()
    n, c1 = sum(sizes), sizes.count(1)
    u = reidentification_risk(table_of(sizes), ["a"], sampling_fraction=1e-300)["uniqueness"]
    assert u["sample_uniques_in_population"] == pytest.approx((c1 / n) ** 2, rel=1e-9)
    assert u["population_uniques"] == pytest.approx((c1 / n) ** 2, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_matches_exact_rational_arithmetic(seed):
    rng = np.random.default_rng(seed)
    for pi in (1.0, 0.7, 0.1, 1e-3, 1e-7, 1e-12, 1e-15):
        sizes = rng.choice([1, 1, 2, 3, 5, 9], int(rng.integers(1, 25))).tolist()
        u = reidentification_risk(table_of(sizes), ["a"], sampling_fraction=pi)["uniqueness"]
        s_exact, p_exact = exact_zayatz(sizes, pi)
        assert u["sample_uniques_in_population"] == pytest.approx(s_exact, rel=1e-11, abs=0)
        assert u["population_uniques"] == pytest.approx(p_exact, rel=1e-11, abs=0)


def test_population_barely_larger_than_the_sample():
    """N close to n: a class of size i > N - n + 1 cannot show one row (r_i = 0)."""
    sizes = [1, 1, 4, 6]  # n = 12
    for pi in (1.0, 12 / 13, 12 / 14, 0.5):
        u = reidentification_risk(table_of(sizes), ["a"], sampling_fraction=pi)["uniqueness"]
        s_exact, p_exact = exact_zayatz(sizes, pi)
        assert u["sample_uniques_in_population"] == pytest.approx(s_exact, rel=1e-12)
        assert u["population_uniques"] == pytest.approx(p_exact, rel=1e-12)


@pytest.mark.parametrize("pi", ["1e-300", "1e-15", "5e-324"])
def test_cli_tiny_sampling_fraction(tmp_path, capsys, pi):
    p = tmp_path / "small.csv"
    p.write_text(SMALL)
    out = tmp_path / "risk.json"
    assert run(["table", "risk", str(p), "--qi", "age,sex", "--sampling-fraction", pi,
                "-o", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["uniqueness"]["population_uniques"] == pytest.approx(1 / 9, rel=1e-9)
    assert "internal error" not in capsys.readouterr().err
