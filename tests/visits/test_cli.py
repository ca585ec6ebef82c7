"""`veil visits ...`: end to end, and bad input exits 2 with no output."""

import json

import pytest

from veil.cli import main


def run(argv, capsys):
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def files(tmp_path):
    (tmp_path / "h.json").write_text(json.dumps({"Bar": 5, "Church": 2, "Park": 3,
                                                 "Hospital": 1, "Office": 0}))
    (tmp_path / "t.csv").write_text("category,weight\nBar,1\nPark,2\nOffice,2\n")
    (tmp_path / "c.csv").write_text("user,category\n" + "u1,Bar\nu1,Church\nu1,Park\n"
                                    "u2,Hospital\nu2,Bar\nu2,Bar\nu3,Church\n")
    return tmp_path


def test_hide_one_histogram_with_taxonomy(files, capsys):
    out = files / "o.json"
    code, _, err = run(["visits", "hide", str(files / "h.json"), "--sensitive",
                        "Medical Center,Spiritual Center", "--taxonomy", "foursquare",
                        "-o", str(out)], capsys)
    assert code == 0, err
    res = json.loads(out.read_text())
    assert res["histogram"]["Church"] == 0 and res["histogram"]["Hospital"] == 0
    assert sum(res["histogram"].values()) == 11
    # the domain is the whole taxonomy (public), not the input's keys
    from veil.visits import foursquare_taxonomy

    assert list(res["histogram"]) == foursquare_taxonomy().names
    assert set(res) == {"histogram"}


def test_resemble_and_avoid_one_histogram(files, capsys):
    for cmd in ("resemble", "avoid"):
        out = files / f"{cmd}.csv"
        rep = files / f"{cmd}.report.json"
        code, _, err = run(["visits", cmd, str(files / "h.json"), "--target",
                            str(files / "t.csv"), "--quality-bound", "0.1", "-o", str(out),
                            "--categories", "Bar,Church,Park,Hospital,Office", "--report", str(rep)], capsys)
        assert code == 0, err
        # the published file carries the sanitized counts only; the originals are private
        lines = out.read_text().splitlines()
        assert lines[0] == 'category,sanitized' and len(lines) == 6
        assert json.loads(rep.read_text())["original"]["Church"] == 2


def test_checkin_file_per_user(files, capsys):
    out = files / "users.csv"
    rep = files / "users.report.csv"
    code, _, err = run(["visits", "hide", str(files / "c.csv"), "--sensitive", "Church,Hospital",
                        "--categories", "Bar,Church,Park,Hospital,Office", "-o", str(out), "--report", str(rep)], capsys)
    assert code == 0, err
    assert "dropped" in rep.read_text()  # u3 only visited Church: listed privately
    assert "u3" not in out.read_text()
    assert "original" not in out.read_text().splitlines()[0]


@pytest.mark.parametrize("args, match", [
    (["hide", "{h}", "--sensitive", "Medcal Center", "--taxonomy", "foursquare"], "did you mean"),
    (["hide", "{h}", "--sensitive", "Chruch", "--categories", "{dom}"], "did you mean 'Church'"),
    (["hide", "{neg}", "--sensitive", "Bar", "--categories", "Bar,Park"], "must be >= 0"),
    (["hide", "{h}", "--sensitive", "Bar,Church,Park,Hospital", "--categories", "{dom}"],
     "every visited place"),
    (["resemble", "{h}", "--target", "{t}", "--quality-bound", "-1", "--categories", "{dom}"],
     "--quality-bound must be"),   # the option's name (it said the parameter quality_bound)
    (["avoid", "{h}", "--target", "{t}", "--quality-bound", "0.1", "--privacy-threshold", "5",
      "--categories", "{dom}"], "largest possible"),
    (["resemble", "{h}", "--target", "{zoo}", "--quality-bound", "0.1", "--categories",
      "{dom}"], "not in the category domain"),
    (["resemble", "{h}", "--target", "{t}", "--quality-bound", "0.0001",
      "--privacy-threshold", "0.0001", "--categories", "{dom}"], "best possible"),
    (["hide", "{h}", "--sensitive", "Bar", "--distance", "jsd"], "did you mean 'js'"),
    (["hide", "{h}", "--sensitive", "Bar", "--distance", "kl", "--categories", "{dom}"],
     "cannot be used to hide"),
    (["hide", "{missing}", "--sensitive", "Bar"], "not found"),
    (["hide", "{coarse}", "--sensitive", "Medical Center", "--taxonomy", "foursquare",
      "--rollup-depth", "0"], "coarser than the selection"),
    (["hide", "{h}", "--sensitive", "Church"], "domain must be public"),
])
def test_bad_input_exit_2_no_output(files, capsys, args, match):
    (files / "neg.json").write_text(json.dumps({"Bar": -1, "Park": 3}))
    (files / "zoo.csv").write_text("category,count\nZoo,3\n")
    (files / "coarse.csv").write_text("user,category\nu1,Food\nu1,Professional & Other Places\n")
    sub = {"{h}": files / "h.json", "{t}": files / "t.csv", "{neg}": files / "neg.json",
           "{zoo}": files / "zoo.csv", "{missing}": files / "missing.json",
           "{coarse}": files / "coarse.csv", "{dom}": "Bar,Church,Park,Hospital,Office"}
    out = files / "out.json"
    argv = ["visits"] + [str(sub.get(a, a)) for a in args] + ["-o", str(out)]
    code, stdout, err = run(argv, capsys)
    assert code == 2, (stdout, err)
    assert match in err
    assert not out.exists()
    assert err.count("\n") == 1  # one line


