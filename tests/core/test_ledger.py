"""The privacy ledger as a library: totals, reservations, links between datasets, concurrency."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from veil.errors import BudgetExceededError, DataError, ParameterError
from veil.identity import identity_of_table
from veil.ledger import Ledger, default_ledger_path, ledger_path, session, state_home

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture
def led(tmp_path):
    (tmp_path / "state").mkdir()  # only the home ledger's folder is created by veil
    with Ledger(tmp_path / "state" / "ledger.sqlite") as ledger:
        yield ledger


AGES = identity_of_table({"age": [31, 45, 45, 62, 18], "city": ["a", "b", "c", "d", "e"]})


def _spend(led, ident, amount, **kw):
    kw.setdefault("unit", "record")
    kw.setdefault("command", "test")
    kw.setdefault("label", "ages")
    r = led.reserve(ident, amount=amount, **kw)
    led.commit(r.id)
    return r


def test_the_ledger_is_private_and_in_the_state_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("VEIL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("VEIL_LEDGER", raising=False)
    assert ledger_path() == default_ledger_path() == tmp_path / "home" / "ledger.sqlite"
    monkeypatch.delenv("VEIL_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert state_home() == tmp_path / "xdg" / "veil"
    monkeypatch.setenv("VEIL_LEDGER", str(tmp_path / "env.sqlite"))
    assert ledger_path() == tmp_path / "env.sqlite"
    assert ledger_path(tmp_path / "opt.sqlite") == tmp_path / "opt.sqlite"
    monkeypatch.setenv("VEIL_HOME", str(tmp_path / "new"))
    with Ledger(default_ledger_path()):  # the home ledger's folder is created, private
        pass
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "new" / "ledger.sqlite").stat().st_mode) == 0o600
    with pytest.raises(ParameterError, match="folder .* does not exist"):
        Ledger(tmp_path / "other" / "l.sqlite")  # any other ledger's folder must exist


def test_first_release_free_then_total_and_spend_again(led):
    _spend(led, AGES, 0.5)
    with pytest.raises(BudgetExceededError, match="no total budget is declared"):
        led.reserve(AGES, amount=0.1, unit="record", command="x", label="ages",
                    spend_again=True)
    led.set_total(AGES, total=1.0, label="ages")
    with pytest.raises(BudgetExceededError, match="pass --spend-again"):
        led.reserve(AGES, amount=0.1, unit="record", command="x", label="ages")
    _spend(led, AGES, 0.5, spend_again=True)
    with pytest.raises(BudgetExceededError, match="exceed the total by 0.1"):
        led.reserve(AGES, amount=0.1, unit="record", command="x", label="ages",
                    spend_again=True)
    s = led.summary(led.find(AGES))
    assert s.spent["epsilon"] == 1.0 and s.remaining("epsilon") == 0.0
    # lowering is always allowed, raising needs raise_total
    led.set_total(AGES, total=0.8, label="ages")
    with pytest.raises(BudgetExceededError, match="--raise"):
        led.set_total(AGES, total=2.0, label="ages")
    led.set_total(AGES, total=2.0, raise_total=True, label="ages")
    assert [e["what"].split(" (")[0] for e in led.events()] == ["--total 1", "--total 0.8",
                                                                 "--total 2"]


def test_floating_point_sums_do_not_refuse_an_exact_fit(led):
    led.set_total(AGES, total=0.3, label="ages")
    for _ in range(3):
        _spend(led, AGES, 0.1, spend_again=True)  # 0.1 + 0.1 + 0.1 > 0.3 in floating point


def test_geo_budgets_are_their_own_currency(led):
    led.set_total(AGES, total=1.0, total_per_metre=0.02, label="ages")
    _spend(led, AGES, 0.01, budget="epsilon_per_metre")
    _spend(led, AGES, 1.0, spend_again=True)
    with pytest.raises(BudgetExceededError, match="epsilon per metre 0.015.*total 0.02 "):
        led.reserve(AGES, amount=0.015, unit="record", command="x", label="ages",
                    budget="epsilon_per_metre", spend_again=True)
    s = led.summary(led.find(AGES))
    assert s.spent == {"epsilon": 1.0, "epsilon_per_metre": 0.01}


def test_reservations_count_until_committed_or_cancelled(led, tmp_path):
    led.set_total(AGES, total=1.0, label="ages")
    out = tmp_path / "out.csv"
    r = led.reserve(AGES, amount=0.7, unit="record", command="x", label="ages", outputs=[out])
    with pytest.raises(BudgetExceededError, match="0.7 reserved by runs that did not finish"):
        led.reserve(AGES, amount=0.5, unit="record", command="y", label="ages", spend_again=True)
    out.write_text("published?")
    with pytest.raises(ParameterError, match="still exists"):
        led.cancel(r.id)
    out.unlink()
    assert led.cancel(r.id[:6])["state"] == "reserved"  # by id prefix; returns the old entry
    assert led.summary(led.find(AGES)).reserved["epsilon"] == 0
    _spend(led, AGES, 0.5, spend_again=True)
    committed = led.summary(led.find(AGES)).entries[-1]["id"]
    with pytest.raises(BudgetExceededError, match="do not renew"):
        led.cancel(committed)


def test_datasets_linked_by_a_released_column_merge(led):
    people = identity_of_table({"age": [31, 45, 45, 62, 18], "income": [10, 20, 30, 40, 50]})
    ages_only = identity_of_table({"years": [18, 31, 45, 45, 62]})
    _spend(led, people, 1.0, read=["age"], label="people.csv")
    # a file holding the released column (under another name) is the same people
    with pytest.raises(BudgetExceededError, match="already had epsilon 1"):
        led.reserve(ages_only, amount=1.0, unit="record", command="x", label="ages.csv")
    # two datasets that an input links together are merged (the smaller total wins)
    a = identity_of_table({"u": ["x", "y", "z"]})
    b = identity_of_table({"v": [1, 2, 3]})
    led.set_total(a, total=3.0, label="a")
    led.set_total(b, total=2.0, label="b")
    _spend(led, a, 0.5, spend_again=True, label="a")
    _spend(led, b, 0.5, spend_again=True, label="b")
    both = identity_of_table({"u": ["z", "y", "x"], "v": [3, 1, 2]})
    r = led.reserve(both, amount=0.5, unit="record", command="x", label="both",
                    spend_again=True)
    assert "merged with dataset" in r.note
    s = led.summary(r.dataset)
    assert s.totals["epsilon"] == 2.0 and s.spent["epsilon"] == 1.0
    assert s.reserved["epsilon"] == 0.5
    assert any("merged" in e["what"] for e in led.events(r.dataset))


def test_unreleased_and_constant_columns_do_not_link(led):
    hist1 = identity_of_table({"bin": ["a", "b", "c"], "count": [5, 1, 8]})
    hist2 = identity_of_table({"bin": ["a", "b", "c"], "count": [2, 9, 4]})
    _spend(led, hist1, 1.0, read=["count"], label="h1")
    _spend(led, hist2, 1.0, read=["count"], label="h2")  # shares only the public labels
    t1 = identity_of_table({"country": ["NO"] * 4, "x": [1, 2, 3, 4]})
    t2 = identity_of_table({"country": ["NO"] * 4, "x": [5, 6, 7, 8]})
    _spend(led, t1, 1.0, label="t1")
    _spend(led, t2, 1.0, label="t2")  # a constant column says nothing about anyone
    assert len(led.datasets()) == 4
    # declaring a total links by identity or a released column, not by the labels
    led.set_total(identity_of_table({"bin": ["a", "b", "c"], "count": [7, 7, 1]}), total=1.0,
                  label="h3")
    assert len(led.datasets()) == 5
    led.set_total(identity_of_table({"n": [8, 1, 5]}), total=0.5, label="h1 counts")
    assert len(led.datasets()) == 5 and led.summary(led.find(hist1)).totals["epsilon"] == 0.5


def test_resume_and_repeat_keys(led):
    led.set_total(AGES, total=5.0, label="ages")
    r1 = led.reserve(AGES, amount=1.0, unit="user", command="job", label="ages", job="J")
    again = led.reserve(AGES, amount=1.0, unit="user", command="job", label="ages", job="J",
                        resume=True)
    assert again.id == r1.id and again.resumed
    led.commit(r1.id)
    assert led.reserve(AGES, amount=1.0, unit="user", command="job", label="ages", job="J",
                       resume=True).id == r1.id
    # a fresh run with the same key (e.g. the output moved away) is a new release
    with pytest.raises(BudgetExceededError, match="--spend-again"):
        led.reserve(AGES, amount=1.0, unit="user", command="job", label="ages", job="J")
    # keyed noise: the same output again costs nothing, a new key costs again
    _spend(led, AGES, 1.0, spend_again=True, job="repeat:k1")
    free = led.reserve(AGES, amount=1.0, unit="record", command="x", label="ages",
                       job="repeat:k1")
    assert free.amount == 0.0 and "same key" in free.note
    led.commit(free.id)
    _spend(led, AGES, 1.0, spend_again=True, job="repeat:k2")
    assert led.summary(led.find(AGES)).spent["epsilon"] == 3.0


def test_an_old_json_ledger_is_a_clear_error_and_a_loud_note(tmp_path, monkeypatch, capsys):
    old = tmp_path / "ledger.json"
    old.write_text(json.dumps({"abc": [{"epsilon_per_user": 1.0}]}))
    with pytest.raises(DataError, match="not a veil privacy ledger.*JSON"):
        Ledger(old)
    # the old default location: every release says its spend is not counted
    from veil.cli import main

    monkeypatch.setenv("VEIL_HOME", str(tmp_path))
    (tmp_path / "h.csv").write_text("count\n1\n2\n")
    main(["noise", "counts", str(tmp_path / "h.csv"), "-c", "count", "-e", "1", "-o",
          str(tmp_path / "n.csv")])
    err = capsys.readouterr().err
    assert "older veil" in err and "NOT counted" in err and str(old) in err


def test_session_commits_on_success_and_cancels_on_failure(tmp_path, monkeypatch):
    from veil.ledger import charge, open_ledger

    monkeypatch.setenv("VEIL_HOME", str(tmp_path / "home"))
    src = tmp_path / "in.csv"
    src.write_text("x\n1\n2\n3\n")
    with pytest.raises(ParameterError, match="inside veil.ledger.session"):
        charge(src, amount=1.0, unit="record")
    with pytest.raises(RuntimeError, match="boom"):
        with session(command="test"):
            charge(src, amount=1.0, unit="record", outputs=[tmp_path / "o.csv"])
            raise RuntimeError("boom")
    with session(command="test"):
        charge(src, amount=1.0, unit="record", outputs=[tmp_path / "o.csv"])
        (tmp_path / "o.csv").write_text("x\n1\n")
    with open_ledger() as led:
        (ds,) = led.datasets()
        assert [e["state"] for e in led.summary(ds).entries] == ["released", "committed"]
    # a body that fails AFTER writing its output still spent the budget
    other = tmp_path / "other.csv"
    other.write_text("y\n5\n6\n")
    with pytest.raises(RuntimeError):
        with session(command="test"):
            charge(other, amount=1.0, unit="record", outputs=[tmp_path / "o2.csv"])
            (tmp_path / "o2.csv").write_text("y\n4\n")
            raise RuntimeError("after the write")
    with open_ledger() as led:
        states = [e["state"] for d in led.datasets() for e in led.summary(d).entries]
    assert states.count("committed") == 2


_RACE = """
import sys, time
sys.path.insert(0, {src!r})
from veil.identity import identity_of_table
from veil.ledger import Ledger
from veil.errors import BudgetExceededError
ident = identity_of_table({{"age": [31, 45, 45, 62, 18], "city": list("abcde")}})
while time.time() < {start}:
    time.sleep(0.001)
