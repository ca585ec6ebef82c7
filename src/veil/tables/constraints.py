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

Values with commas, colons, ``=`` or surrounding spaces are quoted with
``"`` or ``'``. Ranges are non-negative integers ``lo..hi``; ``lo..``,
``lo..inf`` and ``lo..*`` leave the upper end open.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

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
    if isinstance(v, bool):
        raise ConstraintSyntaxError(f"{name} must be an integer, got {v!r}")
    if isinstance(v, float) and math.isinf(v) and v > 0 and allow_inf:
        return INF
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ConstraintSyntaxError(f"{name} must be an integer, got {v!r}") from None
    if math.isnan(f) or not f.is_integer():
        if allow_inf and math.isinf(f) and f > 0:
            return INF
        raise ConstraintSyntaxError(f"{name} must be an integer, got {v!r}")
    if f < 0:
        raise ConstraintSyntaxError(f"{name} must be >= 0, got {int(f)}")
    return int(f)


def _fmt_bound(v: float) -> str:
    return "inf" if v == INF else str(int(v))


_PLAIN = re.compile(r"^[^\s,:=\"'#][^,:=\"'#]*$")


def _fmt_value(v: str) -> str:
    if _PLAIN.match(v) and v == v.strip():
        return v
    if '"' not in v:
        return f'"{v}"'
    return f"'{v}'"


def _fmt_target(target: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{_fmt_value(a)}={_fmt_value(v)}" for a, v in target)


# --------------------------------------------------------------------------- parsing

_RANGE = re.compile(r"^\s*(\d+)\s*\.\.\s*(\d+|inf|\*|)\s*$")


def _split_outside_quotes(text: str, sep: str) -> list[str]:
    parts, cur, quote = [], [], None
    for ch in text:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == sep:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    if quote:
        raise ValueError("unclosed quote")
    parts.append("".join(cur))
    return parts


def _unquote(tok: str) -> str:
    t = tok.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        return t[1:-1]
    if any(q in t for q in "\"'"):
        raise ValueError(f"stray quote in {t!r}")
    return t


def _split_target(text: str, line: int, source: str | None) -> list[tuple[str, str]]:
    """Split ``a=v, b="w, x"`` into pairs, honouring quotes."""
    try:
        items = _split_outside_quotes(text, ",")
        pairs = []
        for item in items:
            if not item.strip():
                raise ValueError(f"empty item in target {text.strip()!r} (stray ',')")
            kv = _split_outside_quotes(item, "=")
            if len(kv) != 2:
                raise ValueError(f"expected attribute=value, got {item.strip()!r}")
            attr, value = _unquote(kv[0]), _unquote(kv[1])
            if not attr:
                raise ValueError(f"missing attribute name in {item.strip()!r}")
            if value == "":
                raise ValueError(f"empty value for attribute {attr!r}")
            pairs.append((attr, value))
    except ValueError as exc:
        raise ConstraintSyntaxError(str(exc), line=line, source=source) from None
    return pairs


def _split_colon(body: str) -> int:
    """Index of the ':' separating target and range (outside quotes), or -1."""
    quote = None
    last = -1
    for i, ch in enumerate(body):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == ":":
            last = i
    return last


def _strip_comment(raw: str) -> str:
    quote = None
    for i, ch in enumerate(raw):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return raw[:i]
    return raw


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
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).strip()
        if line.startswith("- "):
            line = line[2:].strip()
        if not line:
            continue
        cut = _split_colon(line)
        if cut < 0:
            raise ConstraintSyntaxError(
                f"expected 'attribute=value[, ...]: lo..hi', got {line!r} (missing ':')",
                line=lineno, source=source)
        head, rng = line[:cut], line[cut + 1:]
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
        pairs = _split_target(head, lineno, source)
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
                    from .data import column_strings

                    value_cache[attr] = set(column_strings(domains[attr]).tolist())
                if value not in value_cache[attr]:
                    hint = difflib.get_close_matches(value, sorted(value_cache[attr]), n=1)
                    extra = f"; did you mean {hint[0]!r}?" if hint else ""
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
