"""Atomic writers: a failure never leaves a partial output or a temporary file.

Each writer writes to a temporary file in the target's own folder (so the final
``os.replace`` is an atomic rename on the same file system), flushes it to disk
with ``fsync`` and only then renames it over the target. If anything fails, the
temporary file is removed and the target is left as it was.

Output safety (every writer, library and command line alike):

- a target that is a symbolic link is refused: veil never writes through a link;
- temporary files are created with ``O_EXCL | O_NOFOLLOW`` in the target's folder (recorded
  for the clean-up before they exist), and the rename is refused if the temporary file was
  swapped for another file or a link;
- inside :func:`output_policy` (which every ``veil`` command that writes files sets up),
  a target that is one of the command's inputs (the same file by ``os.path.samefile``:
  the same path, a hard link, or a file inside an input folder) is refused even with
  ``--force``, and an existing target is refused unless ``--force`` was given.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import json
import os
import secrets
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import ParameterError
from ..release import Release, to_jsonable
from .read import FORMATS, _connect, detect_format
from . import sql

__all__ = [
    "OutputPolicy",
    "output_policy",
    "check_output_target",
    "atomic_path",
    "atomic_paths",
    "sidecar_path",
    "to_arrow",
    "write_table",
    "write_json",
    "write_release",
]

_TMP_PREFIX = ".veil-tmp-"


def _check_target(target: Path, name: str = "output") -> Path:
    target = Path(os.fspath(target))
    if str(target) in ("", "."):
        raise ParameterError(f"{name}: an output file name is required, got {str(target)!r}")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise ParameterError(f"{name}: folder {str(parent)!r} does not exist "
                             f"(create it first), cannot write {str(target)!r}")
    if target.is_dir():
        raise ParameterError(f"{name}: {str(target)!r} is a folder, not a file name")
    return target


@dataclass(frozen=True)
class OutputPolicy:
    """What a command may overwrite: never its inputs, an existing file only with ``force``.

    Attributes
    ----------
    inputs : tuple of str
        The command's input files and folders (a target equal to one of them, a hard link
        to one, or an existing file inside an input folder is refused).
    force : bool
        Whether an existing target may be replaced (``--force``).
    """

    inputs: tuple[str, ...] = ()
    force: bool = False


_POLICY: contextvars.ContextVar[OutputPolicy | None] = contextvars.ContextVar(
    "veil_output_policy", default=None)
# Temporary files made by atomic_paths in this context: a nested writer may fill them.
_OWN_TEMPS: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "veil_own_temps", default=frozenset())


@contextlib.contextmanager
def output_policy(inputs: Iterable[str | os.PathLike | None] = (), *,
                  force: bool = False) -> Iterator[OutputPolicy]:
    """Apply an :class:`OutputPolicy` to every veil writer called inside the block.

    Parameters
    ----------
    inputs : iterable of path-like
        Files (or folders) the caller reads; ``None`` entries are ignored.
    force : bool
        Allow replacing existing outputs (never the inputs).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> src = d / "points.csv"
    >>> _ = src.write_text("lat,lon\\n1,2\\n")
    >>> with output_policy([src], force=True):
    ...     write_json({"a": 1}, src)
    Traceback (most recent call last):
    ...
    veil.errors.ParameterError: output: ... is the input ...points.csv...; veil never writes over one of its inputs: choose another output name
    """
    pol = OutputPolicy(tuple(os.fspath(p) for p in inputs if p is not None), bool(force))
    token = _POLICY.set(pol)
    try:
        yield pol
    finally:
        _POLICY.reset(token)


def _is_input(target: Path, inp: str) -> bool:
    """Whether writing ``target`` would replace the input ``inp`` (or a file inside it)."""
    if not os.path.lexists(target):
        return False
    if os.path.isdir(inp):
        real_in = os.path.realpath(inp)
        real_t = os.path.realpath(target)
        return real_t == real_in or real_t.startswith(real_in.rstrip(os.sep) + os.sep)
    try:
        return os.path.samefile(target, inp)
    except OSError:
        return os.path.realpath(target) == os.path.realpath(inp)


def check_output_target(target: str | os.PathLike, name: str = "output") -> Path:
    """Check one output target against the rules above; return it as a Path.

    Raises
    ------
    ParameterError
        The folder is missing, the target is a folder or a symbolic link, it is one of the
        inputs of the active :func:`output_policy`, or it exists and ``--force`` was not given.
    """
    target = _check_target(Path(os.fspath(target)), name)
    if os.path.islink(target):
        raise ParameterError(f"{name}: {str(target)!r} is a symbolic link; veil never writes "
                             "through a link: remove it or choose another output name")
    if os.path.lexists(target) and not stat.S_ISREG(os.lstat(target).st_mode):
        # `-o /dev/null --force` (as root) replaced the device with a regular file
        raise ParameterError(f"{name}: {str(target)!r} is not a regular file (a device, pipe "
                             "or socket); veil writes outputs as regular files only: choose "
                             "another output name")
    if os.fspath(target) in _OWN_TEMPS.get():
        return target
    pol = _POLICY.get()
    if pol is None:
        return target
    for inp in pol.inputs:
        if _is_input(target, inp):
            raise ParameterError(f"{name}: {str(target)!r} is the input {inp!r} (or a hard link "
                                 "to it); veil never writes over one of its inputs: choose "
                                 "another output name")
    if os.path.lexists(target) and not pol.force:
        raise ParameterError(f"{name}: {str(target)!r} already exists; pass --force to "
                             "replace it")
    return target


def _final_mode(target: Path) -> int:
    """Permissions for a new output: the old file's, else 0o666 minus the umask.

    (temporary files are created 0o600; an output should be as readable as any other.)
    """
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _unlink_quietly(path: Path) -> None:
    """Remove ``path`` if possible; never raise (a cleanup that fails, e.g. in a folder made
    read-only meanwhile, must not replace the error being reported: the file stays, and
    :func:`leftover_temps` finds it, so the privacy ledger keeps the release's charge)."""
    with contextlib.suppress(OSError):
        os.unlink(path)


def leftover_temps(output: str | os.PathLike) -> list[Path]:
    """Temporary files of a write of ``output`` still in its folder (a run killed, or a folder
    made read-only, while it wrote): they may hold (part of) a release.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / ".veil-tmp-out.csv.x1y2.tmp").write_text("1,2")
    >>> [p.name for p in leftover_temps(d / "out.csv")]
    ['.veil-tmp-out.csv.x1y2.tmp']
    """
    final = Path(os.fspath(output))
    folder = final.parent if str(final.parent) else Path(".")
    prefixes = tuple(f"{p}{_TMP_PREFIX}{final.name}." for p in ("", "tmp_"))
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(folder / n for n in names if n.startswith(prefixes))


#: errors of a failed write (full disk, quota, file-size limit, read-only, no permission, I/O)
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES,
                 errno.EPERM, errno.EIO}