with Ledger({path!r}) as led:
    try:
        r = led.reserve(ident, amount=1.0, unit="record", command="race", label="ages",
                        spend_again=True)
        led.commit(r.id)
        print("ok")
    except BudgetExceededError:
        print("refused")
"""


def test_concurrent_releases_never_overspend(tmp_path):
    import time

    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as led:
        led.set_total(AGES, total=2.5, label="ages")
    start = time.time() + 1.5  # all four start together, after their imports
    procs = [subprocess.Popen([sys.executable, "-c", _RACE.format(src=SRC, start=start,
                                                                 path=str(path))],
                              stdout=subprocess.PIPE, text=True) for _ in range(4)]
    outs = sorted(p.communicate(timeout=120)[0].strip() for p in procs)
    assert outs == ["ok", "ok", "refused", "refused"]
    with Ledger(path) as led:
        assert led.summary(led.find(AGES)).spent["epsilon"] == 2.0


def _half_created(path: Path) -> None:
    """What an interrupted first use left before the fix: the tables, no meta rows."""
    import sqlite3

    Ledger(path).close()
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("DELETE FROM meta")
    con.close()


def test_a_ledger_whose_creation_was_interrupted_is_finished_not_refused(tmp_path):
    # Measured by the slow fault suite: a Ctrl-C between the tables and the meta rows left a
    # ledger that every later command refused ("identifies datasets with None").
    path = tmp_path / "ledger.sqlite"
    _half_created(path)
    with Ledger(path) as led:
        _spend(led, AGES, 0.5)
        assert led.summary(led.find(AGES)).spent["epsilon"] == 0.5


def test_a_half_created_ledger_with_records_is_still_refused(tmp_path):
    # power: a ledger without its meta rows that does hold releases is not silently adopted
    import sqlite3

    path = tmp_path / "ledger.sqlite"
    _half_created(path)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("INSERT INTO datasets VALUES ('x', 'ages', 'now', NULL, NULL)")
    con.close()
    with pytest.raises(DataError, match="identifies datasets with None"):
        Ledger(path)


def test_creating_a_ledger_is_one_transaction(tmp_path, monkeypatch):
    # A failure after the tables were made (the meta rows refused) leaves no table behind.
    import sqlite3

    path = tmp_path / "ledger.sqlite"
    calls = {"n": 0}

    def deny(action, *args):
        if action == sqlite3.SQLITE_INSERT and args[0] == "meta":
            return sqlite3.SQLITE_DENY  # the meta rows fail after the tables were made
        return sqlite3.SQLITE_OK

    real_connect = sqlite3.connect

    def connect(*a, **kw):
        con = real_connect(*a, **kw)
        calls["n"] += 1
        con.set_authorizer(deny)
        return con

    monkeypatch.setattr(sqlite3, "connect", connect)
    with pytest.raises(DataError, match="not authorized"):
        Ledger(path)
    monkeypatch.setattr(sqlite3, "connect", real_connect)
    assert calls["n"] == 1
    con = real_connect(path)
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    con.close()
    assert names == set()
    with Ledger(path) as led:  # and the next use creates it whole
        _spend(led, AGES, 0.5)


@pytest.mark.parametrize("args", [["--total", "-1"], ["--total", "nan"],
                                  ["--total-per-metre", "0"], []])
def test_a_refused_budget_set_creates_no_ledger(tmp_path, monkeypatch, capsys, args):
    """`veil budget set data.csv --total -1` opened (created) the ledger, then refused -1."""
    from cli_cases import run_main

    monkeypatch.setenv("VEIL_HOME", str(tmp_path / "home"))
    data = tmp_path / "data.csv"
    data.write_text("v\n1\n2\n")
    code, _, err = run_main(["budget", "set", str(data), *args], capsys)
    assert code == 2 and "--total" in err
    assert not (tmp_path / "home").exists()
    code, _, err = run_main(["budget", "set", str(data), "--total", "1"], capsys)
    assert code == 0 and (tmp_path / "home" / "ledger.sqlite").exists()
