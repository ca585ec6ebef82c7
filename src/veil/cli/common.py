"""Options and helpers shared by every ``veil`` command, so they read the same everywhere.

Conventions
-----------
- ``INPUT`` is a positional argument; its format comes from the extension unless
  ``--input-format`` is given.
- ``--epsilon/-e`` is the privacy budget; ``--seed`` is for experiments only.
- ``--output/-o`` is written atomically, together with a ``<output>.meta.json``
  sidecar describing the release (mechanism, budget, noise scale ...).
- ``--format/-f`` is the output format; by default it follows the output's extension
  (``.csv``, ``.parquet``, ``.json``), else CSV.
- Bad input raises :class:`veil.errors.ParameterError` / :class:`veil.errors.DataError`;
  ``veil.cli.main`` prints it as one line and exits with status 2.
- A library's refusal of an option's value names the option, not the library's parameter:
  a command declares the mapping with :class:`options_named`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
import functools
import inspect
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from ..validation import exact  # noqa: F401  (re-exported for the commands)

EPSILON = typer.Option(..., "--epsilon", "-e", help="Privacy budget epsilon (> 0).")
SEED = typer.Option(
    None, "--seed",
    help="FOR EXPERIMENTS ONLY: a fixed random seed makes the noise reproducible; "
         "never publish output produced with a known seed. Default: OS entropy.")
OUTPUT = typer.Option(..., "--output", "-o", help="Output file (written atomically).")
FORMAT = typer.Option("csv", "--format", "-f", help="Output format: csv, parquet or json.")

#: ``--format`` defaulting to the output file's extension (csv if it has none we know).
OUTPUT_FORMAT = typer.Option(
    None, "--format", "-f",
    help="Output format: csv, parquet or json. Default: from the output's extension, else csv.")
#: Input file argument (CSV, TSV, Parquet or JSON).
INPUT = typer.Argument(..., help="Input file: .csv/.tsv, .parquet or .json (see --input-format).",
                       show_default=False)
#: ``--input-format`` overriding the input's extension.
INPUT_FORMAT = typer.Option(None, "--input-format",
                            help="Input format: csv, parquet or json. Default: from the extension.")
#: ``--delimiter`` for CSV input (default ``,``; a tab for .tsv files).
DELIMITER = typer.Option(None, "--delimiter",
                         help="CSV field delimiter of the input (default ',', tab for .tsv).")

#: ``--force``: replace an existing output (never one of the command's inputs).
FORCE = typer.Option(False, "--force",
                     help="Replace an existing output file (an input is never overwritten).")
#: ``--spend-again``: accept another release about a dataset that already has spend.
SPEND_AGAIN = typer.Option(
    False, "--spend-again",
    help="Accept another release about people who already received one from this dataset "
         "(any copy or format of it): it spends the budget again, capped by the total "
         "declared with `veil budget set`.")
#: ``--ledger``: the privacy ledger charged by a DP command.
LEDGER = typer.Option(
    None, "--ledger",
    help="Privacy ledger file. Default: $VEIL_LEDGER, else $VEIL_HOME/ledger.sqlite "
         "(VEIL_HOME defaults to ~/.local/share/veil). Its folder must exist (the home "
         "ledger's is created); a symbolic link or an SQLite file that is not a veil ledger "
         "is refused. Refused if the dataset's budget is recorded in another ledger.")

__all__ = [
    "QUIET", "JSON", "quiet", "json_mode", "status", "say", "done", "answer",
    "EPSILON", "SEED", "OUTPUT", "FORMAT", "OUTPUT_FORMAT", "INPUT", "INPUT_FORMAT", "DELIMITER",
    "FORCE", "SPEND_AGAIN", "LEDGER", "writes_files",
    "output_path", "output_format", "read_input", "check_epsilon_option", "write_output", "echo_release",
    "check_column_option", "naming_file", "input_options", "release_summary", "stages",
    "options_named", "option_subject",
]


#: ``--quiet/-q`` and ``--json``: every command has both (docs/cli.md). They are added to every
#: command by :func:`veil.cli.command`, read with :func:`quiet` and :func:`json_mode`.
QUIET = typer.Option(False, "--quiet", "-q",
                     help="No status lines or progress on stderr (warnings and errors still).")
JSON = typer.Option(False, "--json",
                    help="Print a machine-readable summary (one JSON object) on stdout.")


def _state() -> dict:
    from . import _STATE

    return _STATE


def quiet() -> bool:
    """True when the running command was given ``--quiet``."""
    return bool(_state().get("quiet"))


def json_mode() -> bool:
    """True when the running command was given ``--json``."""
    return bool(_state().get("json"))


def status(message: str) -> None:
    """A status line (what was written, progress, a note): stderr, never stdout; not with
    ``--quiet``. Data and ``--json`` summaries are the only things on stdout."""
    if not quiet():
        typer.echo(message, err=True)


@contextlib.contextmanager
def stages() -> Iterator[Callable[[str], None]]:
    """Progress of a long command: yields ``show(text)``, which names the current stage on
    one transient line of stderr (a spinner and the elapsed time), cleared when the command
    ends so that only its status line remains.

    Only on a terminal: not with ``--quiet`` or ``--json``, and not when stderr is a file or
    a pipe (scripts and logs get the one status line, as before). The texts name stages,
    never a figure computed from the data (stderr is seen by whoever runs the command).
    """
    if quiet() or json_mode() or not getattr(sys.stderr, "isatty", lambda: False)():
        yield lambda text: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    # stderr written during a stage (a note, a warning) is printed above the line; stdout is
    # left alone (data and --json summaries never pass through the progress display)
    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                   console=Console(file=sys.stderr, highlight=False), transient=True,
                   redirect_stdout=False, redirect_stderr=True)
    task: list = []

    def show(text: str) -> None:
        if task:
            bar.update(task[0], description=text, refresh=True)
        else:
            task.append(bar.add_task(text))
            bar.refresh()

    with bar:
        yield show


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    return str(obj)  # datetimes and the like


def _json_text(obj: Any) -> str:
    """Strict JSON (numpy values converted; NaN and infinities written as the sidecars write
    them, "nan" and "inf", so that every JSON parser reads the result)."""
    import json

    from ..release import to_jsonable

    return json.dumps(to_jsonable(obj), indent=2, sort_keys=True, default=_json_default,
                      allow_nan=False)


def _print_json(summary: dict) -> None:
    if _state().get("json_printed"):
        raise RuntimeError("a command printed two --json summaries")
    _state()["json_printed"] = True
    typer.echo(_json_text(summary))


def say(text: str) -> None:
    """A line of a command's answer (a benchmark's table): stdout, or, with ``--json`` (whose
    object is then the only thing on stdout), a status line on stderr."""
    if json_mode():
        status(text)
    else:
        typer.echo(text)


def done(summary: dict, text: str | None = None) -> None:
    """End a command that wrote its result to files: with ``--json`` print ``summary`` as one
    JSON object on stdout; otherwise ``text`` (if any) is a status line on stderr.

    ``summary`` holds what the console line says, nothing more: for a DP command only public
    quantities (paths, mechanism, budget), as the file-level audits require.
    """
    if json_mode():
        _print_json(summary)
    elif text is not None:
        status(text)


def answer(summary: Any, text: str | None = None) -> None:
    """End a command whose result is its standard output (a check, a query, a table of
    figures): with ``--json`` the summary as JSON, otherwise ``text`` (or the JSON if no text
    is given); ``--quiet`` never silences an answer."""
    if json_mode():
        _print_json(summary if isinstance(summary, dict) else {"result": summary})
    elif text is None:
        typer.echo(_json_text(summary))
    else:
        typer.echo(text)


@contextlib.contextmanager
def naming_file(path: Path) -> Iterator[None]:
    """Add ``path`` to a :class:`~veil.errors.DataError` raised without a file name.

    Library code that works on tables in memory reports the row and column of a problem but
    cannot know the file; the command does, and the one-line message must name it.
    """
    from ..errors import DataError

    try:
        yield
    except DataError as exc:
        if exc.path is not None:
            raise
        where = [f"row {exc.row}"] if exc.row is not None else []
        if exc.column is not None:
            where.append(f"column {exc.column!r}")
        text = str(exc)
        prefix = ", ".join(where) + ": " if where else ""
        if prefix and text.startswith(prefix):
            text = text[len(prefix):]
        raise DataError(text, path=str(path), row=exc.row, column=exc.column) from None


#: What may follow a parameter name that is the subject of a message: "k must be >= 1",
#: "count_bound is required: ...", "records_bound: ...", "r=12: the sanitized size ...".
_SUBJECT_ENDS = (" ", ":", ",", "=")
_QUOTES = ("'", '"', "`")


def option_subject(text: str, names: Mapping[str, str]) -> Optional[str]:
    """``text`` with its subject, a library parameter named in ``names``, replaced by the
    option the user typed; None when the message does not start with one of those names.

    The name must be the message's subject: it starts the message and is followed by a
    space, ``:``, ``,`` or ``=`` (or the text ends), or it starts the message quoted
    (``'k' must ...``, the quotes are kept). A name is never replaced inside a longer word
    (``k`` in ``keys must ...``) nor later in the message (values, column names and file
    names quoted there are the user's). Longer names are tried first (``time window start``
    before ``time``). The rest of the message is kept exactly.

    >>> option_subject("records_bound must be > 0, got -3.0", {"records_bound": "--records-bound"})
    '--records-bound must be > 0, got -3.0'
    >>> option_subject("'k' must be >= 1", {"k": "--k"})
    "'--k' must be >= 1"
    >>> option_subject("keys must differ", {"k": "--k"}) is None
    True
    """
    for name in sorted(names, key=len, reverse=True):
        if not name:
            continue
        for q in _QUOTES:
            if text.startswith(q + name + q):
                return q + names[name] + q + text[len(name) + 2:]
        if text.startswith(name):
            rest = text[len(name):]
            if rest == "" or rest.startswith(_SUBJECT_ENDS):
                return names[name] + rest
    return None


class options_named(contextlib.ContextDecorator):
    """Word the library's refusals of a command's option values with the options' names.

    Library functions name their parameters in their messages (``k must be >= 1, got 0``),
    which is right for a library caller but not for someone who typed ``--k 0``. A command
    declares how the library parameters it passes map to its options; a
    :class:`~veil.errors.ParameterError` raised inside, whose message has one of those
    parameters as its subject (see :func:`option_subject`), is raised again with the
    option's name instead (``--k must be >= 1, got 0``), the rest of the message kept
    exactly. Other errors, and messages that do not start with a declared name, pass
    unchanged. The library's own messages are not changed.

    Use it as a decorator of a command (below ``@app.command`` and ``@writes_files``) or as
    a context manager around the library calls::

        @options_named({"k": "--k", "count_bound": "--count-bound"})
        def publish_cmd(...): ...

        with options_named({"cell_m": "--cell"}):
            PublicCells(cell)

    The names are taken as given (a phrase such as ``"resample size"`` or ``"option
    height"`` too); give each the option's long name (``--epsilon``, not ``-e``).
    """

    def __init__(self, names: Mapping[str, str]):
        self.names = dict(names)
        for name, option in self.names.items():
            if not (isinstance(option, str) and option.startswith("-")):
                raise ValueError(f"options_named: {name!r} must map to an option such as "
                                 f"'--{name.replace('_', '-')}', got {option!r}")

    def __enter__(self) -> "options_named":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        from ..errors import ParameterError

        if exc is None or not isinstance(exc, ParameterError):
            return False
        text = option_subject(str(exc), self.names)
        if text is None:
            return False
        # the same exception (its class and traceback), its message worded with the option
        exc.args = (text,)
        if str(exc) != text:  # a subclass that formats its own text: a plain ParameterError
            raise ParameterError(text) from exc
        return False


def check_column_option(value: str, option: str) -> str:
    """A column name given on the command line: any text but the empty string.

    The name is used exactly as given (spaces, quotes and newlines included): names are
    matched against the file's header as written, never pasted into SQL.
    """
    from ..errors import ParameterError

    if not isinstance(value, str) or value == "":
        raise ParameterError(f"{option} must name a column, got an empty name")
    return value


def _command_line() -> str:
    """The command as the user typed it (for the ledger's record)."""
    from . import _STATE

    argv = _STATE.get("argv")
    if argv is None:
        argv = sys.argv[1:]
    return shlex.join(["veil", *map(str, argv)])


def _option_values(values: Iterable[Any]) -> Iterator[Any]:
    """The parameter values, with lists and tuples (repeated options) flattened once."""
    for v in values:
        if isinstance(v, list | tuple):
            yield from v
        else:
            yield v


def writes_files(*input_params: str) -> Callable:
    """Decorate a command that writes files (below ``@app.command``).

    While the command runs: no writer may replace one of the files named by the parameters
    ``input_params`` (paths, lists of paths, or option strings that name an existing file),
    an existing output is refused unless the command's ``force`` parameter is true, and
    symbolic links are never written through (:func:`veil.io.output_policy`). DP commands also
    get a ledger session (:func:`veil.ledger.session`) configured by their ``ledger`` and
    ``spend_again`` parameters: what they :func:`veil.ledger.charge` is committed when they
    return and cancelled when they fail before writing.
    """
    def deco(fn: Callable) -> Callable:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            from ..io.write import output_policy
            from ..ledger import session

            arg = sig.bind_partial(*args, **kwargs).arguments
            paths: list[Any] = []
            for name in input_params:
                v = arg.get(name)
                paths.extend(v if isinstance(v, list | tuple) else [v])
            # an option value "@FILE" (a list of names read from FILE) names an input too, in
            # any parameter: `-o cats.csv --force` replaced `--categories @cats.csv`
            paths.extend(v[1:] for v in _option_values(arg.values())
                         if isinstance(v, str) and v.startswith("@") and len(v) > 1)
            paths = [p for p in paths if isinstance(p, str | os.PathLike) and os.path.exists(p)]
            with output_policy(paths, force=bool(arg.get("force", False))):
                with session(ledger=arg.get("ledger"), spend_again=bool(arg.get("spend_again")),
                             command=_command_line()) as s:
                    result = fn(*args, **kwargs)
            for note in s.notes:
                status(note)
            return result

        return wrapper

    return deco


def output_path(path: Path) -> Path:
    """Resolve an output path (the parent folder must exist)."""
    from ..errors import ParameterError

    p = Path(path)
    if not p.parent.exists():
        raise ParameterError(f"--output: folder {str(p.parent)!r} does not exist")
    if p.is_dir():
        raise ParameterError(f"--output: {str(p)!r} is a folder; give a file name")
    return p


def output_format(fmt: Optional[str], path: Path) -> str:
    """The output format: ``--format`` if given, else from ``path``'s extension, else csv."""
    from ..errors import ParameterError
    from ..io import FORMATS, detect_format

    try:
        implied = detect_format(path)
    except ParameterError:
        implied = None
    if fmt is not None:
        try:
            chosen = detect_format(path, fmt, option="--format")
        except ParameterError as exc:
            raise ParameterError(f"--format: {exc}") from None
        if implied is not None and implied != chosen:
            raise ParameterError(
                f"--format {chosen} does not match the output name {str(path)!r} "
                f"(a {implied} extension); rename the output or drop --format")
        return chosen
    return implied if implied is not None else FORMATS[0]


def input_options(path: Path, input_format: Optional[str], delimiter: Optional[str]) -> dict:
    """``format``/``delimiter`` reader options from ``--input-format``/``--delimiter`` (checked;
    a format error names the option), for :mod:`veil.io`'s readers."""
    from ..errors import ParameterError
    from ..io import detect_format

    opts: dict[str, Any] = {}
    if input_format is not None:
        try:
            opts["format"] = detect_format(path, input_format, option="--input-format")
        except ParameterError as exc:
            raise ParameterError(f"--input-format: {exc}") from None
    if delimiter is not None:
        if len(delimiter) != 1:
            raise ParameterError(f"--delimiter must be a single character, got {delimiter!r}")
        opts["delimiter"] = delimiter
    return opts


def read_input(path: Path, *, columns: dict[str, str], input_format: Optional[str] = None,
               **options: Any):
    """Read INPUT with :func:`veil.io.read_table`; format errors name ``--input-format``."""
    from ..errors import ParameterError
    from ..io import detect_format, read_table

    try:
        fmt = detect_format(path, input_format, option="--input-format")
    except ParameterError as exc:
        opt = "--input-format" if input_format is not None else "INPUT"
        raise ParameterError(f"{opt}: {exc}") from None
    delimiter = options.get("delimiter")
    if delimiter is not None and len(delimiter) != 1:
        raise ParameterError(f"--delimiter must be a single character, got {delimiter!r}")
    return read_table(path, columns=columns, format=fmt, **options)


def number_list_option(text: str, option: str,
                       check: Callable[[float, str], float] | None = None) -> list[float]:
    """The comma-separated numbers of ``option``, each passed through ``check(value,
    option)``; a clear error naming the option for an empty list or a word."""
    from ..errors import ParameterError

    parts = [t.strip() for t in str(text).split(",")]
    try:
        values = [float(t) for t in parts]
    except ValueError:
        raise ParameterError(f"{option}: expected comma-separated numbers, got {text!r}") from None
    return [check(v, option) for v in values] if check is not None else values


def check_epsilon_option(value: float, name: str = "--epsilon") -> float:
    """Validate an epsilon given on the command line (finite and > 0)."""
    from ..validation import check_epsilon

    return check_epsilon(value, name)


def write_output(release: Any, path: Path, fmt: Optional[str], *, name: str = "value"):
    """Write a Release and its ``.meta.json`` sidecar atomically; return both paths."""
    from ..io import write_release

    path = output_path(path)
    return write_release(release, path, format=output_format(fmt, path), name=name)


def echo_release(release: Any, data: Path, meta: Path) -> None:
    """One-line summary of a written release (to stderr, so stdout stays clean)."""
    scale = release.noise_scale
    scale_txt = f", noise scale {scale:.6g}" if isinstance(scale, int | float) else ""
    done(release_summary(release, data, meta),
         f"wrote {data} and {meta.name} ({release.mechanism}, epsilon "
         f"{exact(release.epsilon)}{scale_txt})")


def release_summary(release: Any, data: Path, meta: Path, **extra: Any) -> dict:
    """The ``--json`` summary of a written release: the output files and the public metadata
    that the sidecar also holds (never a figure of the data)."""
    meta_json = release.metadata()
    return {"output": str(data), "sidecar": str(meta),
            **{k: meta_json.get(k) for k in ("mechanism", "budget", "budget_split",
                                             "noise_scale", "protects")},
            **extra}