def _naming_outputs(exc: OSError, finals: list[Path]) -> OSError:
    """A write error that names the outputs (Python's says nothing, or names a temp file)."""
    if exc.errno not in _WRITE_ERRNOS or "cannot write" in str(exc):
        return exc
    names = " and ".join(repr(str(f)) for f in finals)
    return OSError(exc.errno, f"cannot write {names}: {exc.strerror}")


def _new_temp(final: Path, temps: list[Path]) -> str:
    """Create an empty temporary file beside ``final`` and record it in ``temps`` *before* it
    exists, so that an interrupt at any point leaves nothing the clean-up cannot find (with
    ``mkstemp`` a Ctrl-C between its create and the caller's append left the file behind).
    ``O_CREAT | O_EXCL | O_NOFOLLOW``: never an existing file or a planted link."""
    folder = final.parent if str(final.parent) else Path(".")
    for _ in range(100):
        tmp = folder / f"{_TMP_PREFIX}{final.name}.{secrets.token_hex(6)}.tmp"
        temps.append(tmp)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:  # not ours: never cleaned up as ours
            temps.pop()
            continue
        except OSError as exc:  # a read-only or full folder: name the output, not a temp
            temps.pop()
            raise OSError(exc.errno, f"cannot write {str(final)!r}: {exc.strerror}") from None
        os.close(fd)
        return os.fspath(tmp)
    raise FileExistsError(f"cannot create a temporary file beside {str(final)!r}")


