"""The ``veil`` command line: thin wrappers over the public API.

Capabilities register themselves by module: for each entry of
:data:`CAPABILITIES` whose module exists, its Typer ``app`` becomes a
sub-command group, and its optional ``bench`` function becomes
``veil bench NAME``. Bad input exits with status 2 and a one-line message
(a traceback only with ``--debug``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Optional

import typer

from .. import __version__
from ..errors import VeilError

# (command name, module, help) -- a module is loaded only if it exists.
CAPABILITIES: list[tuple[str, str, str]] = [
    ("histogram", "veil.cli.histogram", "Differentially private histograms (publish, evaluate)."),
    ("map", "veil.cli.map", "DP density maps of locations: points to a published map (publish, query)."),
    ("visits", "veil.cli.visits", "Sanitize location-visit histograms (hide, resemble, avoid)."),
    ("location", "veil.cli.location", "Geo-indistinguishable location obfuscation and noise design."),
    ("trajectory", "veil.cli.trajectory", "Release trajectories under temporal correlations (PIM, LM)."),
    ("table", "veil.cli.table", "Diversity-constrained k-anonymization and constraint reasoning."),
    ("batch", "veil.cli.batch", "Per-user batch jobs at scale (local or Dask)."),
    ("data", "veil.cli.data", "Synthetic data sets to try veil on."),
    ("noise", "veil.cli.noise", "Generic noise on a column of a file (geometric counts)."),
    ("budget", "veil.cli.budget", "The privacy ledger: declared totals and what was spent."),
]

#: ``-h`` and ``--help`` on every command (sub-contexts inherit the names); see docs/cli.md.
HELP_OPTIONS = ["-h", "--help"]

app = typer.Typer(name="veil", no_args_is_help=True, add_completion=False,
                  context_settings={"help_option_names": HELP_OPTIONS},
                  help="veil: privacy-preserving publishing of location data, histograms and tables.")
bench_app = typer.Typer(no_args_is_help=True,
                        help="Run a capability's experiment on real data against its baselines.")

_STATE: dict = {"debug": False, "argv": None, "quiet": False, "json": False,
                "json_printed": False}


def _version_cb(value: bool) -> None:
    if value:
        typer.echo(f"veil {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Optional[bool] = typer.Option(None, "--version", callback=_version_cb,
                                           is_eager=True, help="Show the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors."),
) -> None:
    _STATE["debug"] = debug


def _register() -> None:
    for name, module, help_text in CAPABILITIES:
        if importlib.util.find_spec(module) is None:
            continue
        mod = importlib.import_module(module)
        sub = getattr(mod, "app", None)
        if sub is not None:
            app.add_typer(sub, name=name, help=help_text)
        bench = getattr(mod, "bench", None)
        if bench is not None:
            bench_app.command(name=getattr(mod, "BENCH_NAME", name))(bench)
    if bench_app.registered_commands:
        app.add_typer(bench_app, name="bench")


from . import demo as _demo  # noqa: E402  (registers `veil demo` and `veil report`)

_register()


_COMMAND: list = []


def _command():
    """The click command of ``app``, built once per process (typer rebuilds it on every call,
    which costs about 0.1 s: in-process callers such as the tests and the file-level audits
    run thousands of commands)."""
    if not _COMMAND:
        _COMMAND.append(command())   # with the conventions of docs/cli.md applied
    return _COMMAND[0]


def _click_exceptions():
    """Click's exception module (typer >= 0.2x vendors click as ``typer._click``)."""
    try:
        from typer._click import exceptions as ex
    except ImportError:  # pragma: no cover - older typer with click installed
        import click.exceptions as ex
    return ex


#: Old spellings kept as hidden, deprecated aliases (docs/cli.md): command -> {old: new}.
#: Each alias parses into the same parameter as the new name; using it prints a warning.
DEPRECATED_OPTIONS: dict[tuple[str, ...], dict[str, str]] = {
    ("map", "publish"): {"--lat": "--lat-column", "--lon": "--lon-column",
                         "--user": "--user-column", "--time": "--time-column"},
    ("location", "obfuscate"): {"--lat": "--lat-column", "--lon": "--lon-column"},
    ("location", "noise"): {"--D": "--radius"},
    ("visits", "hide"): {"--r": "--redistribute"},
    ("bench", "histograms"): {"--n": "--n-bins"},
}


