"""The privacy ledger: every budget spent on a dataset, by every DP command, in one place.

Why it exists: differential privacy budgets add up. Two releases about the same people at
epsilon 1 each are together a release at epsilon 2, and re-running a release twenty times and
averaging the outputs recovers the true counts. The ledger makes the tool, not the user's
memory, keep that sum: every DP command (``veil histogram publish``, ``veil noise counts``,
``veil location obfuscate``, ``veil trajectory release``, ``veil batch counts|trajectories``)
consults it before it runs and charges it after its output is durably written.

The model
---------
- **Datasets, not files.** A dataset is identified by the content of its rows
  (:mod:`veil.identity`): a copy, a rename, a ``touch``, a symbolic link or a CSV-to-Parquet
  conversion is the same dataset. A file that shares a *released* column (same values, any
  name) with a known dataset is linked to it, so extracting a column into a new file does
  not reset its budget either.
- **A declared total per dataset** (``veil budget set DATA --total 4``; geo budgets in epsilon
  per metre with ``--total-per-metre``). Without a declared total a dataset gets exactly one
  release: the second one is refused until a total is declared.
- **Releasing again is explicit**: a release about a dataset that already has spend needs
  ``--spend-again``, and is refused if it would exceed the declared total. Raising a total
  needs ``--raise``.
- **Two phases**: a command *reserves* its cost before it computes anything (so it is refused
  before it touches the data), writes its output, and *commits* the reservation after the
  output is durably on disk. A command that fails cancels its reservation (no phantom spend).
  A crash (power loss, ``kill -9``) leaves the reservation in place: it still counts, ``veil
  budget show`` lists it with its output path, and ``veil budget release ID`` cancels it once
  you have checked the output was never published (refused while the output exists).
- **Composition per unit of protection**: each entry records what it spent and the unit its
  guarantee protects (``record``: one check-in, one point; ``user``: everything one person
  contributed, with contributions bounded, or a whole trajectory at T x epsilon). The total
  caps the plain sum of all entries (basic sequential composition), which bounds the
  record-level loss always and the user-level loss when every entry is user-level;
  ``veil budget show`` says so when a dataset mixes units.
- **One dataset, one ledger.** The ledger lives in a per-user state folder,
  ``$VEIL_HOME/ledger.sqlite`` (``VEIL_HOME`` defaults to ``$XDG_DATA_HOME/veil``, i.e.
  ``~/.local/share/veil``), not next to the data or the output, so moving an output or
  working in another folder does not escape it. ``--ledger FILE`` (or ``$VEIL_LEDGER``)
  selects another ledger, which is registered in the home ledger; a release is refused when
  its dataset already has budget recorded in a different ledger.

Threat model, honestly: the ledger protects against mistakes and casual re-runs by people who
use veil to publish. It is an ordinary SQLite file owned by the user (mode 0600): anyone who
can delete or edit it (the user, root) can reset it, and a dataset whose content is changed
(a row added, a value perturbed) is a different dataset to any exact content hash. It is a
safety net and an audit trail, not an enforcement mechanism against a determined insider.

Examples
--------
>>> import tempfile, pathlib
>>> from veil.identity import identity_of_table
>>> led = Ledger(pathlib.Path(tempfile.mkdtemp()) / "ledger.sqlite")
>>> ident = identity_of_table({"age": [30, 41, 41, 52]})
>>> r = led.reserve(ident, amount=0.5, unit="record", command="example", label="ages")
>>> led.commit(r.id)
>>> led.reserve(ident, amount=0.5, unit="record", command="again", label="ages")
Traceback (most recent call last):
...
veil.errors.BudgetExceededError: ages: this dataset already had epsilon 0.5 spent by 1 release; a new release would spend 0.5 more, and no total budget is declared for it: declare one knowingly with `veil budget set ages --total T`, then pass --spend-again
>>> _ = led.set_total(ident, total=2.0, label="ages")
>>> led.commit(led.reserve(ident, amount=0.5, unit="record", command="again", label="ages",
...                        spend_again=True).id)
>>> led.summary(led.find(ident)).spent["epsilon"]
1.0
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import math
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import BudgetExceededError, DataError, ParameterError
from .identity import IDENTITY_VERSION, DatasetIdentity

__all__ = [
    "BUDGETS", "UNITS", "Ledger", "Reservation", "DatasetSummary", "state_home",
    "default_ledger_path", "ledger_path", "open_ledger", "session", "charge", "active_session",
]

#: Budget currencies: pure-DP epsilon, and epsilon per metre for geo-indistinguishability.
BUDGETS = ("epsilon", "epsilon_per_metre")
#: Units of protection an entry can state.
UNITS = ("record", "user")
LEDGER_NAME = "ledger.sqlite"
_SCHEMA = "1"
_REL_TOL = 1e-9  # floating-point slack when comparing a sum of epsilons with a total

_BUDGET_WORDS = {"epsilon": "epsilon", "epsilon_per_metre": "epsilon per metre"}
_TOTAL_OPTION = {"epsilon": "--total", "epsilon_per_metre": "--total-per-metre"}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def state_home() -> Path:
    """veil's per-user state folder: ``$VEIL_HOME``, else ``$XDG_DATA_HOME/veil``, else
    ``~/.local/share/veil``."""
    env = os.environ.get("VEIL_HOME")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "veil"


def legacy_note() -> str:
    """A warning when the JSON ledger of veil 0.1 (files, not datasets) is still around."""
    old = state_home() / "ledger.json"
    if not old.is_file():
        return ""
    return (f"ledger: {old} is the ledger of an older veil; it recorded files, not datasets, "
            "so its releases are NOT counted here: declare totals that leave room for them "
            "(`veil budget set DATA --total T`), then move that file away")


def default_ledger_path() -> Path:
    """The home ledger, ``state_home() / "ledger.sqlite"``."""
    return state_home() / LEDGER_NAME


def ledger_path(option: str | os.PathLike | None = None) -> Path:
    """The ledger a command uses: ``--ledger``, else ``$VEIL_LEDGER``, else the home ledger."""
    if option:
        return Path(os.fspath(option)).expanduser()
    env = os.environ.get("VEIL_LEDGER")
    if env:
        return Path(env).expanduser()
    return default_ledger_path()


#: the files SQLite keeps beside a database (its journal, write-ahead log, shared memory)
SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")


def _same_path(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _is_home_ledger(path: Path) -> bool:
    """Whether ``path`` is the home ledger as named (links not followed)."""
    return os.path.abspath(path) == os.path.abspath(default_ledger_path())


def _chosen_by(path: Path) -> str:
    """How messages name the setting that chose a ledger: ``--ledger``, ``$VEIL_LEDGER`` or
    the home ledger (``$VEIL_HOME``)."""
    if _is_home_ledger(path):
        return "the home ledger ($VEIL_HOME)"
    env = os.environ.get("VEIL_LEDGER")
    if env and os.path.abspath(Path(env).expanduser()) == os.path.abspath(path):
        return "$VEIL_LEDGER"
    return "--ledger"


def check_ledger_apart(ledger: str | os.PathLike, outputs: Sequence[str | os.PathLike]) -> None:
    """Refuse an output that is the ledger (or one of SQLite's files beside it) or a folder
    holding it.

    ``--ledger out.csv -o out.csv --force`` replaced the ledger holding the charge with the
    release, and the next release of the dataset started from zero.
    """
    real = os.path.realpath(ledger)
    own = {real} | {real + suffix for suffix in SQLITE_SIDE_FILES}
    for o in outputs:
        ro = os.path.realpath(o)
        if ro in own:
            raise ParameterError(f"--ledger: {os.fspath(ledger)!r} is also an output of this "
                                 f"command ({os.fspath(o)!r}); the ledger must be a file of its "
                                 "own")
        if real.startswith(ro.rstrip(os.sep) + os.sep):
            raise ParameterError(f"--ledger: {os.fspath(ledger)!r} is inside the output "
                                 f"{os.fspath(o)!r}, which the command writes; keep the ledger "
                                 "elsewhere")


def _fmt(x: float) -> str:
    return f"{x:.6g}"


@dataclass(frozen=True)
class Reservation:
    """A reserved (not yet committed) charge; ``note`` says how the dataset was recognized."""

    id: str
    dataset: str
    budget: str
    amount: float
    unit: str
    ledger: Path
    note: str = ""
    resumed: bool = False


@dataclass
class DatasetSummary:
    """What a dataset has spent (committed), has reserved, and may still spend."""

    id: str
    label: str
    totals: dict[str, float | None]
    spent: dict[str, float]
    reserved: dict[str, float]
    units: dict[str, set[str]]
    names: list[str]
    entries: list[dict[str, Any]] = field(default_factory=list)

    def remaining(self, budget: str = "epsilon") -> float | None:
        t = self.totals.get(budget)
        if t is None:
            return None
        return max(0.0, t - self.spent[budget] - self.reserved[budget])

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "names": self.names,
                "totals": self.totals, "spent": self.spent, "reserved": self.reserved,
                "remaining": {b: self.remaining(b) for b in BUDGETS},
                "units": {b: sorted(u) for b, u in self.units.items()},
                "entries": self.entries}


#: the text of sqlite3's OperationalError for a write that failed on the disk
_IO_ERRORS = ("disk I/O error", "database or disk is full", "readonly database",
              "unable to open database file")


class Ledger:
    """A ledger file (SQLite, mode 0600, created on first use).

    Only the home ledger (:func:`default_ledger_path`) has its folder created (mode 0700);
    any other ledger must be in an existing folder. Refused before anything is written: a
    path that is a symbolic link (veil never writes through a link), and an SQLite database
    holding anything but a veil ledger's tables.

    Parameters
    ----------
    path : str or path-like
        The ledger file.
    readonly : bool
        Open an existing ledger without writing (used to look into other ledgers).
    """

    def __init__(self, path: str | os.PathLike, *, readonly: bool = False):
        self.path = Path(os.fspath(path))
        self.readonly = readonly
        for side in ("", *SQLITE_SIDE_FILES):  # a dangling link too: SQLite created its
            link = Path(os.fspath(self.path) + side)  # target (a -shm link it refused)
            if link.is_symlink():
                where = "beside the ledger " if side else ""
                raise ParameterError(f"{_chosen_by(self.path)}: {str(link)!r} {where}is a "
                                     "symbolic link; veil never writes through a link: "
                                     + ("remove it" if side else "give the ledger file itself"))
        if readonly:
            uri = self.path.resolve().as_uri() + "?mode=ro"
            self._con = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)
        else:
            if self.path.is_dir():
                raise ParameterError(f"--ledger: {str(self.path)!r} is a folder; give a file")
            parent = self.path.parent
            if not parent.exists():
                if not _is_home_ledger(self.path):  # a typo in --ledger made a folder tree
                    raise ParameterError(f"{_chosen_by(self.path)}: folder {str(parent)!r} "
                                         "does not exist; create it first (veil creates only "
                                         "the home ledger's folder)")
                parent.mkdir(parents=True, mode=0o700)
            new = not self.path.exists()
            self._con = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            if new:
                with contextlib.suppress(OSError):
                    os.chmod(self.path, 0o600)
        self._con.row_factory = sqlite3.Row
        try:
            # before the first write (journal_mode = WAL writes the file's header)
            self._refuse_foreign()
            if not readonly:
                # WAL: one fsync per transaction, readers never block the writer
                self._con.execute("PRAGMA journal_mode = WAL")
                self._con.execute("PRAGMA synchronous = FULL")
                if not self._con.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'"
                                         ).fetchone() or self._half_created():
                    self._init_schema()
            self._check_schema()
        except DataError:
            self._con.close()
            raise
        except sqlite3.OperationalError as exc:  # I/O: a full disk, a size limit, read-only
            self._con.close()
            raise OSError(f"cannot write the privacy ledger {str(self.path)!r}: {exc} (a full "
                          "disk, a file-size limit or a read-only folder?); nothing was "
                          "released") from None
        except sqlite3.DatabaseError as exc:
            self._con.close()
            raise DataError(f"is not a veil privacy ledger ({exc}); an older veil kept a JSON "
                            "ledger: move it away (its releases are not carried over) or pass "
                            "another --ledger", path=str(self.path)) from None

    def _refuse_foreign(self) -> None:
        """Refuse an SQLite database that holds anything but a veil ledger's own tables and
        indexes (with their columns): ``--ledger app.db`` added veil's tables to an
        application's database and switched it to WAL mode. An empty file, a veil ledger and
        a half-created one pass."""
        own = _own_schema()
        odd: dict[str, list[str]] = {}
        for kind, name in self._con.execute("SELECT type, name FROM sqlite_master "
                                            "ORDER BY rowid").fetchall():
            if name.startswith("sqlite_"):  # SQLite's own (autoindexes, statistics)
                continue
            if own.get(name, ("", ()))[0] != kind:
                odd.setdefault(kind, []).append(name)
            elif kind == "table":
                cols = tuple(r[1] for r in self._con.execute(
                    "SELECT * FROM pragma_table_info(?)", (name,)).fetchall())
                if cols != own[name][1]:
                    raise DataError(f"is an SQLite database that is not a veil ledger (its "
                                    f"table {name!r} has columns {', '.join(cols)}, not "
                                    f"veil's); pass another --ledger (a new file or a veil "
                                    f"ledger); nothing was changed", path=str(self.path))
        if odd:
            held = "; ".join(f"{kind}s: {', '.join(names)}" for kind, names in odd.items())
            raise DataError(f"is an SQLite database that is not a veil ledger (it holds "
                            f"{held}); pass another --ledger (a new file or a veil ledger); "
                            "nothing was changed", path=str(self.path))

    # ------------------------------------------------------------------ plumbing
    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def _txn(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: concurrent commands serialize here)."""
        try:
            self._con.execute("BEGIN IMMEDIATE")
            try:
                yield self._con
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._con.execute("ROLLBACK")
                raise
            self._con.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            # a write that fails half-way (a file-size limit reached by the journal, a full
            # disk, a folder made read-only): said "internal error: disk I/O error"
            if not any(w in str(exc) for w in _IO_ERRORS):
                raise
            with contextlib.suppress(sqlite3.Error):
                self._con.execute("ROLLBACK")
            raise OSError(f"cannot write the privacy ledger {str(self.path)!r}: {exc} (a full "
                          "disk, a file-size limit or a read-only folder?); nothing was "
                          "released") from None

    _DDL = """
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE IF NOT EXISTS datasets (
            id TEXT PRIMARY KEY, label TEXT, created TEXT,
            total REAL, total_per_metre REAL);
        CREATE TABLE IF NOT EXISTS aliases (
            fingerprint TEXT, kind TEXT, dataset TEXT, name TEXT, first_seen TEXT,
            PRIMARY KEY (fingerprint, kind, dataset));
        CREATE TABLE IF NOT EXISTS entries (
            id TEXT PRIMARY KEY, dataset TEXT, state TEXT, budget TEXT, amount REAL,
            unit TEXT, command TEXT, input TEXT, outputs TEXT, job TEXT,
            created TEXT, settled TEXT, pid INTEGER, host TEXT);
        CREATE TABLE IF NOT EXISTS events (time TEXT, dataset TEXT, what TEXT);
        CREATE TABLE IF NOT EXISTS ledgers (path TEXT PRIMARY KEY, first_used TEXT);
        CREATE INDEX IF NOT EXISTS entries_by_dataset ON entries (dataset, state);
        CREATE INDEX IF NOT EXISTS aliases_by_dataset ON aliases (dataset);
        """

    def _init_schema(self) -> None:
        # One transaction: the tables and the meta rows appear together or not at all. (With
        # the tables committed first, a Ctrl-C or a kill before the meta rows left a ledger
        # that every later command refused: "identifies datasets with None".)
        with self._txn() as c:
            for stmt in self._DDL.split(";"):
                if stmt.strip():
                    c.execute(stmt)
            c.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (_SCHEMA,))
            c.execute("INSERT OR IGNORE INTO meta VALUES ('identity', ?)", (IDENTITY_VERSION,))
            c.execute("INSERT OR IGNORE INTO meta VALUES ('created', ?)", (_now(),))

    def _half_created(self) -> bool:
        """A ledger an older veil left with its tables but without its meta rows and with
        nothing recorded (its creation was interrupted): safe to finish creating."""
        rows = dict(self._con.execute("SELECT key, value FROM meta").fetchall())
        if "identity" in rows:
            return False
        tables = {r[0] for r in self._con.execute("SELECT name FROM sqlite_master")}
        for table, probe in (("datasets", "SELECT 1 FROM datasets LIMIT 1"),
                             ("entries", "SELECT 1 FROM entries LIMIT 1"),
                             ("aliases", "SELECT 1 FROM aliases LIMIT 1")):
            if table in tables and self._con.execute(probe).fetchone():
                return False
        return True

    def _check_schema(self) -> None:
        rows = dict(self._con.execute("SELECT key, value FROM meta").fetchall())
        if rows.get("identity") != IDENTITY_VERSION:
            raise DataError(f"this ledger identifies datasets with {rows.get('identity')!r}, "
                            f"this veil with {IDENTITY_VERSION!r}: its datasets cannot be "
                            "recognized; use the veil version that wrote it",
                            path=str(self.path))

    # ------------------------------------------------------------------ datasets
    def _match(self, ident: DatasetIdentity, read: Sequence[str] | None) -> list[str]:
        """Datasets this input belongs to: same identity, or a shared released column."""
        read_fp = ident.prints(read) if read is not None else ident.prints()
        all_fp = ident.prints()
        q = ["(kind = 'table' AND fingerprint = ?)"]
        args: list[Any] = [ident.id]
        if read_fp:
            q.append(f"(kind IN ('column', 'released') AND fingerprint IN "
                     f"({', '.join('?' * len(read_fp))}))")
            args += read_fp
        if all_fp:
            q.append(f"(kind = 'released' AND fingerprint IN ({', '.join('?' * len(all_fp))}))")
            args += all_fp
        rows = self._con.execute(
            f"SELECT DISTINCT a.dataset FROM aliases a JOIN datasets d ON d.id = a.dataset "
            f"WHERE {' OR '.join(q)} ORDER BY d.rowid", args).fetchall()
        return [r[0] for r in rows]

    def _link_note(self, ident: DatasetIdentity, dataset: str, read: Sequence[str] | None) -> str:
        if self._con.execute("SELECT 1 FROM aliases WHERE kind = 'table' AND fingerprint = ? "
                             "AND dataset = ?", (ident.id, dataset)).fetchone():
            return ""
        cols = [c for c in ident.columns if not c.constant]
        for c in cols:
            row = self._con.execute("SELECT name FROM aliases WHERE fingerprint = ? AND "
                                    "dataset = ? AND kind IN ('column', 'released')",
                                    (c.fingerprint, dataset)).fetchone()
            if row is not None:
                label = self._label(dataset)
                # no content hash in a console line (it is a function of the private rows;
                # `veil budget show` lists the ledger's ids)
                return (f"treated as the ledger's dataset {label!r}: its column {c.name!r} "
                        f"holds the same values as column {row[0]!r} there")
        return ""

    def _label(self, dataset: str) -> str:
        row = self._con.execute("SELECT label FROM datasets WHERE id = ?", (dataset,)).fetchone()
        return row[0] if row else dataset[:12]

    def _resolve(self, c: sqlite3.Connection, ident: DatasetIdentity,
                 read: Sequence[str] | None, label: str) -> tuple[str, str]:
        """Find (or create) the dataset; merge datasets the input links together."""
        found = self._match(ident, read)
        if not found:
            c.execute("INSERT INTO datasets (id, label, created) VALUES (?, ?, ?)",
                      (ident.id, label, _now()))
            return ident.id, ""
        keep, others = found[0], found[1:]
        note = self._link_note(ident, keep, read)
        for o in others:
            t = c.execute("SELECT total, total_per_metre FROM datasets WHERE id IN (?, ?)",
                          (keep, o)).fetchall()
            totals = []
            for j in range(2):
                vals = [r[j] for r in t if r[j] is not None]
                totals.append(min(vals) if vals else None)
            c.execute("UPDATE datasets SET total = ?, total_per_metre = ? WHERE id = ?",
                      (totals[0], totals[1], keep))
            c.execute("UPDATE OR IGNORE aliases SET dataset = ? WHERE dataset = ?", (keep, o))
            c.execute("DELETE FROM aliases WHERE dataset = ?", (o,))
            c.execute("UPDATE entries SET dataset = ? WHERE dataset = ?", (keep, o))
            c.execute("DELETE FROM datasets WHERE id = ?", (o,))
            c.execute("INSERT INTO events VALUES (?, ?, ?)",
                      (_now(), keep, f"merged dataset {o[:12]}: {label} links them"))
            note = (note + "; " if note else "") + (f"merged with dataset {o[:12]} (it shares "
                                                    f"content with {label})")
        return keep, note

    def _add_aliases(self, c: sqlite3.Connection, ident: DatasetIdentity, dataset: str,
                     read: Sequence[str] | None, label: str) -> None:
        now = _now()
        c.execute("INSERT OR IGNORE INTO aliases VALUES (?, 'table', ?, ?, ?)",
                  (ident.id, dataset, label, now))
        read_set = set(read) if read is not None else {col.name for col in ident.columns}
        for col in ident.columns:
            if col.constant:
                continue
            c.execute("INSERT OR IGNORE INTO aliases VALUES (?, 'column', ?, ?, ?)",
                      (col.fingerprint, dataset, col.name, now))
            if col.name in read_set:
                c.execute("INSERT OR IGNORE INTO aliases VALUES (?, 'released', ?, ?, ?)",
                          (col.fingerprint, dataset, col.name, now))

    def find(self, ident: DatasetIdentity, read: Sequence[str] | None = None) -> str | None:
        """The dataset an input belongs to, or ``None`` if the ledger has never seen it."""
        found = self._match(ident, read)
        return found[0] if found else None

    def has_budget(self, dataset: str) -> bool:
        """Whether the dataset has any spend, reservation or declared total here."""
        row = self._con.execute("SELECT total, total_per_metre FROM datasets WHERE id = ?",
                                (dataset,)).fetchone()
        if row is None:
            return False
        if row[0] is not None or row[1] is not None:
            return True
        return self._con.execute("SELECT 1 FROM entries WHERE dataset = ? AND state IN "
                                 "('reserved', 'committed') LIMIT 1", (dataset,)).fetchone() \
            is not None

    # ------------------------------------------------------------------ totals
    def set_total(self, ident: DatasetIdentity, *, total: float | None = None,
                  total_per_metre: float | None = None, raise_total: bool = False,
                  label: str = "dataset") -> DatasetSummary:
        """Declare the total budget of a dataset (raising an existing total needs
        ``raise_total=True``: it is a decision about these people's privacy)."""
        from .validation import check_epsilon

        if total is None and total_per_metre is None:
            raise ParameterError("give --total (epsilon) and/or --total-per-metre")
        new = {"total": None if total is None else check_epsilon(total, "--total"),
               "total_per_metre": None if total_per_metre is None
               else check_epsilon(total_per_metre, "--total-per-metre")}
        with self._txn() as c:
            # nothing is released here: the file is linked by its identity, or by a column
            # already released from a known dataset (never by a shared public label column)
            dataset, _ = self._resolve(c, ident, [], label)
            row = c.execute("SELECT total, total_per_metre FROM datasets WHERE id = ?",
                            (dataset,)).fetchone()
            for col, opt in (("total", "--total"), ("total_per_metre", "--total-per-metre")):
                old, want = row[col], new[col]
                if want is None:
                    continue
                if old is not None and want > old * (1 + _REL_TOL) and not raise_total:
                    raise BudgetExceededError(
                        f"{label}: the declared {opt.lstrip('-').replace('-', ' ')} is "
                        f"{_fmt(old)}; raising it to {_fmt(want)} allows more releases about "
                        f"the same people: pass --raise to do so knowingly")
                c.execute(f"UPDATE datasets SET {col} = ? WHERE id = ?", (want, dataset))
                c.execute("INSERT INTO events VALUES (?, ?, ?)",
                          (_now(), dataset, f"{opt} {_fmt(want)} (was "
                           f"{'undeclared' if old is None else _fmt(old)})"))
            self._add_aliases(c, ident, dataset, [], label)
        return self.summary(dataset)

    # ------------------------------------------------------------------ reserve / commit
    def reserve(self, ident: DatasetIdentity, *, amount: float, unit: str, command: str,
                label: str, budget: str = "epsilon", outputs: Sequence[str | os.PathLike] = (),
                read: Sequence[str] | None = None, spend_again: bool = False,
                job: str | None = None, resume: bool = False) -> Reservation:
        """Reserve ``amount`` of ``budget`` on the input's dataset, or refuse.

        Parameters
        ----------
        ident : DatasetIdentity
            The input as read (:func:`veil.identity.identity_of_file`).
        amount : float
            What this release spends, in ``budget`` units, per ``unit``.
        unit : {"record", "user"}
        command, label : str
            The command line and the input's name, for the record and the messages.
        budget : {"epsilon", "epsilon_per_metre"}
        outputs : paths
            What the release writes (``veil budget release`` refuses while they exist).
        read : list of str, optional
            The columns the release reads as private data (default: all).
        spend_again : bool
            Accept a release about a dataset that already has spend (capped by its total).
        job : str, optional
            A key of a resumable job. With ``resume=True`` (continuing the job's own output),
            the job's entry (reserved by the interrupted run, or committed) is returned as it
            is: a resume spends nothing more. A fresh run never reuses an entry (moving an
            output away and running again is a new release). For a release whose
            output is a deterministic function of the data and a secret key (keyed,
            "consistent" noise), pass a digest of that key and the parameters prefixed with
            ``"repeat:"``: repeating it on the same dataset publishes exactly the same output
            again, so it is recorded at no extra cost.

        Raises
        ------
        BudgetExceededError
            The dataset already has spend and ``spend_again`` is false; or no total is
            declared and it already has spend; or the total would be exceeded.
        """
        from .validation import check_choice, check_nonnegative

        check_choice(budget, "budget", BUDGETS)
        check_choice(unit, "unit", UNITS)
        amount = check_nonnegative(amount, "amount")
        check_ledger_apart(self.path, outputs)
        words = _BUDGET_WORDS[budget]
        with self._txn() as c:
            dataset, note = self._resolve(c, ident, read, label)
            if job is not None:
                row = c.execute("SELECT * FROM entries WHERE dataset = ? AND job = ? AND state "
                                "IN ('reserved', 'committed') AND budget = ? ORDER BY state DESC",
                                (dataset, job, budget)).fetchone() if resume else None
                if row is not None:
                    return Reservation(row["id"], dataset, budget, row["amount"], row["unit"],
                                       self.path, note, resumed=True)
                free_repeat = job.startswith("repeat:") and c.execute(
                        "SELECT 1 FROM entries WHERE dataset = ? AND job = ? AND state = "
                        "'committed' AND budget = ?", (dataset, job, budget)).fetchone() \
                    is not None
                if free_repeat:  # the same keyed output again: nothing new is published
                    amount = 0.0
                    note = (note + "; " if note else "") + ("repeats an earlier release with "
                                                            "the same key: no new spend")
            else:
                free_repeat = False
            prior = c.execute("SELECT state, amount, command, created FROM entries WHERE "
                              "dataset = ? AND budget = ? AND state IN ('reserved', 'committed') "
                              "ORDER BY rowid", (dataset, budget)).fetchall()
            spent = math.fsum(r["amount"] for r in prior if r["state"] == "committed")
            held = math.fsum(r["amount"] for r in prior if r["state"] == "reserved")
            col = "total" if budget == "epsilon" else "total_per_metre"
            total = c.execute(f"SELECT {col} FROM datasets WHERE id = ?", (dataset,)
                              ).fetchone()[0]
            used = spent + held
            held_txt = (f" (of which {_fmt(held)} reserved by runs that did not finish: see "
                        "`veil budget show`)") if held > 0 else ""
            n = len(prior)
            releases = f"{n} release{'s' if n != 1 else ''}"
            if free_repeat:
                pass
            elif prior and total is None:
                raise BudgetExceededError(
                    f"{label}: this dataset already had {words} {_fmt(used)} spent by "
                    f"{releases}{held_txt}; a new release would spend "
                    f"{_fmt(amount)} more, and no total budget is declared for it: declare one "
                    f"knowingly with `veil budget set {label} {_TOTAL_OPTION[budget]} T`, then "
                    "pass --spend-again")
            elif total is not None and used + amount > total * (1 + _REL_TOL):
                raise BudgetExceededError(
                    f"{label}: this release would spend {words} {_fmt(amount)}, but "
                    f"{_fmt(used)} of the declared total {_fmt(total)} is already spent"
                    f"{held_txt}: it would exceed the total by "
                    f"{_fmt(used + amount - total)}. To allow it, raise the total knowingly: "
                    f"`veil budget set {label} {_TOTAL_OPTION[budget]} {_fmt(used + amount)} "
                    "--raise` (every release about these people adds up)")
            elif prior and not spend_again:
                left = max(0.0, total - used)
                raise BudgetExceededError(
                    f"{label}: this dataset already had {words} {_fmt(used)} spent by "
                    f"{releases}{held_txt} of its declared total {_fmt(total)}; a new "
                    f"release would spend {_fmt(amount)} more ({_fmt(left)} left): pass "
                    "--spend-again to accept that")
            rid = uuid.uuid4().hex[:12]
            c.execute("INSERT INTO entries VALUES (?, ?, 'reserved', ?, ?, ?, ?, ?, ?, ?, ?, NULL, "
                      "?, ?)",
                      (rid, dataset, budget, amount, unit, command, label,
                       json.dumps([os.path.abspath(os.fspath(o)) for o in outputs]), job,
                       _now(), os.getpid(), socket.gethostname()))
            self._add_aliases(c, ident, dataset, read, label)
        return Reservation(rid, dataset, budget, amount, unit, self.path, note)

    def commit(self, reservation_id: str) -> None:
        """Mark a reservation spent (after its outputs are durably written)."""
        with self._txn() as c:
            cur = c.execute("UPDATE entries SET state = 'committed', settled = ? WHERE id = ? "
                            "AND state = 'reserved'", (_now(), reservation_id))
            if cur.rowcount != 1:
                row = c.execute("SELECT state FROM entries WHERE id = ?",
                                (reservation_id,)).fetchone()
                if row is not None and row[0] == "committed":
                    return
                raise ParameterError(f"no open reservation {reservation_id!r} in ledger "
                                     f"{self.path} (state: {row[0] if row else 'unknown'})")

    def cancel(self, reservation_id: str, *, force: bool = False, why: str = "") -> dict:
        """Cancel a reservation (its release did not happen); returns the entry.

        Refused for a committed entry (spent budget never comes back) and, unless ``force``,
        while one of the reservation's outputs exists (it may have been published).
        """
        reservation_id = str(reservation_id).strip()
        if len(reservation_id) < 4:  # "" (and "_", "%" as LIKE patterns) matched any entry
            raise ParameterError(f"reservation id {reservation_id!r}: give the id shown by "
                                 "`veil budget show` (at least its first 4 characters)")
        with self._txn() as c:
            row = c.execute("SELECT * FROM entries WHERE id = ? OR substr(id, 1, ?) = ?",
                            (reservation_id, len(reservation_id), reservation_id)).fetchall()
            if len(row) != 1:
                raise ParameterError(f"{'no' if not row else 'several'} ledger entries match "
                                     f"{reservation_id!r} (see `veil budget show`)")
            e = dict(row[0])
            if e["state"] == "committed":
                raise BudgetExceededError(
                    f"entry {e['id']} is committed: its output was written, so its budget is "
                    "spent and cannot be returned (DP budgets do not renew)")
            if e["state"] == "released":
                return e
            outs = json.loads(e["outputs"] or "[]")
            existing = [o for o in outs if os.path.lexists(o)]
            if existing and not force:
                raise ParameterError(
                    f"reservation {e['id']} wrote {existing[0]!r}, which still exists: the "
                    "release may have been published, so its budget stays spent. Remove the "
                    "output first if it was never shared, or pass --force")
            left = _leftovers(outs)
            if left and not force:  # a run killed while writing: (part of) its noisy values
                raise ParameterError(
                    f"reservation {e['id']}: {str(left[0])!r}, a temporary file of its "
                    "release (the run stopped while writing it), holds noisy values of it, so "
                    "its budget stays spent. Delete it first if it was never shared, or pass "
                    "--force")
            c.execute("UPDATE entries SET state = 'released', settled = ? WHERE id = ?",
                      (_now(), e["id"]))
            c.execute("INSERT INTO events VALUES (?, ?, ?)",
                      (_now(), e["dataset"], f"reservation {e['id']} released"
                       f"{(': ' + why) if why else ''}"))
        return e

    # ------------------------------------------------------------------ reading
    def summary(self, dataset: str) -> DatasetSummary:
        d = self._con.execute("SELECT * FROM datasets WHERE id = ?", (dataset,)).fetchone()
        if d is None:
            raise ParameterError(f"no dataset {dataset!r} in ledger {self.path}")
        entries = [dict(r) for r in self._con.execute(
            "SELECT id, state, budget, amount, unit, command, input, outputs, created, settled "
            "FROM entries WHERE dataset = ? ORDER BY rowid", (dataset,))]
        for e in entries:
            e["outputs"] = json.loads(e["outputs"] or "[]")
        spent = {b: math.fsum(e["amount"] for e in entries
                              if e["budget"] == b and e["state"] == "committed") for b in BUDGETS}
        reserved = {b: math.fsum(e["amount"] for e in entries
                                 if e["budget"] == b and e["state"] == "reserved") for b in BUDGETS}
        units = {b: {e["unit"] for e in entries if e["budget"] == b
                     and e["state"] in ("reserved", "committed")} for b in BUDGETS}
        names = list(dict.fromkeys(
            [r[0] for r in self._con.execute("SELECT name FROM aliases WHERE dataset = ? AND "
                                             "kind = 'table' ORDER BY rowid", (dataset,))]
            + [e["input"] for e in entries]))  # every name the dataset was released under
        return DatasetSummary(d["id"], d["label"], {"epsilon": d["total"],
                              "epsilon_per_metre": d["total_per_metre"]},
                              spent, reserved, units, names, entries)

    def datasets(self) -> list[str]:
        return [r[0] for r in self._con.execute("SELECT id FROM datasets ORDER BY rowid")]

    def events(self, dataset: str | None = None) -> list[dict[str, Any]]:
        q = "SELECT * FROM events" + (" WHERE dataset = ?" if dataset else "") + " ORDER BY rowid"
        return [dict(r) for r in self._con.execute(q, (dataset,) if dataset else ())]

    def lookup(self, key: str) -> str:
        """A dataset by id prefix (as ``veil budget show`` prints it)."""
        rows = [r[0] for r in self._con.execute("SELECT id FROM datasets WHERE id LIKE ?",
                                                (key + "%",))]
        if len(rows) != 1:
            raise ParameterError(f"{'no' if not rows else 'several'} datasets in ledger "
                                 f"{self.path} have an id starting with {key!r}")
        return rows[0]

    # ------------------------------------------------------------------ other ledgers
    def register(self, other: Path) -> None:
        with self._txn() as c:
            c.execute("INSERT OR IGNORE INTO ledgers VALUES (?, ?)",
                      (os.path.realpath(other), _now()))

    def registered(self) -> list[Path]:
        return [Path(r[0]) for r in self._con.execute("SELECT path FROM ledgers ORDER BY 1")]