@contextlib.contextmanager
def atomic_paths(*targets: str | os.PathLike) -> Iterator[list[Path]]:
    """Yield temporary paths for several targets; commit all of them or none.

    On success each temporary file is fsynced and renamed over its target (in order).
    If the body raises, or a rename fails, every temporary file is removed and every
    target already renamed in this call is removed too, so a set of outputs (data +
    sidecar) is never left half written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_paths(d / "a.txt", d / "b.txt") as (ta, tb):
    ...     _ = ta.write_text("a"); _ = tb.write_text("b")
    >>> sorted(p.name for p in d.iterdir())
    ['a.txt', 'b.txt']
    """
    finals = [check_output_target(Path(os.fspath(t))) for t in targets]
    if len({os.path.abspath(f) for f in finals}) != len(finals):
        raise ParameterError(f"output files must be distinct, got {[str(f) for f in finals]}")
    temps: list[Path] = []
    token = None
    try:
        for final in finals:
            name = _new_temp(final, temps)
            os.chmod(name, _final_mode(final))
        token = _OWN_TEMPS.set(_OWN_TEMPS.get() | {os.fspath(t) for t in temps})
        yield temps
        for tmp, final in zip(temps, finals, strict=True):
            if not tmp.exists():
                raise FileNotFoundError(f"nothing was written for {str(final)!r}")
            _check_regular_temp(tmp, final)
            _fsync_file(tmp)
    except OSError as exc:
        for tmp in temps:
            _unlink_quietly(tmp)
        raise _naming_outputs(exc, finals) from None
    except BaseException:
        for tmp in temps:
            _unlink_quietly(tmp)
        raise
    finally:
        if token is not None:
            _OWN_TEMPS.reset(token)
    try:
        for tmp, final in zip(temps, finals, strict=True):
            if os.path.islink(final):  # planted while we were writing
                raise ParameterError(f"output: {str(final)!r} became a symbolic link while "
                                     "veil was writing; nothing was written through it")
            os.replace(tmp, final)
    except BaseException:
        # what was renamed is read from the disk, not from a list kept beside the renames: a
        # Ctrl-C or SIGTERM landing between a rename and its bookkeeping published the data
        # file without its sidecar, and the ledger charged the run (an outside probe held the
        # rename with strace); a temporary file that is gone was renamed over its target
        done = [final for tmp, final in zip(temps, finals) if not os.path.lexists(tmp)]
        for tmp in temps:
            _unlink_quietly(tmp)
        # once one target was replaced the set is broken: the new files are removed, and so
        # are the old ones not yet replaced (with --force the old sidecar stayed without its
        # data, which the first rename had already replaced)
        for final in (finals if done else []):
            if not os.path.islink(final):
                _unlink_quietly(final)
        raise
    for folder in {f.parent for f in finals}:
        _fsync_dir(folder if str(folder) else Path("."))


