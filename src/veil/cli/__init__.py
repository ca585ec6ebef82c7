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

try:  # typer >= 0.26 vendors click; older releases depend on the click package
    from typer._click.exceptions import ClickException as _ClickException
except ImportError:  # pragma: no cover
    from click.exceptions import ClickException as _ClickException

from .. import __version__
from ..errors import VeilError

# (command name, module, help) -- a module is loaded only if it exists.
CAPABILITIES: list[tuple[str, str, str]] = [
    ("histogram", "veil.cli.histogram", "Differentially private histograms (publish, evaluate)."),
    ("visits", "veil.cli.visits", "Sanitize location-visit histograms (hide, resemble, avoid)."),
    ("location", "veil.cli.location", "Geo-indistinguishable location obfuscation and noise design."),
    ("trajectory", "veil.cli.trajectory", "Release trajectories under temporal correlations (PIM, LM)."),
    ("table", "veil.cli.table", "Diversity-constrained k-anonymization and constraint reasoning."),
    ("batch", "veil.cli.batch", "Per-user batch jobs at scale (local or Dask)."),
]

app = typer.Typer(name="veil", no_args_is_help=True, add_completion=False,
                  help="veil: privacy-preserving publishing of location data, histograms and tables.")
bench_app = typer.Typer(no_args_is_help=True,
                        help="Run a capability's experiment on real data against its baselines.")

_STATE = {"debug": False}


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


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``veil`` console script."""
    args = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in args
    try:
        app(args=args, prog_name="veil", standalone_mode=False)
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("veil: interrupted", err=True)
        raise SystemExit(130) from None
    except Exception as exc:  # noqa: BLE001 - the one place errors become exit codes
        if isinstance(exc, _ClickException):
            exc.show()
            raise SystemExit(exc.exit_code) from None
        if debug:
            raise
        if isinstance(exc, VeilError | ValueError | OSError):
            msg = " ".join(str(exc).split())
            typer.echo(f"veil: error: {msg}", err=True)
            raise SystemExit(2) from None
        typer.echo(f"veil: internal error: {type(exc).__name__}: {exc} (rerun with --debug)",
                   err=True)
        raise SystemExit(1) from None
