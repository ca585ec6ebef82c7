"""Diversity constraints ``sigma = (X[t], lo, hi)`` and their text syntax.

A diversity constraint asks that the number of rows whose attributes ``X``
take the values ``t`` lies in the frequency range ``[lo, hi]`` (Milani, Huang
and Chiang, CIKM 2020). After anonymization a suppressed cell never matches a
value, so a constraint counts only rows whose target values stayed visible.

Text syntax, one constraint per line (``#`` starts a comment, a leading YAML
list dash ``- `` is allowed)::

    sex=Female: 2..4
    sex=Female, race=White: 0..5
    occupation="Craft-repair": 10..        # no upper bound (also 10..inf)
    native-country='Holand-Netherlands': 0..0

Values with commas, colons, ``=``, ``#``, quotes or surrounding spaces are
quoted. Inside double quotes a backslash starts an escape: ``\\\\`` (a
backslash), ``\\"`` (a double quote), ``\\n``, ``\\r``, ``\\t`` and
``\\uXXXX``; single-quoted values are literal and take no escapes. So every
string round-trips through :func:`format_constraints`, including one with
both quote characters or a newline (``v="say \\"hi\\"\\nit's"``). Ranges are
non-negative integers ``lo..hi``; ``lo..``, ``lo..inf`` and ``lo..*`` leave
the upper end open.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import ParameterError

__all__ = [
    "DiversityConstraint",
    "ConstraintSyntaxError",
    "parse_constraints",
    "load_constraints",
    "format_constraints",
    "check_constraints_against",
]

INF = math.inf


class ConstraintSyntaxError(ParameterError):
    """A constraint text is malformed or names something that does not exist.

    ``line`` is the 1-based line number in the constraint text (``None`` when
    the constraint was built in code).
    """

    def __init__(self, message: str, *, line: int | None = None, source: str | None = None):
        self.line = line
        where = []
        if source:
            where.append(str(source))
        if line is not None:
            where.append(f"line {line}")
        prefix = ("constraints " + ", ".join(where) + ": ") if where else "constraint: "
        super().__init__(prefix + message)


@dataclass(frozen=True, order=True)
class DiversityConstraint:
    """A diversity constraint ``(X[t], lo, hi)``.

    Parameters
    ----------
    target : mapping or sequence of (attribute, value) pairs
        The target attribute values ``X[t]``; stored sorted by attribute name.
        Values are compared as strings.
    lo, hi : int
        Frequency range; ``hi`` may be ``math.inf``. ``0 <= lo <= hi``.

    Examples
    --------
    >>> s = DiversityConstraint({"sex": "Female"}, 2, 4)
    >>> s
    DiversityConstraint('sex=Female: 2..4')
    >>> s.attributes, s.holds(3), s.holds(5)
    (('sex',), True, False)
    """

    target: tuple[tuple[str, str], ...]
    lo: int
    hi: float

    def __init__(self, target: Mapping[str, Any] | Iterable[tuple[str, Any]], lo: Any,
                 hi: Any = INF):
        items = list(target.items()) if isinstance(target, Mapping) else list(target)
        if not items:
            raise ConstraintSyntaxError("the target X[t] names no attribute")
        pairs: dict[str, str] = {}
        for item in items:
            try:
                attr, value = item
            except (TypeError, ValueError):
                raise ConstraintSyntaxError(
                    f"target items must be (attribute, value) pairs, got {item!r}") from None
            attr = str(attr)
            if not attr:
                raise ConstraintSyntaxError("an attribute name is empty")
            if attr in pairs:
                raise ConstraintSyntaxError(f"attribute {attr!r} appears twice in the target")
            pairs[attr] = str(value)
        lo_i = _as_bound(lo, "lo")
        hi_v = _as_bound(hi, "hi", allow_inf=True)
        if lo_i > hi_v:
            raise ConstraintSyntaxError(
                f"empty frequency range: lo = {lo_i} > hi = {_fmt_bound(hi_v)} "
                f"for {_fmt_target(tuple(sorted(pairs.items())))}")
        object.__setattr__(self, "target", tuple(sorted(pairs.items())))
        object.__setattr__(self, "lo", int(lo_i))
        object.__setattr__(self, "hi", hi_v if hi_v == INF else int(hi_v))

    @property
    def attributes(self) -> tuple[str, ...]:
        """The target attributes ``X`` (sorted)."""
        return tuple(a for a, _ in self.target)

    @property
    def items(self) -> frozenset[tuple[str, str]]:
        """The target as a set of (attribute, value) pairs (for subset tests)."""
        return frozenset(self.target)

    def holds(self, count: int) -> bool:
        """Whether a frequency ``count`` lies in ``[lo, hi]``."""
        return self.lo <= count <= self.hi

    def to_text(self) -> str:
        """The constraint in the text syntax (parsable by :func:`parse_constraints`)."""
        return f"{_fmt_target(self.target)}: {self.lo}..{_fmt_bound(self.hi)}"

    def to_dict(self) -> dict[str, Any]:
        return {"target": dict(self.target), "lo": self.lo,
                "hi": None if self.hi == INF else int(self.hi), "text": self.to_text()}

    def __repr__(self) -> str:
        return f"DiversityConstraint({self.to_text()!r})"

    def __str__(self) -> str:
        return self.to_text()


def _as_bound(v: Any, name: str, *, allow_inf: bool = False) -> float:
    """A frequency bound as an exact Python int (or ``inf`` for an open upper end)."""
    if isinstance(v, bool):
        raise ConstraintSyntaxError(f"{name} must be an integer, got {v!r}")
    if isinstance(v, (int, np.integer)):
        i = int(v)
    elif isinstance(v, str) and v.strip().isdigit():
        i = int(v.strip())
    else:
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ConstraintSyntaxError(f"{name} must be an integer, got {v!r}") from None
        if math.isinf(f) and f > 0 and allow_inf:
            return INF
        if math.isnan(f) or math.isinf(f) or not f.is_integer():
            raise ConstraintSyntaxError(f"{name} must be an integer, got {v!r}")
        i = int(f)
    if i < 0:
        raise ConstraintSyntaxError(f"{name} must be >= 0, got {i}")
    return i


def _fmt_bound(v: float) -> str:
    return "inf" if v == INF else str(int(v))


_PLAIN = re.compile(r"^[^\s,:=\"'#][^,:=\"'#]*$")
# characters a plain (unquoted) value may not contain: they would end it, or break the line
_NEEDS_ESCAPE = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029\\\"]")
_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "r": "\r", "t": "\t"}
_ESCAPE_OUT = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(v: str) -> str:
    return _NEEDS_ESCAPE.sub(lambda m: _ESCAPE_OUT.get(m.group(0), f"\\u{ord(m.group(0)):04x}"),
                             v)


def _fmt_value(v: str) -> str:
    """A value (or attribute name) in the text syntax: plain if it is safe, else quoted.

    Quoted values use double quotes with backslash escapes (``\\\\``, ``\\"``, ``\\n``,
    ``\\r``, ``\\t``, ``\\uXXXX``), so any string round-trips, including one with both
    quote characters or a newline.
    """
    # a leading "-" followed by nothing or a space reads as the list marker of a line: quote it
    list_marker = v.startswith("-") and (len(v) == 1 or v[1].isspace())
    if (v and not list_marker and _PLAIN.match(v) and v == v.strip()
            and not _NEEDS_ESCAPE.search(v.replace("\\", ""))):
        return v
    return '"' + _escape(v) + '"'


def _fmt_target(target: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{_fmt_value(a)}={_fmt_value(v)}" for a, v in target)


# --------------------------------------------------------------------------- parsing

_RANGE = re.compile(r"^\s*(\d+)\s*\.\.\s*(\d+|inf|\*|)\s*$")
_SPECIAL = "=,:#"


def _read_quoted(line: str, i: int) -> tuple[str, int]:
    """The quoted string starting at ``line[i]`` and the index after its closing quote.

    Double quotes take backslash escapes; single quotes are literal (no escapes).
    """
    q = line[i]
    out: list[str] = []
    j = i + 1
    while j < len(line):
        ch = line[j]
        if ch == q:
            return "".join(out), j + 1
        if ch == "\\" and q == '"':
            if j + 1 >= len(line):
                break
            e = line[j + 1]
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                j += 2
                continue
            width = {"u": 4, "U": 8}.get(e)
            digits = line[j + 2:j + 2 + width] if width else ""
            if width and len(digits) == width and all(c in "0123456789abcdefABCDEF"
                                                      for c in digits):
                try:
                    out.append(chr(int(digits, 16)))
                except ValueError:
                    raise ValueError(f"escape \\{e}{digits} is not a character") from None
                j += 2 + width
                continue
            raise ValueError(f"unknown escape \\{e} in a double-quoted value (use \\\\ for a "
                             "backslash, \\\" for a quote, \\n for a newline, \\uXXXX; "
                             "single-quoted values take no escapes)")
        out.append(ch)
        j += 1
    raise ValueError(f"unclosed quote {q} in {line[i:].strip()!r}")


def _tokenize(line: str) -> list[tuple[str, str]]:
    """Tokens of one line: ('str', quoted text), ('plain', text) or (sep, sep) for = , :.

    Stops at a ``#`` outside quotes (a comment).
    """
    toks: list[tuple[str, str]] = []
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch.isspace():
            i += 1
        elif ch == "#":
            break
        elif ch in "=,:":
            toks.append((ch, ch))
            i += 1
        elif ch in "\"'":
            text, i = _read_quoted(line, i)
            toks.append(("str", text))
            j = i
            while j < n and line[j].isspace():
                j += 1
            if j < n and line[j] not in _SPECIAL:
                raise ValueError(f"unexpected text {line[j:].strip()!r} after the closing quote")
        else:
            j = i
            while j < n and line[j] not in _SPECIAL:
                j += 1
            run = line[i:j].strip()
            if any(q in run for q in "\"'"):
                raise ValueError(f"stray quote in {run!r}: quote the whole value, e.g. "
                                 f"\"{_escape(run)}\"")
            toks.append(("plain", run))
            i = j
    return toks


def _split_target(toks: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``a=v, b="w, x"`` (as tokens) into (attribute, value) pairs."""
    items: list[list[tuple[str, str]]] = [[]]
    for t in toks:
        if t[0] == ",":
            items.append([])
        else:
            items[-1].append(t)
    shown = " ".join(t[1] for t in toks)
    pairs = []
    for item in items:
        text = "".join(t[1] if t[0] != "str" else '"' + _escape(t[1]) + '"' for t in item)
        if not item:
            raise ValueError(f"empty item in target {shown!r} (stray ',')")
        if any(t[0] == ":" for t in item):
            raise ValueError(f"':' inside {text!r}: quote a value that contains ':'")
        eq = [i for i, t in enumerate(item) if t[0] == "="]
        if len(eq) != 1:
            raise ValueError(f"expected attribute=value, got {text!r}"
                             + (" (quote a value that contains '=')" if len(eq) > 1 else ""))
        left, right = item[:eq[0]], item[eq[0] + 1:]
        if len(left) > 1 or len(right) > 1:
            raise ValueError(f"expected attribute=value, got {text!r}")
        if not left or (left[0][0] == "plain" and not left[0][1]):
            raise ValueError(f"missing attribute name in {text!r}")
        if not right or (right[0][0] == "plain" and not right[0][1]):
            raise ValueError(f"empty value for attribute {left[0][1]!r}")
        pairs.append((left[0][1], right[0][1]))
    return pairs


