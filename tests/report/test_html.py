"""The HTML renderer: self-contained, escaped, every figure with its numbers, rebuild errors."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from veil.errors import DataError
from veil.report.core import Figure, Section, Table
from veil.report.html import (
    MAX_TABLE_ROWS,
    load_run,
    rebuild_report,
    render_report,
    seed_status,
    write_text_atomic,
)

# a valid 1x1 PNG
PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def _section(**kw) -> Section:
    base = dict(
        id="demo-one", title="Histogram publishing",
        guarantee="Each count gets `discrete Laplace` noise.\n\nSecond **paragraph**.",
        parameters={"epsilon": 0.5, "bins": 16, "split": {"tree": 0.5, "leaves": 0.5}},
        results={"mean error": 1.23456789, "ok": True, "big": 12345678.0},
        figures=[Figure("Before and after", PNG_1x1, "Bars are counts.",
                        Table(["bin", "count"], [[0, 5], [1, 7.25]]))],
        tables=[Table(["k", "suppressed"], [[5, 0.17]], caption="Suppression")],
        how_to="veil histogram publish data.csv --epsilon 0.5",
    )
    base.update(kw)
    return Section(**base)


def _assert_self_contained(doc: str) -> None:
    assert "http://" not in doc and "https://" not in doc
    assert "<script" not in doc.lower() and "<link" not in doc.lower()
    assert "@import" not in doc and "url(" not in doc
    for attr in re.findall(r'\b(?:src|href|srcset|poster|data)\s*=\s*"([^"]*)"', doc):
        assert attr.startswith("data:image/png;base64,") or attr.startswith("#"), attr
    for src in re.findall(r'<img[^>]*\ssrc="([^"]*)"', doc):
        assert src.startswith("data:image/png;base64,")
        png = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_render_contains_every_part():
    doc = render_report([_section()], "My run", {"seed": None, "created": "2026-01-01 00:00 UTC"})
    assert doc.startswith("<!DOCTYPE html>") and doc.rstrip().endswith("</html>")
    _assert_self_contained(doc)
    assert '<meta name="viewport"' in doc
    assert "<title>My run</title>" in doc
    # table of contents links to the section anchor
    assert 'href="#demo-one"' in doc and 'id="demo-one"' in doc
    assert "Histogram publishing" in doc
    assert "<code>discrete Laplace</code>" in doc and "<strong>paragraph</strong>" in doc
    assert doc.count("<p>Each count") == 1 and "<p>Second" in doc
    assert ">epsilon<" in doc and ">0.5<" in doc and "tree: 0.5; leaves: 0.5" in doc
    assert "1.235" in doc and "12,345,678" in doc and ">yes<" in doc
    # the figure, its caption and its numbers in a collapsible table
    assert doc.count("<img ") == 1 and 'width="1" height="1"' in doc
    assert "Figure 1. Before and after" in doc and "Bars are counts." in doc
    assert "<details><summary>Numbers behind figure 1 (2 rows)</summary>" in doc
    assert ">7.25<" in doc and "Suppression" in doc
    assert "Run it on your data" in doc and "veil histogram publish data.csv --epsilon 0.5" in doc
    assert "randomness: OS entropy" in doc and "Seeded run" not in doc


def test_every_figure_gets_a_numbers_table():
    figs = [Figure(f"F{i}", PNG_1x1, data=Table(["x"], [[i]])) for i in range(3)]
    doc = render_report([_section(figures=figs)], "t", {})
    assert doc.count("<img ") == 3
    assert doc.count("Numbers behind figure") == 3


def test_seed_is_shown_as_experiments_only():
    doc = render_report([_section()], "t", {"seed": 42})
    assert "randomness: seed 42 \u2014 experiments only" in doc
    assert "Seeded run (seed 42)" in doc
    assert seed_status(None) == "OS entropy"
    assert seed_status(7) == "seed 7 \u2014 experiments only"


def test_text_is_escaped():
    evil = '<script>alert("x")</script>'
    s = _section(title=evil, guarantee=evil, parameters={evil: evil}, results={evil: evil},
                 figures=[Figure(evil, PNG_1x1, evil, Table([evil], [[evil]]))],
                 tables=[Table([evil], [[evil]], caption=evil)], how_to=evil)
    doc = render_report([s], evil, {"created": evil, "intro": evil, "data": evil})
    assert "<script" not in doc
    assert "&lt;script&gt;" in doc
    _assert_self_contained(doc)


def test_failed_section_is_visible():
    failed = {"id": "geo", "title": "Geo", "status": "failed",
              "error": "ValueError: boom <b>", "traceback": "Traceback ...\nValueError: boom"}
    doc = render_report([_section(), failed], "t", {})
    assert 'class="status failed"' in doc
    assert "This part of the demo failed" in doc
    assert "ValueError: boom &lt;b&gt;" in doc
    assert "1 of 2 sections failed" in doc
    assert "<summary>Traceback</summary>" in doc


def test_damaged_png_is_reported_not_embedded():
    d = _section().to_dict()
    d["figures"][0]["png_base64"] = "not base64!!"
    doc = render_report([d], "t", {})
    assert "<img " not in doc and "could not be shown" in doc
    d["figures"][0]["png_base64"] = base64.b64encode(b"GIF89a....").decode()
    assert "<img " not in render_report([d], "t", {})


def test_long_tables_are_cut_with_a_note():
    n = MAX_TABLE_ROWS + 25
    s = _section(tables=[Table(["i"], [[i] for i in range(n)])])
    doc = render_report([s], "t", {})
    assert f"First {MAX_TABLE_ROWS} of {n} rows" in doc
    assert f">{MAX_TABLE_ROWS - 1}<" in doc and f">{n - 1}<" not in doc


def test_numpy_values_in_tables_are_rendered():
    import numpy as np
    s = _section(tables=[Table(["a", "b"], [[np.int64(3), np.float32(0.5)]])],
                 results={"arr": np.arange(3), "nan": float("nan")})
    doc = render_report([s], "t", {})
    assert ">3<" in doc and ">0.5<" in doc and "[0, 1, 2]" in doc and ">nan<" in doc


def test_render_accepts_dicts_and_sections_identically():
    s = _section()
    assert render_report([s], "t", {"seed": 1}) == render_report([s.to_dict()], "t", {"seed": 1})


def test_empty_report_renders():
    doc = render_report([], "nothing", {})
    assert "This run produced no sections." in doc
    _assert_self_contained(doc)


# ---------------------------------------------------------------- rebuild / load

def _write_run(tmp_path: Path, sections, meta=None) -> Path:
    run = tmp_path / "run"
    (run / "sections").mkdir(parents=True)
    for s in sections:
        d = s.to_dict() if hasattr(s, "to_dict") else s
        (run / "sections" / f"{d['id']}.json").write_text(json.dumps(d))
    if meta is not None:
        (run / "meta.json").write_text(json.dumps(meta))
    return run


def test_rebuild_uses_meta_order(tmp_path):
    a, b = _section(id="a", title="Alpha"), _section(id="b", title="Beta")
    run = _write_run(tmp_path, [a, b], {"title": "Run X", "seed": 3, "sections": ["b", "a"]})
    index = rebuild_report(run)
    assert index == run / "index.html"
    doc = index.read_text(encoding="utf-8")
    assert doc.index("Beta") < doc.index("Alpha")
    assert "<title>Run X</title>" in doc and "seed 3" in doc
    assert doc == render_report([b, a], "Run X", {"title": "Run X", "seed": 3,
                                                  "sections": ["b", "a"]})


def test_rebuild_without_meta_sorts_by_file_name(tmp_path):
    run = _write_run(tmp_path, [_section(id="zz", title="Zed"), _section(id="aa", title="Ay")])
    doc = rebuild_report(run).read_text(encoding="utf-8")
    assert doc.index("Ay") < doc.index("Zed") and "OS entropy" in doc


@pytest.mark.parametrize("case, match", [
    ("missing-dir", "not a folder"),
    ("no-sections", "no report data found"),
    ("bad-json", "not valid JSON"),
    ("not-a-section", "not a report section"),
    ("listed-missing", "listed in meta.json is missing"),
    ("bad-meta", "expected a JSON object"),
])
def test_rebuild_errors_name_the_file(tmp_path, case, match):
    run = tmp_path / "run"
    if case != "missing-dir":
        (run / "sections").mkdir(parents=True)
    if case == "bad-json":
        (run / "sections" / "x.json").write_text("{oops")
    elif case == "not-a-section":
        (run / "sections" / "x.json").write_text("[1, 2]")
    elif case == "listed-missing":
        (run / "sections" / "x.json").write_text(json.dumps(_section(id="x").to_dict()))
        (run / "meta.json").write_text(json.dumps({"sections": ["x", "y"]}))
    elif case == "bad-meta":
        (run / "meta.json").write_text("[]")
    with pytest.raises(DataError, match=match) as err:
        rebuild_report(run)
    assert str(run) in str(err.value)
    assert not (run / "index.html").exists()


def test_load_run_returns_sections_and_meta(tmp_path):
    run = _write_run(tmp_path, [_section(id="q")], {"title": "T"})
    sections, meta = load_run(run)
    assert [s["id"] for s in sections] == ["q"] and meta["title"] == "T"


def test_write_text_atomic_leaves_nothing_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "out" / "index.html"
    write_text_atomic(target, "old")
    import os

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_text_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in target.parent.iterdir()] == ["index.html"]


def test_save_report_round_trips(tmp_path):
    from veil.report.html import save_report

    secs = [_section(id="same", title="First"), _section(id="same", title="Second"),
            _section(id="../evil id", title="Third")]
    index = save_report(tmp_path / "bench", secs, title="Bench run", meta={"seed": None})
    names = sorted(p.name for p in (tmp_path / "bench" / "sections").iterdir())
    assert names == ["evil-id.json", "same-2.json", "same.json"]
    doc = index.read_text(encoding="utf-8")
    assert doc.index("First") < doc.index("Second") < doc.index("Third")
    index.unlink()
    assert rebuild_report(tmp_path / "bench").read_text(encoding="utf-8") == doc
    with pytest.raises(DataError, match="not a folder"):
        save_report(index.parent / "meta.json", secs)


def test_markup_is_well_formed_and_warnings_shown():
    from html.parser import HTMLParser

    void = {"meta", "img", "br", "hr", "link", "input"}

    class Balance(HTMLParser):
        def __init__(self):
            super().__init__()
            self.stack, self.errors = [], []

        def handle_starttag(self, tag, attrs):
            if tag not in void:
                self.stack.append(tag)

        def handle_endtag(self, tag):
            if self.stack and self.stack[-1] == tag:
                self.stack.pop()
            else:
                self.errors.append((tag, self.getpos()))

    d = _section().to_dict()
    d["warnings"] = ["PrivacyWarning: bins taken from the data <opt-in>"]
    failed = {"id": "f", "title": "F", "status": "failed", "error": "E", "traceback": "T"}
    damaged = _section(id="dmg").to_dict()
    damaged["figures"][0]["png_base64"] = ""
    doc = render_report([d, failed, damaged], "t", {"seed": 1, "intro": "a\n\nb"})
    p = Balance()
    p.feed(doc)
    assert p.errors == [] and p.stack == []
    assert "1 warning while building this part" in doc
    assert "PrivacyWarning: bins taken from the data &lt;opt-in&gt;" in doc


def test_reader_labels_and_multi_value_cards():
    from veil.report.html import _card_value, _fmt, _label

    assert _label("pim_mean_error_m") == "pim mean error (m)"
    assert _label("epsilon") == "epsilon"
    assert _fmt(11450.3) == "11,450" and _fmt(0.5) == "0.5" and _fmt(2e-6) == "2.000e-06"
    html = _card_value({"DIVA": 0.3763, "optimal_cut": 0.35})
    assert html.count("<div><span") == 2 and "optimal cut" in html
