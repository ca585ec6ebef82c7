"""The batch engine never empties a folder it did not make, and never writes through a link.

An outside probe (2026-12-07):

* ``veil batch counts IN -o OUT --work-dir precious`` ran, then emptied and removed
  ``precious`` (the user's own folder, mode 0700, with ``notes.txt`` and ``sub/x.txt``); the same
  through a link (``--work-dir lnk`` removed the link's target), and ``veil batch discard OUT
  --work-dir precious --yes`` removed such a folder too, saying it discarded an interrupted run;
* ``-o LINK`` wrote the parts into the link's target, and ``-o DANGLING`` created the folder
  the link points to and wrote there (the same for ``batch visits --report``).

A work folder veil makes now holds a mark (``veil-work-folder``) from its first moment; an
existing folder without it is used only if it is empty or is an older veil's work folder
(only a work folder's own names, with its lock). Everything else is refused before anything
is written or reserved, and left as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_cases import run_main as run

CSV = "user,category\nu1,Bar\nu1,Church\nu2,Cafe\nu3,Bar\n"


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("VEIL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VEIL_LEDGER", str(tmp_path / "ledger.sqlite"))
    (tmp_path / "in 'c'; x.csv").write_text(CSV)


def tree(folder: Path) -> list:
    """Every entry under ``folder`` with its bytes (folders as True), links as their text."""
    return sorted((str(p.relative_to(folder)),
                   ("->" + os.readlink(p)) if p.is_symlink() else p.is_dir() or p.read_bytes())
                  for p in folder.rglob("*"))


def counts(tmp_path, out, *extra):
    src = tmp_path / "in 'c'; x.csv"
    return ["batch", "counts", src, "-o", out, "--categories", "Bar,Cafe,Church", "-e", "1",
            "--seed", "1", "--quiet", *extra]


def precious(folder: Path) -> Path:
    folder.mkdir(mode=0o700)
    os.chmod(folder, 0o700)  # the private-folder check passes: only the ownership check stops it
    (folder / "notes.txt").write_text("data")
    (folder / "sub").mkdir()
    (folder / "sub" / "x.txt").write_text("x")
    return folder


@pytest.mark.parametrize("via_link", [False, True], ids=["folder", "link-to-folder"])
def test_work_dir_holding_the_users_files_is_refused_and_kept(tmp_path, capsys, via_link):
    mine = precious(tmp_path / "precious")
    given = mine
    if via_link:
        given = tmp_path / "lnk"
        given.symlink_to(mine)
    before = tree(tmp_path)
    code, _, err = run(counts(tmp_path, tmp_path / "out", "--work-dir", given), capsys)
    assert code == 2, err
    if via_link:
        assert "link" in err, err
    else:
        assert "'notes.txt'" in err and "not a veil work folder" in err, err
    assert tree(tmp_path) == before  # nothing published, nothing removed, no ledger
    assert not (tmp_path / "ledger.sqlite").exists()


def test_discard_never_removes_a_folder_that_is_not_a_work_folder(tmp_path, capsys):
    mine = precious(tmp_path / "precious2")
    before = tree(tmp_path)
    code, _, err = run(["batch", "discard", tmp_path / "nonexistent_out", "--work-dir", mine,
                        "--yes"], capsys)
    assert code == 2, err
    assert "not a veil work folder" in err and "discarded" not in err, err
    assert tree(tmp_path) == before


def test_an_empty_work_dir_and_veils_own_work_dir_still_work(tmp_path, capsys):
    """The fix refuses the user's folders only: an empty --work-dir is used (and removed when
    the job completes, as before), and a job interrupted in its --work-dir resumes there."""
    from veil.engine.runner import WORK_MARK

    (tmp_path / "empty").mkdir(mode=0o700)
    code, _, err = run(counts(tmp_path, tmp_path / "o1", "--work-dir", tmp_path / "empty"), capsys)
    assert code == 0, err
    assert not (tmp_path / "empty").exists() and (tmp_path / "o1" / "_manifest.json").exists()
    # an interrupted run: its work folder carries the mark, and --resume finishes it there
    import veil.engine.runner as runner

    real = runner._write_owner

    def killed(*a, **k):  # Ctrl-C once the job's state is written
        raise KeyboardInterrupt

    runner._write_owner = killed
    try:
        code, _, err = run(counts(tmp_path, tmp_path / "o2", "--work-dir", tmp_path / "w2",
                                  "--spend-again"), capsys)
    finally:
        runner._write_owner = real
    assert code == 130, err
    assert (tmp_path / "w2" / WORK_MARK).is_file() and not (tmp_path / "o2").exists()
    code, _, err = run(counts(tmp_path, tmp_path / "o2", "--work-dir", tmp_path / "w2",
                              "--spend-again", "--resume"), capsys)
    assert code == 0, err
    assert not (tmp_path / "w2").exists() and (tmp_path / "o2" / "_manifest.json").exists()


def test_work_folder_of_an_older_veil_without_the_mark_is_still_veils(tmp_path):
    from veil.engine.runner import _foreign_in_work

    old = tmp_path / "old"
    old.mkdir()
    for name in ("lock", "workers.lock", "job.json", "key"):
        (old / name).write_text("")
    for name in ("staging", "parts", "markers", "tmp"):
        (old / name).mkdir()
    (old / ".job.json.tmp-0123456789abcdef").write_text("")  # a killed writer's temporary
    assert _foreign_in_work(old) is None
    (old / "lock").unlink()  # the same names without the lock: not made by veil
    assert _foreign_in_work(old) == ".job.json.tmp-0123456789abcdef"


def test_a_work_folder_whose_mark_another_job_is_writing_is_veils(tmp_path):
    """Found by the engine's race test under load (two jobs started together): the second
    job saw the first one's folder while its mark was still a temporary file and refused it
    as 'not a veil work folder' instead of reaching the lock ('in use by another veil job').
    Only the mark's own temporary counts; anything else beside it is still foreign."""
    from veil.engine.runner import WORK_MARK, _foreign_in_work, claim_work_dir

    work = tmp_path / ".out.veil-work"
    work.mkdir()
    work.chmod(0o700)  # as the other job made it (private_dir)
    tmp = work / f".{WORK_MARK}.tmp-0123456789abcdef"
    tmp.write_text("")
    assert _foreign_in_work(work) is None
    assert claim_work_dir(work) == work and (work / WORK_MARK).is_file()
    other = tmp_path / "mine"
    other.mkdir()
    (other / f".{WORK_MARK}.tmp-0123456789abcdef").write_text("")
    (other / "notes.txt").write_text("a user's file")
    assert _foreign_in_work(other) == "notes.txt"


