"""``veil batch``: per-user jobs at scale on the local engine or Dask."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from .common import LEDGER as _LEDGER
from .common import (SEED, SPEND_AGAIN, answer, done, exact, json_mode, options_named, quiet,
                     status, writes_files)

app = typer.Typer(no_args_is_help=True, help="Per-user batch jobs (local processes or Dask).")

ENGINE = typer.Option("local", "--engine", help="local (process pool, default) or dask.")
WORKERS = typer.Option(1, "--workers", "-w", help="Worker processes (or Dask workers).")
RESUME = typer.Option(False, "--resume", help="Continue an interrupted run of the same job.")
SCHEDULER = typer.Option(None, "--scheduler",
                         help="Address of an existing Dask scheduler, e.g. tls://host:8786 "
                              "(TLS settings from the Dask configuration; a plain tcp:// "
                              "address is refused for DP tasks unless --insecure-scheduler).")
INSECURE = typer.Option(False, "--insecure-scheduler",
                        help="Accept a plain tcp:// --scheduler for a DP task: the per-bucket "
                             "noise values then cross the network unencrypted.")
WORK = typer.Option(None, "--work-dir",
                    help="Private work folder (staging, unpublished parts, the noise key; "
                         "mode 0700). Default: .NAME.veil-work beside the output NAME.")
SPEND = SPEND_AGAIN
BUCKETS = typer.Option(None, "--buckets", help="Units of work (default: one per about 10,000 "
                                                "users published, at least 16).")
LEDGER = _LEDGER
USER = typer.Option("user", "--user-column", help="Column holding the user identifier.")
OUT = typer.Option(..., "--output", "-o", help="Output folder (Parquet parts + _manifest.json).")

#: The engine's and the tasks' names of the options (their refusals name the option).
ENGINE_OPTIONS = {"workers": "--workers", "engine": "--engine", "buckets": "--buckets",
                  "seed": "--seed"}


def _job(task: str, input: Path, output: Path, params: dict[str, Any], *, user_column: str,
         columns: dict[str, str], engine: str, workers: int, resume: bool,
         scheduler: Optional[str], spend_again: bool, buckets: Optional[int],
         ledger: Optional[Path], seed: Optional[int],
         work_dir: Optional[Path] = None, insecure_scheduler: bool = False,
         output_option: str = "--output"):
    from ..engine import Job

    return Job(input, output, task, params=params, user_column=user_column,
               columns=columns, engine=engine, workers=workers, resume=resume,
               scheduler=scheduler, spend_again=spend_again, buckets=buckets,
               ledger=ledger, seed=seed, progress=not quiet(), work_dir=work_dir,
               insecure_scheduler=insecure_scheduler, output_option=output_option)


def _run(task: str, input: Path, output: Path, params: dict[str, Any], *,
         finish: bool = True, **kw: Any) -> tuple[dict, str]:
    """Run one job; its summary ends the command (``done``) unless ``finish`` is false."""
    from ..engine import run_job

    res = run_job(_job(task, input, output, params, **kw))
    # no input row count: the summary is a log of a private input (users and rows out are
    # what the published parts show anyway; users counts the published users only)
    summary = {"task": task, "output": str(res.output), "users": int(res.users),
               "rows_out": int(res.rows_out), "buckets": int(res.buckets),
               "epsilon_per_user": float(res.epsilon_per_user),
               "already_complete": res.rows_in is None}
    if res.rows_in is None:
        text = (f"already complete and verified: {res.users:,} users, {res.rows_out:,} "
                f"rows out in {res.parts} part(s) ({res.buckets} buckets); epsilon per user "
                f"{exact(res.epsilon_per_user)}; output {res.output}")
    else:
        summary.update(buckets_run=int(res.buckets_run), seconds=round(float(res.seconds), 3))
        text = (f"{res.users:,} users, {res.rows_out:,} rows out, "
                f"{res.buckets_run}/{res.buckets} buckets run, {res.seconds:.1f} s "
                f"({res.users_per_second:,.0f} users/s); epsilon per user "
                f"{exact(res.epsilon_per_user)}; output {res.output}")
    if finish:
        done(summary, text)
    return summary, text


@app.command("counts")
@writes_files("input")
@options_named({**ENGINE_OPTIONS, "epsilon": "--epsilon", "max_records": "--max-records",
                "categories": "--categories"})
def counts(
    input: Path = typer.Argument(..., help="Check-ins: CSV, Parquet (file or folder) or JSON."),
    output: Path = OUT,
    categories: str = typer.Option(..., "--categories",
                                   help="Comma-separated public category list (never taken "
                                        "from the data)."),
    epsilon: float = typer.Option(..., "--epsilon", "-e", help="Per-user epsilon (> 0)."),
    category_column: str = typer.Option("category", "--category-column"),
    max_records: Optional[int] = typer.Option(
        None, "--max-records", help="Public bound m on check-ins per user: at most m are kept "
        "per user (sampled uniformly) and the noise is scaled to m/epsilon, so epsilon covers "
        "everything a user contributed (user level) instead of one check-in (event level)."),
    user_column: str = USER, engine: str = ENGINE, workers: int = WORKERS, resume: bool = RESUME,
    scheduler: Optional[str] = SCHEDULER, spend_again: bool = SPEND,
    buckets: Optional[int] = BUCKETS, ledger: Optional[Path] = LEDGER,
    seed: Optional[int] = SEED, work_dir: Optional[Path] = WORK,
    insecure_scheduler: bool = INSECURE,
) -> None:
    """Each user's category counts with exact discrete Laplace noise (event-level eps-DP, or
    user-level with --max-records)."""
    cats = [c.strip() for c in categories.split(",") if c.strip()]
    params = {"categories": cats, "epsilon": epsilon}
    if max_records is not None:
        from ..validation import check_int

        params["max_records"] = check_int(max_records, "--max-records", minimum=1)
    _run("count-noise", input, output, params,
         user_column=user_column, columns={"category": category_column}, engine=engine,
         workers=workers, resume=resume, scheduler=scheduler, spend_again=spend_again,
         buckets=buckets, ledger=ledger, seed=seed, work_dir=work_dir,
         insecure_scheduler=insecure_scheduler)


def _names(value: str, option: str) -> list[str]:
    """A comma-separated list, or @FILE with one name per line."""
    from ..errors import ParameterError

    if value.startswith("@"):
        p = Path(value[1:])
        if not p.is_file():
            raise ParameterError(f"{option}: file {str(p)!r} not found")
        names = [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
    else:
        names = [s.strip() for s in value.split(",") if s.strip()]
    if not names:
        raise ParameterError(f"{option} is empty")
    return names


@app.command("visits")
@options_named({**ENGINE_OPTIONS, "categories": "--categories", "sensitive": "--sensitive",
                "distance": "--distance", "resample_size": "--resample-size",
                "resample size": "--resample-size", "resample_mix": "--resample-mix",
                "resample mix": "--resample-mix"})
def visits(
    input: Path = typer.Argument(..., help="Check-ins (user, category[, time])."),
    output: Path = OUT,
    categories: str = typer.Option(..., "--categories",
                                   help="The public category domain: a comma list or @FILE "
                                        "(one per line). Never taken from the data."),
    sensitive: str = typer.Option(..., "--sensitive",
                                  help="Categories to hide (comma list or @FILE); with "
                                       "--taxonomy, internal nodes hide every domain category "
                                       "below them."),
    taxonomy: Optional[str] = typer.Option(None, "--taxonomy",
                                           help="'foursquare' or a JSON/CSV category tree."),
    allow_unmatched: bool = typer.Option(False, "--allow-unmatched",
                                         help="Ignore --sensitive names that match no category "
                                              "of the domain (default: an error)."),
    report: Optional[Path] = typer.Option(None, "--report",
                                          help="PRIVATE per-user report (size, sensitive "
                                               "visits, quality loss, status; the users left "
                                               "out) as a second job into this folder. Never "
                                               "publish it; not written unless asked for."),
    distance: str = typer.Option("js", "--distance", help="Quality distance: js, l1, l2, "
                                                          "chi2, hellinger."),
    forbid_unvisited: bool = typer.Option(False, "--forbid-unvisited",
                                          help="Never add visits to unvisited places."),
    resample_size: Optional[int] = typer.Option(
        None, "--resample-size", help="Mitigation: resample every user's sanitized histogram "
                                      "to this public size (randomized)."),
    resample_mix: Optional[float] = typer.Option(
        None, "--resample-mix", help="Mitigation (with --resample-size): share of the mass "
                                     "moved to the uniform profile before resampling."),
    category_column: str = typer.Option("category", "--category-column"),
    user_column: str = USER, engine: str = ENGINE, workers: int = WORKERS, resume: bool = RESUME,
    scheduler: Optional[str] = SCHEDULER, buckets: Optional[int] = BUCKETS,
    seed: Optional[int] = SEED, work_dir: Optional[Path] = WORK,
) -> None:
    """Sensitive location hiding for every user (exact SLH; spends no budget).

    The output folder holds the published parts (user, category, sanitized: every category of
    the domain for every published user) and the engine's manifest; users whose visits are all
    sensitive are left out and listed only in the private --report.
    """
    from ..errors import ParameterError

    cats = _names(categories, "--categories")
    sens = _names(sensitive, "--sensitive")
    if resample_size is None and resample_mix is not None:
        raise ParameterError("--resample-mix needs --resample-size")  # as `veil visits hide`
    if resample_size is not None:
        from ..engine.tasks import check_resample_size

        check_resample_size(resample_size, "--resample-size")
    if taxonomy:
        from ..visits.taxonomy import Taxonomy, foursquare_taxonomy

        tree = foursquare_taxonomy() if taxonomy == "foursquare" else Taxonomy.load(taxonomy)
        known = [s for s in sens if s in tree]
        if len(known) < len(sens) and not allow_unmatched:
            tree.resolve(next(s for s in sens if s not in tree))  # did-you-mean error
        picked = []
        for s in known:
            hit = [c for c, m in zip(cats, tree.sensitive_mask(cats, [s])) if m]
            if not hit and not allow_unmatched:
                raise ParameterError(f"--sensitive {s!r} selects no category of the "
                                     "--categories domain (or pass --allow-unmatched)")
            picked += hit
        sens = sorted(set(picked))
        if not sens:
            raise ParameterError("--sensitive selects no category of the --categories domain")
    elif not allow_unmatched:
        unknown = [s for s in sens if s not in set(cats)]
        if unknown:
            import difflib

            hint = difflib.get_close_matches(unknown[0], cats, n=1)
            raise ParameterError(f"--sensitive {unknown[0]!r} is not in the --categories domain"
                                 f"{f'; did you mean {hint[0]!r}?' if hint else ''} (or pass "
                                 "--allow-unmatched to ignore it)")
    if seed is not None and resample_size is None:
        raise ParameterError("--seed only fixes the randomness of --resample-size")
    params = {"categories": cats, "sensitive": sens, "distance": distance,
              "forbid_unvisited": forbid_unvisited}
    if allow_unmatched:
        params["allow_unmatched"] = True
    if resample_size is not None:
        params.update(resample_size=resample_size, resample_mix=resample_mix or 0.0)
    common = dict(user_column=user_column, columns={"category": category_column},
                  engine=engine, workers=workers, resume=resume, scheduler=scheduler,
                  spend_again=False, buckets=buckets, ledger=None)
    if report is None:
        _run("visits-hide", input, output, params, seed=seed, work_dir=work_dir, **common)
        return
    # two jobs (the report has its own private work folder): with --json, one summary of both.
    # The report's folder is checked before the first job runs: nothing is published when
    # --report cannot be written
    det = {k: v for k, v in params.items() if k not in ("resample_size", "resample_mix")}
    rep = dict(common, seed=None, work_dir=Path(f"{work_dir}-report") if work_dir else None,
               output_option="--report")
    _check_report(report, output, work_dir, _job("visits-hide-report", input, report, det,
                                                 **rep))
    first, text = _run("visits-hide", input, output, params, seed=seed, work_dir=work_dir,
                       finish=False, **common)
    if not json_mode():
        status(text)
    second, text2 = _run("visits-hide-report", input, report, det, finish=False, **rep)
    done({**first, "report": second}, text2)


def _check_report(report: Path, output: Path, work_dir: Optional[Path], job) -> None:
    """Refuse a --report folder that the report job would refuse, before anything runs."""
    import os

    from ..engine.runner import preflight, work_dir_for
    from ..errors import ParameterError

    r, o = os.path.realpath(report), os.path.realpath(output)
    if r == o:
        raise ParameterError("--report must be another folder than --output")
    for a, b, what in ((r, o, "inside --output"), (o, r, "around --output (it holds it)"),
                       (r, str(work_dir_for(o, work_dir)),
                        "inside the --output job's work folder")):
        try:
            inside = os.path.commonpath([a, b]) == b
        except ValueError:
            inside = False
        if inside:
            raise ParameterError(f"--report {str(report)!r} is {what}: choose a folder apart "
                                 "from --output")
    preflight(job)


@app.command("trajectories")
@writes_files("input", "model")
@options_named({**ENGINE_OPTIONS, "epsilon": "--epsilon", "delta": "--delta",
                "mechanism": "--mechanism", "on_invalid": "--on-invalid"})
def trajectories(
    input: Path = typer.Argument(..., help="Points: user, time, lat, lon (CSV/Parquet/JSON)."),
    output: Path = OUT,
    model: Path = typer.Option(..., "--model", help="Mobility model from `veil trajectory "
                                                    "model` (public: never learned from the "
                                                    "trajectories being released)."),
    epsilon: float = typer.Option(..., "--epsilon", "-e", help="Epsilon per timestamp (> 0)."),
    delta: float = typer.Option(..., "--delta", "-d", help="delta-location set mass, in (0, 1)."),
    mechanism: str = typer.Option("pim", "--mechanism", "-m", help="pim or lm."),
    on_invalid: str = typer.Option("error", "--on-invalid",
                                   help="error (default) or drop points outside the grid."),
    time_column: str = typer.Option("t", "--time-column"),
    lat_column: str = typer.Option("lat", "--lat-column"),
    lon_column: str = typer.Option("lon", "--lon-column"),
    user_column: str = USER, engine: str = ENGINE, workers: int = WORKERS, resume: bool = RESUME,
    scheduler: Optional[str] = SCHEDULER, spend_again: bool = SPEND,
    buckets: Optional[int] = BUCKETS, ledger: Optional[Path] = LEDGER,
    seed: Optional[int] = SEED, work_dir: Optional[Path] = WORK,
    insecure_scheduler: bool = INSECURE,
) -> None:
    """Release every user's trajectory with PIM or LM (epsilon per timestamp).

    Each user's points are released in the order of their exact times; the parts hold user,
    t, lat, lon, set_size, with t written back exactly as read (an integer column stays
    integers, a timestamp column the same timestamps, a CSV's timestamp text its text).
    """
    _run("trajectories", input, output,
         {"model": str(model), "epsilon": epsilon, "delta": delta, "mechanism": mechanism,
          "on_invalid": on_invalid},
         user_column=user_column,
         columns={"t": time_column, "lat": lat_column, "lon": lon_column}, engine=engine,
         workers=workers, resume=resume, scheduler=scheduler, spend_again=spend_again,
         buckets=buckets, ledger=ledger, seed=seed, work_dir=work_dir,
         insecure_scheduler=insecure_scheduler)


@app.command("status")
def status_cmd(
    output: Path = typer.Argument(..., help="The job's output folder."),
    work_dir: Optional[Path] = WORK,
) -> None:
    """Progress of a job, what is missing, and a SHA-256 check of every part.

    Exit status: 0 complete and verified; 3 running or interrupted (resumable with --resume);
    4 a completed output that is damaged; 5 no veil job there. Changes nothing.
    """
    from ..engine.status import format_status, job_status

    st = job_status(output, work_dir)
    answer(st, "\n".join(format_status(st)))
    code = {"complete": 0, "running": 3, "interrupted": 3, "damaged": 4}.get(st["state"], 5)
    raise typer.Exit(code)


@app.command("discard")
def discard(
    output: Path = typer.Argument(..., help="The output folder of the interrupted job."),
    work_dir: Optional[Path] = WORK,
    yes: bool = typer.Option(False, "--yes", help="Really delete the interrupted run."),
) -> None:
    """Delete an interrupted run's private work folder (staging, unpublished parts, noise key).

    Nothing of it was published; the next run of the command starts a new job (new noise).
    The output folder is never touched.
    """
    from ..engine.runner import discard_job, work_dir_for
    from ..errors import ParameterError

    if not yes:
        raise ParameterError(f"discard deletes the interrupted run in "
                             f"{work_dir_for(output, work_dir)} (its finished buckets are lost): "
                             "pass --yes to confirm")
    res = discard_job(output, work_dir)
    done({"discarded": str(res["work"]), "finished_buckets": int(res["finished_buckets"])},
         f"discarded the interrupted run in {res['work']} ({res['finished_buckets']} "
         "finished bucket(s) deleted, nothing had been published)")
