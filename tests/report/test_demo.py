"""``veil demo`` end to end: every existing section, self-contained output, rebuild, failures."""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import textwrap

import pytest

from veil.report import core
from veil.report.demo import DemoSectionError, run_demo
from veil.report.html import rebuild_report
from cli_cases import run_main

SAMPLERS = "veil.report.sections.samplers"


def _existing_modules() -> list[str]:
    return [m for m in core.SECTION_MODULES if importlib.util.find_spec(m) is not None]


@pytest.fixture(scope="module")
def quick_demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "report"
    index = run_demo(out, quick=True)
    return out, index


def test_quick_demo_writes_every_existing_section(quick_demo):
    out, index = quick_demo
    assert index == out / "index.html" and index.is_file()
    doc = index.read_text(encoding="utf-8")
    meta = json.loads((out / "meta.json").read_text())
    mods = _existing_modules()
    assert SAMPLERS in mods
    assert [s["module"] for s in meta["sections"]] == mods
    assert meta["seed"] is None and meta["quick"] is True
    for entry in meta["sections"]:
        assert entry["status"] == "ok", entry
        sec = json.loads((out / "sections" / f"{entry['id']}.json").read_text())
        assert sec["status"] == "ok"
        assert f'id="{entry["id"]}"' in doc and f'href="#{entry["id"]}"' in doc
        assert sec["title"].split(":")[0] in doc
        # every figure is in the page, with its numbers table
        assert doc.count(f'id="{entry["id"]}-fig') == len(sec["figures"])
        for f in sec["figures"]:
            assert f["png_base64"] in doc
    assert "randomness: OS entropy" in doc


def test_quick_demo_is_self_contained(quick_demo):
    _, index = quick_demo
    doc = index.read_text(encoding="utf-8")
    assert "http://" not in doc and "https://" not in doc
    assert "<script" not in doc.lower() and "<link" not in doc.lower() and "url(" not in doc
    for attr in re.findall(r'\b(?:src|href|srcset)\s*=\s*"([^"]*)"', doc):
        assert attr.startswith(("data:image/png;base64,", "#")), attr[:80]
    imgs = re.findall(r'<img[^>]*\ssrc="([^"]*)"', doc)
    assert len(imgs) >= 4  # the samplers section alone has four figures
    for src in imgs:
        png = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert src.startswith("data:image/png;base64,") and png[:4] == b"\x89PNG"
    assert doc.count("<img ") == doc.count("Numbers behind figure")


def test_samplers_section_content(quick_demo):
    out, _ = quick_demo
    sec = json.loads((out / "sections" / "samplers.json").read_text())
    assert len(sec["figures"]) == 4
    n = sec["parameters"]["draws per check"]
    assert n == 20_000
    dl, radius, scatter, em = sec["figures"]
    assert sum(r[1] for r in dl["data"]["rows"]) == n              # every draw counted once
    assert sum(r[2] for r in scatter["data"]["rows"]) == n
    assert sum(r[3] for r in em["data"]["rows"]) == n
    assert abs(sum(r[2] for r in em["data"]["rows"]) - 1) < 1e-9   # probabilities sum to 1
    assert sec["how_to"].strip()
    # goodness of fit at alpha = 1e-6 (the samplers are exact, so this fails ~1e-6 of runs)
    for k, v in sec["results"].items():
        if k.endswith("p-value"):
            assert v > 1e-6, (k, v)


def test_fit_test_of_the_section_has_power():
    """The chi-square helper rejects a wrong scale (x1.3) at alpha = 1e-6."""
    import numpy as np

    from veil.report.sections.samplers import _chi2_pvalue
    from veil.samplers import discrete_laplace, discrete_laplace_pmf

    z = discrete_laplace(2.6, size=20_000)
    zs = np.arange(-8, 9)
    obs = np.bincount(np.clip(z, -9, 9) + 9, minlength=19).astype(float)
    pmf = discrete_laplace_pmf(zs, 2.0)
    tail = (1 - pmf.sum()) / 2
    exp = 20_000 * np.concatenate(([tail], pmf, [tail]))
    assert _chi2_pvalue(obs, exp)[1] < 1e-6


