"""``veil table``: diversity-constrained k-anonymization and constraint reasoning."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import ParameterError
from .common import SEED

app = typer.Typer(no_args_is_help=True, help=__doc__)
constraints_app = typer.Typer(no_args_is_help=True,
                              help="Reason about diversity constraints (check, implies, "
                                   "satisfiable, minimize).")
app.add_typer(constraints_app, name="constraints")

BENCH_NAME = "tables"

NAMES = typer.Option(None, "--names",
                     help="Column names for a CSV without a header row (comma-separated).")
DELIMITER = typer.Option(None, "--delimiter",
                         help="CSV field delimiter (one character; default ',', tab for .tsv).")
SKIP_SPACE = typer.Option(
    False, "--skip-initial-space",
    help="Spaces right after a delimiter separate fields and are not part of the values "
         "(UCI Adult writes '39, State-gov'); they are still copied to the output.")


def _split(s: str | None) -> list[str] | None:
    if s is None:
        return None
    return [p.strip() for p in s.split(",") if p.strip()]


def _read(path: Path, names: str | None, delimiter: str | None = None,
          skip_initial_space: bool = False):
    """The input as text (every output cell not changed is byte-for-byte the input's)."""
    from ..tables.data import read_table

    cols = _split(names)
    return read_table(path, names=cols, delimiter=delimiter,
                      skip_initial_space=skip_initial_space)


def _not_over_inputs(outputs: dict[str, Path], inputs: dict[str, Path]) -> None:
    """No output may be one of the inputs (nor the same file under another name)."""
    import os

    def same(a: Path, b: Path) -> bool:
        try:
            return a.exists() and b.exists() and os.path.samefile(a, b)
        except OSError:
            return False

    for oname, o in outputs.items():
        for iname, i in inputs.items():
            if os.path.realpath(o) == os.path.realpath(i) or same(o, i):
                raise ParameterError(f"{oname} {str(o)!r} is the {iname}; write the output to "
                                     "another file")
    seen: dict[str, str] = {}
    for oname, o in outputs.items():
        r = os.path.realpath(o)
        if r in seen:
            raise ParameterError(f"{oname} and {seen[r]} are the same file {str(o)!r}")
        seen[r] = oname


def _write_outputs(table, out: Path, public: dict, side: Path, private: dict | None = None,
                   rep: Path | None = None) -> None:
    """Write the table, its sidecar (and the private report): all of them or none."""
    import json

    from ..io import atomic_paths
    from ..tables.data import TextTable, table_kind
    from ..tables.textio import table_format

    targets = [out, side] + ([rep] if rep is not None else [])
    fmt = table_format(out)
    with atomic_paths(*targets) as tmps:
        if isinstance(table, TextTable):
            table.dump(tmps[0], format=fmt)
        else:  # pragma: no cover - the CLI always reads a TextTable
            from ..io import write_table

            write_table(table if table_kind(table) != "mapping" else dict(table), tmps[0],
                        format=fmt)
        tmps[1].write_text(json.dumps(public, indent=2, sort_keys=True) + "\n",
                           encoding="utf-8")
        if rep is not None:
            tmps[2].write_text(json.dumps(private, indent=2, sort_keys=True) + "\n",
                               encoding="utf-8")


def _write_json_atomic(obj, path: Path) -> None:
    from ..io import write_json

    write_json(obj, path)


@app.command("anonymize")
def anonymize_cmd(
    input: Path = typer.Argument(..., help="Input table (CSV or Parquet), read as text."),
    k: int = typer.Option(..., "--k", "-k", help="Minimum class size on the QI tuple (>= 2)."),
    qi: str = typer.Option(..., "--qi", help="Quasi-identifier columns, comma-separated."),
    constraints: Optional[Path] = typer.Option(
        None, "--constraints", "-c", help="Constraint file (one 'attr=value[, ...]: lo..hi' "
                                          "per line)."),
    method: str = typer.Option("diva", "--method", "-m",
                               help="diva (honours constraints) or baseline (optimal cut, "
                                    "ignores them); also sort-cut, mondrian."),
    output: Path = typer.Option(..., "--output", "-o",
                                help="Anonymized table (.csv or .parquet), written atomically "
                                     "with its sidecar OUTPUT.meta.json (publishable)."),
    report: Optional[Path] = typer.Option(
        None, "--report", help="Also write the custodian's report here (JSON, NOT for "
                               "publication: search statistics and runtimes depend on the "
                               "input)."),
    strategy: str = typer.Option("min-choice", "--strategy",
                                 help="DIVA search order: min-choice, max-fanout, random."),
    marker: str = typer.Option("*", "--marker", help="Text written in suppressed cells."),
    names: Optional[str] = NAMES,
    delimiter: Optional[str] = DELIMITER,
    skip_initial_space: bool = SKIP_SPACE,
    seed: Optional[int] = SEED,
) -> None:
    """k-anonymize a table by suppression, satisfying diversity constraints (DIVA).

    Cells are text: every published cell that is not suppressed is byte-for-byte the input
    cell (quoting and line ends kept). k-anonymity is not differential privacy: see
    docs/tables.md.
    """
    from ..io import sidecar_path
    from ..tables import anonymize, load_constraints
    from ..validation import check_choice, check_int
    from .common import output_path

    check_int(k, "--k", minimum=2)
    check_choice(method, "--method", ("diva", "baseline", "optimal-cut", "sort-cut", "mondrian"))
    out = output_path(output)
    side = sidecar_path(out)
    rep = Path(report) if report is not None else None
    if rep is not None and not rep.parent.exists():
        raise ParameterError(f"--report: folder {str(rep.parent)!r} does not exist")
    outputs = {"--output": out, "the sidecar": side}
    if rep is not None:
        outputs["--report"] = rep
    inputs = {"input table": Path(input)}
    if constraints is not None:
        inputs["constraint file"] = Path(constraints)
    _not_over_inputs(outputs, inputs)
    table = _read(input, names, delimiter, skip_initial_space)
    qi_cols = _split(qi) or []
    cs = []
    if constraints is not None:
        cs = load_constraints(constraints, table=table, k=k)
    kwargs = {"marker": marker}
    if method == "diva":
        kwargs.update(strategy=strategy, seed=seed)
    res = anonymize(table, k=k, qi=qi_cols, constraints=cs, method=method, **kwargs)
    public = res.published()
    private = None
    if rep is not None:
        private = res.report()
        private["input"] = str(input)
        private["output"] = str(out)
    _write_outputs(res.table, out, public, side, private, rep)
    m = res.metrics
    typer.echo(f"{res.method}: {m['rows']} rows, {m['classes']} classes (min size "
               f"{m['min_class_size']}), suppressed {m['suppressed_cells']} QI cells "
               f"({100 * m['suppressed_share']:.2f}%), constraints satisfied "
               f"{res.constraints_satisfied}/{len(res.constraints)}")
    typer.echo(f"wrote {out} and {side.name}" + (f" (report: {rep})" if rep else ""))


def _load(path: Path, table_path: Optional[Path], names: Optional[str], k: Optional[int]):
    from ..tables import load_constraints

    table = _read(table_path, names) if table_path is not None else None
    return load_constraints(path, table=table, k=k), table


@constraints_app.command("check")
def check_cmd(
    constraints: Path = typer.Argument(..., help="Constraint file."),
    table: Path = typer.Option(..., "--table", "-t", help="Table to validate (CSV or Parquet)."),
    names: Optional[str] = NAMES,
    delimiter: Optional[str] = DELIMITER,
    skip_initial_space: bool = SKIP_SPACE,
    show_sql: bool = typer.Option(False, "--show-sql", help="Print the generated SQL query."),
) -> None:
    """Validate a table against the constraints (one generated DuckDB query).

    Exit status 0 when every constraint holds, 1 otherwise.
    """
    from ..tables import check_constraints, load_constraints, validation_sql
    from ..tables.data import as_columns, cell_text

    tbl = _read(table, names, delimiter, skip_initial_space)
    cols = as_columns(tbl)
    # attributes must be columns; a value that does not occur simply has count 0 (after
    # suppression removed every 'X', 'sex=X: 0..0' holds and 'sex=X: 5..' fails, exit 1)
    cs = load_constraints(constraints, columns=list(cols))
    present: dict[str, set] = {}
    for c in cs:
        for a, v in c.target:
            if a not in present:
                present[a] = set(cell_text(cols[a], name=a, missing="skip").tolist())
            if v not in present[a]:
                typer.echo(f"note: {c.to_text()!r}: value {v!r} does not occur in column "
                           f"{a!r} (count 0)", err=True)
    if show_sql:
        from ..tables.validate import sql_columns

        typer.echo(validation_sql(cs, columns=sql_columns(cs)) + ";")
    status = check_constraints(tbl, cs)
    for s in status:
        typer.echo(f"{'ok  ' if s.satisfied else 'FAIL'}  {s.constraint.to_text():<50} "
                   f"count = {s.count}")
    bad = sum(not s.satisfied for s in status)
    typer.echo(f"{len(status) - bad}/{len(status)} constraints hold")
    if bad:
        raise SystemExit(1)  # typer.Exit is swallowed by main() in standalone_mode=False


EXACT = typer.Option(
    None, "--exact/--axioms",
    help="--exact: decide by integer programming (HiGHS) over the compressed cells of the "
         "targets, exact for any bounds up to 2**40; --axioms: the four axioms (linear time, "
         "sound, complete only for single-attribute targets). Default: exact when a target "
         "has several attributes, else the axioms.")


def _method(exact: Optional[bool]) -> str:
    return "auto" if exact is None else ("exact" if exact else "axioms")


@constraints_app.command("implies")
def implies_cmd(
    constraints: Path = typer.Argument(..., help="Constraint file (Sigma)."),
    sigma: str = typer.Argument(..., help="One constraint, e.g. 'sex=Female: 0..100'."),
    exact: Optional[bool] = EXACT,
) -> None:
    """Does Sigma imply sigma? Prints the implied range; exit 0 if implied, 1 if not."""
    from ..tables import implied_range, implies, parse_constraints
    from ..tables.reasoning import _method as resolve

    cs, _ = _load(constraints, None, None, None)
    parsed = parse_constraints(sigma, source="argument")
    if len(parsed) != 1:
        raise ParameterError(f"expected exactly one constraint, got {len(parsed)}")
    s = parsed[0]
    how = resolve(_method(exact), cs + [s])
    lo, hi = implied_range(cs, s)
    ok = implies(cs, s, method=how)
    tgt = s.to_text().rsplit(":", 1)[0]
    typer.echo(f"axioms give {tgt} in [{lo}, {'inf' if hi == float('inf') else int(hi)}]")
    typer.echo(f"{'implied' if ok else 'not implied'}: {s.to_text()} ({how})")
    if not ok:
        raise SystemExit(1)  # typer.Exit is swallowed by main() in standalone_mode=False


@constraints_app.command("satisfiable")
def satisfiable_cmd(constraints: Path = typer.Argument(..., help="Constraint file."),
                    exact: Optional[bool] = EXACT) -> None:
    """Is there a relation satisfying every constraint? Exit 0 if yes, 1 if not."""
    from ..tables import satisfiability
    from ..tables.reasoning import _method as resolve

    cs, _ = _load(constraints, None, None, None)
    how = resolve(_method(exact), cs)
    sat = satisfiability(cs, method=how)
    if sat:
        typer.echo(f"satisfiable ({len(cs)} constraints; {how})")
        return
    typer.echo(f"unsatisfiable: {sat.reason}")
    raise SystemExit(1)  # typer.Exit is swallowed by main() in standalone_mode=False


@constraints_app.command("minimize")
def minimize_cmd(
    constraints: Path = typer.Argument(..., help="Constraint file."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Write the minimal cover here (atomically)."),
    exact: Optional[bool] = EXACT,
) -> None:
    """Remove constraints implied by the others (minimal cover)."""
    from ..tables import format_constraints, redundant_constraints

    cs, _ = _load(constraints, None, None, None)
    red = redundant_constraints(cs, method=_method(exact))
    keep = list(cs)
    for c, used in red:
        keep.remove(c)
        why = ", ".join(repr(u.to_text()) for u in used) or "nothing (it always holds)"
        typer.echo(f"removed {c.to_text()!r}: implied by {why}", err=True)
    text = format_constraints(keep)
    if output is None:
        typer.echo(text, nl=False)
    else:
        from .common import output_path

        from ..io import atomic_path

        out = output_path(output)
        with atomic_path(out) as tmp:
            tmp.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {len(keep)} of {len(cs)} constraints to {out}")


def bench(
    quick: bool = typer.Option(False, "--quick", help="Small sizes (a few seconds)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Also write the results as JSON here."),
    repeats: int = typer.Option(3, "--repeats", help="Runs per configuration (median)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the constraint generator."),
) -> None:
    """DIVA vs constraint-free baselines on UCI Adult and synthetic tables."""
    from ..tables.experiment import format_results, run_experiment

    res = run_experiment(quick=quick, repeats=repeats, seed=seed, progress=typer.echo)
    typer.echo(format_results(res))
    if output is not None:
        from .common import output_path

        _write_json_atomic(res, output_path(output))
