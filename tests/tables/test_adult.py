"""Real data: UCI Adult from the shared data folder (read in place)."""

import numpy as np
import pyarrow as pa
import pytest

from veil.tables import check_constraints, diva, k_anonymize
from veil.tables.adult import ADULT_QI, ADULT_QI8, load_adult
from veil.tables.experiment import generate_constraints


@pytest.fixture(scope="module")
def adult():
    return load_adult()


@pytest.fixture(scope="module")
def hierarchies():
    from veil.datasets import shared_data_path
    from veil.tables import load_hierarchies

    return load_hierarchies(shared_data_path("adult", "hierarchies"), ADULT_QI8)


def test_adult_loader(adult):
    assert len(adult) == 30_162
    assert not (adult[ADULT_QI].astype(str) == "?").any().any()
    assert adult["sex"].iloc[0] == "Male"  # padding stripped


@pytest.mark.slow
def test_adult_k10_ten_constraints_quality(adult):
    """DIVA meets every constraint within 1.2x the optimal cut's suppression (its speed is
    measured by benchmarks/tables.py, not asserted here)."""
    cs = generate_constraints(adult, ADULT_QI, m=10, k=10, rng=np.random.default_rng(42))
    base = k_anonymize(adult, k=10, qi=ADULT_QI, constraints=cs)
    res = diva(pa.Table.from_pandas(adult, preserve_index=False), k=10, qi=ADULT_QI,
               constraints=cs)
    assert all(s.satisfied for s in check_constraints(res.table, cs))
    assert res.metrics["min_class_size"] >= 10
    assert res.metrics["suppressed_share"] <= 1.2 * base.metrics["suppressed_share"]


@pytest.mark.slow
@pytest.mark.parametrize("max_suppression, metric", [(0.0, "granularity"), (0.05, "granularity"),
                                                     (0.05, "nue")])
def test_adult_global_recoding_is_the_lattice_optimum(adult, hierarchies, max_suppression,
                                                      metric):
    """Acceptance: k = 5, the 8 QIs, the shared hierarchies: the search's loss is the minimum
    over every node of the lattice (exhaustive search)."""
    from veil.tables import global_recoding

    kw = dict(k=5, qi=ADULT_QI8, hierarchies=hierarchies, max_suppression=max_suppression,
              metric=metric)
    fl = global_recoding(adult, **kw)
    ex = global_recoding(adult, search="exhaustive", **kw)
    assert ex.stats["evaluated"] == ex.stats["lattice_nodes"] == 6480
    assert fl.stats["loss"] == pytest.approx(ex.stats["loss"], rel=1e-12)
    assert fl.stats["evaluated"] + fl.stats["monotone_checks"] < 6480
    out = fl.table
    assert out.groupby(ADULT_QI8).size().min() >= 5
    assert int((out[ADULT_QI8] == "*").all(axis=1).sum()) <= max_suppression * len(adult)


@pytest.mark.slow
def test_adult_local_recoding_loses_at_most_mondrian(adult, hierarchies):
    from veil.tables import local_recoding, mondrian_generalize

    loc = local_recoding(adult, k=5, qi=ADULT_QI8, hierarchies=hierarchies)
    mon = mondrian_generalize(adult, k=5, qi=ADULT_QI8, hierarchies=hierarchies)
    for r in (loc, mon):
        assert r.table.groupby(ADULT_QI8).size().min() >= 5
    for key in ("granularity", "nue_bits"):
        assert loc.stats["utility"][key] <= mon.stats["utility"][key]


@pytest.mark.slow
def test_adult_models_recomputed_per_class(adult, hierarchies):
    """l-diversity and t-closeness of the Adult outputs, recomputed class by class."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_generalize import _model_holds

    from veil.tables import (DistinctLDiversity, EntropyLDiversity, TCloseness, global_recoding,
                             local_recoding)

    for m in (DistinctLDiversity("income", 2), TCloseness("income", 0.15),
              EntropyLDiversity("relationship", 3)):
        g = global_recoding(adult, k=5, qi=ADULT_QI8, hierarchies=hierarchies, models=[m],
                            max_suppression=0.05)
        loc = local_recoding(adult, k=5, qi=ADULT_QI8, hierarchies=hierarchies, models=[m],
                             max_suppression=0.01)
        for r in (g, loc):
            assert _model_holds(adult, r.table, ADULT_QI8, m)
        assert not _model_holds(adult, local_recoding(adult, k=5, qi=ADULT_QI8,
                                                      hierarchies=hierarchies).table,
                                ADULT_QI8, m)


@pytest.mark.slow
def test_adult_local_recoding_meets_every_diva_constraint(adult, hierarchies):
    """The 5 constraints of the benchmark (k = 5, seed 0): DIVA meets them, and so does local
    recoding now (formerly 3 of the 5 lower bounds, proved=False); its information loss on
    the hierarchies is below DIVA's and Mondrian's (both scored on the same hierarchies)."""
    from veil.tables import local_recoding, mondrian_generalize
    from veil.tables.data import as_columns, encode_qi
    from veil.tables.metrics import utility_metrics

    cs = generate_constraints(adult, ADULT_QI8, m=5, k=5, rng=np.random.default_rng(0))
    d = diva(adult, k=5, qi=ADULT_QI8, constraints=cs, seed=0)
    assert all(s.satisfied for s in check_constraints(d.table, cs))
    loc = local_recoding(adult, k=5, qi=ADULT_QI8, hierarchies=hierarchies, constraints=cs,
                         seed=0)
    assert all(s.satisfied for s in check_constraints(loc.table, cs))
    assert loc.table.groupby(ADULT_QI8).size().min() >= 5
    enc = encode_qi(as_columns(adult), ADULT_QI8)
    hier = [hierarchies[a].encode(list(enc.values[j]), column=a) for j, a in enumerate(ADULT_QI8)]
    d_util = utility_metrics(enc.codes, hier, levels=np.zeros(enc.codes.shape, dtype=np.int64),
                             suppressed=d.suppressed, names=enc.names)
    mon = mondrian_generalize(adult, k=5, qi=ADULT_QI8, hierarchies=hierarchies)
    for key in ("granularity", "nue_bits"):
        assert loc.stats["utility"][key] < d_util[key]
        assert loc.stats["utility"][key] < mon.stats["utility"][key]