def test_rebuild_reproduces_the_report(quick_demo):
    out, index = quick_demo
    before = index.read_bytes()
    index.unlink()
    assert rebuild_report(out) == index
    assert index.read_bytes() == before


def test_seeded_demo_is_reproducible_and_says_so(tmp_path):
    a = run_demo(tmp_path / "a", seed=5, quick=True, modules=[SAMPLERS], progress=False)
    b = run_demo(tmp_path / "b", seed=5, quick=True, modules=[SAMPLERS], progress=False)
    sa = json.loads((a.parent / "sections" / "samplers.json").read_text())
    sb = json.loads((b.parent / "sections" / "samplers.json").read_text())
    assert sa["results"] == sb["results"]
    assert [f["data"] for f in sa["figures"]] == [f["data"] for f in sb["figures"]]
    doc = a.read_text(encoding="utf-8")
    assert "seed 5 \u2014 experiments only" in doc and "Seeded run" in doc
    c = run_demo(tmp_path / "c", seed=6, quick=True, modules=[SAMPLERS], progress=False)
    sc = json.loads((c.parent / "sections" / "samplers.json").read_text())
    assert sc["results"] != sa["results"]


@pytest.fixture
def broken_modules(tmp_path, monkeypatch):
    pkg = tmp_path / "mods"
    pkg.mkdir()
    (pkg / "veiltest_raises.py").write_text(textwrap.dedent("""
        def build(ctx):
            ctx.progress("about to fail")
            raise ValueError("deliberate failure for the test")
    """))
    (pkg / "veiltest_nobuild.py").write_text("X = 1\n")
    (pkg / "veiltest_wrongtype.py").write_text("def build(ctx):\n    return {'id': 'x'}\n")
    monkeypatch.syspath_prepend(str(pkg))
    return ["veiltest_raises", SAMPLERS, "veiltest_nobuild", "veiltest_wrongtype",
            "veil.report.sections.does_not_exist", "no_such_package.section"]


def test_failing_sections_are_reported_and_raise(tmp_path, broken_modules):
    out = tmp_path / "rep"
    with pytest.raises(DemoSectionError) as err:
        run_demo(out, quick=True, modules=broken_modules, progress=False)
    assert err.value.index == out / "index.html" and err.value.index.is_file()
    assert [sid for sid, _ in err.value.failures] == [
        "veiltest_raises", "veiltest_nobuild", "veiltest_wrongtype"]
    assert "deliberate failure for the test" in str(err.value)
    doc = err.value.index.read_text(encoding="utf-8")
    assert "ValueError: deliberate failure for the test" in doc
    assert "has no build(ctx) function" in doc and "not a Section" in doc
    assert doc.count('class="status failed"') == 3 and doc.count('class="status ok"') == 1
    assert "3 of 4 sections failed" in doc
    meta = json.loads((out / "meta.json").read_text())
    assert meta["skipped_modules"] == ["veil.report.sections.does_not_exist",
                                       "no_such_package.section"]
    assert [s["status"] for s in meta["sections"]] == ["failed", "ok", "failed", "failed"]
    # the failure is saved too, so `veil report` shows it again
    assert rebuild_report(out).read_text(encoding="utf-8") == doc


def test_failing_section_without_raise(tmp_path, broken_modules):
    index = run_demo(tmp_path / "r", quick=True, modules=broken_modules[:2], progress=False,
                     raise_on_failure=False)
    assert "deliberate failure" in index.read_text(encoding="utf-8")


def test_duplicate_section_ids_do_not_overwrite(tmp_path):
    index = run_demo(tmp_path / "d", quick=True, modules=[SAMPLERS, SAMPLERS], progress=False)
    files = sorted(p.name for p in (index.parent / "sections").iterdir())
    assert files == ["samplers-2.json", "samplers.json"]


def test_output_that_is_a_file_is_rejected(tmp_path):
    from veil.errors import ParameterError

    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ParameterError, match="not a folder"):
        run_demo(f, quick=True, modules=[SAMPLERS], progress=False)


def test_progress_is_shown(tmp_path, capsys):
    run_demo(tmp_path / "p", quick=True, modules=[SAMPLERS], progress=True)
    err = capsys.readouterr().err
    assert "samplers" in err and " s" in err and "1 section(s)" in err


