"""``--ledger`` refuses files it must not change (security probe, defect D4).

A foreign SQLite database was converted into a ledger (veil's tables added, WAL mode set), a
symbolic link was written through (its target created), and a missing folder was created.
Each test fails on the code before the fix. Every file name holds a quote and a semicolon.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from cli_cases import run_veil, write_csv
from veil.errors import DataError, ParameterError
from veil.identity import identity_of_table
from veil.ledger import Ledger, default_ledger_path

HOSTILE = "it's;"  # a quote and a semicolon in every file name


def _data(d: Path) -> Path:
    return write_csv(d / f"{HOSTILE}counts.csv", ["bin", "count"],
                     [["a", 3], ["b", 5], ["c", 0], ["d", 7]])


def _noise(d: Path, ledger: str, out: str = "noisy.csv"):
    return run_veil(["noise", "counts", _data(d).name, "-c", "count", "-e", "1", "-o", out,
                     "--ledger", ledger], d)


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _home_ledgers() -> list[str]:
    """The ledgers registered in the home ledger (none when it does not exist)."""
    home = default_ledger_path()
    if not home.exists():
        return []
    with Ledger(home, readonly=True) as h:
        return [str(p) for p in h.registered()]


# ----------------------------------------------------------------------- (a) foreign database
def test_a_foreign_sqlite_database_is_refused_and_left_unchanged(tmp_path):
    app = tmp_path / f"{HOSTILE}app.db"
    con = sqlite3.connect(app)
    con.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    con.execute("INSERT INTO users VALUES (1, 'ada')")
    con.commit()
    con.close()
    before = _digest(app)
    res = _noise(tmp_path, app.name)
    assert res.code == 2, (res.code, res.err)
    assert "is an SQLite database that is not a veil ledger" in res.err, res.err
    assert "it holds tables: users" in res.err and app.name in res.err, res.err
    assert "nothing was changed" in res.err, res.err
    assert _digest(app) == before
    assert not (tmp_path / "noisy.csv").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([app.name, _data(tmp_path).name])
    with sqlite3.connect(app) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["users"]
    assert _home_ledgers() == []  # nor registered in the home ledger


def test_a_database_with_a_veil_table_name_but_other_columns_is_refused(tmp_path):
    app = tmp_path / f"{HOSTILE}meta.db"
    with sqlite3.connect(app) as con:
        con.execute("CREATE TABLE meta (k TEXT, v TEXT)")
    before = _digest(app)
    with pytest.raises(DataError, match="not a veil ledger .*its table 'meta'"):
        Ledger(app)
    assert _digest(app) == before


def test_new_empty_veil_and_half_created_ledgers_are_still_accepted(tmp_path):
    ages = identity_of_table({"age": [30, 41]})
    empty = tmp_path / f"{HOSTILE}empty.sqlite"
    empty.touch()
    for p in (tmp_path / f"{HOSTILE}new.sqlite", empty):
        with Ledger(p) as led:
            led.commit(led.reserve(ages, amount=1, unit="record", command="t", label="a").id)
        with Ledger(p) as led:  # a veil ledger
            assert led.summary(led.find(ages)).spent["epsilon"] == 1
    half = tmp_path / f"{HOSTILE}half.sqlite"
    with sqlite3.connect(half) as con:  # veil's tables without the meta rows
        con.executescript(Ledger._DDL)
    with Ledger(half) as led:
        assert led.find(ages) is None


def test_the_read_only_open_refuses_a_foreign_database_too(tmp_path):
    app = tmp_path / f"{HOSTILE}ro.db"
    with sqlite3.connect(app) as con:
        con.execute("CREATE TABLE users (id INTEGER)")
    with pytest.raises(DataError, match="not a veil ledger"):
        Ledger(app, readonly=True)


# ----------------------------------------------------------------------------- (b) links
@pytest.mark.parametrize("dangling", [True, False], ids=["dangling", "to-a-ledger"])
def test_a_ledger_that_is_a_symbolic_link_is_refused(tmp_path, dangling):
    target = tmp_path / f"{HOSTILE}nowhere.sqlite"
    if not dangling:
        Ledger(target).close()
    before = _digest(target) if not dangling else None
    link = tmp_path / f"{HOSTILE}ld.sqlite"
    link.symlink_to(target.name)
    res = _noise(tmp_path, link.name)
    assert res.code == 2, (res.code, res.err)
    assert "symbolic link" in res.err and "never writes through a link" in res.err, res.err
    assert link.name in res.err, res.err
    assert target.exists() is not dangling
    if not dangling:
        assert _digest(target) == before
    assert not (tmp_path / "noisy.csv").exists()
    with pytest.raises(ParameterError, match="symbolic link"):
        Ledger(link, readonly=True)


@pytest.mark.parametrize("side", ["-wal", "-shm", "-journal"])
def test_a_link_as_one_of_sqlites_files_beside_the_ledger_is_refused(tmp_path, side):
    """A planted `led.sqlite-shm` link: SQLite refused it, and veil said "cannot write the
    privacy ledger ... (a full disk, a file-size limit or a read-only folder?)"; a `-wal` link
    was removed by SQLite. Now refused, naming the link, with nothing touched."""
    victim = tmp_path / "victim.txt"
    victim.write_text("P" * 40000)
    link = tmp_path / f"{HOSTILE}led.sqlite{side}"
    link.symlink_to(victim.name)
    res = _noise(tmp_path, f"{HOSTILE}led.sqlite")
    assert res.code == 2, (res.code, res.err)
    assert "symbolic link" in res.err and side in res.err, res.err
    assert link.is_symlink() and victim.read_text() == "P" * 40000
    assert not (tmp_path / f"{HOSTILE}led.sqlite").exists()
    assert not (tmp_path / "noisy.csv").exists()


def test_a_ledger_in_a_linked_folder_is_fine(tmp_path):
    real = tmp_path / f"{HOSTILE}real"
    real.mkdir()
    (tmp_path / f"{HOSTILE}alias").symlink_to(real.name)
    res = _noise(tmp_path, f"{HOSTILE}alias/led.sqlite")
    assert res.code == 0, res.err
    assert (real / "led.sqlite").is_file()


# ---------------------------------------------------------------------- (c) missing folders
def test_an_explicit_ledger_in_a_missing_folder_is_refused(tmp_path, monkeypatch):
    res = _noise(tmp_path, f"sub/{HOSTILE}dir/led.sqlite")
    assert res.code == 2, (res.code, res.err)
    assert f"--ledger: folder 'sub/{HOSTILE}dir' does not exist" in res.err \
        or f'--ledger: folder "sub/{HOSTILE}dir" does not exist' in res.err, res.err
    assert not (tmp_path / "sub").exists() and not (tmp_path / "noisy.csv").exists()
    monkeypatch.setenv("VEIL_LEDGER", str(tmp_path / "env" / "led.sqlite"))
    res = run_veil(["noise", "counts", _data(tmp_path).name, "-c", "count", "-e", "1",
                    "-o", "noisy.csv"], tmp_path)
    assert res.code == 2 and "$VEIL_LEDGER: folder" in res.err, res.err
    assert not (tmp_path / "env").exists()


def test_the_home_ledger_still_creates_its_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("VEIL_HOME", str(tmp_path / f"{HOSTILE}state" / "veil"))
    res = run_veil(["noise", "counts", _data(tmp_path).name, "-c", "count", "-e", "1",
                    "-o", "noisy.csv"], tmp_path)
    assert res.code == 0, res.err
    home = tmp_path / f"{HOSTILE}state" / "veil"
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "ledger.sqlite").stat().st_mode) == 0o600
    assert os.path.samefile(default_ledger_path(), home / "ledger.sqlite")