def _parse_line(line: str) -> tuple[list[tuple[str, str]], str] | None:
    """(target pairs, range text) of one line, or None for a blank/comment line."""
    toks = _tokenize(line)
    if toks and toks[0] == ("plain", "-") or (toks and toks[0][0] == "plain"
                                              and toks[0][1].startswith("- ")):
        first = toks[0][1][1:].strip()
        toks = ([("plain", first)] if first else []) + toks[1:]
    if not toks:
        return None
    cut = max((i for i, t in enumerate(toks) if t[0] == ":"), default=-1)
    shown = line.strip()
    if cut < 0:
        raise ValueError(f"expected 'attribute=value[, ...]: lo..hi', got {shown!r} "
                         "(missing ':')")
    rng = toks[cut + 1:]
    if len(rng) > 1 or (rng and rng[0][0] != "plain"):
        raise ValueError(f"bad frequency range in {shown!r}: write lo..hi with integers "
                         "lo <= hi (e.g. 5..20, or 5.. for no upper bound)")
    return _split_target(toks[:cut]), (rng[0][1] if rng else "")


def parse_constraints(text: str, *, table: Any = None, columns: Sequence[str] | None = None,
                      k: int | None = None, source: str | None = None
                      ) -> list[DiversityConstraint]:
    """Parse constraints written one per line (see the module docstring).

    Parameters
    ----------
    text : str
        The constraint text.
    table : DataFrame, pyarrow Table or mapping of columns, optional
        When given, every attribute must be a column and every value must occur
        in that column (a value that never occurs is almost always a typo).
    columns : sequence of str, optional
        Known attribute names (checked when ``table`` is not given).
    k : int, optional
        The anonymity parameter: a visible value occurs in at least ``k`` rows
        of a k-anonymous table, so ``0 < lo < k`` is rejected (use ``lo = 0``
        for an upper bound only, or ``lo >= k``).
    source : str, optional
        A file name used in error messages.

    Returns
    -------
    list of DiversityConstraint

    Raises
    ------
    ConstraintSyntaxError
        With the line number: a malformed line, ``lo > hi``, an unknown
        attribute or value, ``0 < lo < k``.

    Examples
    --------
    >>> parse_constraints("sex=Female: 2..4\\nsex=Female, race=White: 0..5")
    [DiversityConstraint('sex=Female: 2..4'), DiversityConstraint('race=White, sex=Female: 0..5')]
    """
    if not isinstance(text, str):
        raise ParameterError(f"constraint text must be a str, got {type(text).__name__}")
    domains = None
    if table is not None:
        from .data import as_columns

        cols = as_columns(table)
        columns = list(cols)
        domains = cols
    out: list[DiversityConstraint] = []
    value_cache: dict[str, set[str]] = {}
    for lineno, raw in enumerate(text.split("\n"), start=1):
        try:
            parsed = _parse_line(raw.removesuffix("\r"))
        except ValueError as exc:
            raise ConstraintSyntaxError(str(exc), line=lineno, source=source) from None
        if parsed is None:
            continue
        pairs, rng = parsed
        m = _RANGE.match(rng)
        if not m:
            raise ConstraintSyntaxError(
                f"bad frequency range {rng.strip()!r}: write lo..hi with integers lo <= hi "
                "(e.g. 5..20, or 5.. for no upper bound)", line=lineno, source=source)
        lo = int(m.group(1))
        hi = INF if m.group(2) in ("", "inf", "*") else int(m.group(2))
        if lo > hi:
            raise ConstraintSyntaxError(f"empty frequency range: lo = {lo} > hi = {hi}",
                                        line=lineno, source=source)
        seen = set()
        for attr, value in pairs:
            if attr in seen:
                raise ConstraintSyntaxError(f"attribute {attr!r} appears twice", line=lineno,
                                            source=source)
            seen.add(attr)
            if columns is not None and attr not in columns:
                hint = difflib.get_close_matches(attr, list(columns), n=1)
                extra = f"; did you mean {hint[0]!r}?" if hint else ""
                raise ConstraintSyntaxError(
                    f"unknown attribute {attr!r} (columns: {', '.join(columns)}){extra}",
                    line=lineno, source=source)
            if domains is not None:
                if attr not in value_cache:
                    from .data import cell_text

                    value_cache[attr] = set(cell_text(domains[attr], name=attr,
                                                      missing="skip").tolist())
                if value not in value_cache[attr]:
                    hint = difflib.get_close_matches(value, sorted(value_cache[attr]), n=1)
                    extra = f"; did you mean {hint[0]!r}?" if hint else ""
                    if " " + value in value_cache[attr]:
                        extra = (f"; the column has {' ' + value!r}: if the file writes a space "
                                 "after each delimiter, read it with --skip-initial-space "
                                 "(skip_initial_space=True)")
                    raise ConstraintSyntaxError(
                        f"value {value!r} does not occur in column {attr!r}{extra}",
                        line=lineno, source=source)
        if k is not None and 0 < lo < k:
            raise ConstraintSyntaxError(
                f"lo = {lo} is below k = {k}: in a {k}-anonymous table a visible value occurs "
                f"in 0 or at least {k} rows; use lo = 0 (upper bound only) or lo >= {k}",
                line=lineno, source=source)
        try:
            out.append(DiversityConstraint(pairs, lo, hi))
        except ConstraintSyntaxError as exc:
            raise ConstraintSyntaxError(str(exc).removeprefix("constraint: "), line=lineno,
                                        source=source) from None
    return out