def test_single_csv_histogram_and_indices(files, capsys):
    (files / "h.csv").write_text("category,count\nBar,5\nChurch,2\nPark,3\n")
    out = files / "o.json"
    code, _, err = run(["visits", "hide", str(files / "h.csv"), "-s", "Church", "--redistribute", "4",
                        "--categories", "Bar,Church,Park", "-o", str(out)], capsys)
    assert code == 0, err
    res = json.loads(out.read_text())
    assert res["histogram"]["Church"] == 0 and sum(res["histogram"].values()) == 12
    (files / "l.json").write_text("[4, 0, 3, 1]")
    code, stdout, err = run(["visits", "hide", str(files / "l.json"), "-s", "3"], capsys)
    assert code == 0, err
    assert json.loads(stdout)["histogram"] == [5, 0, 3, 0]


def test_checkin_only_options_rejected(files, capsys):
    out = files / "u.csv"
    code, _, err = run(["visits", "hide", str(files / "c.csv"), "-s", "Church", "--redistribute", "2",
                        "--categories", "Bar,Church,Park,Hospital,Office", "-o", str(out)], capsys)
    assert code == 2 and "--redistribute" in err and not out.exists()


def test_ctrl_c_inside_a_compiled_kernel_is_an_interruption(files, capsys, monkeypatch):
    """Ctrl-C while a numba kernel ran came back as ``SystemError: CPUDispatcher(...) returned
    a result with an exception set`` (the KeyboardInterrupt its cause): `veil visits resemble`
    said "internal error" and exited 1 (3 of 30 interrupts in an outside probe). Both the
    kernel wrapper (`veil._jit.call`) and the CLI now see the interrupt behind it: exit 130."""
    import importlib

    import veil._jit as jit

    resemble = importlib.import_module("veil.visits.resemble")  # the module, not the function

    def interrupted_kernel(*args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as k:
            raise SystemError("CPUDispatcher(<function _chain_numba>) returned a result with "
                              "an exception set") from k

    with pytest.raises(KeyboardInterrupt):
        jit.call(interrupted_kernel)
    with pytest.raises(SystemError):  # any other SystemError stays what it is
        jit.call(lambda: (_ for _ in ()).throw(SystemError("other")))

    def exact(*args, **kwargs):  # the kernel called directly, as a path without call() would
        interrupted_kernel()

    monkeypatch.setattr(resemble, "_exact", exact)
    before = sorted(p.name for p in files.iterdir())
    code, _, err = run(["visits", "resemble", str(files / "h.json"), "--target",
                        str(files / "t.csv"), "--quality-bound", "0.1", "-o",
                        str(files / "r.csv"), "--categories", "Bar,Church,Park,Hospital,Office",
                        "--method", "exact"], capsys)
    assert code == 130 and err.strip() == "veil: interrupted", err
    assert sorted(p.name for p in files.iterdir()) == before
