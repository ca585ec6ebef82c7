"""``veil histogram publish|evaluate`` and ``veil bench histograms``."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Optional

import numpy as np
import typer

from ..errors import DataError, ParameterError, PrivacyWarning
from ..validation import check_int
from .common import (DELIMITER, EPSILON, FORCE, INPUT_FORMAT, LEDGER, OUTPUT_FORMAT, SEED,
                     SPEND_AGAIN, answer, exact, output_format,
                     done, input_options, json_mode, options_named, release_summary, say,
                     status, writes_files)

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Differentially private histograms (publish, evaluate).")
BENCH_NAME = "histograms"

_FORMATS = (".csv", ".parquet", ".json")

#: Which methods take each mechanism option of ``publish`` (a test checks this against the
#: mechanisms' signatures). With ``--method auto``, an option the picked method does not
#: take is left out and the sidecar says so; with an explicit method it is an error.
OPTION_METHODS: dict[str, tuple[str, tuple[str, ...]]] = {
    "k": ("--k", ("structurefirst", "optimized-structurefirst", "sort-and-group")),
    "count_bound": ("--count-bound", ("structurefirst", "optimized-structurefirst")),
    "branching": ("--branching", ("boost", "structurefirst")),
    "buckets": ("--buckets", ("coarse",)),
}


def mechanism_options(method: str, given: dict) -> dict:
    """The options to pass to ``method`` (all of them with ``auto``, which sets aside the
    ones its pick does not take and says so in the release's notes).

    Raises ParameterError for an option an explicitly chosen method does not take.
    """
    if method == "auto":  # the pick may follow a noisy total: publish() decides
        return dict(given)
    for key, value in given.items():
        option, methods = OPTION_METHODS[key]
        if method not in methods:
            raise ParameterError(f"{option} does not apply to --method {method} (it applies "
                                 f"to {', '.join(methods)})")
    return dict(given)


# ----------------------------------------------------------------------------- input

def column_range(path: Path, column: str, **options) -> np.ndarray:
    """``[min, max]`` of a numeric column (empty if it has no rows), from one streamed pass:
    the range ``--bins-from-data`` takes, with the column's values checked as when read whole
    (a missing or non-numeric value is an error naming its row).

    ``options``: ``format`` and ``delimiter`` of :func:`veil.io.iter_column`."""
    from ..io import iter_column

    lo = hi = None
    for batch in iter_column(path, column, "float", **options):
        if batch.size:
            lo = batch.min() if lo is None else min(lo, batch.min())
            hi = batch.max() if hi is None else max(hi, batch.max())
    return np.array([] if lo is None else [lo, hi], dtype=np.float64)


#: most bins one histogram may have: the output has one row per bin (a typo such as
#: ``0:100:100000000`` would otherwise run for minutes and write gigabytes)
MAX_BINS = 1_000_000


def _check_bin_count(count: int, spec: str) -> None:
    if count > MAX_BINS:
        raise ParameterError(
            f"--bins {spec!r} asks for {count:,} bins: the output would have {count:,} rows "
            f"(about {count * 30 / 1e6:,.0f} MB as CSV); at most {MAX_BINS:,} bins per "
            "histogram: use coarser bins")


def parse_bins(spec: Optional[str], *, values: Optional[np.ndarray],
               from_data: bool) -> np.ndarray:
    """Bin edges from ``lo:hi:count``, an explicit ``e0,e1,...`` list, or (opt-in) the data."""
    if spec is None or not spec.strip():
        raise ParameterError("--bins is required: 'lo:hi:count' (equal width) or 'e0,e1,...,em'")
    s = spec.strip()
    if s.isdigit() and not from_data:
        raise ParameterError(
            f"--bins {spec!r} gives a number of bins but no range: use 'lo:hi:{s}' with a "
            "public range, or --bins-from-data (not private)")
    if from_data:
        try:
            count = int(s)
        except ValueError:
            raise ParameterError(f"--bins with --bins-from-data must be a number of bins, "
                                 f"got {spec!r}") from None
        if count < 1:
            raise ParameterError(f"--bins must be >= 1, got {count}")
        _check_bin_count(count, spec)
        finite = values[np.isfinite(values)] if values is not None else np.array([])
        if finite.size == 0:
            raise DataError("no numeric values to derive bins from")
        msg = ("--bins-from-data: the bin range is taken from the private data's minimum and "
               "maximum; this is NOT differentially private and can reveal extreme records")
        warnings.warn(msg, PrivacyWarning, stacklevel=2)
        lo, hi = float(finite.min()), float(finite.max())
        if hi == lo:
            hi = lo + 1.0
        return np.linspace(lo, hi, count + 1)
    try:
        if ":" in s:
            parts = s.split(":")
            if len(parts) != 3:
                raise ValueError
            lo, hi, count = float(parts[0]), float(parts[1]), int(parts[2])
            if not (np.isfinite(lo) and np.isfinite(hi)) or hi <= lo or count < 1:
                raise ParameterError(f"--bins {spec!r}: need lo < hi and count >= 1")
            _check_bin_count(count, spec)
            return np.linspace(lo, hi, count + 1)
        edges = np.array([float(t) for t in s.split(",")])
    except ParameterError:  # a ValueError too: keep its own message
        raise
    except ValueError:
        raise ParameterError(f"--bins {spec!r} is not 'lo:hi:count' or 'e0,e1,...'") from None
    if edges.size < 2 or not np.isfinite(edges).all() or (np.diff(edges) <= 0).any():
        raise ParameterError(f"--bins {spec!r}: need at least two finite, increasing edges")
    return edges


# ----------------------------------------------------------------------------- commands

#: The library's names of the options of ``publish`` (its refusals name the option).
PUBLISH_OPTIONS = {"k": "--k", "count_bound": "--count-bound", "records_bound": "--records-bound",
                   "branching": "--branching", "buckets": "--buckets", "max_records": "--max-records",
                   "seed": "--seed"}


@app.command("publish")
@writes_files("input")
@options_named(PUBLISH_OPTIONS)
def publish_cmd(
    input: Path = typer.Argument(..., help="CSV or Parquet file (read with DuckDB)."),
    column: str = typer.Option(..., "--column", "-c", help="Column with one value per record "
                               "(or, with --counts, one count per bin in domain order)."),
    epsilon: float = EPSILON,
    output: Path = typer.Option(..., "--output", "-o", help="Noisy histogram (.csv, .parquet "
                                "or .json), written atomically with a JSON sidecar OUTPUT.meta.json."),
    fmt: Optional[str] = OUTPUT_FORMAT,
    bins: Optional[str] = typer.Option(None, "--bins", "-b", help="Public bins: 'lo:hi:count' "
                                       "(equal width) or 'e0,e1,...,em' edges; with "
                                       "--bins-from-data just a number of bins."),
    method: str = typer.Option("auto", "--method", "-m", help="identity, noisefirst, "
                               "structurefirst, optimized-structurefirst, boost, hb, "
                               "sort-and-group, ahp, dawa, hdmm, mwem, coarse, privtree or auto."),
    bins_from_data: bool = typer.Option(False, "--bins-from-data", help="Take the bin range "
                                        "from the data's min/max (NOT private; warns)."),
    counts: bool = typer.Option(False, "--counts", help="The column already holds one "
                                "non-negative integer count per bin (no --bins needed)."),
    k: Optional[int] = typer.Option(None, "--k", help="Buckets for (optimized) "
                                    "StructureFirst; groups for sort-and-group."),
    count_bound: Optional[float] = typer.Option(None, "--count-bound", help="Public upper "
                                                "bound F on any bin count (StructureFirst)."),
    records_bound: Optional[float] = typer.Option(None, "--records-bound", help="Public upper "
                                                  "bound on the number of records (auto: "
                                                  "without it auto spends a small share of "
                                                  "epsilon on a noisy total; dawa: its "
                                                  "selection penalty; coarse: its number "
                                                  "of buckets; optimized-"
                                                  "structurefirst: its budget split)."),
    branching: Optional[int] = typer.Option(None, "--branching", help="Tree arity (boost)."),
    buckets: Optional[int] = typer.Option(None, "--buckets", help="Public number of "
                                          "equal-width buckets (coarse; default: from the "
                                          "signal epsilon x records)."),
    user_column: Optional[str] = typer.Option(
        None, "--user-column", help="Column naming each record's person: with --max-records, "
        "the histogram protects people (every record of a user), not single records."),
    max_records: Optional[int] = typer.Option(
        None, "--max-records", help="Public bound m on records per user (with --user-column): "
        "at most m records per user are kept, sampled uniformly; epsilon is then per user."),
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
    seed: Optional[int] = SEED,
    force: bool = FORCE,
    spend_again: bool = SPEND_AGAIN,
    ledger: Optional[Path] = LEDGER,
) -> None:
    """Publish an epsilon-DP histogram of a column, with a JSON sidecar describing the release."""
    from ..histograms import publish
    from ..histograms.api import METHODS
    from ..random import make_rng
    from ..validation import check_choice, check_counts, check_epsilon

    from .common import check_column_option

    check_epsilon(epsilon, "--epsilon")
    check_choice(method, "--method", METHODS)
    check_column_option(column, "--column")
    from ..io import read_counts, sidecar_path, write_release

    if output.suffix.lower() not in _FORMATS and fmt is None:
        raise ParameterError(f"--output must end in {', '.join(_FORMATS)} (or give --format), "
                             f"got {output.name!r}")
    out_fmt = output_format(fmt, output)
    if not output.parent.exists():
        raise ParameterError(f"--output: folder {str(output.parent)!r} does not exist")
    if max_records is not None:  # said "max_records must be >= 1"
        check_int(max_records, "--max-records", minimum=1)
    if (user_column is None) != (max_records is None):
        raise ParameterError("--user-column and --max-records go together: a per-person "
                             "histogram needs the user of each record and a public bound on "
                             "records per user")
    # what was read: one of per-bin counts (--counts), records counted into the bins in
    # batches (binned), or nothing yet (per person: bounded and counted from the file after
    # the charge). No path reads a column whole (--bins-from-data: a streamed range first)
    hist = binned = None
    read_opts = input_options(input, input_format, delimiter)
    from .common import stages

    with stages() as show:
        show(f"{input.name}: reading column {column}")
        if counts:
            if bins is not None or bins_from_data:
                raise ParameterError("--counts reads one count per bin: do not pass --bins")
            if user_column is not None:
                raise ParameterError("--counts reads counts per bin: --user-column and "
                                     "--max-records apply to records")
            hist = read_counts(input, column=column, **read_opts)
            if hist.size == 0:
                raise DataError("the file has no rows: a histogram needs at least one bin",
                                path=str(input), column=column)
            hist = check_counts(hist, f"file {input.name}, column {column!r}")
            lower = np.arange(hist.size, dtype=np.float64)
            upper = lower + 1
        elif user_column is None:
            # public bins (or the opt-in range of the data, from a streamed pass first):
            # counted batch by batch (memory follows the bins, not the records; 2.3 GB for
            # 10^8 records read whole), before anything is charged, as before
            from ..histograms.api import histogram_of
            from ..io import iter_column

            edges = parse_bins(bins, from_data=bins_from_data, values=column_range(
                input, column, **read_opts) if bins_from_data else None)
            binned, _ = histogram_of(iter_column(input, column, "float", **read_opts), edges)
            lower, upper = edges[:-1], edges[1:]
        else:
            # per person: the columns are checked batch by batch now (the same errors, before
            # anything is charged); the bounding and the counting run in DuckDB from the file
            # once the key is drawn (10^7 records took 2.5 GB read whole)
            from ..io.read import check_columns_streaming

            if user_column == column:
                raise ParameterError(f"--user-column and --column must differ, both are "
                                     f"{column!r}")
            edges = None if bins_from_data else parse_bins(bins, values=None, from_data=False)
            check_columns_streaming(input, {column: "float", user_column: "str"}, **read_opts)
            if bins_from_data:
                edges = parse_bins(bins, values=column_range(input, column, **read_opts),
                                   from_data=True)
            lower, upper = edges[:-1], edges[1:]
        given = {key: v for key, v in (("k", k), ("count_bound", count_bound),
                                        ("branching", branching), ("buckets", buckets))
                 if v is not None}
        params = mechanism_options(method, given)
        from ..histograms.api import check_options

        # the method's options for this number of bins, before the ledger is opened
        check_options(method, lower.size, records_bound=records_bound, **params)
        from ..ledger import charge

        show(f"{input.name}: content identity for the privacy ledger (one pass)")
        charge(input, amount=epsilon, unit="user" if max_records is not None else "record",
               read=[column] + ([user_column] if user_column else []),
               outputs=[output, sidecar_path(output)], format=input_format, delimiter=delimiter)
        rng = make_rng(seed=seed) if seed is not None else make_rng()
        from ..histograms._hdmm_shipped import SHIPPED_NS

        show(f"{method} on the histogram" + (
            f": optimizing a strategy for {lower.size:,} bins (minutes)"
            if method == "hdmm" and lower.size > max(SHIPPED_NS) else ""))
        if counts:
            rel = publish(counts=hist, epsilon=epsilon, method=method, rng=rng,
                          records_bound=records_bound, **params)
            n_bins = int(hist.size)
        else:
            if binned is not None:  # counted batch by batch above
                from ..histograms.api import publish_binned_records

                rel = publish_binned_records(binned, edges, epsilon=epsilon, method=method,
                                             rng=rng, records_bound=records_bound, **params)
            else:  # per person: bounded and counted from the file
                from ..bounding import bounding_key
                from ..histograms.api import histogram_of, publish_bounded_records
                from ..io.read import iter_bounded_values

                key = bounding_key(rng)  # drawn first, as publish_records draws it
                kept, _ = histogram_of(iter_bounded_values(
                    input, column, user_column, max_records=max_records, key=key,
                    **read_opts), edges)
                rel = publish_bounded_records(kept, edges, epsilon=epsilon,
                                              max_records=max_records, method=method, rng=rng,
                                              records_bound=records_bound, **params)
            n_bins = int(edges.size - 1)
        import dataclasses

        notes = list(rel.notes)
        for note in notes:
            if " not used: auto picked " in note:
                status(f"note: {note}")
        if seed is not None:
            notes.append("produced with a fixed --seed: for experiments only, not private")
        if bins_from_data:  # as `map publish --bbox-from-data` says it (only stderr did here)
            notes.append("the bins' range was taken from the data's minimum and maximum "
                         "(--bins-from-data): NOT private")
        table = {"bin": np.arange(n_bins), "lower": lower, "upper": upper,
                 "count": np.asarray(rel.value, dtype=np.float64)}
        info = {"file": str(input), "column": column, "mode": "counts" if counts else "records",
                "bins": n_bins, "bins_from_data": bool(bins_from_data),
                "records_outside_bins": "not counted (their number is not published)"}
        if user_column is not None:
            info.update(user_column=user_column, max_records=int(max_records))
        out_rel = dataclasses.replace(rel, value=table, notes=tuple(notes),
                                      parameters={**rel.parameters, "input": info})
        show(f"writing {output.name}")
        _, side = write_release(out_rel, output, format=out_fmt)
    done(release_summary(out_rel, output, side, bins=n_bins),
         f"{rel.mechanism}: {n_bins} bins, epsilon={exact(epsilon)} "
         f"(split {json.dumps(rel.metadata()['budget_split'])}) -> {output} "
         f"(+ {side.name})")


def _read_counts(path: Path, column: str, **options) -> np.ndarray:
    if Path(path).suffix.lower() == ".npy":
        try:
            with open(path, "rb") as fh:
                magic = fh.read(6)
        except OSError as exc:
            raise DataError(f"cannot be read: {exc.strerror or exc}", path=str(path)) from None
        if magic != b"\x93NUMPY":
            raise DataError("is not a .npy file (no NumPy header)", path=str(path))
        try:
            return np.asarray(np.load(path, allow_pickle=False), dtype=np.float64)
        except (OSError, ValueError, TypeError) as exc:
            # numpy's own text advises loading "unsafely" with allow_pickle: never for a user
            why = ("it holds Python objects, which veil does not load"
                   if "allow_pickle" in str(exc) else str(exc).splitlines()[0])
            raise DataError(f"cannot be read as a .npy array of numbers ({why})",
                            path=str(path)) from None
    from ..io import read_columns

    return np.asarray(read_columns(path, columns={column: "float"}, **options)[column],
                      dtype=np.float64)


#: The most random ranges `histogram evaluate` draws (memory grows with them)
MAX_QUERIES = 10**6


@app.command("evaluate")
@options_named({"workload": "--workload", "queries": "--queries", "seed": "--seed"})
def evaluate_cmd(
    published: Path = typer.Argument(..., help="Published histogram (from `publish`)."),
    true: Path = typer.Option(..., "--true", help="True counts per bin (.csv, .parquet, "
                              ".json or .npy) in the same bin order."),
    column: str = typer.Option("count", "--column", help="Count column of the published file."),
    true_column: str = typer.Option("count", "--true-column", help="Count column of --true."),
    workload: str = typer.Option("prefix", "--workload", help="prefix, random or point."),
    queries: int = typer.Option(2000, "--queries", help="Random ranges (workload=random)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed for the random workload."),
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
) -> None:
    """Workload error of a published histogram against the true one (DPBench scaled error).

    --input-format and --delimiter apply to both files (a .npy file is read as an array)."""
    from ..histograms.workload import answer as answer_queries
    from ..histograms.workload import make_workload, scaled_error
    from ..random import make_rng
    from ..validation import check_counts

    from .common import check_column_option

    check_column_option(column, "--column")
    check_column_option(true_column, "--true-column")
    # the protocol uses 2000; 2 x 10^7 took 1.3 GB and 10^8 about 6 GB
    check_int(queries, "--queries", minimum=1, maximum=MAX_QUERIES)
    est = _read_counts(published, column, **input_options(published, input_format, delimiter))
    if Path(true).suffix.lower() == ".npy":
        tru = check_counts(_read_counts(true, true_column), f"--true {str(true)!r}")
    else:  # read as counts: a bad cell is reported with its file, row and column
        from ..io import read_counts

        tru = read_counts(true, column=true_column,
                          **input_options(true, input_format, delimiter))
    if est.size != tru.size:
        raise DataError(f"published histogram has {est.size} bins, the true one {tru.size}",
                        path=str(published))
    if not np.isfinite(est).all():
        raise DataError("published counts must be finite", path=str(published), column=column)
    if tru.sum() == 0:
        raise DataError("the true histogram is empty (no records): scaled error undefined",
                        path=str(true))
    q = make_workload(workload, tru.size, size=queries, rng=make_rng(seed=seed)
                      if seed is not None else None)
    with np.errstate(over="ignore", invalid="ignore"):
        err = scaled_error(q, tru, est)
        mae = float(np.mean(np.abs(answer_queries(q, tru) - answer_queries(q, est))))
    if not (np.isfinite(err) and np.isfinite(mae)):  # was "scaled_error": "inf", exit 0
        raise DataError(f"the published counts (up to {float(np.abs(est).max()):.3g}) are too "
                        "large: their range sums overflow float64", path=str(published),
                        column=column)
    answer({"workload": workload, "queries": int(q.shape[0]), "scaled_error": err,
            "mean_abs_error": mae, "records": int(tru.sum()), "bins": int(tru.size)})


def _bench_datasets(text: Optional[str]) -> Optional[list[str]]:
    """``--datasets`` of ``veil bench histograms``: checked before minutes of benchmarking
    (an empty list stopped with an internal error after the run had begun)."""
    from ..histograms.evaluation import DPBENCH_1D

    if text is None:
        return None
    names = [d.strip() for d in text.split(",") if d.strip()]
    if not names:
        raise ParameterError(f"--datasets: no dataset name in {text!r}; give DPBench names "
                             "or 'classic'")
    if names != ["classic"]:
        for name in names:
            if name not in DPBENCH_1D:
                raise ParameterError(f"--datasets: unknown DPBench dataset {name!r}; known: "
                                     f"{', '.join(DPBENCH_1D)} (or 'classic')")
    return names


@writes_files()
def bench(
    speed: bool = typer.Option(False, "--speed", help="Speed of every method at n = 4096."),
    hdmm: bool = typer.Option(False, "--hdmm", help="HDMM's exact expected error vs HB, "
                              "and measured against its closed form."),
    accuracy: bool = typer.Option(False, "--accuracy", help="The DPBench table (every method, "
                                  "eps 0.01-10, scales 1e3-1e7, prefix and random ranges)."),
    fit_auto: Optional[Path] = typer.Option(None, "--fit-auto", help="Fit the auto rule on the "
                                            "JSON of an accuracy run; print held-out ratios."),
    fit_target: Optional[float] = typer.Option(None, "--fit-target", help="With --fit-auto: "
                                               "per signal level, the candidate with the fewest "
                                               "cells above this many times the best (then the "
                                               "mean log ratio); the shipped rule used 1.15."),
    trials: int = typer.Option(10, "--trials", help="Trials per accuracy setting."),
    n: Optional[int] = typer.Option(None, "--n-bins", help="Coarsen the 4096-bin datasets to n bins."),
    datasets: Optional[str] = typer.Option(None, "--datasets", help="Comma-separated DPBench "
                                           "names, or 'classic' (the seven classic ones)."),
    quick: bool = typer.Option(False, "--quick", help="3 datasets at n = 256, 1 trial, "
                               "2 eps, 2 scales, few repeats."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write rows as JSON "
                                          "(and the error-vs-scale plot next to it as .png)."),
    force: bool = FORCE,
) -> None:
    """DP histograms: speed, HDMM's closed form and the DPBench table (real data in ../shared)."""
    from ..histograms.bench import run

    if output is not None:  # refuse a bad output before minutes of benchmarking
        from ..io import check_output_target

        for target in (output, Path(output).with_suffix(".png")):
            check_output_target(target)  # an input, a link or (without --force) an existing file
    names = _bench_datasets(datasets)
    check_int(trials, "--trials", minimum=1)
    if n is not None and 4096 % check_int(n, "--n-bins", minimum=1):
        raise ParameterError(f"--n-bins must divide 4096 (the DPBench domain), got {n}")
    if fit_target is not None:   # before any work
        from ..histograms.autofit import check_target

        check_target(fit_target, "--fit-target")
    out = run(speed=speed, hdmm=hdmm, accuracy=accuracy, fit_auto=fit_auto,
              fit_target=fit_target, trials=trials, n=n,
              datasets=names, quick=quick, output=output, log=say)
    if output is not None:
        status(f"wrote {output}")
    if json_mode():
        answer({**out, "output": None if output is None else str(output)})
