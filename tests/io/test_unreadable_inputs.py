"""Input files that cannot be read fail with one line naming the file (JSON and CSV).

Every small JSON file a command reads (a visits input or target, a taxonomy, a map's
sidecar) fails with one line naming the file when it is not UTF-8, not JSON or a folder.

Found by the slow command fuzz: `veil visits resemble in.json` on a JSON file with a Latin-1
byte printed "veil: error: 'utf-8' codec can't decode byte 0xe9 ..." without the file's name
(the JSON readers of visits, taxonomy, report and --region each had their own error mapping;
they now share :func:`veil.io.read.read_json`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_cases import run_veil  # noqa: E402

from veil.errors import DataError  # noqa: E402
from veil.io.read import read_json  # noqa: E402

BAD = {
    "latin1": b'{"Bar": 1, "caf\xe9": 2}',
    "not-json": b'{"Bar": 1,',
    "nul": b'{"Bar": \x00 1}',
}


def _visits(folder: Path, which: str):
    (folder / "target.json").write_text(json.dumps({"Bar": 1, "Park": 2}))
    (folder / "hist.json").write_text(json.dumps({"Bar": 2, "Park": 1}))
    argv = ["visits", "resemble", "hist.json", "--target", "target.json", "--quality-bound",
            "0.5", "-o", "out.csv"]
    return argv, {"input": "hist.json", "target": "target.json"}[which]


@pytest.mark.parametrize("damage", sorted(BAD))
@pytest.mark.parametrize("which", ["input", "target"])
def test_visits_json_files_that_cannot_be_read_are_named(tmp_path, damage, which):
    argv, name = _visits(tmp_path, which)
    (tmp_path / name).write_bytes(BAD[damage])
    res = run_veil(argv, tmp_path)
    lines = res.err.strip().splitlines()
    assert res.code == 2 and len(lines) == 1, res.err
    assert lines[0].startswith("veil: error: file ") and name in lines[0], lines[0]
    assert "codec" not in lines[0]
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("damage", sorted(BAD))
def test_a_taxonomy_that_cannot_be_read_is_named(tmp_path, damage):
    (tmp_path / "tax.json").write_bytes(BAD[damage])
    (tmp_path / "c.csv").write_text("user,category\nu1,Bar\n")
    res = run_veil(["visits", "hide", "c.csv", "-s", "Bar", "--taxonomy", "tax.json",
                    "-o", "out.csv"], tmp_path)
    assert res.code == 2 and "tax.json" in res.err and "codec" not in res.err, res.err
    assert not (tmp_path / "out.csv").exists()


def test_a_map_sidecar_that_is_not_utf8_is_named(tmp_path):
    (tmp_path / "m.csv").write_text("row,col,count\n0,0,1\n")
    (tmp_path / "m.csv.meta.json").write_bytes(BAD["latin1"])
    res = run_veil(["map", "query", "m.csv", "--bbox", "0,0,1,1"], tmp_path)
    assert res.code == 2 and "m.csv.meta.json" in res.err and "codec" not in res.err, res.err


def test_read_json_accepts_a_byte_order_mark_and_names_a_folder(tmp_path):
    (tmp_path / "t.json").write_bytes(b'\xef\xbb\xbf{"Bar": 1}')
    assert read_json(tmp_path / "t.json") == {"Bar": 1}
    with pytest.raises(DataError, match=r"file .*sub: target is a folder"):
        (tmp_path / "sub").mkdir()
        read_json(tmp_path / "sub", what="target")
    with pytest.raises(DataError, match=r"t2.json: target not found"):
        read_json(tmp_path / "t2.json", what="target")


def test_a_bad_row_past_duckdbs_sample_is_a_named_error_not_an_internal_one(tmp_path):
    """Found by the slow command fuzz (`visits resemble`): the check-in reader sniffed a
    sample, then the full scan met a malformed row and DuckDB's InvalidInputException
    escaped as "veil: internal error". It is now a one-line error naming the file and row."""
    rows = ["user,category"] + [f"u{i % 50},Bar" for i in range(30_000)]
    (tmp_path / "c.csv").write_text("\n".join([*rows, "u1,Park,extra"]) + "\n")
    for argv in (["visits", "hide", "c.csv", "-s", "Bar", "--categories", "Bar,Park"],
                 ["visits", "resemble", "c.csv", "--target", "t.json", "--quality-bound",
                  "0.5", "--categories", "Bar,Park"]):
        (tmp_path / "t.json").write_text('{"Bar": 1, "Park": 1}')
        res = run_veil([*argv, "-o", "out.csv"], tmp_path)
        lines = res.err.strip().splitlines()
        assert res.code == 2 and len(lines) == 1, res.err
        # data row 30001 (line 30002 of the file: the header is not counted)
        assert lines[0].startswith("veil: error: file c.csv, row 30001: has 3 field(s)"), \
            lines[0]
        assert not (tmp_path / "out.csv").exists()
