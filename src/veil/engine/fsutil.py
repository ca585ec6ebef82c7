"""File-system primitives of the engine: never through a link, never a half-written file.

Why a module of its own: a batch job writes into folders that other people can reach (the
published output) and into a private work folder holding raw rows and the job's noise key.
Every file the engine creates goes through :func:`write_file`: a temporary name created with
``O_CREAT | O_EXCL | O_NOFOLLOW`` in the destination folder (so a planted symbolic link makes
the creation fail instead of redirecting the write), flushed and fsynced, then renamed over the
final name (a rename replaces a planted link itself, it never writes through it), then the
folder is fsynced. A reader therefore sees either the old file or the complete new one.

The fault hook :func:`fault` lets the fault-injection tests kill a process at a named point
(``VEIL_TEST_FAULT=point[@n][:group]``); it does nothing unless that variable is set.

Examples
--------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> write_file(d / "a.txt", b"hello")
>>> (d / "a.txt").read_bytes()
b'hello'
>>> (d / "link").symlink_to(d / "a.txt")
>>> write_file(d / "link", b"new")          # replaces the link, the target is untouched
>>> (d / "a.txt").read_bytes(), (d / "link").is_symlink()
(b'hello', False)
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import signal
import stat
from pathlib import Path
from typing import Callable, BinaryIO

from ..errors import DataError

__all__ = ["write_file", "write_with", "temp_name", "fsync_dir", "private_dir",
           "reject_links", "remove_tree", "is_tmp_name", "fault", "sha256_file", "fsync_file"]

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
TMP_MARK = ".tmp-"


def temp_name(final: Path) -> Path:
    """A fresh hidden temporary name next to ``final`` (random, so never guessed in advance)."""
    return final.with_name(f".{final.name}{TMP_MARK}{secrets.token_hex(8)}")


def is_tmp_name(name: str) -> bool:
    """True for names made by :func:`temp_name` (left behind by a killed writer)."""
    return name.startswith(".") and TMP_MARK in name


def fsync_dir(folder: Path) -> None:
    """Make a rename or unlink in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_with(path: Path, writer: Callable[[BinaryIO], None], *, mode: int = 0o666,
               tmp_dir: Path | None = None, fault_point: str | None = None,
               durable: bool = True) -> None:
    """Write ``path`` atomically through ``writer(fileobj)``.

    Parameters
    ----------
    path : Path
        The final name. A symbolic link already there is replaced, never followed.
    writer : callable
        Receives a binary file object opened on the new temporary file.
    mode : int
        Permission bits of the new file (the umask applies): 0o600 for private files.
    tmp_dir : Path, optional
        Folder for the temporary file (same file system as ``path``); default ``path``'s own.
    fault_point : str, optional
        Name of the point between the write and the rename, for :func:`fault`.
    durable : bool
        fsync the file and its folder (survives a power cut). Files that can be recomputed
        and are verified by checksum before use (the work folder's parts and markers) skip it:
        the rename alone makes them atomic against a killed process.
    """
    tmp = temp_name(path if tmp_dir is None else Path(tmp_dir) / path.name)
    fd = os.open(tmp, _FLAGS, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            writer(fh)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if fault_point:
            fault(fault_point)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        fsync_dir(path.parent)


def write_file(path: Path, data: bytes, *, mode: int = 0o666, tmp_dir: Path | None = None,
               fault_point: str | None = None, durable: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`write_with`)."""
    write_with(path, lambda fh: fh.write(data), mode=mode, tmp_dir=tmp_dir,
               fault_point=fault_point, durable=durable)


def fsync_file(path: Path) -> None:
    """Flush a finished file to disk (before it is published)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def private_dir(path: Path, what: str = "work folder") -> Path:
    """Create (or check) a folder only its owner can enter (mode 0700).

    An existing folder must be a real folder (not a link), owned by this user and closed to
    group and others: it holds raw rows and the job's noise key.
    """
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise DataError(f"cannot create the private {what}: {exc.strerror}; choose another "
                        "--output (or --work-dir) on a writable file system", path=str(path)) from None
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise DataError(f"the private {what} is not a folder (a link or a file is there); "
                        "remove it", path=str(path))
    if st.st_uid != os.getuid():
        raise DataError(f"the private {what} belongs to another user (uid {st.st_uid})",
                        path=str(path))
    if st.st_mode & 0o077:
        raise DataError(f"the private {what} is open to other users (mode "
                        f"{stat.S_IMODE(st.st_mode):04o}); it holds raw rows and the noise key, "
                        "so veil requires mode 0700: restore it (chmod 700) or remove it",
                        path=str(path))
    return path


def reject_links(folder: Path) -> None:
    """Refuse a folder holding symbolic links: veil writes regular files only."""
    for entry in os.scandir(folder):
        if entry.is_symlink():
            raise DataError("holds a symbolic link; veil never writes through links and a veil "
                            "output never contains one: remove it", path=entry.path)


def remove_tree(path: Path) -> None:
    """Remove a folder we own, without following links (missing is fine)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def sha256_file(path: Path) -> str:
    """SHA-256 of a regular file (a link is refused: ``O_NOFOLLOW``)."""
    import hashlib

    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def no_space(exc: BaseException) -> bool:
    """True for a full disk or quota (OSError ENOSPC/EDQUOT/EFBIG, or DuckDB's message)."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return True
    text = str(exc).lower()
    return "no space left on device" in text or "disk quota exceeded" in text \
        or "file too large" in text


# --------------------------------------------------------------------------- fault injection
_COUNTS: dict[str, int] = {}


def fault(point: str) -> None:
    """Kill this process (or its process group) at ``point`` when the tests ask for it.

    ``VEIL_TEST_FAULT`` holds comma-separated items ``point[@n][:group]``: the ``n``-th time
    (default the first) this process reaches ``point`` it sends itself SIGKILL, or its whole
    process group with ``:group``; with ``VEIL_TEST_FAULT_LOG`` set it first appends the point
    and its pid to that file (so a test counts the faults that really happened). Used only by
    the fault-injection tests.
    """
    spec = os.environ.get("VEIL_TEST_FAULT")
    if not spec:
        return
    for item in spec.split(","):
        name, _, kind = item.partition(":")
        name, _, nth = name.partition("@")
        if name != point:
            continue
        _COUNTS[point] = _COUNTS.get(point, 0) + 1
        if _COUNTS[point] == int(nth or 1):
            log = os.environ.get("VEIL_TEST_FAULT_LOG")
            if log:
                with open(log, "a") as fh:
                    fh.write(f"{point} {os.getpid()}\n")
            if kind == "group":
                os.killpg(os.getpgrp(), signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)
