r"""Tables as text: read a CSV or Parquet file, write it back with only the changed cells changed.

The published text of a table must be the input text. DuckDB's CSV sniffer
guesses types and writes values back in its own spelling (``F`` becomes
``False``, ``01/02/2020`` a date, ``1e3`` ``1000``, ``-0`` and ``0`` merge,
``NaN`` becomes missing, spaces are trimmed), so ``veil table`` does not
round-trip CSV through typed columns. :func:`read_text_table` parses the file
itself (RFC 4180: ``"`` quotes, doubled inside a quoted field; the delimiter
``,`` or one given; ``\r\n``, ``\n`` or ``\r`` line ends) and keeps, for every
record, its raw text and line end. Every cell's *value* is its text (the
field without the enclosing quotes, ``""`` undoubled): ``NaN``, ``-0``,
``01/02/2020`` and `` padded `` are values like any other; an empty field
is the empty value.

:meth:`TextTable.write` writes a CSV output by copying each record's raw
bytes and replacing only the fields whose value changed (a suppressed or
generalized cell), quoting a new value when it needs quotes; the header,
quoting of the other fields, blank lines, a byte-order mark and every line
end are preserved. The write goes through :func:`veil.io.atomic_path` (a
temporary file renamed over the target), so veil's output rules apply.

Parquet input is read with pyarrow from an open file (the path is never a
pattern); each cell's text is :func:`veil.tables.data.cell_text` of its typed
value. A Parquet output keeps the input's columns and types, except changed
columns, which become text.

Examples
--------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "in.csv").write_bytes(b'sex,age,note\r\nF,01,"a, b"\r\nT,-0,NaN\r\n')
>>> t = read_text_table(d / "in.csv")
>>> t["age"].tolist(), t["note"].tolist()
(['01', '-0'], ['a, b', 'NaN'])
>>> t.replace({"sex": ["*", "T"]}).write(d / "out.csv").read_bytes()
b'sex,age,note\r\n*,01,"a, b"\r\nT,-0,NaN\r\n'
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import DataError, ParameterError

__all__ = ["TextTable", "read_text_table", "TABLE_FORMATS"]

#: File formats ``veil table`` reads and writes.
TABLE_FORMATS = ("csv", "parquet")
_SUFFIX = {".csv": "csv", ".tsv": "csv", ".tab": "csv", ".txt": "csv", ".data": "csv",
           ".parquet": "parquet", ".pq": "parquet"}
_QUOTE = '"'
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\n|\r|$)")


def table_format(path: str | os.PathLike, format: str | None = None) -> str:
    """``"csv"`` or ``"parquet"``: ``format`` if given, else from the extension (CSV otherwise)."""
    if format is not None:
        f = str(format).lower()
        if f not in TABLE_FORMATS:
            raise ParameterError(f"format must be one of {', '.join(TABLE_FORMATS)}, got "
                                 f"{format!r}")
        return f
    suffix = Path(path).suffix.lower()
    if suffix in (".json", ".jsonl", ".ndjson"):
        raise ParameterError(f"{str(path)!r}: veil table reads and writes CSV or Parquet, not "
                             "JSON")
    return _SUFFIX.get(suffix, "csv")


class _Record:
    """One CSV record: its raw text (without the line end) and its line end."""

    __slots__ = ("raw", "end", "before")

    def __init__(self, raw: str, end: str, before: str):
        self.raw = raw
        self.end = end
        self.before = before  # blank lines preceding the record, copied as they are


def _split_fields(raw: str, delim: str, skip_space: bool) -> list[tuple[str, str, str]]:
    """Fields of one record as (separator before it, raw field, value).

    The separator is the delimiter plus, with ``skip_space``, the spaces after
    it (so the leading spaces are copied but not part of the value).
    """
    out = []
    i, n = 0, len(raw)
    sep = ""
    while True:
        if skip_space and out:
            j = i
            while j < n and raw[j] == " ":
                j += 1
            sep += raw[i:j]
            i = j
        if i < n and raw[i] == _QUOTE:
            j = i + 1
            buf = []
            while True:
                k = raw.find(_QUOTE, j)
                if k < 0:
                    raise ValueError("a quoted field is not closed")
                buf.append(raw[j:k])
                if k + 1 < n and raw[k + 1] == _QUOTE:
                    buf.append(_QUOTE)
                    j = k + 2
                    continue
                j = k + 1
                break
            if j < n and raw[j] != delim:
                raise ValueError(f"text {raw[j:j + 10]!r} after the closing quote of a field "
                                 "(a quote inside a quoted field is written \"\")")
            out.append((sep, raw[i:j], "".join(buf)))
        else:
            j = raw.find(delim, i)
            j = n if j < 0 else j
            field = raw[i:j]
            out.append((sep, field, field))
        if j >= n:
            return out
        sep = delim
        i = j + 1


def _needs_quotes(value: str, delim: str, skip_space: bool) -> bool:
    return (delim in value or _QUOTE in value or "\n" in value or "\r" in value
            or (skip_space and value[:1] == " ") or value == "")


def _quote(value: str, delim: str, skip_space: bool) -> str:
    if not _needs_quotes(value, delim, skip_space):
        return value
    return _QUOTE + value.replace(_QUOTE, _QUOTE * 2) + _QUOTE  # CSV doubling, not SQL


class TextTable:
    """A table whose cells are text, with what is needed to write it back exactly.

    Build one with :func:`read_text_table` (or :meth:`from_columns`). Index it
    by column name to get a column's values (a numpy object array of ``str``;
    ``None`` for a missing Parquet value). :meth:`replace` returns a copy with
    some columns changed and :meth:`write` writes it (CSV: byte-for-byte the
    input except the changed cells).

    Attributes
    ----------
    columns : list of str
        Column names, case-sensitive, in file order.
    source : str or None
        The file it was read from.
    format : {"csv", "parquet"} or None
    """

    def __init__(self, columns: Sequence[str], values: Mapping[str, np.ndarray], *,
                 source: str | None = None, format: str | None = None, csv: dict | None = None,
                 arrow: Any = None, original: Mapping[str, np.ndarray] | None = None):
        self.columns = list(columns)
        self._values = dict(values)
        self._original = dict(original) if original is not None else dict(values)
        self.source = source
        self.format = format
        self._csv = csv
        self._arrow = arrow

    @classmethod
    def from_columns(cls, columns: Mapping[str, Sequence[str]]) -> "TextTable":
        """A text table from a mapping of column name to string values (no file layout)."""
        vals = {str(k): np.asarray(list(v), dtype=object) for k, v in columns.items()}
        lengths = {len(v) for v in vals.values()}
        if len(lengths) > 1:
            raise DataError(f"columns have different lengths: {sorted(lengths)}")
        for k, v in vals.items():
            if not all(isinstance(x, str) for x in v):
                raise DataError("a text table holds strings only", column=k)
        return cls(list(vals), vals)

    @property
    def num_rows(self) -> int:
        return len(next(iter(self._values.values()))) if self._values else 0

    def __len__(self) -> int:
        return self.num_rows

    def __getitem__(self, name: str) -> np.ndarray:
        return self._values[name]

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def column_dict(self) -> dict[str, np.ndarray]:
        """The columns as a dict of numpy object arrays (no copy)."""
        return dict(self._values)

    def __repr__(self) -> str:
        src = f" from {self.source!r}" if self.source else ""
        return f"TextTable({self.num_rows} rows, columns {self.columns}{src})"

    def replace(self, new: Mapping[str, Sequence[str]]) -> "TextTable":
        """A copy with the given columns replaced by new text values (the input is not changed)."""
        vals = dict(self._values)
        for name, arr in new.items():
            if name not in vals:
                raise ParameterError(f"no column {name!r} to replace (columns: "
                                     f"{', '.join(self.columns)})")
            a = np.asarray(list(arr), dtype=object)
            if len(a) != self.num_rows:
                raise ParameterError(f"column {name!r}: {len(a)} values for {self.num_rows} rows")
            vals[name] = a
        return TextTable(self.columns, vals, source=self.source, format=self.format,
                         csv=self._csv, arrow=self._arrow, original=self._original)

    def changed(self) -> dict[str, np.ndarray]:
        """For each changed column, a boolean mask of the changed cells."""
        out = {}
        for name in self.columns:
            a, b = self._values[name], self._original[name]
            if a is b:
                continue
            m = np.asarray(a != b, dtype=bool)
            if m.any():
                out[name] = m
        return out

    # ------------------------------------------------------------------ writing

    def write(self, path: str | os.PathLike, *, format: str | None = None) -> Path:
        """Write atomically as CSV or Parquet (by ``format`` or the extension).

        A CSV read from a CSV file is written record by record: unchanged
        records are copied byte for byte, a changed cell's field is replaced
        by its new value (quoted when it holds the delimiter, a quote, a line
        break, or is empty), everything else in the record is copied.
        """
        from ..io import atomic_path

        path = Path(os.fspath(path))
        fmt = table_format(path, format)
        with atomic_path(path) as tmp:
            self.dump(tmp, format=fmt)
        return path

    def dump(self, tmp: str | os.PathLike, *, format: str) -> None:
        """Write to ``tmp`` directly (not atomic: for a temporary file of
        :func:`veil.io.atomic_paths`, when several outputs must appear together)."""
        fmt = table_format(tmp, format)
        tmp = Path(os.fspath(tmp))
        if fmt == "parquet":
            self._write_parquet(tmp)
        elif self._csv is not None:
            self._write_csv_spliced(tmp)
        else:
            self._write_csv_plain(tmp)

    def _write_csv_spliced(self, tmp: Path) -> None:
        c = self._csv
        delim, skip = c["delimiter"], c["skip_space"]
        changed = self.changed()
        pos = {name: self.columns.index(name) for name in changed}
        any_row = np.zeros(self.num_rows, dtype=bool)
        for m in changed.values():
            any_row |= m
        parts: list[str] = [c["bom"]]
        if c["header"] is not None:
            parts.append(c["header"].before + c["header"].raw + c["header"].end)
        rows = np.flatnonzero(any_row)
        recs = c["records"]
        last = 0
        for i in rows.tolist():
            parts.extend(r.before + r.raw + r.end for r in recs[last:i])
            r = recs[i]
            fields = _split_fields(r.raw, delim, skip)
            out = []
            for j, (sep, raw, _) in enumerate(fields):
                out.append(sep)
                out.append(raw)
            for name, m in changed.items():
                if m[i]:
                    out[2 * pos[name] + 1] = _quote(self._values[name][i], delim, skip)
            parts.append(r.before + "".join(out) + r.end)
            last = i + 1
        parts.extend(r.before + r.raw + r.end for r in recs[last:])
        parts.append(c["trailer"])
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write("".join(parts))

    def _write_csv_plain(self, tmp: Path) -> None:
        delim = ","
        lines = [delim.join(_quote(n, delim, False) for n in self.columns)]
        cols = [self._values[n] for n in self.columns]
        for i in range(self.num_rows):
            cells = []
            for col in cols:
                v = col[i]
                cells.append("" if v is None else _quote(str(v), delim, False))
            lines.append(delim.join(cells))
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write("\n".join(lines) + "\n")

    def _write_parquet(self, tmp: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        changed = self.changed()
        arrays = []
        for name in self.columns:
            if self._arrow is not None and name not in changed:
                arrays.append(self._arrow.column(name))
            else:
                arrays.append(pa.array(list(self._values[name]), type=pa.string()))
        pq.write_table(pa.Table.from_arrays(arrays, names=self.columns), tmp)


# ---------------------------------------------------------------------- reading

def read_text_table(path: str | os.PathLike, *, format: str | None = None,
                    delimiter: str | None = None, header: bool = True,
                    names: Sequence[str] | None = None, skip_initial_space: bool = False
                    ) -> TextTable:
    """Read a CSV or Parquet file as text (see the module docstring).

    Parameters
    ----------
    path : str or path-like
        The file; always this one file (never a pattern).
    format : {"csv", "parquet"}, optional
        Default: ``.parquet``/``.pq`` are Parquet, anything else CSV.
    delimiter : str, optional
        One character; default ``,`` (a tab for ``.tsv``/``.tab``).
    header : bool
        Whether the first record holds the column names (CSV). With
        ``names`` and ``header=True`` the header's names are replaced.
    names : sequence of str, optional
        Column names (CSV without a header: pass ``header=False``).
    skip_initial_space : bool
        Spaces right after a delimiter belong to the separator, not to the value
        (the UCI Adult file writes ``39, State-gov, ...``). They are still written
        back as they were.

    Raises
    ------
    DataError
        Naming the file and the 1-based data row: missing file, not UTF-8, a
        record with a different number of fields, an unclosed quote, text after
        a closing quote, duplicate column names, no data rows.
    """
    p = Path(os.fspath(path))
    spath = str(p)
    if not p.exists():
        raise DataError("no such file", path=spath)
    if p.is_dir():
        raise DataError("is a folder, not a file", path=spath)
    if names is not None:
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise ParameterError(f"names must be a list of strings, got {names!r}")
        names = list(names)
    fmt = table_format(p, format)
    if fmt == "parquet":
        return _read_parquet(p, names)
    if delimiter is None:
        delimiter = "\t" if p.suffix.lower() in (".tsv", ".tab") else ","
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\"\r\n":
        raise ParameterError(f"delimiter must be one character other than a quote or a line "
                             f"break, got {delimiter!r}")
    if skip_initial_space and delimiter == " ":
        raise ParameterError("skip_initial_space cannot be used with a space delimiter")
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        row = line - 1 if header else line
        raise DataError(f"is not UTF-8 text (byte {exc.start}); re-save it as UTF-8",
                        path=spath, row=row if row > 0 else None) from None
    bom = ""
    if text.startswith("\ufeff"):
        bom, text = "\ufeff", text[1:]
    records, trailer = _records(text, spath, header, delimiter, skip_initial_space)
    if header:
        if not records:
            raise DataError("the file is empty: expected a header and data rows", path=spath)
        head_rec, records = records[0], records[1:]
        try:
            head = [v for _, _, v in _split_fields(head_rec.raw, delimiter, skip_initial_space)]
        except ValueError as exc:
            raise DataError(f"header: {exc}", path=spath) from None
    else:
        head_rec, head = None, None
    width = len(names) if names is not None else (len(head) if head is not None else None)
    cols: list[list[str]] | None = None
    for i, r in enumerate(records):
        if not skip_initial_space and _QUOTE not in r.raw:
            vals = r.raw.split(delimiter)
        else:
            try:
                vals = [v for _, _, v in _split_fields(r.raw, delimiter, skip_initial_space)]
            except ValueError as exc:
                raise DataError(str(exc), path=spath, row=i + 1) from None
        if width is None:
            width = len(vals)
        if len(vals) != width:
            want = "the header has" if header else ("--names gives" if names else "row 1 has")
            raise DataError(f"has {len(vals)} field(s) but {want} {width}; check the delimiter "
                            f"{delimiter!r} and quoting", path=spath, row=i + 1)
        if cols is None:
            cols = [[] for _ in range(width)]
        for j, v in enumerate(vals):
            cols[j].append(v)
    if not records:
        raise DataError("has no data rows (only a header?)", path=spath)
    colnames = names if names is not None else (head if head is not None else
                                                 [f"column{j}" for j in range(width)])
    if len(colnames) != width:
        raise DataError(f"--names gives {len(colnames)} names but the rows have {width} "
                        "fields", path=spath)
    _check_names(colnames, spath)
    values = {n: np.asarray(c, dtype=object) for n, c in zip(colnames, cols)}
    layout = {"delimiter": delimiter, "skip_space": skip_initial_space, "bom": bom,
              "header": head_rec, "records": records, "trailer": trailer}
    return TextTable(colnames, values, source=spath, format="csv", csv=layout)


def _check_names(names: Sequence[str], spath: str) -> None:
    seen: dict[str, int] = {}
    for j, n in enumerate(names):
        if n in seen:
            raise DataError(f"column name {n!r} appears twice (columns {seen[n] + 1} and "
                            f"{j + 1}); names must be unique", path=spath)
        seen[n] = j


def _line_end(text: str, i: int) -> int:
    """Length of the line end at ``text[i]`` (2 for CRLF, 1 for LF or CR, 0 otherwise)."""
    if text.startswith("\r\n", i):
        return 2
    return 1 if i < len(text) and text[i] in "\r\n" else 0


def _scan_quoted_record(text: str, pos: int, delim: str, skip: bool) -> int:
    """End (index of its line end) of the record starting at ``pos``, quotes honoured.

    A quote opens a quoted field only at the start of a field (after the
    delimiter and, with ``skip``, spaces); inside it, line breaks are data.
    """
    n = len(text)
    i = pos
    while True:
        if skip and i > pos:
            while i < n and text[i] == " ":
                i += 1
        if i < n and text[i] == _QUOTE:
            j = i + 1
            while True:
                k = text.find(_QUOTE, j)
                if k < 0:
                    raise ValueError("a quoted field is not closed before the end of the file")
                if text.startswith(_QUOTE * 2, k):
                    j = k + 2
                    continue
                i = k + 1
                break
        # the rest of the field: up to a delimiter or a line end
        while i < n and text[i] != delim and text[i] not in "\r\n":
            i += 1
        if i >= n or text[i] in "\r\n":
            return i
        i += 1  # past the delimiter


def _records(text: str, spath: str, header: bool, delim: str, skip: bool
             ) -> tuple[list[_Record], str]:
    """Split text into records (a quoted field may span lines); blank lines kept aside."""
    records: list[_Record] = []
    blank: list[str] = []
    pos, n = 0, len(text)
    while pos < n:
        m = _LINE.match(text, pos)
        line = m.group(0)
        if _QUOTE in line:
            try:
                stop = _scan_quoted_record(text, pos, delim, skip)
            except ValueError as exc:
                row = len(records) + (0 if header else 1)
                raise DataError(str(exc), path=spath, row=row if row > 0 else None) from None
        else:
            stop = m.end() - _line_end_len(line)
        e = _line_end(text, stop)
        body, end = text[pos:stop], text[stop:stop + e]
        if body == "":
            blank.append(end)
        else:
            records.append(_Record(body, end, "".join(blank)))
            blank = []
        pos = stop + e
    return records, "".join(blank)


def _line_end_len(line: str) -> int:
    return 2 if line.endswith("\r\n") else (1 if line[-1:] in ("\r", "\n") else 0)


def _read_parquet(p: Path, names: list[str] | None) -> TextTable:
    import pyarrow.parquet as pq

    from .data import cell_text

    try:
        with open(p, "rb") as fh:
            tbl = pq.read_table(fh)
    except Exception as exc:  # noqa: BLE001 - any pyarrow failure is a bad file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"cannot be read as Parquet: {first}", path=str(p)) from None
    cols = list(tbl.column_names)
    if names is not None:
        if len(names) != len(cols):
            raise DataError(f"--names gives {len(names)} names but the file has {len(cols)} "
                            "columns", path=str(p))
        tbl = tbl.rename_columns(names)
        cols = list(names)
    _check_names(cols, str(p))
    if tbl.num_rows == 0:
        raise DataError("has no data rows", path=str(p))
    values = {n: cell_text(tbl.column(j), name=n, missing="keep") for j, n in enumerate(cols)}
    return TextTable(cols, values, source=str(p), format="parquet", arrow=tbl)
