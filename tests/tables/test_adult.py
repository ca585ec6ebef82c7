"""Real data: UCI Adult from the shared data folder (read in place)."""

import time

import numpy as np
import pyarrow as pa
import pytest

from veil.tables import check_constraints, diva, k_anonymize
from veil.tables.adult import ADULT_QI, load_adult
from veil.tables.experiment import generate_constraints


@pytest.fixture(scope="module")
def adult():
    return load_adult()


def test_adult_loader(adult):
    assert len(adult) == 30_162
    assert not (adult[ADULT_QI].astype(str) == "?").any().any()
    assert adult["sex"].iloc[0] == "Male"  # padding stripped


@pytest.mark.slow
def test_adult_k10_ten_constraints_speed_and_quality(adult):
    cs = generate_constraints(adult, ADULT_QI, m=10, k=10, rng=np.random.default_rng(42))
    base = k_anonymize(adult, k=10, qi=ADULT_QI, constraints=cs)
    t = time.perf_counter()
    res = diva(pa.Table.from_pandas(adult, preserve_index=False), k=10, qi=ADULT_QI,
               constraints=cs)
    elapsed = time.perf_counter() - t
    assert elapsed < 30
    assert all(s.satisfied for s in check_constraints(res.table, cs))
    assert res.metrics["min_class_size"] >= 10
    assert res.metrics["suppressed_share"] <= 1.2 * base.metrics["suppressed_share"]