def _check_regular_temp(tmp: Path, final: Path) -> None:
    """The temporary file must still be a regular file (not a link swapped in meanwhile)."""
    import stat

    if not stat.S_ISREG(os.lstat(tmp).st_mode):
        raise ParameterError(f"output: the temporary file for {str(final)!r} was replaced by a "
                             "link or a special file while veil was writing; refused")


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it over ``target`` on success.

    Write the whole output to the yielded path. When the ``with`` body finishes, the file
    is fsynced and atomically renamed to ``target``. If the body raises, the temporary
    file is removed and ``target`` is untouched (an existing file keeps its old content).

    Raises
    ------
    ParameterError
        If the target's folder does not exist or the target is a folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "result.txt"
    >>> with atomic_path(out) as tmp:
    ...     _ = tmp.write_text("done")
    >>> out.read_text()
    'done'
    """
    with atomic_paths(target) as (tmp,):
        yield tmp


def to_arrow(data: Any, *, name: str = "value") -> pa.Table:
    """Convert a table-like value to a :class:`pyarrow.Table`.

    Accepts a ``pyarrow.Table``, a pandas ``DataFrame``, a mapping of column name to 1-D
    array, or a single 1-D array (one column called ``name``).

    Examples
    --------
    >>> import numpy as np
    >>> to_arrow({"a": np.arange(3), "b": ["x", "y", "z"]}).column_names
    ['a', 'b']
    >>> to_arrow(np.array([1.5, 2.5]), name="noisy").num_rows
    2
    """
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if type(data).__name__ == "DataFrame" and hasattr(data, "columns"):
        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, Mapping):
        if not data:
            raise ParameterError("the table to write has no columns")
        cols: dict[str, Any] = {}
        length = None
        for key, col in data.items():
            arr = col if isinstance(col, pa.Array | pa.ChunkedArray) else np.asarray(col)
            if isinstance(arr, np.ndarray) and arr.ndim != 1:
                raise ParameterError(f"column {key!r} must be one-dimensional, "
                                     f"got shape {arr.shape}")
            if length is None:
                length = len(arr)
            elif len(arr) != length:
                raise ParameterError(f"column {key!r} has {len(arr)} values, "
                                     f"the first column has {length}")
            cols[str(key)] = _exact_text(col, arr)
        return pa.table(cols)
    arr = np.asarray(data)
    if arr.ndim != 1:
        raise ParameterError(f"a value to write as a table must be one-dimensional or a dict of "
                             f"columns, got shape {arr.shape}")
    return pa.table({name: _exact_text(data, arr)})


def _exact_text(col: Any, arr: Any) -> Any:
    """``arr`` (``np.asarray(col)``), with text as Arrow strings holding every character.

    Arrow's conversion of numpy's fixed-width text (``<U``) cut each value at its first NUL
    (``'Den\\x00tist'`` was written ``Den``), and ``np.asarray`` of a list drops trailing
    NULs: such a column is converted from Python strings (from ``col`` itself when it is not
    a numpy array).
    """
    if not isinstance(arr, np.ndarray) or arr.dtype.kind != "U":
        return arr
    values = arr.tolist() if isinstance(col, np.ndarray) else [str(v) for v in col]
    return pa.array(values, type=pa.string())


#: USE_TMP_FILE false: COPY writes into veil's own temporary file (DuckDB's default wrote a
#: second one, ``tmp_.veil-tmp-...``, that a killed run left behind with the noisy rows)
_COPY_OPTIONS = {"csv": "FORMAT csv, HEADER true, USE_TMP_FILE false",
                 "parquet": "FORMAT parquet, USE_TMP_FILE false",
                 "json": "FORMAT json, ARRAY true, USE_TMP_FILE false"}


def _write_error(exc: Exception, final: Path, fmt: str) -> OSError:
    """A one-line OSError naming the output, from DuckDB's (often JSON-laden) IO error."""
    import errno as _errno
    import re

    text = str(exc)
    m = re.search(r'"errno"\s*:\s*"?(\d+)', text)
    if m:  # e.g. a full disk or a file-size limit while COPY writes
        code = int(m.group(1))
        name = _errno.errorcode.get(code, str(code))
        return OSError(code, f"cannot write {str(final)!r} as {fmt}: {os.strerror(code)} "
                             f"({name})")
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return OSError(f"cannot write {str(final)!r} as {fmt}: {first}")


def _renamed_by_duckdb(names: list[str]) -> bool:
    """Whether DuckDB's COPY would write other names (it renames blank and case-twin names)."""
    seen: set[str] = set()
    for name in names:
        if name == "" or name.lower() in seen:
            return True
        seen.add(name.lower())
    return False


def _copy(arrow: pa.Table, tmp: Path, fmt: str, final: Path) -> None:
    """Write ``arrow`` to ``tmp`` with DuckDB's COPY (errors name the final output).

    The header is the table's own: names DuckDB would rename on output (a blank name, or
    ``Sex`` beside ``sex``) are written as they are (CSV: the header line is written here and
    the rows by COPY; Parquet: by pyarrow; JSON cannot hold them and is refused).
    """
    import duckdb

    names = list(arrow.column_names)
    exact = _renamed_by_duckdb(names)
    if exact and fmt == "json":
        raise ParameterError(f"cannot write {str(final)!r} as JSON: column names "
                             f"{names!r} include a blank name or names differing only in "
                             f"case; write CSV or Parquet")
    if exact and fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(arrow, tmp)
        return
    con = _connect()
    try:
        if exact:
            arrow = arrow.rename_columns([f"c{i}" for i in range(len(names))])
        con.register("__out", arrow)
        body = tmp.with_name(tmp.name + ".rows") if exact else tmp
        options = "FORMAT csv, HEADER false, USE_TMP_FILE false" if exact else _COPY_OPTIONS[fmt]
        try:
            con.execute(f"COPY __out TO {sql.target(body)} ({options})")
            if exact:
                import csv
                import shutil

                with open(tmp, "w", newline="", encoding="utf-8") as out:
                    csv.writer(out, lineterminator="\n").writerow(names)
                    with open(body, encoding="utf-8", newline="") as rows:
                        shutil.copyfileobj(rows, out)
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except duckdb.Error as exc:
            raise _write_error(exc, final, fmt) from None
        finally:
            if exact:
                _unlink_quietly(body)
    finally:
        con.close()