def _add_alias(leaf, old: str, new: str) -> None:
    import copy

    main_opt = next(p for p in leaf.params if new in getattr(p, "opts", ()))
    alias = copy.copy(main_opt)
    alias.opts, alias.secondary_opts = [old], []
    alias.hidden = True
    alias.required = False
    leaf.params.append(alias)   # same name (dest): parses into the same parameter


def _warn_deprecated(args: list[str]) -> None:
    """One stderr line per deprecated option spelling used on the command line."""
    words = [a for a in args if not a.startswith("-")]
    for path, names in DEPRECATED_OPTIONS.items():
        if list(path) == words[:len(path)]:
            for a in args:
                old = a.split("=", 1)[0]
                if old in names:
                    typer.echo(f"veil: warning: {old} is deprecated, use {names[old]}", err=True)


def walk_commands(cmd=None, path: tuple[str, ...] = ()):
    """Every leaf command of the CLI as ``(path, command)`` (Click/Typer introspection)."""
    if cmd is None:
        cmd = command()
    subs = getattr(cmd, "commands", None)
    if subs:
        for name in sorted(subs):
            yield from walk_commands(subs[name], (*path, name))
    else:
        yield path, cmd


#: the parameter names of the output flags every command gets (docs/cli.md, "Output")
OUTPUT_FLAGS = ("quiet", "json_summary")


def _output_flag_params() -> list:
    """``--quiet/-q`` and ``--json`` as Click parameters (built by Typer from the options of
    :mod:`veil.cli.common`, so they render like every other option)."""
    from .common import JSON, QUIET

    flags = typer.Typer(add_completion=False)

    @flags.command()
    def _flags(quiet: bool = QUIET, json_summary: bool = JSON) -> None:  # pragma: no cover
        pass

    return list(typer.main.get_command(flags).params)


def _add_output_flags(leaf, params: list) -> None:
    """Give ``leaf`` the output flags; its callback sees neither (they set :data:`_STATE`)."""
    import copy
    import functools

    have = {p.name for p in leaf.params}
    clash = have & set(OUTPUT_FLAGS)
    if clash:  # a command must not define them itself: one meaning everywhere
        raise RuntimeError(f"{leaf.name}: defines {sorted(clash)}; use veil.cli.common.quiet()")
    leaf.params.extend(copy.copy(p) for p in params)
    inner = leaf.callback

    @functools.wraps(inner)
    def callback(*args, **kwargs):
        _STATE["quiet"] = bool(kwargs.pop("quiet", False))
        _STATE["json"] = bool(kwargs.pop("json_summary", False))
        _STATE["json_printed"] = False
        return inner(*args, **kwargs)

    leaf.callback = callback


def command():
    """The Click command of the whole CLI, with the conventions of docs/cli.md applied.

    Typer shows a ``<bool>`` type for on/off flags; a flag takes no value, so it gets no
    metavar in the help. Every command gets ``--quiet/-q`` and ``--json``.
    """
    cmd = typer.main.get_command(app)
    flag_params = _output_flag_params()
    for _, leaf in walk_commands(cmd):
        _add_output_flags(leaf, flag_params)

    def fix(c) -> None:
        for p in c.params:
            if getattr(p, "is_flag", False) and getattr(p, "metavar", None) is None:
                p.metavar = ""
        if getattr(c, "add_help_option", False) and getattr(c, "_help_option", "x") is None:
            try:
                from typer._click.decorators import help_option
            except ImportError:  # pragma: no cover - a typer that uses click itself
                from click.decorators import help_option

            help_option(HELP_OPTIONS)(c)       # the help flag, made now to drop its metavar
            c._help_option = c.params.pop()
            c._help_option.metavar = ""
        for sub in (getattr(c, "commands", None) or {}).values():
            fix(sub)

    fix(cmd)
    leaves = dict(walk_commands(cmd))
    for path, names in DEPRECATED_OPTIONS.items():
        if path in leaves:
            for old, new in names.items():
                _add_alias(leaves[path], old, new)
    return cmd