@functools.cache
def _own_schema() -> dict[str, tuple[str, tuple[str, ...]]]:
    """A veil ledger's objects: name -> (type, the columns of a table), from its DDL."""
    with contextlib.closing(sqlite3.connect(":memory:")) as mem:
        mem.executescript(Ledger._DDL)
        return {name: (kind, tuple(r[1] for r in mem.execute(
                    "SELECT * FROM pragma_table_info(?)", (name,)).fetchall()))
                for kind, name in mem.execute("SELECT type, name FROM sqlite_master "
                                              "WHERE name NOT LIKE 'sqlite%'").fetchall()}


def open_ledger(option: str | os.PathLike | None = None) -> Ledger:
    """Open the ledger a command uses (see :func:`ledger_path`)."""
    return Ledger(ledger_path(option))


def check_other_ledgers(ident: DatasetIdentity, read: Sequence[str] | None, current: Path,
                        label: str) -> None:
    """Refuse when the dataset has budget recorded in a ledger other than ``current``.

    The home ledger registers every other ledger used from this account; a dataset belongs
    to the ledger where its budget was first recorded (one dataset, one ledger).
    """
    home = default_ledger_path()
    candidates: list[Path] = []
    if home.exists():
        candidates.append(home)
        with contextlib.closing(Ledger(home, readonly=True)) as h:
            candidates += h.registered()
    seen = set()
    for p in candidates:
        key = os.path.realpath(p)
        if key in seen or _same_path(p, current) or not os.path.exists(p):
            continue
        seen.add(key)
        try:
            other = Ledger(p, readonly=True)
        except (DataError, ParameterError, sqlite3.Error, OSError) as exc:  # was skipped silently
            import warnings

            from .errors import PrivacyWarning

            warnings.warn(f"ledger {p} (used before from this account) cannot be read "
                          f"({str(exc).splitlines()[0]}): budget recorded there for this "
                          "dataset is not checked", PrivacyWarning, stacklevel=2)
            continue
        with contextlib.closing(other):
            ds = other.find(ident, read)
            if ds is not None and other.has_budget(ds):
                s = other.summary(ds)
                spent = ", ".join(f"{_BUDGET_WORDS[b]} {_fmt(s.spent[b] + s.reserved[b])}"
                                  for b in BUDGETS if s.spent[b] + s.reserved[b] > 0) or \
                    "a declared total"
                raise BudgetExceededError(
                    f"{label}: this dataset already has budget recorded in ledger {p} "
                    f"({spent}); a release charged to {current} would start it from zero. "
                    f"Use --ledger {p} (one dataset, one ledger)")
    if not _same_path(current, home):
        # opened first: a ledger refused (a link, a missing folder, a foreign database) is
        # never registered in the home ledger
        with contextlib.closing(Ledger(current)):
            pass
        with contextlib.closing(Ledger(home)) as h:
            h.register(current)


