"""``veil batch``: per-user jobs at scale on the local engine or Dask."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from .common import SEED

app = typer.Typer(no_args_is_help=True, help="Per-user batch jobs (local processes or Dask).")

ENGINE = typer.Option("local", "--engine", help="local (process pool, default) or dask.")
WORKERS = typer.Option(1, "--workers", "-w", help="Worker processes (or Dask workers).")
RESUME = typer.Option(False, "--resume", help="Continue an interrupted run of the same job.")
SCHEDULER = typer.Option(None, "--scheduler",
                         help="Address of an existing Dask scheduler, e.g. tcp://host:8786.")
SPEND = typer.Option(False, "--spend-again",
                     help="Allow another release for users who already received one from this "
                          "input: it spends the per-user budget again.")
BUCKETS = typer.Option(None, "--buckets", help="Units of work (default: ~200k rows each).")
LEDGER = typer.Option(None, "--ledger", help="Privacy ledger file (default $VEIL_LEDGER or "
                                             "~/.local/share/veil/ledger.json).")
USER = typer.Option("user", "--user-column", help="Column holding the user identifier.")
OUT = typer.Option(..., "--output", "-o", help="Output folder (Parquet parts + manifest.json).")
QUIET = typer.Option(False, "--quiet", help="No progress bar.")


def _run(task: str, input: Path, output: Path, params: dict[str, Any], *, user_column: str,
         columns: dict[str, str], engine: str, workers: int, resume: bool,
         scheduler: Optional[str], spend_again: bool, buckets: Optional[int],
         ledger: Optional[Path], seed: Optional[int], quiet: bool) -> None:
    from ..engine import Job, run_job

    res = run_job(Job(input, output, task, params=params, user_column=user_column,
                      columns=columns, engine=engine, workers=workers, resume=resume,
                      scheduler=scheduler, spend_again=spend_again, buckets=buckets,
                      ledger=ledger, seed=seed, progress=not quiet))
    typer.echo(f"{res.users:,} users, {res.rows_in:,} rows in, {res.rows_out:,} rows out, "
               f"{res.buckets_run}/{res.buckets} buckets run, {res.seconds:.1f} s "
               f"({res.users_per_second:,.0f} users/s); epsilon per user "
               f"{res.epsilon_per_user:g}; output {res.output}")


@app.command("counts")
def counts(
    input: Path = typer.Argument(..., help="Check-ins: CSV, Parquet (file or folder) or JSON."),
    output: Path = OUT,
    categories: str = typer.Option(..., "--categories",
                                   help="Comma-separated public category list (never taken "
                                        "from the data)."),
    epsilon: float = typer.Option(..., "--epsilon", "-e", help="Per-user epsilon (> 0)."),
    category_column: str = typer.Option("category", "--category-column"),
    user_column: str = USER, engine: str = ENGINE, workers: int = WORKERS, resume: bool = RESUME,
    scheduler: Optional[str] = SCHEDULER, spend_again: bool = SPEND,
    buckets: Optional[int] = BUCKETS, ledger: Optional[Path] = LEDGER,
    seed: Optional[int] = SEED, quiet: bool = QUIET,
) -> None:
    """Each user's category counts with exact discrete Laplace noise (event-level eps-DP)."""
    cats = [c.strip() for c in categories.split(",") if c.strip()]
    _run("count-noise", input, output, {"categories": cats, "epsilon": epsilon},
         user_column=user_column, columns={"category": category_column}, engine=engine,
         workers=workers, resume=resume, scheduler=scheduler, spend_again=spend_again,
         buckets=buckets, ledger=ledger, seed=seed, quiet=quiet)