def _format_warning(message, category, filename, lineno, line=None) -> str:
    """A warning printed by ``veil``: one line naming its kind, without veil's source line."""
    kind = "privacy warning" if category.__name__ == "PrivacyWarning" else "warning"
    return f"veil: {kind}: {_one_line(message)}\n"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, ``docker stop``, systemd, a CI cancel) during a command: handled
    like Ctrl-C, so the ledger's reservation is cancelled and temporary files are removed
    (it killed the process as is: a reservation left pending, temporary files left behind)."""


def _terminate_as_interrupt():
    """Raise :class:`Terminated` on SIGTERM while ``main`` runs; returns the restorer.

    Only from the main thread and only where SIGTERM has its default action (an embedding
    program's own handler is left alone)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return lambda: None
    except (AttributeError, ValueError):  # pragma: no cover - no SIGTERM on this platform
        return lambda: None

    def handler(signum, frame):
        _STATE["terminated"] = True  # click turns the exception into Abort: main checks this
        raise Terminated()

    signal.signal(signal.SIGTERM, handler)
    return lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``veil`` console script.

    Exit codes: 0 success; 2 bad input (a usage error, a ``VeilError`` such as
    ``ParameterError``/``DataError``, a ``ValueError`` or an ``OSError``), reported as
    ONE line ``veil: error: ...`` on stderr (the full traceback only with ``--debug``);
    1 an internal error (a bug: rerun with ``--debug``); 130 interrupted (Ctrl-C); 143
    terminated (SIGTERM, handled like Ctrl-C: the ledger's reservation is cancelled and no
    temporary file is left).
    """
    args = sys.argv[1:] if argv is None else list(argv)
    _STATE.update(argv=args, quiet=False, json=False, json_printed=False, terminated=False)
    debug = "--debug" in args
    cx = _click_exceptions()
    import warnings

    old_format = warnings.formatwarning
    if not debug:  # `veil: warning: ...` (docs/cli.md), not Python's "file:line: Category:"
        warnings.formatwarning = _format_warning
    restore = _terminate_as_interrupt()
    try:
        _warn_deprecated(args)
        rv = _command().main(args=args, prog_name="veil", standalone_mode=False)
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except (typer.Abort, KeyboardInterrupt):
        if _STATE.get("terminated"):
            typer.echo("veil: terminated", err=True)
            raise SystemExit(143) from None
        typer.echo("veil: interrupted", err=True)
        raise SystemExit(130) from None
    except cx.NoArgsIsHelpError as exc:  # `veil noise` alone: show its help
        typer.echo(exc.format_message())
        raise SystemExit(0) from None
    except cx.UsageError as exc:
        hint = ""
        if exc.ctx is not None:
            hint = f" (see '{exc.ctx.command_path} --help')"
        typer.echo(f"veil: error: {_one_line(exc.format_message())}{hint}", err=True)
        raise SystemExit(2) from None
    except cx.ClickException as exc:
        typer.echo(f"veil: error: {_one_line(exc.format_message())}", err=True)
        raise SystemExit(exc.exit_code or 2) from None
    except Exception as exc:  # noqa: BLE001 - the one place errors become exit codes
        if debug:
            raise
        if isinstance(exc, VeilError | ValueError | OSError):
            typer.echo(f"veil: error: {_one_line(exc)}", err=True)
            raise SystemExit(2) from None
        from .._jit import interruption_of

        stop = interruption_of(exc)  # e.g. a compiled kernel's SystemError around a Ctrl-C
        if stop is not None:
            name, code = ("terminated", 143) if _STATE.get("terminated") else ("interrupted", 130)
            typer.echo(f"veil: {name}", err=True)
            raise SystemExit(code) from None
        if type(exc).__name__ == "RuntimeError" and str(exc).startswith("Query interrupted"):
            # DuckDB's answer to Ctrl-C inside a query (the ledger and the outputs were
            # cleaned up on the way out, as for any interruption)
            typer.echo("veil: interrupted", err=True)
            raise SystemExit(130) from None
        text = _one_line(exc)
        if type(exc).__module__ in ("duckdb", "_duckdb"):  # its messages quote rows of the data
            from ..io.read import _duck_detail

            text = _duck_detail(str(exc))
        typer.echo(f"veil: internal error: {type(exc).__name__}: {text} "
                   f"(rerun with --debug)", err=True)
        raise SystemExit(1) from None
    finally:
        warnings.formatwarning = old_format
        restore()
    # standalone_mode=False returns a command's return value, or the exit code of a
    # `typer.Exit` raised inside a callback (e.g. --version, --help). Typer turns a
    # KeyboardInterrupt inside a command into Exit(130), returned here without a word.
    if isinstance(rv, int) and rv:
        if rv == 130 and _STATE.get("terminated"):
            typer.echo("veil: terminated", err=True)
            raise SystemExit(143)
        if rv == 130:
            typer.echo("veil: interrupted", err=True)
        raise SystemExit(rv)