# ---------------------------------------------------------------------- command sessions
@dataclass
class _Session:
    ledger: str | os.PathLike | None
    spend_again: bool
    command: str
    # (reservation, its ledger, the state of its outputs before the command wrote them)
    reservations: list[tuple[Reservation, Path, dict[str, Any]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _snapshot(paths: Sequence[str | os.PathLike]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in paths:
        try:
            st = os.lstat(p)
            out[os.fspath(p)] = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            out[os.fspath(p)] = None
    return out


def _leftovers(outputs: Sequence[str | os.PathLike]) -> list:
    """Temporary files of these outputs still on disk (see :func:`veil.io.write.leftover_temps`)."""
    from .io.write import leftover_temps

    def holds_something(p) -> bool:  # an empty one (created, killed before a byte) holds none
        try:
            return os.lstat(p).st_size > 0
        except OSError:
            return False

    return [t for o in outputs for t in leftover_temps(o) if holds_something(t)]


def _written(before: dict[str, Any]) -> bool:
    """Whether any output changed since the snapshot (veil's writes are atomic renames, so a
    changed output is a complete, possibly published, release)."""
    return _snapshot(list(before)) != before


_SESSION: contextvars.ContextVar[_Session | None] = contextvars.ContextVar(
    "veil_ledger_session", default=None)


def active_session() -> _Session | None:
    """The ledger session of the running command, if any."""
    return _SESSION.get()


@contextlib.contextmanager
def session(*, ledger: str | os.PathLike | None = None, spend_again: bool = False,
            command: str = "veil") -> Iterator[_Session]:
    """Run a command's body: reservations made with :func:`charge` inside it are committed
    when the body returns and cancelled when it raises (a crash leaves them reserved)."""
    s = _Session(ledger, bool(spend_again), command)
    token = _SESSION.set(s)
    try:
        yield s
    except BaseException:
        for r, path, before in s.reservations:
            left = _leftovers(list(before))
            with contextlib.suppress(Exception), contextlib.closing(Ledger(path)) as led:
                if _written(before) or left:  # the output exists: the release happened
                    led.commit(r.id)          # (or a temporary file of it could not be removed)
                else:
                    led.cancel(r.id, force=True, why="the command failed before writing")
            if left:
                import warnings

                from .errors import PrivacyWarning

                warnings.warn(f"{str(left[0])!r} (a temporary file of this release, which "
                              "could not be removed) holds noisy values of it: its charge is "
                              "kept; delete the file if it was never shared", PrivacyWarning,
                              stacklevel=2)
        raise
    else:
        for r, path, _ in s.reservations:
            with contextlib.closing(Ledger(path)) as led:
                led.commit(r.id)
    finally:
        _SESSION.reset(token)


def charge(source: Any, *, amount: float, unit: str, budget: str = "epsilon",
           read: Sequence[str] | None = None, outputs: Sequence[str | os.PathLike] = (),
           label: str | None = None, format: str | None = None, delimiter: str | None = None,
           identity: DatasetIdentity | None = None, job: str | None = None) -> Reservation:
    """Reserve a release's cost in the active :func:`session` (committed when it ends).

    Parameters
    ----------
    source : path or table
        The input file (its identity is computed as the command reads it), or an in-memory
        table (the rows as read).
    amount, unit, budget, read, outputs, job
        See :meth:`Ledger.reserve`.
    label : str, optional
        How messages name the input (default: the path as given).
    format, delimiter : str, optional
        How the command reads the file.
    identity : DatasetIdentity, optional
        Already computed.
    """
    from .identity import identity_of_file, identity_of_table

    from .io.write import check_output_target

    s = _SESSION.get()
    if s is None:
        raise ParameterError("veil.ledger.charge() runs inside veil.ledger.session()")
    for o in outputs:  # refuse a bad output before anything is reserved or computed
        check_output_target(o)
    if identity is None:
        if isinstance(source, str | os.PathLike):
            identity = identity_of_file(source, format=format, delimiter=delimiter)
        else:
            identity = identity_of_table(source)
    label = label if label is not None else (os.fspath(source) if isinstance(
        source, str | os.PathLike) else "table")
    path = ledger_path(s.ledger)
    check_ledger_apart(path, outputs)  # before the ledger is opened (and created)
    if read is not None:  # a column the command reads but the input lacks: name the input
        try:
            identity.prints(read)
        except ParameterError as exc:
            raise DataError(str(exc), path=label) from None
    check_other_ledgers(identity, read, path, label)
    with contextlib.closing(Ledger(path)) as led:
        r = led.reserve(identity, amount=amount, unit=unit, budget=budget, command=s.command,
                        label=label, outputs=outputs, read=read, spend_again=s.spend_again,
                        job=job)
    s.reservations.append((r, path, _snapshot(outputs)))
    if r.note:
        s.notes.append(f"ledger: {label}: {r.note}")
    legacy = legacy_note()
    if legacy and legacy not in s.notes:
        s.notes.append(legacy)
    return r