def load_constraints(path: str | Path, **kwargs: Any) -> list[DiversityConstraint]:
    """Read and parse a constraint file (see :func:`parse_constraints`)."""
    p = Path(path)
    if not p.is_file():
        raise ParameterError(f"constraint file {str(p)!r} does not exist")
    return parse_constraints(p.read_text(encoding="utf-8"), source=str(p), **kwargs)


def format_constraints(constraints: Iterable[DiversityConstraint]) -> str:
    """Write constraints in the text syntax, one per line."""
    return "".join(c.to_text() + "\n" for c in constraints)


def check_constraints_against(constraints: Sequence[DiversityConstraint], *, k: int | None = None,
                              attributes: Sequence[str] | None = None,
                              what: str = "columns") -> None:
    """Check constraints built in code: ``0 < lo < k`` and attributes outside ``attributes``."""
    for i, c in enumerate(constraints):
        if not isinstance(c, DiversityConstraint):
            raise ParameterError(f"constraints[{i}] must be a DiversityConstraint, got {c!r}")
        if k is not None and 0 < c.lo < k:
            raise ParameterError(
                f"constraint {c.to_text()!r}: lo = {c.lo} is below k = {k}; a visible value "
                f"occurs in 0 or at least {k} rows of a {k}-anonymous table (use lo = 0 or "
                f"lo >= {k})")
        if attributes is not None:
            for a in c.attributes:
                if a not in attributes:
                    hint = difflib.get_close_matches(a, list(attributes), n=1)
                    extra = f"; did you mean {hint[0]!r}?" if hint else ""
                    raise ParameterError(
                        f"constraint {c.to_text()!r}: attribute {a!r} is not one of the {what} "
                        f"({', '.join(attributes)}){extra}")
