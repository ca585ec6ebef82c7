"""Generalization hierarchies (ARX format) and their encoding on a table's values.

A hierarchy says how one attribute's values generalize, level by level. The
ARX CSV format has one row per value: the value itself (level 0), then its
generalization at level 1, 2, ... (coarser to the right), separated by ``;``::

    39;35~39;30~39;20~39;*
    Female;*

Rules, checked when a hierarchy is built (errors name the file and line):
every row has the same number of levels; a value appears once; and the
hierarchy is a tree, so that a label at level ``l`` has one parent at level
``l + 1`` (two rows ``a;x;p`` and ``b;x;q`` would make ``x`` mean two
things). Values are text, matched exactly against the cells' text
(:func:`veil.tables.data.cell_text`): no trimming.

:meth:`Hierarchy.encode` maps the values present in a column to integer
label ids per level (level 0 = the values themselves) and counts how many
hierarchy leaves each label covers (for the granularity loss).

Examples
--------
>>> h = Hierarchy([["39", "35~39", "*"], ["36", "35~39", "*"], ["50", "50~54", "*"]])
>>> h.height, h.generalize("39", 1), h.leaves("35~39", 1)
(2, '35~39', 2)
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..errors import DataError, ParameterError

__all__ = ["Hierarchy", "EncodedHierarchy", "load_hierarchies", "parse_hierarchy_option"]


class Hierarchy:
    """An ARX-style hierarchy: one row per value, its generalizations to the right.

    Parameters
    ----------
    rows : sequence of sequence of str
        ``[value, level1, ..., levelH]`` per value.
    name : str, optional
        The attribute (for messages).
    source : str, optional
        The file it was read from (for messages).
    """

    def __init__(self, rows: Sequence[Sequence[str]], *, name: str | None = None,
                 source: str | None = None):
        self.name = name
        self.source = source
        rows = [list(r) for r in rows]
        where = f"hierarchy {source or name or ''}".rstrip()
        if not rows:
            raise DataError(f"{where}: no rows")
        width = len(rows[0])
        if width < 1:
            raise DataError(f"{where}: line 1 is empty")
        self._index: dict[str, int] = {}
        parents: list[dict[str, str]] = [dict() for _ in range(width)]
        for i, r in enumerate(rows, start=1):
            if len(r) != width:
                raise DataError(f"{where}, line {i}: {len(r)} levels but line 1 has {width}; "
                                "every value needs the same number of levels")
            if not all(isinstance(x, str) for x in r):
                raise DataError(f"{where}, line {i}: values must be text")
            if r[0] in self._index:
                raise DataError(f"{where}, line {i}: value {r[0]!r} appears twice (first on "
                                f"line {self._index[r[0]] + 1})")
            self._index[r[0]] = i - 1
            for lev in range(1, width):
                child, parent = r[lev], r[lev + 1] if lev + 1 < width else None
                if parent is None:
                    continue
                seen = parents[lev].setdefault(child, parent)
                if seen != parent:
                    raise DataError(
                        f"{where}, line {i}: label {child!r} at level {lev} generalizes to "
                        f"{parent!r} here but to {seen!r} on an earlier line: a hierarchy must "
                        "be a tree")
        self.rows = rows
        self.height = width - 1
        # leaves covered by each label, per level
        self._leaves: list[dict[str, int]] = []
        for lev in range(width):
            cnt: dict[str, int] = {}
            for r in rows:
                cnt[r[lev]] = cnt.get(r[lev], 0) + 1
            self._leaves.append(cnt)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_csv(cls, path: str | os.PathLike, *, delimiter: str = ";", name: str | None = None
                 ) -> "Hierarchy":
        """Read an ARX hierarchy file (``;``-separated by default, UTF-8, no header)."""
        p = Path(os.fspath(path))
        if not p.is_file():
            raise DataError("hierarchy file does not exist", path=str(p))
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise DataError("hierarchy file is not UTF-8 text", path=str(p)) from None
        text = text.removeprefix("\ufeff")
        rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) if r]
        return cls(rows, name=name, source=str(p))

    @classmethod
    def flat(cls, values: Iterable[str], *, top: str = "*", name: str | None = None
             ) -> "Hierarchy":
        """Two levels: each value, then ``top`` (generalizing = suppressing the attribute)."""
        vals = list(dict.fromkeys(str(v) for v in values))
        return cls([[v, top] for v in vals], name=name)

    @classmethod
    def intervals(cls, values: Iterable[int], widths: Sequence[int], *, top: str = "*",
                  name: str | None = None) -> "Hierarchy":
        """Integer intervals of growing widths (each a multiple of the previous), then ``top``.

        Labels are ``lo~hi`` as in the ARX examples.

        >>> Hierarchy.intervals(range(20, 24), [2, 4]).rows[1]
        ['21', '20~21', '20~23', '*']
        """
        ws = [int(w) for w in widths]
        if any(w < 1 for w in ws) or any(b % a for a, b in zip(ws, ws[1:])):
            raise ParameterError(f"widths must be positive and each a multiple of the previous, "
                                 f"got {list(widths)}")
        rows = []
        for v in sorted({int(x) for x in values}):
            r = [str(v)]
            for w in ws:
                lo = (v // w) * w
                r.append(f"{lo}~{lo + w - 1}")
            r.append(top)
            rows.append(r)
        return cls(rows, name=name)

    # ------------------------------------------------------------------ queries
    @property
    def values(self) -> list[str]:
        return [r[0] for r in self.rows]

    def generalize(self, value: str, level: int) -> str:
        """The label of ``value`` at ``level`` (0 = the value)."""
        if not 0 <= level <= self.height:
            raise ParameterError(f"level must be in 0..{self.height}, got {level}")
        try:
            return self.rows[self._index[value]][level]
        except KeyError:
            raise DataError(f"value {value!r} is not in the hierarchy"
                            + (f" of {self.name!r}" if self.name else "")) from None

    def leaves(self, label: str, level: int) -> int:
        """Number of hierarchy values (leaves) a label at ``level`` covers."""
        return self._leaves[level].get(label, 0)

    def __repr__(self) -> str:
        return (f"Hierarchy({self.name or self.source or ''!r}, {len(self.rows)} values, "
                f"height {self.height})")

    def encode(self, values: Sequence[str], *, column: str | None = None) -> "EncodedHierarchy":
        """Label ids per level for the distinct values of a column (``EncodedQI.values[j]``).

        Raises
        ------
        DataError
            If a value of the column is not in the hierarchy (naming the value).
        """
        name = column or self.name
        missing = [v for v in values if v not in self._index]
        if missing:
            shown = ", ".join(repr(v) for v in missing[:5]) + (" ..." if len(missing) > 5 else "")
            raise DataError(f"{len(missing)} value(s) are not in the hierarchy"
                            + (f" {self.source}" if self.source else "") + f": {shown}; every "
                            "value of the column needs a row", column=name)
        idx = np.array([self._index[v] for v in values], dtype=np.int64)
        gen, texts, leaves, present = [], [], [], []
        for lev in range(self.height + 1):
            labs = np.array([self.rows[i][lev] for i in idx], dtype=object)
            if lev == 0:  # level 0: the column's own codes
                uniq, inv = np.asarray(list(values), dtype=object), np.arange(len(values))
            else:
                uniq, inv = np.unique(labs.astype(str), return_inverse=True)
            gen.append(inv.reshape(-1).astype(np.int32))
            texts.append(np.asarray(uniq.tolist(), dtype=object))
            leaves.append(np.array([self._leaves[lev][u] for u in uniq.tolist()], dtype=np.int64))
            present.append(np.bincount(inv.reshape(-1), minlength=len(uniq)).astype(np.int64))
        return EncodedHierarchy(name, gen, texts, leaves, present, len(self.rows))


@dataclass
class EncodedHierarchy:
    """A hierarchy on a column's codes.

    Attributes
    ----------
    gen : list of ndarray
        ``gen[l][code]`` is the label id of the column value ``code`` at level ``l``.
    text : list of ndarray of str
        ``text[l][label]`` is the label's text.
    leaves : list of ndarray
        Hierarchy leaves each label covers.
    present : list of ndarray
        Column values (codes) each label covers.
    domain : int
        Number of hierarchy leaves (values).
    """

    name: str | None
    gen: list
    text: list
    leaves: list
    present: list
    domain: int

    @property
    def height(self) -> int:
        return len(self.gen) - 1

    def parent(self, level: int) -> np.ndarray:
        """``parent(l)[label at l]`` = its label id at level ``l + 1``."""
        out = np.empty(len(self.text[level]), dtype=np.int64)
        out[self.gen[level]] = self.gen[level + 1]
        return out

    def granularity(self, level: int) -> np.ndarray:
        """Loss of each label at ``level``: (leaves - 1) / (domain - 1), in [0, 1]."""
        if self.domain <= 1:
            return np.zeros(len(self.text[level]))
        return (self.leaves[level] - 1) / (self.domain - 1)


def load_hierarchies(spec: Mapping[str, str | os.PathLike] | str | os.PathLike,
                     columns: Sequence[str], *, delimiter: str = ";") -> dict[str, Hierarchy]:
    """Hierarchies for ``columns``: a mapping column -> file, or a folder.

    In a folder, the file for column ``c`` is ``c.csv`` or ``*_hierarchy_c.csv``
    (the ARX naming, e.g. ``adult_hierarchy_age.csv``). A column without a file
    gets no entry (callers decide what that means).
    """
    out: dict[str, Hierarchy] = {}
    if isinstance(spec, Mapping):
        for c, path in spec.items():
            if c not in columns:
                raise ParameterError(f"hierarchy for {c!r}, which is not a quasi-identifier "
                                     f"({', '.join(columns)})")
            out[c] = Hierarchy.from_csv(path, delimiter=delimiter, name=c)
        return out
    folder = Path(os.fspath(spec))
    if not folder.is_dir():
        raise ParameterError(f"hierarchy folder {str(folder)!r} does not exist")
    names = {p.name: p for p in folder.iterdir() if p.is_file()}
    for c in columns:
        hits = [p for n, p in names.items() if n == f"{c}.csv" or n.endswith(f"_hierarchy_{c}.csv")]
        if len(hits) > 1:
            raise ParameterError(f"several hierarchy files for {c!r} in {str(folder)!r}: "
                                 f"{sorted(p.name for p in hits)}")
        if hits:
            out[c] = Hierarchy.from_csv(hits[0], delimiter=delimiter, name=c)
    return out


def parse_hierarchy_option(items: Sequence[str] | None) -> dict[str, str]:
    """``["age=h_age.csv", ...]`` (the CLI's ``--hierarchy``) as a mapping."""
    out: dict[str, str] = {}
    for it in items or []:
        if "=" not in it:
            raise ParameterError(f"--hierarchy expects COLUMN=FILE, got {it!r}")
        c, path = it.split("=", 1)
        if not c or not path:
            raise ParameterError(f"--hierarchy expects COLUMN=FILE, got {it!r}")
        if c in out:
            raise ParameterError(f"--hierarchy gives {c!r} twice")
        out[c] = path
    return out
