"""``veil table``: diversity-constrained k-anonymization and constraint reasoning."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import ParameterError
from .common import (FORCE, INPUT_FORMAT, SEED, answer, done, json_mode, options_named, say,
                     stages, status, writes_files)

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
          skip_initial_space: bool = False, input_format: str | None = None):
    """The input as text (every output cell not changed is byte-for-byte the input's)."""
    from ..tables.data import read_table
    from .common import input_options

    cols = _split(names)
    fmt = input_options(path, input_format, None).get("format")
    return read_table(path, names=cols, delimiter=delimiter,
                      skip_initial_space=skip_initial_space, format=fmt)


def _check_qi(qi_cols: list[str], columns: list[str]) -> None:
    """``--qi`` names each column once, and only columns of the table (checked by name)."""
    import difflib

    if not qi_cols:
        raise ParameterError("--qi must name at least one column")
    for name in qi_cols:
        if qi_cols.count(name) > 1:
            raise ParameterError(f"--qi names column {name!r} twice")
        if name not in columns:
            near = difflib.get_close_matches(name, columns, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            shown = ", ".join(repr(c) for c in columns[:12]) + (" ..." if len(columns) > 12
                                                                 else "")
            raise ParameterError(f"--qi: column {name!r} is not in the table{hint} "
                                 f"(columns: {shown})")


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


HIERARCHIES = typer.Option(
    None, "--hierarchies",
    help="Folder of ARX hierarchy files (COLUMN.csv or *_hierarchy_COLUMN.csv, ';'-separated, "
         "one row per value, coarser levels to the right) for --method global/local/"
         "mondrian-hierarchy. A QI without a file is kept or replaced by the marker.")
HIERARCHY = typer.Option(None, "--hierarchy",
                         help="COLUMN=FILE: the hierarchy of one QI (repeat; overrides the "
                              "folder).")
SENSITIVE = typer.Option(None, "--sensitive",
                         help="Sensitive column for --l-diversity/--entropy-l/--t-closeness.")


def _models(sensitive, l_div, entropy_l, t_close, ordered):
    from ..tables.models import DistinctLDiversity, EntropyLDiversity, TCloseness

    asked = [x is not None for x in (l_div, entropy_l, t_close)]
    if any(asked) and sensitive is None:
        raise ParameterError("--l-diversity, --entropy-l and --t-closeness need --sensitive "
                             "COLUMN")
    if sensitive is not None and not any(asked):
        raise ParameterError("--sensitive needs --l-diversity, --entropy-l or --t-closeness")
    if ordered and t_close is None:
        raise ParameterError("--ordered-sensitive applies to --t-closeness only")
    _check_model_options(l_div, entropy_l, t_close)
    out = []
    if l_div is not None:
        out.append(DistinctLDiversity(sensitive, l_div))
    if entropy_l is not None:
        out.append(EntropyLDiversity(sensitive, entropy_l))
    if t_close is not None:
        out.append(TCloseness(sensitive, t_close, ordered=ordered))
    return out


def _check_model_options(l_div, entropy_l, t_close) -> None:
    """Name the option in the message (the library's names l and t are not options)."""
    import math

    if l_div is not None and l_div < 1:
        raise ParameterError(f"--l-diversity must be an integer >= 1 (distinct sensitive values "
                             f"per class), got {l_div}")
    if entropy_l is not None and not (math.isfinite(entropy_l) and entropy_l >= 1):
        raise ParameterError(f"--entropy-l must be a finite number >= 1 (exp of the entropy of "
                             f"the sensitive values per class), got {entropy_l:g}")
    if t_close is not None and not 0 <= t_close <= 1:
        raise ParameterError(f"--t-closeness must be a number in [0, 1] (largest distance of a "
                             f"class to the table's distribution), got {t_close:g}")


def _check_share(value: float, option: str, *, open_low: bool = False) -> None:
    """A share or probability option in [0, 1] (or (0, 1]), named in the message."""
    ok = (value > 0 if open_low else value >= 0) and value <= 1
    if not ok:  # also NaN
        raise ParameterError(f"{option} must be a number in {'(' if open_low else '['}0, 1], "
                             f"got {value:g}")


def _hierarchies(folder, items, qi_cols):
    from ..tables.hierarchy import Hierarchy, load_hierarchies, parse_hierarchy_option

    out = {}
    files = {}
    if folder is not None:
        out.update(load_hierarchies(folder, qi_cols))
        files.update({c: Path(h.source) for c, h in out.items()})
    for c, path in parse_hierarchy_option(items).items():
        if c not in qi_cols:
            raise ParameterError(f"--hierarchy {c}=...: {c!r} is not a quasi-identifier "
                                 f"({', '.join(qi_cols)})")
        out[c] = Hierarchy.from_csv(path, name=c)
        files[c] = Path(path)
    return out, files


@app.command("anonymize")
@writes_files("input", "constraints")
@options_named({"k": "--k", "max_suppression": "--max-suppression", "threshold": "--risk-threshold",
                "seed": "--seed"})
def anonymize_cmd(
    input: Path = typer.Argument(..., help="Input table (CSV or Parquet), read as text."),
    k: int = typer.Option(..., "--k", "-k", help="Minimum class size on the QI tuple (>= 2)."),
    qi: str = typer.Option(..., "--qi", help="Quasi-identifier columns, comma-separated."),
    constraints: Optional[Path] = typer.Option(
        None, "--constraints", help="Constraint file (one 'attr=value[, ...]: lo..hi' "
                                          "per line)."),
    method: str = typer.Option(
        "diva", "--method", "-m",
        help="diva (suppression honouring constraints); baseline/optimal-cut, sort-cut, "
             "mondrian (suppression, constraints only reported); global (full-domain "
             "generalization, optimal lattice node), local (local recoding), "
             "mondrian-hierarchy (Mondrian baseline on the hierarchies)."),
    output: Path = typer.Option(..., "--output", "-o",
                                help="Anonymized table (.csv or .parquet), written atomically "
                                     "with its sidecar OUTPUT.meta.json (publishable)."),
    report: Optional[Path] = typer.Option(
        None, "--report", help="Also write the custodian's report here (JSON, NOT for "
                               "publication: input risk, information loss, search statistics "
                               "and runtimes depend on the input)."),
    strategy: str = typer.Option("min-choice", "--strategy",
                                 help="DIVA search order: min-choice, max-fanout, random."),
    hierarchies: Optional[Path] = HIERARCHIES,
    hierarchy: Optional[list[str]] = HIERARCHY,
    max_suppression: float = typer.Option(
        0.0, "--max-suppression",
        help="global/local: largest share of rows that may be suppressed (all QIs '*')."),
    metric: str = typer.Option("granularity", "--metric",
                               help="global/local: loss to minimize, granularity or nue."),
    search: str = typer.Option("flash", "--search",
                               help="global: flash (exact, pruned) or exhaustive."),
    sensitive: Optional[str] = SENSITIVE,
    l_diversity: Optional[int] = typer.Option(
        None, "--l-diversity", help="Distinct l-diversity of --sensitive in every class."),
    entropy_l: Optional[float] = typer.Option(
        None, "--entropy-l", help="Entropy l-diversity of --sensitive in every class."),
    t_closeness: Optional[float] = typer.Option(
        None, "--t-closeness", help="t-closeness of --sensitive (EMD to the table's "
                                    "distribution) in every class."),
    ordered_sensitive: bool = typer.Option(
        False, "--ordered-sensitive", help="--t-closeness over ordered (numeric) values."),
    risk_threshold: float = typer.Option(0.2, "--risk-threshold",
                                         help="Highest acceptable risk of one record, for "
                                              "'records at risk'."),
    marker: str = typer.Option("*", "--marker", help="Text written in suppressed cells."),
    names: Optional[str] = NAMES,
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
    skip_initial_space: bool = SKIP_SPACE,
    seed: Optional[int] = SEED,
    force: bool = FORCE,
) -> None:
    """k-anonymize a table (suppression or generalization), meeting diversity constraints.

    Cells are text: every published cell that is not suppressed or generalized is
    byte-for-byte the input cell (quoting and line ends kept). k-anonymity is not
    differential privacy: see docs/tables.md.
    """
    from ..io import sidecar_path
    from ..tables import anonymize, load_constraints
    from ..tables.diverse import METHODS
    from ..tables.risk import reidentification_risk
    from ..validation import check_choice, check_int
    from .common import output_path

    check_int(k, "--k", minimum=2)
    check_choice(method, "--method", METHODS)
    from ..tables.diverse import STRATEGIES
    from ..tables.generalize import METRICS

    check_choice(strategy, "--strategy", STRATEGIES)
    check_choice(metric, "--metric", METRICS)
    check_choice(search, "--search", ("flash", "exhaustive"))
    generalizing = method in ("global", "local", "mondrian-hierarchy")
    if not generalizing and (hierarchies is not None or hierarchy):
        raise ParameterError(f"--hierarchies/--hierarchy apply to --method global, local or "
                             f"mondrian-hierarchy, not {method}")
    _check_share(max_suppression, "--max-suppression")
    _check_share(risk_threshold, "--risk-threshold", open_low=True)
    if max_suppression and method not in ("global", "local"):
        raise ParameterError("--max-suppression applies to --method global or local")
    out = output_path(output)
    side = sidecar_path(out)
    rep = Path(report) if report is not None else None
    if rep is not None and not rep.parent.exists():
        raise ParameterError(f"--report: folder {str(rep.parent)!r} does not exist")
    qi_cols = _split(qi) or []
    hier, hfiles = _hierarchies(hierarchies, hierarchy, qi_cols)
    models = _models(sensitive, l_diversity, entropy_l, t_closeness, ordered_sensitive)
    outputs = {"--output": out, "the sidecar": side}
    if rep is not None:
        outputs["--report"] = rep
    inputs = {"input table": Path(input)}
    if constraints is not None:
        inputs["constraint file"] = Path(constraints)
    inputs.update({f"hierarchy of {c!r}": p for c, p in hfiles.items()})
    _not_over_inputs(outputs, inputs)
    from .common import naming_file

    # progress on a terminal (300,000 rows took 12.6 s with nothing shown)
    with stages() as show:
        show(f"{Path(input).name}: reading the table")
        table = _read(input, names, delimiter, skip_initial_space, input_format)
        _check_qi(qi_cols, list(table.columns))
        cs = []
        with naming_file(input):  # a data problem found after reading names the input file
            if constraints is not None:
                cs = load_constraints(constraints, table=table, k=k)
            kwargs = {"marker": marker, "models": models}
            if method == "diva":
                kwargs.update(strategy=strategy, seed=seed)
            if method == "local":  # DIVA's clusters, when the constraints need them
                kwargs.update(seed=seed)
            if generalizing:
                kwargs.update(hierarchies=hier, metric=metric)
            if method in ("global", "local"):
                kwargs.update(max_suppression=max_suppression)
            if method == "global":
                kwargs.update(search=search)
            show(f"{method}: anonymizing (k = {k})")
            res = anonymize(table, k=k, qi=qi_cols, constraints=cs, method=method, **kwargs)
        show("re-identification risk of the output")
        after = reidentification_risk(res.table, qi_cols, threshold=risk_threshold, marker=marker)
        public = res.published()
        public["risk"] = after
        private = None
        if rep is not None:
            private = res.report()
            private["risk"] = {"input": reidentification_risk(table, qi_cols,
                                                              threshold=risk_threshold,
                                                              marker=marker),
                               "output": after}
            if "utility" not in private["stats"]:
                private["stats"]["utility"] = _suppression_utility(table, res, qi_cols)
            private["input"] = str(input)
            private["output"] = str(out)
        show(f"writing {out.name}")
        _write_outputs(res.table, out, public, side, private, rep)
    m = res.metrics
    what = (f"suppressed {m['suppressed_cells']} QI cells ({100 * m['suppressed_share']:.2f}%)"
            if not generalizing else
            f"generalized {m['generalized_cells']} QI cells, suppressed {m['suppressed_rows']} "
            f"rows")
    done({"output": str(out), "sidecar": str(side), "report": None if rep is None else str(rep),
          **public},
         f"{res.method}: {m['rows']} rows, {m['classes']} classes (min size "
         f"{m['min_class_size']}), {what}, constraints satisfied "
         f"{res.constraints_satisfied}/{len(res.constraints)}; prosecutor risk highest "
         f"{after['prosecutor']['highest']:.4f}\n"
         f"wrote {out} and {side.name}" + (f" (report: {rep})" if rep else ""))


def _suppression_utility(table, res, qi_cols):
    """Granularity and NUE per attribute of a suppression output (flat hierarchies)."""
    from ..tables.data import as_columns, encode_qi
    from ..tables.metrics import flat_hierarchies, utility_metrics

    enc = encode_qi(as_columns(table), qi_cols)
    return utility_metrics(enc.codes, flat_hierarchies(enc.values, enc.names),
                           suppressed=res.suppressed, names=enc.names)


@app.command("risk")
@writes_files("input", "population")
@options_named({"threshold": "--threshold", "sampling_fraction": "--sampling-fraction"})
def risk_cmd(
    input: Path = typer.Argument(..., help="Table (CSV or Parquet), read as text."),
    qi: str = typer.Option(..., "--qi", help="Quasi-identifier columns, comma-separated."),
    population: Optional[Path] = typer.Option(
        None, "--population", help="Population table with the same QI columns (same "
                                   "representation) for journalist/marketer risk."),
    sampling_fraction: Optional[float] = typer.Option(
        None, "--sampling-fraction", help="Share of the population in the table, for the "
                                          "population-uniqueness estimate (Zayatz)."),
    threshold: float = typer.Option(0.2, "--threshold",
                                    help="Highest acceptable risk of one record."),
    marker: str = typer.Option("*", "--marker",
                               help="Rows with this in every QI cell are suppressed."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Write the figures as JSON (atomically) "
                                               "instead of printing them."),
    names: Optional[str] = NAMES,
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
    skip_initial_space: bool = SKIP_SPACE,
    force: bool = FORCE,
) -> None:
    """Re-identification risk: prosecutor, journalist, marketer (ARX's definitions), uniqueness.

    Computed from the QI text of the rows; on an input table the figures describe private
    data (do not publish them next to an anonymized release).
    """
    from ..tables.risk import format_risk, reidentification_risk

    _check_share(threshold, "--threshold", open_low=True)
    if sampling_fraction is not None:
        _check_share(sampling_fraction, "--sampling-fraction", open_low=True)
        if population is not None:
            raise ParameterError("give --population or --sampling-fraction, not both")
    if output is not None:
        from .common import output_path

        out = output_path(output)
        inputs = {"input table": Path(input)}
        if population is not None:
            inputs["population table"] = Path(population)
        _not_over_inputs({"--output": out}, inputs)
    from .common import naming_file

    tbl = _read(input, names, delimiter, skip_initial_space, input_format)
    _check_qi(_split(qi) or [], list(tbl.columns))
    pop = (_read(population, names, delimiter, skip_initial_space, input_format)
           if population else None)
    with naming_file(input):
        r = reidentification_risk(tbl, _split(qi) or [], population=pop,
                                  sampling_fraction=sampling_fraction, threshold=threshold,
                                  marker=marker)
    text = format_risk(r, f"re-identification risk of {input} on {', '.join(_split(qi) or [])}")
    if output is None:
        answer(r, text)
        return
    _write_json_atomic(r, out)
    done({"output": str(out), **r}, f"{text}\nwrote {out}")


def _load(path: Path, table_path: Optional[Path], names: Optional[str], k: Optional[int]):
    from ..tables import load_constraints

    table = _read(table_path, names) if table_path is not None else None
    return load_constraints(path, table=table, k=k), table


@constraints_app.command("check")
def check_cmd(
    input: Path = typer.Argument(..., help="Table to validate (CSV, TSV, Parquet or JSON).",
                                 show_default=False),
    constraints: Optional[Path] = typer.Option(None, "--constraints",
                                               help="Constraint file (one per line)."),
    table: Optional[Path] = typer.Option(None, "--table", "-t", hidden=True,
                                         help="Deprecated: the old spelling 'check CONSTRAINTS "
                                              "--table TABLE'."),
    names: Optional[str] = NAMES,
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
    skip_initial_space: bool = SKIP_SPACE,
    show_sql: bool = typer.Option(False, "--show-sql", help="Print the generated SQL query."),
) -> None:
    """Validate a table against the constraints (one generated DuckDB query).

    Exit status 0 when every constraint holds, 1 otherwise.

    Example: veil table constraints check census.csv --constraints constraints.txt
    """
    from .common import naming_file

    if table is not None:  # the old form: the argument was the constraint file
        if constraints is not None:
            raise ParameterError("--table is the old spelling: give the table as INPUT and "
                                 "the constraint file with --constraints")
        status("veil: warning: 'check CONSTRAINTS --table TABLE' is deprecated, use "
               "'check TABLE --constraints CONSTRAINTS'")
        input, constraints = table, input
    if constraints is None:
        raise ParameterError("--constraints is required: the constraint file to check INPUT "
                             "against")
    tbl = _read(input, names, delimiter, skip_initial_space, input_format)
    with naming_file(input):
        return _check(tbl, constraints, show_sql)


def _check(tbl, constraints, show_sql):
    """Validate ``tbl`` against the constraint file; exit 1 if a constraint fails."""
    from ..tables import check_constraints, load_constraints, validation_sql
    from ..tables.data import as_columns, cell_text

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
                status(f"note: {c.to_text()!r}: value {v!r} does not occur in column "
                       f"{a!r} (count 0)")
    lines = []
    query = None
    if show_sql:
        from ..tables.validate import sql_columns

        query = validation_sql(cs, columns=sql_columns(cs)) + ";"
        lines.append(query)
    checked = check_constraints(tbl, cs)
    for s in checked:
        lines.append(f"{'ok  ' if s.satisfied else 'FAIL'}  {s.constraint.to_text():<50} "
                     f"count = {s.count}")
    bad = sum(not s.satisfied for s in checked)
    lines.append(f"{len(checked) - bad}/{len(checked)} constraints hold")
    answer({"constraints": [{"constraint": s.constraint.to_text(), "count": int(s.count),
                             "satisfied": bool(s.satisfied)} for s in checked],
            "hold": len(checked) - bad, "total": len(checked), "sql": query},
           "\n".join(lines))
    if bad:
        raise SystemExit(1)  # typer.Exit is swallowed by main() in standalone_mode=False


EXACT = typer.Option(
    False, "--exact",
    help="Decide by integer programming (HiGHS) over the compressed cells of the targets, "
         "exact for any bounds up to 2**40. Default: exact when a target has several "
         "attributes, else the axioms (complete there).")
AXIOMS = typer.Option(
    False, "--axioms",
    help="Use the four axioms only (linear time, sound, complete only for single-attribute "
         "targets).")


def _method(exact: bool, axioms: bool = False) -> str:
    if exact and axioms:
        raise ParameterError("--exact and --axioms exclude each other")
    return "exact" if exact else ("axioms" if axioms else "auto")


@constraints_app.command("implies")
def implies_cmd(
    constraints: Path = typer.Argument(..., help="Constraint file (Sigma)."),
    sigma: str = typer.Argument(..., help="One constraint, e.g. 'sex=Female: 0..100'."),
    exact: bool = EXACT,
    axioms: bool = AXIOMS,
) -> None:
    """Does Sigma imply sigma? Prints the implied range; exit 0 if implied, 1 if not."""
    from ..tables import implied_range, implies, parse_constraints
    from ..tables.reasoning import _method as resolve

    cs, _ = _load(constraints, None, None, None)
    parsed = parse_constraints(sigma, source="argument")
    if len(parsed) != 1:
        raise ParameterError(f"expected exactly one constraint, got {len(parsed)}")
    s = parsed[0]
    how = resolve(_method(exact, axioms), cs + [s])
    lo, hi = implied_range(cs, s)
    with stages() as show:
        show(f"implies: deciding ({how})")
        ok = implies(cs, s, method=how)
    tgt = s.to_text().rsplit(":", 1)[0]
    hi_txt = "inf" if hi == float("inf") else int(hi)
    answer({"constraint": s.to_text(), "implied": bool(ok), "method": how,
            "axioms_range": [int(lo), None if hi == float("inf") else int(hi)]},
           f"axioms give {tgt} in [{lo}, {hi_txt}]\n"
           f"{'implied' if ok else 'not implied'}: {s.to_text()} ({how})")
    if not ok:
        raise SystemExit(1)  # typer.Exit is swallowed by main() in standalone_mode=False


@constraints_app.command("satisfiable")
def satisfiable_cmd(constraints: Path = typer.Argument(..., help="Constraint file."),
                    exact: bool = EXACT, axioms: bool = AXIOMS) -> None:
    """Is there a relation satisfying every constraint? Exit 0 if yes, 1 if not."""
    from ..tables import satisfiability
    from ..tables.reasoning import _method as resolve

    cs, _ = _load(constraints, None, None, None)
    how = resolve(_method(exact, axioms), cs)
    with stages() as show:
        show(f"satisfiable: deciding {len(cs)} constraints ({how})")
        sat = satisfiability(cs, method=how)
    if sat:
        answer({"satisfiable": True, "constraints": len(cs), "method": how},
               f"satisfiable ({len(cs)} constraints; {how})")
        return
    answer({"satisfiable": False, "constraints": len(cs), "method": how,
            "reason": str(sat.reason)}, f"unsatisfiable: {sat.reason}")
    raise SystemExit(1)  # typer.Exit is swallowed by main() in standalone_mode=False


@constraints_app.command("minimize")
@writes_files("constraints")
def minimize_cmd(
    constraints: Path = typer.Argument(..., help="Constraint file."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Write the minimal cover here (atomically)."),
    exact: bool = EXACT,
    axioms: bool = AXIOMS,
    force: bool = FORCE,
) -> None:
    """Remove constraints implied by the others (minimal cover)."""
    from ..tables import format_constraints, redundant_constraints

    cs, _ = _load(constraints, None, None, None)
    how = _method(exact, axioms)
    # progress on a terminal (stderr): each constraint may need an integer program
    with stages() as show:
        show(f"minimize: checking that the {len(cs)} constraints are satisfiable")

        def progress(examined: int, total: int) -> None:
            show(f"minimize: {examined} of {total} constraints examined")

        red = redundant_constraints(cs, method=how, progress=progress)
    keep = list(cs)
    for c, used in red:
        keep.remove(c)
        why = ", ".join(repr(u.to_text()) for u in used) or "nothing (it always holds)"
        status(f"removed {c.to_text()!r}: implied by {why}")
    text = format_constraints(keep)
    summary = {"kept": [c.to_text() for c in keep],
               "removed": [{"constraint": c.to_text(), "implied_by": [u.to_text() for u in used]}
                           for c, used in red]}
    if output is None:
        if json_mode():
            answer(summary)
        else:
            typer.echo(text, nl=False)
    else:
        from .common import output_path

        from ..io import atomic_path

        out = output_path(output)
        with atomic_path(out) as tmp:
            tmp.write_text(text, encoding="utf-8")
        done({"output": str(out), **summary},
             f"wrote {len(keep)} of {len(cs)} constraints to {out}")


@writes_files()
@options_named({"seed": "--seed", "repeats": "--repeats"})
def bench(
    quick: bool = typer.Option(False, "--quick", help="Small sizes (a few seconds)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Also write the results as JSON here."),
    repeats: int = typer.Option(3, "--repeats", help="Runs per configuration (median)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the constraint generator."),
    force: bool = FORCE,
) -> None:
    """DIVA vs constraint-free baselines on UCI Adult and synthetic tables."""
    from ..tables.experiment import format_results, run_experiment
    from ..validation import check_int

    check_int(repeats, "--repeats", minimum=1)  # also with --quick (which runs 1)
    if output is not None:  # refuse a bad output before the benchmark, not after
        from ..io import check_output_target

        check_output_target(output)
    res = run_experiment(quick=quick, repeats=repeats, seed=seed, progress=say)
    say(format_results(res))
    if output is not None:
        from .common import output_path

        _write_json_atomic(res, output_path(output))
        status(f"wrote {output}")
    if json_mode():
        answer({"results": res, "output": None if output is None else str(output)})