@pytest.mark.parametrize("dangling", [False, True], ids=["link-to-folder", "dangling-link"])
def test_output_that_is_a_link_is_refused(tmp_path, capsys, dangling):
    if not dangling:
        (tmp_path / "realdir").mkdir()
    link = tmp_path / "lnk"
    link.symlink_to(tmp_path / ("nowhere" if dangling else "realdir"))
    before = tree(tmp_path)
    code, _, err = run(counts(tmp_path, link), capsys)
    assert code == 2, err
    assert "-o" in err and "symbolic link" in err, err
    assert tree(tmp_path) == before
    assert not (tmp_path / "nowhere").exists()


def test_visits_report_that_is_a_link_is_refused_before_anything_runs(tmp_path, capsys):
    (tmp_path / "ck.csv").write_text(CSV)
    (tmp_path / "realrep").mkdir()
    (tmp_path / "rep").symlink_to(tmp_path / "realrep")
    before = tree(tmp_path)
    code, _, err = run(["batch", "visits", tmp_path / "ck.csv", "-o", tmp_path / "v", "--categories",
                        "Bar,Cafe,Church", "--sensitive", "Church", "--report", tmp_path / "rep",
                        "--quiet"], capsys)
    assert code == 2, err
    assert "--report" in err and "symbolic link" in err, err
    assert tree(tmp_path) == before


def test_output_inside_a_linked_folder_is_written_in_the_links_target(tmp_path, capsys):
    """A link in the folder part of the path is followed (as for every command): only a link
    at the output itself is refused."""
    (tmp_path / "real").mkdir()
    (tmp_path / "ln").symlink_to(tmp_path / "real")
    code, _, err = run(counts(tmp_path, tmp_path / "ln" / "out"), capsys)
    assert code == 0, err
    assert (tmp_path / "real" / "out" / "_manifest.json").is_file()


def test_a_read_error_never_quotes_the_inputs_rows(tmp_path, capsys):
    """DuckDB's whole message reached the user: ``Original Line: u1,Bar Invalid unicode ...``
    and the reader's settings, quoting a row of the private input (and a 32 MB field whole).
    The batch commands now say what veil's readers say: the file, the row, no content."""
    src = tmp_path / "b.csv"
    src.write_bytes(b"user,category\nu1,Bar\nsecret-person-42,Caf\xe9 Secret Street 12\nu3,Bar\n")
    code, _, err = run(["batch", "counts", src, "-o", tmp_path / "o", "--categories", "Bar",
                        "-e", "1", "--quiet"], capsys)
    assert code == 2, err
    assert "row 2" in err and "not UTF-8" in err, err
    for private in ("u1", "secret", "Street", "Original Line"):
        assert private not in err, err
    assert len(err.strip().splitlines()) == 1