# ---------------------------------------------------------------- CLI

def _cli(args):
    from veil.cli import main

    with pytest.raises(SystemExit) as exc:
        main(args)
    return exc.value.code


def test_cli_demo_and_report(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(core, "SECTION_MODULES", [SAMPLERS])
    out = tmp_path / "cli"
    from veil.cli import main

    main(["demo", "--output", str(out), "--quick", "--seed", "3"])  # returns normally
    cap = capsys.readouterr()
    assert "report written to" in cap.err and cap.out == ""  # a status line: stderr
    assert "seed 3" in (out / "index.html").read_text(encoding="utf-8")
    (out / "index.html").unlink()
    main(["report", str(out)])
    assert (out / "index.html").is_file()
    # a link as index.html was replaced silently (its target kept); now refused like every
    # other output that is a link
    (out / "index.html").rename(tmp_path / "elsewhere.html")
    (out / "index.html").symlink_to(tmp_path / "elsewhere.html")
    capsys.readouterr()
    assert _cli(["report", str(out)]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert (out / "index.html").is_symlink()


def test_cli_demo_exits_nonzero_when_a_section_fails(tmp_path, monkeypatch, capsys,
                                                     broken_modules):
    monkeypatch.setattr(core, "SECTION_MODULES", broken_modules[:2])
    out = tmp_path / "cli"
    assert _cli(["demo", "-o", str(out), "--quick"]) == 1
    err = capsys.readouterr().err
    assert "deliberate failure" in err and str(out / "index.html") in err
    assert (out / "index.html").is_file()


def test_cli_report_on_bad_folder_is_a_one_line_error(tmp_path, capsys):
    assert _cli(["report", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("veil: error:") and "not a folder" in err and "\n" not in err


def test_samplers_how_to_commands_run():
    """The "run it on your data" commands of the samplers section work as written."""
    import os
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    from veil.report.sections.samplers import HOW_TO

    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmds = [c for c in HOW_TO.splitlines() if c.strip() and not c.startswith("#")]
    assert len(cmds) == 2
    for cmd in cmds:
        argv = shlex.split(cmd)
        assert argv[0] == "python"
        out = subprocess.run([sys.executable, *argv[1:]], env=env, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip()


def test_warnings_of_a_section_are_recorded(tmp_path, monkeypatch):
    pkg = tmp_path / "wmods"
    pkg.mkdir()
    (pkg / "veiltest_warns.py").write_text(textwrap.dedent("""
        import warnings
        from veil.errors import PrivacyWarning
        from veil.report.core import Section

        def build(ctx):
            warnings.warn("bins were taken from the data", PrivacyWarning)
            warnings.warn("bins were taken from the data", PrivacyWarning)
            return Section("w", "Warns", "nothing")
    """))
    monkeypatch.syspath_prepend(str(pkg))
    index = run_demo(tmp_path / "w", quick=True, modules=["veiltest_warns"], progress=False)
    sec = json.loads((index.parent / "sections" / "w.json").read_text())
    assert sec["warnings"] == ["PrivacyWarning: bins were taken from the data"]
    assert "PrivacyWarning: bins were taken from the data" in index.read_text(encoding="utf-8")


# ------------------------------------------- issue 17, defects 2 and 3: sentences follow data

def _section(out, sid):
    return json.loads((out / "sections" / f"{sid}.json").read_text())


def test_report_sentences_are_computed_from_their_own_tables(quick_demo):
    """Every computed sentence of the built report equals the builder applied to the numbers
    saved beside it (so a sentence cannot contradict its table)."""
    import numpy as np

    from veil.report.sections import histograms, samplers, tables, temporal, visits
    from veil.report.stats import rank_methods

    out, _ = quick_demo
    # histograms: slope, winners, verdicts and cards from the per-trial errors
    h = _section(out, "histograms")
    rows = h["figures"][0]["data"]["rows"]
    eps = h["parameters"]["epsilons"]
    trials = {e: {r[0]: r[5] for r in rows if r[1] == e} for e in eps}
    assert all(len(v) == h["parameters"]["trials"] for t in trials.values() for v in t.values())
    means = {m: [np.mean(trials[e][m]) for e in eps] for m in trials[eps[0]]}
    rankings = {e: rank_methods(trials[e]) for e in eps}
    cap = h["figures"][0]["caption"]
    assert histograms.slope_sentence(eps, means) in cap
    assert histograms.winners_sentence(rankings) in cap
    assert [r[3] for r in h["tables"][0]["rows"]] == [rankings[e].sentence() for e in eps]
    for e in eps:
        assert h["results"][f"best method at eps={e:g}"] == rankings[e].card()
    assert histograms.guarantee_text() == h["guarantee"]
    # temporal: growth and comparison from the per-timestamp table, ranking from repetitions
    t = _section(out, "temporal")
    rows = t["figures"][1]["data"]["rows"]
    assert len(rows) == t["parameters"]["steps"]
    first = max(2, len(rows) // 10)
    assert temporal.growth_sentence([(r[1] + r[2]) / 2 for r in rows], first) in \
        t["figures"][1]["caption"]
    assert t["figures"][1]["caption"].endswith(temporal.compare_sentence(rows))
    summ = t["tables"][0]["rows"]
    r = rank_methods({"PIM": summ[0][5], "LM": summ[1][5]}, unit="repetition")
    assert r.sentence("{:,.0f}") in t["tables"][0]["caption"]
    assert t["results"]["lower error (PIM vs LM)"] == r.card("{:,.0f}")
    # visits: hide, bound and size sentences from the histogram table and the summary
    v = _section(out, "visits")
    vrows = v["figures"][0]["data"]["rows"]
    sens = {"Hospital", "Dentist's Office", "Church", "Mosque"}
    mask = np.array([r[0] in sens for r in vrows])
    col = lambda j: np.array([r[j] for r in vrows])  # noqa: E731
    assert visits.hide_sentence(v["parameters"]["sensitive"], mask, col(1), col(2)) in \
        v["figures"][0]["caption"]
    summary = {r[0]: r for r in v["tables"][0]["rows"]}
    assert visits.size_sentence(int(col(1).sum()), {k: r[7] for k, r in summary.items()}) in \
        v["tables"][0]["caption"]
    # tables: the summary from the figure's numbers
    tb = _section(out, "tables")
    d = {r[0]: r for r in tb["figures"][0]["data"]["rows"]}
    ms = list(d)
    assert tables.summary_sentence(ms, {m: d[m][1] for m in ms}, {m: d[m][2] for m in ms},
                                   len(tb["parameters"]["constraints"]),
                                   {m: d[m][4] for m in ms}, tb["parameters"]["k"]) in \
        tb["figures"][0]["caption"]
    # samplers: the direction verdict from the sector table, the example from epsilon
    s = _section(out, "samplers")
    sectors = np.array([r[1] for r in s["figures"][2]["data"]["rows"]])
    assert f"hold {sectors.min():,} to {sectors.max():,} draws" in s["figures"][2]["caption"]
    assert samplers.guarantee_text(s["parameters"]["planar Laplace epsilon (per metre)"]) == \
        s["guarantee"]
    # geo: the trend of both curves from the figure's rows
    from veil.report.sections import geo

    g = _section(out, "geo")
    gr = np.array(g["figures"][2]["data"]["rows"], dtype=float)
    assert geo.trend_sentence(gr[:, 0], gr[:, 1], gr[:, 2], gr[0, 3]) in g["figures"][2]["caption"]
    assert geo.guarantee_text(g["parameters"]["epsilon per metre"]) == g["guarantee"]


def test_every_figure_of_the_report_is_titled_ticked_and_uncovered(quick_demo):
    """Issue 17: both renderings of every figure pass the layout rules (the browser test checks
    how they are shown)."""
    from veil.report.core import layout_problems

    out, _ = quick_demo
    problems = []
    for p in sorted((out / "sections").glob("*.json")):
        sec = json.loads(p.read_text())
        for i, f in enumerate(sec["figures"], 1):
            assert f.get("png_phone_base64"), f"{sec['id']} figure {i} has no phone rendering"
            for kind in ("wide", "phone"):
                problems += [f"{sec['id']} figure {i} {kind}: {x}"
                             for x in layout_problems(f["layout"][kind], phone=kind == "phone")]
    assert not problems, "\n".join(problems)


def test_an_interrupted_demo_leaves_no_partial_report(tmp_path, monkeypatch, capsys):
    """Ctrl-C (or SIGTERM) during the demo left report/sections/*.json without index.html;
    `veil report` then wrote a normal-looking report of the sections that had finished. The
    demo now builds in a hidden folder and moves it into place when complete; an earlier
    report is replaced only by a complete one (--force)."""
    from veil.cli import main
    import veil.report.demo as demo_mod

    monkeypatch.setattr(core, "SECTION_MODULES", [SAMPLERS, SAMPLERS])
    real = demo_mod._build_one
    calls = []

    def interrupted(m, ctx):
        calls.append(m)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(m, ctx)

    monkeypatch.setattr(demo_mod, "_build_one", interrupted)
    out = tmp_path / "report"
    with pytest.raises(SystemExit) as exc:
        main(["demo", "-o", str(out), "--quick", "--seed", "1"])
    assert exc.value.code == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # a complete report, then an interrupted --force run: the complete one is kept whole
    monkeypatch.setattr(demo_mod, "_build_one", real)
    main(["demo", "-o", str(out), "--quick", "--seed", "1"])
    before = (out / "index.html").read_bytes()
    calls.clear()
    monkeypatch.setattr(demo_mod, "_build_one", interrupted)
    with pytest.raises(SystemExit):
        main(["demo", "-o", str(out), "--quick", "--seed", "2", "--force"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]
    assert (out / "index.html").read_bytes() == before
    monkeypatch.setattr(demo_mod, "_build_one", real)
    main(["demo", "-o", str(out), "--quick", "--seed", "2", "--force"])
    assert (out / "index.html").read_bytes() != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]
    capsys.readouterr()


@pytest.mark.parametrize("layout", ["file", "nested", "beside-a-report", "in-sections"])
def test_demo_never_deletes_files_that_are_not_a_report(tmp_path, monkeypatch, capsys, layout):
    """`veil demo -o mydocs` deleted every file of an existing folder (thesis.txt, sub/a.txt),
    with or without --force: only index.html was checked. A folder holding anything that is not
    part of a report is now refused, --force or not, before the demo runs, and left as it was."""
    from veil.cli import main

    monkeypatch.setattr(core, "SECTION_MODULES", [SAMPLERS])
    out = tmp_path / "my 'docs'; x"
    out.mkdir()
    if layout == "file":
        (out / "thesis.txt").write_text("precious")
    elif layout == "nested":
        (out / "sub").mkdir()
        (out / "sub" / "a.txt").write_text("precious")
    else:
        main(["demo", "-o", str(out), "--quick", "--seed", "1"])
        target = out / ("thesis.txt" if layout == "beside-a-report" else "sections/notes.txt")
        target.write_text("precious")
    before = sorted((str(p.relative_to(out)), p.is_dir() or p.read_bytes())
                    for p in out.rglob("*"))
    capsys.readouterr()
    for extra in ([], ["--force"]):
        code, _, err = run_main(["demo", "-o", str(out), "--quick", "--seed", "2", *extra],
                                capsys)
        assert code == 2, err
        assert "not part of a veil report" in err and "nothing was changed" in err, err
        assert sorted((str(p.relative_to(out)), p.is_dir() or p.read_bytes())
                      for p in out.rglob("*")) == before
        assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_demo_writes_into_an_empty_folder_and_replaces_only_a_report(tmp_path, monkeypatch,
                                                                      capsys):
    from veil.cli import main

    monkeypatch.setattr(core, "SECTION_MODULES", [SAMPLERS])
    out = tmp_path / "report"
    out.mkdir()
    main(["demo", "-o", str(out), "--quick", "--seed", "1"])
    assert (out / "index.html").is_file()
    capsys.readouterr()
    code, _, err = run_main(["demo", "-o", str(out), "--quick", "--seed", "1"], capsys)
    assert code == 2 and "already holds a report" in err, err
    main(["demo", "-o", str(out), "--quick", "--seed", "1", "--force"])
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "meta.json", "sections"]
