"""Calling numba kernels compiled with ``cache=True`` when numba cannot write its cache.

numba saves a kernel's machine code next to its source (``__pycache__``) right after
compiling it, and a failed save (a full disk, a file-size limit, a quota) raises ``OSError``
out of the *call*: a veil command then stopped with ``veil: error: [Errno 27] File too
large``, naming no file, before writing anything of its own, although the cache is only a
speed-up. numba registers the compiled code in memory before it saves it, so calling the
kernel again runs it; a kernel that calls other kernels fails once per level of the chain.
:func:`call` retries a bounded number of times (no kernel here nests deeper than four); the
run then goes on with the kernels compiled in memory, and the next run compiles them again.
A genuine full disk is then reported where it matters, naming the output veil could not
write.

veil's kernels do no I/O of their own, so an ``OSError`` out of one comes from the cache.
"""

from __future__ import annotations

import logging

__all__ = ["call"]

#: attempts per call: one per level of the deepest chain of kernels calling kernels, plus one
ATTEMPTS = 8

_log = logging.getLogger("veil")


def call(kernel, *args):
    """``kernel(*args)``, going on when numba could not save the compiled code (see above).

    Examples
    --------
    >>> call(lambda a, b: a + b, 2, 3)
    5
    """
    try:
        for _ in range(ATTEMPTS - 1):
            try:
                return kernel(*args)
            except OSError as exc:
                _log.debug("numba could not write its compile cache (%s); the kernel %s runs "
                           "compiled in memory", exc, getattr(kernel, "__name__", kernel))
        return kernel(*args)
    except SystemError as exc:
        raise interruption_of(exc) or exc


def interruption_of(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C (or SIGTERM, raised as a KeyboardInterrupt) behind ``exc``, if any.

    A signal landing while a compiled kernel runs comes back from numba as ``SystemError:
    CPUDispatcher(...) returned a result with an exception set``, the KeyboardInterrupt as its
    cause: ``veil`` said "internal error" (exit 1) instead of "interrupted" (130).

    Examples
    --------
    >>> try:
    ...     try:
    ...         raise KeyboardInterrupt
    ...     except KeyboardInterrupt as k:
    ...         raise SystemError("returned a result with an exception set") from k
    ... except SystemError as e:
    ...     type(interruption_of(e)).__name__
    'KeyboardInterrupt'
    >>> interruption_of(SystemError("other")) is None
    True
    """
    seen = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None
