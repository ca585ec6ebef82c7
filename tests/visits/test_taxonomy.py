"""Category trees: loading, exact matching with did-you-mean, subtrees, 2012 aliases."""

import json

import pytest

from veil.errors import DataError, ParameterError
from veil.visits.taxonomy import FOURSQUARE_2012_ALIASES, Taxonomy, foursquare_taxonomy


@pytest.fixture(scope="module")
def fsq():
    return foursquare_taxonomy()


def test_foursquare_tree_shape(fsq):
    assert len(fsq) == 970
    assert int((fsq.parents < 0).sum()) == 10
    assert int(fsq.depth.max()) <= 4
    assert fsq.ancestor("Hospital Ward", 0) == "Professional & Other Places"
    assert fsq.ancestor("Hospital Ward", 2) == "Hospital"


def test_flat_csv_equals_json(fsq):
    from veil.datasets import shared_data_path

    flat = Taxonomy.from_csv(shared_data_path("foursquare-nyc",
                                              "foursquare_categories_v2_flat.csv"))
    assert flat.names == fsq.names
    assert flat.parents.tolist() == fsq.parents.tolist()


def test_internal_node_selects_every_leaf_below(fsq):
    leaves = fsq.leaves_under(["Medical Center"])
    assert {"Hospital Ward", "Dentist's Office", "Rehab Center"} <= leaves
    assert "Hospital" not in leaves  # internal (has Hospital Ward below)
    sub = fsq.subtree(["Medical Center"])
    assert "Hospital" in sub and "Medical Center" in sub
    assert len(fsq.subtree(["Medical Center", "Spiritual Center"])) == 35
    assert fsq.leaves_under(["Church"]) == {"Church"}


def test_unknown_name_did_you_mean(fsq):
    with pytest.raises(ParameterError, match="did you mean 'Medical Center'"):
        fsq.subtree(["Medical Centre"])
    with pytest.raises(ParameterError, match="unknown category 'zzzzqqq'$"):
        fsq.resolve("zzzzqqq")
    with pytest.raises(ParameterError):  # exact, case-sensitive
        fsq.resolve("hospital")


def test_2012_aliases_cover_shared_files(fsq):
    import duckdb

    from veil.datasets import shared_data_path

    p = shared_data_path("foursquare-nyc", "woojink_nyc_checkins_category_hour.csv")
    cats = [r[0] for r in duckdb.sql(f"SELECT DISTINCT Category FROM '{p}'").fetchall()]
    canon, missing = fsq.match_labels(cats)
    assert missing == []
    assert len(cats) == 251
    for old, new in FOURSQUARE_2012_ALIASES.items():
        assert fsq.resolve(old) == new
    # an old name selects the same node
    assert fsq.sensitive_mask(["Subway", "Bar"], ["Travel & Transport"]).tolist() == [True, False]
    # power check: without aliases the 2012 names are missing
    bare = Taxonomy(fsq.names, fsq.parents)
    assert len(bare.match_labels(cats)[1]) == 12


def test_sensitive_mask_with_internal_checkin_names(fsq):
    labels = ["Medical Center", "Hospital", "Bar", "Church", "Unknown Place"]
    assert fsq.sensitive_mask(labels, ["Medical Center", "Spiritual Center"]).tolist() == \
        [True, True, False, True, False]


def test_user_trees(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"Health": {"Clinic": {}, "Pharmacy": {}},
                                                 "Leisure": {"Bar": {}}}))
    (tmp_path / "b.json").write_text(json.dumps([{"name": "Health", "children": [
        {"name": "Clinic"}, {"name": "Pharmacy"}]}, {"name": "Leisure", "children": [
            {"name": "Bar"}]}]))
    (tmp_path / "c.csv").write_text("name,parent\nHealth,\nClinic,Health\nPharmacy,Health\n"
                                    "Leisure,\nBar,Leisure\n")
    (tmp_path / "d.csv").write_text("path\nHealth > Clinic\nHealth > Pharmacy\nLeisure > Bar\n")
    for f in ("a.json", "b.json", "c.csv", "d.csv"):
        t = Taxonomy.load(tmp_path / f)
        assert t.leaves_under(["Health"]) == {"Clinic", "Pharmacy"}, f
        assert t.ancestor("Bar", 0) == "Leisure"


@pytest.mark.parametrize("content, suffix, match", [
    ("{not json", ".json", "not valid JSON"),
    ("name,parent\nA,\nB,Z\n", ".csv", "parent 'Z'"),
    ("foo,bar\n1,2\n", ".csv", "needs columns"),
    ("name,parent\nA,\nA,\n", ".csv", "appears twice"),
    ("name,parent\nA,B\nB,A\n", ".csv", "cycle|no root"),
])
def test_bad_trees(tmp_path, content, suffix, match):
    p = tmp_path / ("t" + suffix)
    p.write_text(content)
    with pytest.raises(DataError, match=match):
        Taxonomy.load(p)


def test_missing_file_and_bad_extension(tmp_path):
    with pytest.raises(DataError, match="not found"):
        Taxonomy.load(tmp_path / "none.json")
    with pytest.raises(ParameterError, match=".json or .csv"):
        Taxonomy.load(tmp_path / "t.yaml")
