"""HDMM strategies optimized ahead of time for the built-in workloads (shipped with veil).

A p-Identity strategy depends only on the public workload and the number of bins, never on
data, so the strategies of the two built-in workloads (``'prefix'`` and ``'all-range'``) at the
power-of-two domain sizes :data:`SHIPPED_NS` are optimized once, by exactly the code a user
would run (:func:`veil.histograms.hdmm.optimize_strategy` with ``start='random'``, the
paper's ``p = n // 16`` (:func:`shipped_p`; 128 and 256 at n = 2048 and 4096, above the
on-line default's cap of 64), seed 0 and :func:`build_restarts` restarts: 8 up to n = 512,
where one start can stop at Identity's objective, e.g. all ranges at n = 64: 1.00x Identity with one start, 0.70x with
eight), and stored in ``hdmm_strategies.npz`` beside this module. Loading
one takes milliseconds where optimizing it takes up to minutes (n = 4096, p = 256: about
2.5 min on a quiet machine).

The file holds only the non-negative parameters ``B``; the strategy's objective is recomputed
from them at load, and the column scaling that makes the sensitivity 1 is applied to whatever
``B`` holds, so a damaged or altered file can cost accuracy but never privacy (and a negative
or non-finite entry is refused).

Rebuild (about 7 minutes, 5 of them for n = 4096) after any change to the optimizer::

    python -m veil.histograms._hdmm_shipped src/veil/histograms/hdmm_strategies.npz
    python -m veil.histograms._hdmm_shipped src/veil/histograms/hdmm_strategies.npz 2048 4096

``tests/histograms/test_hdmm.py`` checks the file against fresh optimizations at the small
sizes and its shapes and objectives at every size.
"""

from __future__ import annotations

import functools
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np

#: domain sizes with a shipped strategy, for each of :data:`SHIPPED_KINDS`
SHIPPED_NS = tuple(2 ** k for k in range(3, 13))          # 8 .. 4096
#: the built-in workloads with shipped strategies
SHIPPED_KINDS = ("prefix", "all-range")
FILENAME = "hdmm_strategies.npz"


def _key(kind: str, n: int) -> str:
    return f"{kind}/{int(n)}"


def _archive_path():
    return resources.files("veil.histograms").joinpath(FILENAME)


@functools.lru_cache(maxsize=64)
def _stored(key: str) -> np.ndarray | None:
    try:
        with _archive_path().open("rb") as fh, np.load(fh, allow_pickle=False) as z:
            if key not in z.files:
                return None
            return np.asarray(z[key], dtype=np.float64)
    except (FileNotFoundError, OSError, ValueError):  # pragma: no cover - a broken install
        return None


def shipped_parameters(kind: str, n: int) -> np.ndarray | None:
    """The shipped ``B`` (p, n) for a built-in workload, or None (no such size or no file)."""
    B = _stored(_key(kind, n))
    if B is None:
        return None
    if B.ndim != 2 or B.shape[1] != n or not np.all(np.isfinite(B)) or (B < 0).any():
        return None  # never trust a damaged entry; the caller optimizes instead
    return B.copy()


def nearest_shipped(kind: str, n: int) -> tuple[int, np.ndarray] | None:
    """The shipped strategy of ``kind`` whose size is closest to ``n`` (log scale), or None."""
    best = None
    for m in SHIPPED_NS:
        B = shipped_parameters(kind, m)
        if B is None:
            continue
        d = abs(np.log2(m) - np.log2(max(1, n)))
        if best is None or d < best[0] or (d == best[0] and m > best[1]):
            best = (d, m, B)
    return None if best is None else (best[1], best[2])


def restricted_parameters(kind: str, n: int) -> tuple[int, np.ndarray] | None:
    """The shipped strategy of the next shipped size ``M >= n``, on its first ``n`` bins.

    A prefix (or range) of ``n`` bins is a prefix (range) of ``M`` bins whose last ``M - n``
    bins are publicly empty, so ``B[:, :n]`` of the ``M``-bin strategy is a p-Identity
    strategy for the ``n``-bin workload (its columns keep unit L1 norm once scaled, so its
    sensitivity is 1); queries that measured only the empty bins are dropped. Its expected
    error is within 0.95x-1.08x of a strategy optimized at ``n`` for the built-in workloads
    (docs/benchmarks.md, "HDMM at sizes that are not shipped") and it needs no optimizer.
    None when ``n`` is above every shipped size (or the file is missing).

    Examples
    --------
    >>> m, B = restricted_parameters("prefix", 1000)
    >>> m, B.shape[1], bool((B.sum(axis=1) > 0).all())
    (1024, 1000, True)
    """
    for m in SHIPPED_NS:
        if m < n:
            continue
        B = shipped_parameters(kind, m)
        if B is None:
            return None
        B = B[:, :n]
        return m, np.ascontiguousarray(B[B.sum(axis=1) > 0])
    return None


def resample_parameters(B: np.ndarray, n: int, p: int) -> np.ndarray:
    """Stretch or shrink ``B`` (p0, n0) to (p, n): nearest columns, evenly spaced rows.

    Each extra query keeps covering the same *fraction* of the domain, which is what the
    optimizer's solutions at neighbouring sizes share; used only as a starting point.

    Examples
    --------
    >>> resample_parameters(np.array([[1.0, 0.0], [0.0, 2.0]]), 4, 1).tolist()
    [[1.0, 1.0, 0.0, 0.0]]
    """
    p0, n0 = B.shape
    cols = np.minimum((np.arange(n) * n0) // n, n0 - 1)
    rows = np.linspace(0, p0 - 1, p).round().astype(int)
    return np.ascontiguousarray(B[np.ix_(rows, cols)])


def build_restarts(n: int) -> int:
    """Random starts used for the shipped strategy over ``n`` bins (best kept)."""
    return 8 if n <= 512 else 1


def shipped_p(n: int) -> int:
    """Extra strategy queries of the shipped strategy over ``n`` bins: the paper's ``n // 16``
    (uncapped: optimized ahead of time, so the optimizer's cost at large ``p`` is paid once;
    on-line optimization keeps :func:`veil.histograms.hdmm.default_p`'s cap)."""
    return max(1, int(n) // 16)


def build(path, *, ns=SHIPPED_NS, kinds=SHIPPED_KINDS, merge: bool = False,
          log=print) -> dict:
    """Optimize the shipped strategies with the random start and write them to ``path``.

    ``merge=True`` keeps the entries of an existing ``path`` that are not rebuilt.
    Returns ``{key: (objective, iterations, seconds)}``.
    """
    from .hdmm import optimize_strategy

    out, arrays = {}, {}
    path = Path(path)
    if merge and path.exists():
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    for kind in kinds:
        for n in ns:
            t0 = time.perf_counter()
            s = optimize_strategy(kind, n, p=shipped_p(n), start="random",
                                  restarts=build_restarts(n), cache=False)
            arrays[_key(kind, n)] = s.B
            out[_key(kind, n)] = (s.objective, s.iterations, time.perf_counter() - t0)
            log(f"{kind} n={n}: p={s.p} objective={s.objective:.6g} "
                f"iterations={s.iterations} {time.perf_counter() - t0:.2f} s")
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)
    _stored.cache_clear()
    return out


if __name__ == "__main__":  # pragma: no cover - the rebuild command
    if len(sys.argv) < 2:
        sys.exit("usage: python -m veil.histograms._hdmm_shipped OUT.npz [N ...]  "
                 "(only these sizes, merged into OUT.npz)")
    only = tuple(int(a) for a in sys.argv[2:])
    build(sys.argv[1], ns=only or SHIPPED_NS, merge=bool(only))