def write_table(table: Any, path: str | os.PathLike, *, format: str | None = None) -> Path:
    """Write a table atomically as CSV (with header), Parquet or JSON (array of records).

    Parameters
    ----------
    table : pyarrow.Table, pandas.DataFrame, dict of 1-D arrays, or 1-D array
    path : str or path-like
        The output file; its folder must exist.
    format : {'csv', 'parquet', 'json'}, optional
        Default: from the extension.

    Returns
    -------
    pathlib.Path
        The written file.

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = write_table({"bin": np.array([1, 2]), "n": np.array([5, 0])}, out)
    >>> out.read_text().splitlines()
    ['bin,n', '1,5', '2,0']
    """
    path = Path(os.fspath(path))
    fmt = detect_format(path, format)
    arrow = to_arrow(table)
    with atomic_path(path) as tmp:
        _copy(arrow, tmp, fmt, path)
    return path


def write_json(obj: Any, path: str | os.PathLike) -> Path:
    """Write ``obj`` as indented JSON, atomically (numpy values and budgets converted).

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "o.json"
    >>> _ = write_json({"eps": np.float64(0.5)}, out)
    >>> out.read_text()
    '{\\n  "eps": 0.5\\n}\\n'
    """
    text = json.dumps(to_jsonable(obj), indent=2, sort_keys=True, allow_nan=False)
    with atomic_path(path) as tmp:
        tmp.write_text(text + "\n", encoding="utf-8")
    return Path(os.fspath(path))


def sidecar_path(path: str | os.PathLike) -> Path:
    """The metadata sidecar of an output: ``<path>.meta.json``.

    Examples
    --------
    >>> sidecar_path("out/noisy.parquet").as_posix()
    'out/noisy.parquet.meta.json'
    """
    p = Path(os.fspath(path))
    return p.with_name(p.name + ".meta.json")


def write_release(release: Release, path: str | os.PathLike, *, format: str | None = None,
                  name: str = "value") -> tuple[Path, Path]:
    """Write a release's value and its metadata sidecar ``<path>.meta.json``, atomically.

    Both files are written to temporary files first and renamed together: if either
    write fails, neither output exists afterwards.

    Parameters
    ----------
    release : Release
    path : str or path-like
        Output for the value (table-like: see :func:`to_arrow`).
    format : {'csv', 'parquet', 'json'}, optional
        Default: from the extension.
    name : str
        Column name used when the value is a single array.

    Returns
    -------
    (pathlib.Path, pathlib.Path)
        The data file and the sidecar.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from veil import geometric_mechanism, make_rng
    >>> r = geometric_mechanism([3, 4], epsilon=1.0, rng=make_rng(seed=1))
    >>> data, meta = write_release(r, pathlib.Path(tempfile.mkdtemp()) / "h.csv")
    >>> meta.name
    'h.csv.meta.json'
    """
    if not isinstance(release, Release):
        raise ParameterError(f"release must be a veil Release, got {type(release).__name__}")
    path = Path(os.fspath(path))
    fmt = detect_format(path, format)
    if fmt not in FORMATS:  # pragma: no cover - detect_format guarantees it
        raise ParameterError(f"format must be one of {FORMATS}, got {fmt!r}")
    arrow = to_arrow(release.value, name=name)
    meta = release.sidecar_json()
    side = sidecar_path(path)
    with atomic_paths(path, side) as (tmp_data, tmp_meta):
        _copy(arrow, tmp_data, fmt, path)
        tmp_meta.write_text(meta + "\n", encoding="utf-8")
    return path, side
