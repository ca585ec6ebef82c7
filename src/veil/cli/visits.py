"""``veil visits hide|resemble|avoid``: sanitize one histogram or every user of a check-in file.

Input is either one histogram (JSON ``{"category": count}`` / a list, or CSV
``category,count``) or a check-in table with a user column (CSV, TSV, Parquet,
JSON), which is sanitized user by user.

What is written (see docs/visits.md, "What is published"):

* ``--output FILE`` (public): the sanitized histogram(s) over a public category
  domain, every category present for every published user (zeros included);
* ``FILE.meta.json`` (public): the mechanism and its public parameters only;
* ``--report FILE`` (PRIVATE, opt-in, never written by default): the
  custodian's per-user report (sizes, sensitive visits, losses, status, the
  users left out).

The domain comes from ``--categories``, the taxonomy, or the target profile;
taking it from the private input needs ``--domain-from-data`` (PrivacyWarning).
"""

from __future__ import annotations

import difflib
import json
import os
import warnings
from pathlib import Path
from typing import Any, List, Optional

import numpy as np
import typer

from ..errors import DataError, ParameterError, PrivacyWarning
from ..validation import check_int
from .common import (DELIMITER, FORCE, INPUT_FORMAT, OUTPUT_FORMAT, answer, done, input_options,
                     options_named, status, writes_files)

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Sanitize location-visit histograms: hide sensitive places, resemble or "
                       "avoid a target profile (deterministic unless --resample-size, not "
                       "differential privacy).")
BENCH_NAME = "visits"

INPUT = typer.Argument(..., help="One histogram (JSON/CSV category,count) or a check-in file "
                                 "with a user column (CSV/TSV/Parquet).")
OUT = typer.Option(None, "--output", "-o",
                   help="Published file (.json/.csv/.parquet) plus its public sidecar "
                        "OUTPUT.meta.json, written atomically; default: the published JSON on "
                        "stdout (one histogram only).")
REPORT = typer.Option(None, "--report",
                      help="PRIVATE per-user report for the data custodian (sizes, sensitive "
                           "visits, quality loss, status, users left out): never publish it. "
                           "Not written unless asked for.")
CATEGORIES = typer.Option(None, "--categories",
                          help="The public category domain of the output: a comma list or "
                               "@FILE (one name per line). Default: the taxonomy's categories, "
                               "else the target's.")
FROM_DATA = typer.Option(False, "--domain-from-data",
                         help="Take the category domain from the input (NOT private: a "
                              "category visited by one user only reveals that user); raises a "
                              "PrivacyWarning.")
UNMATCHED = typer.Option(False, "--allow-unmatched",
                         help="Ignore --sensitive names that match no category of the domain "
                              "(default: an error with a suggestion).")
TAXONOMY = typer.Option(None, "--taxonomy", help="Category tree (.json/.csv) or 'foursquare' for "
                                                 "the shared Foursquare v2 tree (with the 2012 "
                                                 "name aliases).")
DISTANCE = typer.Option("js", "--distance", help="Quality distance d_q: js, kl, l1, l2, chi2, "
                                                 "hellinger (kl: resemble/avoid only).")
USER_COL = typer.Option("user", "--user-column", help="User column of a check-in file.")
CAT_COL = typer.Option("category", "--category-column", help="Category column of a check-in "
                                                             "file.")
FORBID = typer.Option(False, "--forbid-unvisited", help="Never add visits to places the user "
                                                       "never visited.")
ROLLUP = typer.Option(None, "--rollup-depth", help="With --taxonomy: map every category (input "
                                                   "and target) to its ancestor at this depth "
                                                   "(0 = roots) before solving.")
SEED = typer.Option(None, "--seed", help="FOR EXPERIMENTS ONLY: fixes the randomness of "
                                         "--resample-size; never publish output made with a "
                                         "known seed. Default: OS entropy.")


# ----------------------------------------------------------------------------- helpers
def _taxonomy(spec: Optional[str]):
    if spec is None:
        return None
    from ..visits.taxonomy import Taxonomy, foursquare_taxonomy

    if spec == "foursquare":
        return foursquare_taxonomy()
    p = Path(spec)
    if not p.exists():
        raise ParameterError(f"--taxonomy: file {spec!r} not found (or use 'foursquare')")
    return Taxonomy.load(p)


def _split(values: Optional[List[str]] | str | None, option: str) -> list[str]:
    """Names from repeated/comma-separated options, or @FILE (one name per line)."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for v in values:
        if v.startswith("@"):
            p = Path(v[1:])
            if not p.is_file():
                raise ParameterError(f"{option}: file {str(p)!r} not found")
            out += [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines()
                    if ln.strip()]
        else:
            out += [s.strip() for s in v.split(",") if s.strip()]
    return out


def _canon_one(name: str, tax, depth):
    if tax is None:
        return name
    canon, _ = tax.match_labels([name])
    if canon[0] is None:
        return None
    return tax.ancestor(canon[0], depth) if depth is not None else canon[0]


def _canon(labels, tax, depth, what: str):
    """Canonical names through the taxonomy (aliases, optional roll-up).

    A label the taxonomy does not know is an error (with a suggestion): it would
    otherwise silently escape the sensitive subtrees.
    """
    if labels is None:
        return None
    if tax is None:
        if depth is not None:
            raise ParameterError("--rollup-depth needs --taxonomy")
        return list(labels)
    out = []
    for lab in labels:
        c = _canon_one(lab, tax, depth)
        if c is None:
            hint = difflib.get_close_matches(str(lab), list(tax.index) + list(tax.aliases), n=1)
            extra = f"; did you mean {hint[0]!r}?" if hint else ""
            raise DataError(f"{what}: category {lab!r} is not in the taxonomy{extra}")
        out.append(c)
    return out


def _dedupe(names):
    seen: dict[str, None] = {}
    for n in names:
        seen.setdefault(n, None)
    return list(seen)


def _taxonomy_domain(tax, depth) -> list[str]:
    if depth is None:
        return list(tax.names)
    return [n for i, n in enumerate(tax.names)
            if tax.depth[i] == depth or (tax.depth[i] < depth and not tax.children[i])]


def _domain(*, categories, tax, depth, target_labels, data_labels, from_data, is_list):
    """The public category domain and where it came from."""
    cats = _split(categories, "--categories")
    if cats:
        dom = _dedupe(_canon(cats, tax, depth, "--categories"))
        return dom, "--categories"
    if categories is not None and not cats:
        raise ParameterError("--categories is empty")
    if tax is not None:
        return _taxonomy_domain(tax, depth), "taxonomy"
    if target_labels is not None:
        return _dedupe(target_labels), "target"
    if is_list:
        return None, "list positions"
    if from_data:
        warnings.warn("--domain-from-data: the published category domain is taken from the "
                      "private input; a category visited by a single user reveals that user "
                      "(use --categories or --taxonomy for a public domain)", PrivacyWarning,
                      stacklevel=2)
        return sorted(set(data_labels) | set(target_labels or [])), "input (--domain-from-data)"
    raise ParameterError("the published category domain must be public: give --categories "
                         "(comma list or @FILE), --taxonomy, or --target with named categories "
                         "(or --domain-from-data, which is not private)")


def _positions(labels, domain, what: str, source: str, path=None) -> np.ndarray:
    """Positions of ``labels`` in ``domain``; ``path``: the file the labels came from (an
    unknown category in a --target file was reported against the input file)."""
    pos = {n: i for i, n in enumerate(domain)}
    out = np.empty(len(labels), dtype=np.int64)
    for i, lab in enumerate(labels):
        if lab not in pos:
            hint = difflib.get_close_matches(str(lab), domain, n=1)
            extra = f"; did you mean {hint[0]!r}?" if hint else ""
            raise DataError(f"{what}: category {lab!r} is not in the category domain (from "
                            f"{source}, {len(domain)} categories){extra}",
                            path=None if path is None else str(path))
        out[i] = pos[lab]
    return out


def _on_domain(labels, values, domain, what, source, path=None) -> np.ndarray:
    out = np.zeros(len(domain))
    np.add.at(out, _positions(labels, domain, what, source, path), values)
    return out


def _sensitive(names, domain, tax, allow_unmatched) -> tuple[np.ndarray, list[str]]:
    """Indices of the sensitive categories of the domain, and the names that matched nothing."""
    flat = _split(names, "--sensitive")
    if domain is None:  # a plain list: bin indices
        try:
            idx = [int(x) for x in flat]
        except ValueError:
            raise ParameterError("--sensitive names categories but the histogram is a plain list; "
                                 "give bin indices or a labeled histogram") from None
        return np.unique(np.asarray(idx, dtype=np.int64)), []
    sel = np.zeros(len(domain), dtype=bool)
    unmatched: list[str] = []
    pos = {n: i for i, n in enumerate(domain)}
    for nm in flat:
        hits = []
        if tax is not None:
            if nm in tax:
                sub = tax.subtree([nm])
                hits = [pos[c] for c in sub if c in pos]
        elif nm in pos:
            hits = [pos[nm]]
        if hits:
            sel[hits] = True
            continue
        if allow_unmatched:
            unmatched.append(nm)
            continue
        pool = list(domain) + (list(tax.index) + list(tax.aliases) if tax is not None else [])
        lower = {p.lower().strip(): p for p in pool}
        hint = lower.get(nm.lower().strip())
        if hint is None:
            close = difflib.get_close_matches(nm, pool, n=1)
            hint = close[0] if close else None
        extra = f"; did you mean {hint!r}?" if hint and hint != nm else ""
        where = "the taxonomy" if tax is not None and nm not in tax else "the category domain"
        raise ParameterError(f"--sensitive {nm!r} matches no category of {where} "
                             f"({len(domain)} categories){extra}{_coarser_hint(nm, domain, tax)}"
                             " (or pass --allow-unmatched)")
    return np.flatnonzero(sel), unmatched


def _coarser_hint(name, domain, tax) -> str:
    """Suggest the ancestor when the domain's categories are coarser than the selected node."""
    if tax is None or name not in tax:
        return ""
    node = tax.resolve(name)
    labs = set(domain)
    for d in range(int(tax.depth[tax.index[node]]) - 1, -1, -1):
        anc = tax.ancestor(node, d)
        if anc in labs:
            return ("; the domain's categories are coarser than the selection: its ancestor "
                    f"{anc!r} is in the domain (select it to hide the whole category)")
    return ""


def _check_paths(inputs: list[Path], outputs: list[Path]) -> None:
    """No output over an input or another output; no write through a symbolic link."""
    seen: list[Path] = []
    for o in outputs:
        if o.is_symlink():
            raise ParameterError(f"output {str(o)!r} is a symbolic link: refusing to write "
                                 "through it")
        real = Path(os.path.realpath(o))
        for i in inputs:
            if i is not None and Path(os.path.realpath(i)) == real:
                raise ParameterError(f"output {str(o)!r} is the input file {str(i)!r}: choose "
                                     "another output name")
        if real in seen:
            raise ParameterError(f"output {str(o)!r} is given twice (--output, its sidecar and "
                                 "--report must be different files)")
        seen.append(real)


def _write_files(items: list[tuple[Path, Any]]) -> None:
    """Write tables / JSON documents together atomically (all or none)."""
    from ..io import write_table
    from ..io.read import detect_format
    from ..io.write import atomic_paths

    paths = [p for p, _ in items]
    with atomic_paths(*paths) as temps:
        for (final, obj), tmp in zip(items, temps):
            if isinstance(obj, dict) and obj.get("__table__") is not None:
                write_table(obj["__table__"], tmp,
                            format=obj.get("__format__") or detect_format(final))
            else:
                text = json.dumps(_jsonable(obj), indent=2, allow_nan=False)
                tmp.write_text(text + "\n", encoding="utf-8")


def _jsonable(obj):
    from ..release import to_jsonable

    return to_jsonable(obj)


_GUARANTEE = {
    "hide": ("deterministic SLH (not differential privacy): every sensitive category has 0 "
             "visits and the size is kept; the published file depends on the input only "
             "through the sanitized counts"),
    "resemble": ("deterministic TR (not differential privacy): d_q(H, H') <= quality_bound and "
                 "d_p(H', target) minimized"),
    "avoid": ("deterministic TA (not differential privacy): d_q(H, H') <= quality_bound and "
              "d_p(H', target) maximized"),
}
_NOT_PROTECTED = ("the non-sensitive visits (published as modified, not noised); the size "
                  "(unless --resample-size); correlations between the sensitive visits and the "
                  "rest of the profile (measured by `veil bench visits --adversary`); anything "
                  "learnt from several releases of the same user")


def _meta(problem, *, domain, source, sensitive_names, kw, mitigation, seed, target_kind,
          checkin: bool) -> dict:
    meta: dict[str, Any] = {
        "veil": "visits", "problem": problem,
        "published": ("columns user, category, sanitized: every category of the domain for "
                      "every published user, in domain order" if checkin else
                      "the sanitized histogram over every category of the domain"),
        "domain": domain if domain is not None else "list positions",
        "domain_source": source,
        "quality_distance": kw["distance"], "method": kw["method"],
        "forbid_unvisited": kw["forbid_unvisited"],
        "guarantee": _GUARANTEE[problem],
        "not_protected": _NOT_PROTECTED,
        "policy": ("a user who cannot be sanitized (every visit sensitive; resemble/avoid: no "
                   "answer within the bounds) is left out of the published file and listed "
                   "only in the private --report" if checkin else
                   "a histogram that cannot be sanitized is not published (exit status 2)"),
        "private_report": "written only with --report; never publish it",
    }
    if problem == "hide":
        meta["sensitive"] = sensitive_names
        if kw.get("r") is not None:
            meta["r"] = kw["r"]
        meta["mitigation"] = None if mitigation is None else mitigation.to_dict()
        if mitigation is not None:
            meta["guarantee"] += ("; resampled to the public size "
                                  f"{mitigation.size} for every user (randomized; see "
                                  "docs/visits.md)")
            meta["randomness"] = ("fixed --seed (experiments only: do not publish)"
                                  if seed is not None else "OS entropy")
    else:
        meta.update({"privacy_distance": kw["privacy_distance"],
                     "quality_bound": kw["quality_bound"],
                     "privacy_threshold": kw["privacy_threshold"], "target": target_kind,
                     "size": "target" if kw.get("target_size") else "histogram"})
    return meta


def _read_target(spec, tax, depth, user_column, category_column):
    """``("self", None, None)``, ``("profile", labels, values)`` or ``("per-user", ...)``."""
    from ..visits.io import is_checkin_file, read_profile

    if spec is None:
        raise ParameterError("--target is required")
    if str(spec) == "self":
        return "self", None, None
    path = Path(spec)
    if not path.exists():
        raise ParameterError(f"--target: file {str(path)!r} not found (or use 'self')")
    if is_checkin_file(path, user_column):
        return "per-user", path, None
    tl, tv = read_profile(path, what="target")
    if (tv < 0).any() or not np.isfinite(tv).all():
        raise ParameterError(f"--target {str(path)!r} has negative or non-finite values")
    return "profile", _canon(tl, tax, depth, "--target") if tl is not None else None, tv


def _per_user_targets(path, users, domain, tax, depth, user_column, category_column, source):
    """Dense per-user targets from a long file (user, category, weight)."""
    from ..io import sql
    from ..io.read import shared_sql

    from ..io.read import duckdb_read_error, read_errors
    from ..visits.io import _not_a_number

    try:
        cols = shared_sql(f"SELECT * FROM read_csv({sql.path(path)}, header=true) LIMIT 0"
                          ).columns
    except read_errors() as exc:  # DuckDB's own message quotes a row of the file
        raise duckdb_read_error(exc, path) from None
    low = {c.lower(): c for c in cols}
    val = next((low[c] for c in ("count", "weight", "value", "probability", "visits")
                if c in low), None)
    if category_column not in cols or val is None:
        raise DataError(f"a per-user target file needs columns {user_column!r}, "
                        f"{category_column!r} and a count/weight column; found {cols}",
                        path=str(path))
    try:
        rows = shared_sql(
            f"SELECT CAST({sql.ident(user_column)} AS VARCHAR), "
            f"CAST({sql.ident(category_column)} AS VARCHAR), sum(CAST({sql.ident(val)} AS "
            f"DOUBLE)) FROM read_csv({sql.path(path)}, header=true) GROUP BY 1, 2").fetchall()
    except read_errors() as exc:
        raise (None if isinstance(exc, UnicodeDecodeError) else _not_a_number(
            f"read_csv({sql.path(path)}, header=true)", val, Path(path))) or \
            duckdb_read_error(exc, path) from None
    upos = {u: i for i, u in enumerate(users)}
    labels = _canon([r[1] for r in rows], tax, depth, "--target")
    cpos = _positions(labels, domain, "--target", source, path)
    T = np.zeros((len(users), len(domain)))
    for (u, _, v), c in zip(rows, cpos):
        if v is None or not np.isfinite(v) or v < 0:
            raise DataError(f"target weight for user {u!r} must be a finite number >= 0",
                            path=str(path), column=val)
        if u in upos:
            T[upos[u], c] += v
    missing = [users[i] for i in np.flatnonzero(T.sum(axis=1) <= 0)]
    if missing:
        raise DataError(f"{len(missing)} users of the input have no target weight, e.g. "
                        f"{str(missing[0])!r}", path=str(path))
    return T


def _mitigation(resample_size, resample_mix, resample_profile, domain, tax, depth, source):
    if resample_size is None:
        if resample_mix is not None or resample_profile is not None:
            raise ParameterError("--resample-mix/--resample-profile need --resample-size")
        return None
    from ..visits.io import read_profile
    from ..visits.mitigation import Resample

    profile = None
    if resample_profile is not None:
        pl, pv = read_profile(resample_profile, what="resample profile")
        if pl is None:
            profile = pv
        else:
            if domain is None:
                raise ParameterError("--resample-profile names categories but the histogram is "
                                     "a plain list")
            profile = _on_domain(_canon(pl, tax, depth, "--resample-profile"), pv, domain,
                                 "--resample-profile", source, resample_profile)
    return Resample(size=resample_size, mix=resample_mix or 0.0, profile=profile)


# ----------------------------------------------------------------------------- runner
#: The library's names of the options of hide, resemble and avoid (its refusals name the
#: option): hide's ``distance`` is resemble's and avoid's ``quality_distance``.
OPTIONS = {"r": "--redistribute", "distance": "--distance", "quality_distance": "--distance",
           "privacy_distance": "--privacy-distance", "method": "--method",
           "quality_bound": "--quality-bound", "privacy_threshold": "--privacy-threshold",
           "resample size": "--resample-size", "resample mix": "--resample-mix",
           "seed": "--seed"}


def _run(problem: str, input_path: Path, **options):
    """Run one command; a data problem found after reading names the input file, a refused
    option value names the option."""
    from .common import naming_file

    with naming_file(input_path), options_named(OPTIONS):
        return _run_checked(problem, input_path, **options)


def _run_checked(problem: str, input_path: Path, *, output, report, sensitive, categories,
         domain_from_data, allow_unmatched, taxonomy, distance, privacy_distance, target,
         quality_bound, privacy_threshold, method, forbid_unvisited, user_column,
         category_column, rollup_depth, target_size=False, r=None, resample_size=None,
         resample_mix=None, resample_profile=None, seed=None, input_format=None,
         delimiter=None, fmt=None):
    from ..random import make_rng
    from ..visits import avoid, hide, resemble
    from ..visits.batch import load_checkins, sanitize_users
    from ..visits.hide import check_hide_distance
    from ..visits.io import is_checkin_file, read_histogram

    if not input_path.exists():
        raise ParameterError(f"input file {str(input_path)!r} not found")
    if problem == "hide":
        if not sensitive:
            raise ParameterError("--sensitive is required (category names, or bin indices)")
        check_hide_distance(distance)
    elif quality_bound is None:
        raise ParameterError("--quality-bound is required")
    if seed is not None and resample_size is None:
        raise ParameterError("--seed only fixes the randomness of --resample-size")
    tax = _taxonomy(taxonomy)
    if rollup_depth is not None and tax is None:
        raise ParameterError("--rollup-depth needs --taxonomy")
    if rollup_depth is not None:
        check_int(rollup_depth, "--rollup-depth", minimum=0)
    ropts = input_options(input_path, input_format, delimiter)
    checkin = is_checkin_file(input_path, user_column, **ropts)
    if checkin and output is None:
        raise ParameterError("--output is required for a check-in file")
    side = None
    out_fmt = None
    if fmt is not None and output is None:
        raise ParameterError("--format applies to --output (without it the published JSON is "
                             "printed)")
    if output is not None:
        from ..io.write import sidecar_path
        from .common import output_format, output_path

        output = output_path(output)
        side = sidecar_path(output)
        out_fmt = output_format(fmt, output)
    if report is not None:
        from .common import output_path

        report = output_path(report)
        if not checkin and report.suffix.lower() != ".json":
            raise ParameterError(f"--report {str(report)!r}: the report of one histogram is a "
                                 "JSON document: use a .json name")
    outs = [p for p in (output, side, report) if p is not None]
    _check_paths([input_path] + ([Path(target)] if target and str(target) != "self" else [])
                 + ([Path(resample_profile)] if resample_profile is not None else []), outs)

    # the data and the target, in canonical names
    kind, tl, tv = ("none", None, None)
    if problem != "hide":
        kind, tl, tv = _read_target(target, tax, rollup_depth, user_column, category_column)
    if checkin:
        if r is not None:
            raise ParameterError("--redistribute (SLH_r) applies to one histogram, not to a check-in file")
        if target_size:
            raise ParameterError("--target-size applies to one histogram, not to a check-in "
                                 "file")
        from ..io.read import column_names

        if input_path.suffix.lower() in (".csv", ".tsv", ".parquet", ".pq"):
            column_names(input_path, **ropts)  # refuses a file naming two columns alike
        uh = load_checkins(input_path, user_column=user_column, category_column=category_column,
                           fmt=ropts.get("format"), delimiter=ropts.get("delimiter"))
        if uh.n_users == 0:
            raise DataError("has no data rows (only a header?)", path=str(input_path))
        data_labels = _canon(uh.categories, tax, rollup_depth, "input")
        is_list = False
    else:
        if kind == "per-user":
            raise ParameterError("a per-user --target file needs a check-in input")
        try:
            labels, values = read_histogram(input_path, **ropts)
        except DataError as exc:
            if ("needs a category column" in str(exc)  # a check-in table named otherwise
                    or "is a check-in table" in str(exc)):
                what = str(exc).split(": ", 1)[1] if exc.path is not None else str(exc)
                raise DataError(f"{what}; for a check-in table (one row per visit), name its "
                                f"user column with --user-column (no column {user_column!r})",
                                path=str(input_path)) from None
            raise
        if np.asarray(values).size == 0:
            raise DataError("holds an empty histogram (no categories, no counts)",
                            path=str(input_path))
        data_labels = _canon(labels, tax, rollup_depth, "input") if labels is not None else None
        is_list = labels is None
    domain, source = _domain(categories=categories, tax=tax, depth=rollup_depth,
                             target_labels=tl if kind == "profile" else None,
                             data_labels=data_labels or [], from_data=domain_from_data,
                             is_list=is_list)
    if domain is None and kind == "profile" and tl is not None:
        raise ParameterError("--target names categories but the histogram is a plain list")

    # map everything onto the domain
    if checkin:
        remap = _positions(data_labels, domain, "input", source)
        key = np.repeat(np.arange(uh.n_users), np.diff(uh.offsets)) * len(domain) + remap[uh.cat]
        uk, inv = np.unique(key, return_inverse=True)
        uh.count = np.bincount(inv, weights=uh.count).astype(np.int64)
        users_of = uk // len(domain)
        uh.cat = uk % len(domain)
        uh.offsets = np.searchsorted(users_of, np.arange(uh.n_users + 1))
        uh.categories = list(domain)
    elif domain is not None:
        values = _on_domain(data_labels, values, domain, "input", source)
    tgt = None
    if kind == "profile":
        if tl is None:
            tgt = np.asarray(tv, dtype=np.float64)
        else:
            tgt = _on_domain(tl, tv, domain, "--target", source, target)
        if tgt.sum() <= 0:
            raise ParameterError("--target puts no weight on any category of the domain")
    elif kind == "per-user":
        tgt = _per_user_targets(Path(target), list(uh.users), domain, tax, rollup_depth,
                                user_column, category_column, source)
    elif kind == "self":
        tgt = "self"

    sens, unmatched = (None, [])
    sens_names: list[str] = []
    if problem == "hide":
        sens, unmatched = _sensitive(sensitive, domain, tax, allow_unmatched)
        sens_names = [domain[i] for i in sens] if domain is not None else sens.tolist()
        if sens.size == 0:
            status(f"note: --sensitive matched no category ({', '.join(unmatched)}); "
                   "nothing is hidden")
    mitigation = _mitigation(resample_size, resample_mix, resample_profile, domain, tax,
                             rollup_depth, source) if problem == "hide" else None
    rng = make_rng(seed=seed) if mitigation is not None else None
    kw = dict(distance=distance, forbid_unvisited=forbid_unvisited, method=method,
              privacy_distance=privacy_distance, quality_bound=quality_bound,
              privacy_threshold=privacy_threshold, r=r, target_size=target_size)
    meta = _meta(problem, domain=domain, source=source, sensitive_names=sens_names, kw=kw,
                 mitigation=mitigation, seed=seed, target_kind=kind, checkin=checkin)

    if checkin:
        skw = dict(distance=distance, forbid_unvisited=forbid_unvisited, method=method,
                   labels=domain)
        if problem == "hide":
            skw.update(mitigation=mitigation, rng=rng)
        else:
            skw.update(quality_bound=quality_bound, privacy_threshold=privacy_threshold,
                       privacy_distance=privacy_distance)
        br = sanitize_users(uh, problem=problem, sensitive=sens, target=tgt, **skw)
        items = [(output, {"__table__": br.table, "__format__": out_fmt}), (side, meta)]
        if report is not None:
            items.append((report, {"__table__": br.summary} if report.suffix.lower() != ".json"
                          else {"users": br.summary, "unmatched_sensitive": unmatched}))
        _write_files(items)
        published = int(np.unique(br.table["user"]).size)
        left = uh.n_users - published
        done({"problem": problem, "output": str(output), "sidecar": str(side),
              "report": None if report is None else str(report), "users_published": published,
              "categories": len(domain)},   # users left out: only in the private report
                                            # (the --json summary is published like the files)
             f"{problem}: {published} users published over {len(domain)} categories -> "
             f"{output} (+ {side.name})"
             + (f"; {left} user(s) left out (listed in the private report)" if left else "")
             + (f"; private report -> {report}" if report is not None else ""))
        return

    values = np.asarray(values)
    labels = domain
    if problem == "hide":
        res = hide(values, sensitive=sens, distance=distance, r=r, method=method,
                   forbid_unvisited=forbid_unvisited, labels=labels, mitigation=mitigation,
                   rng=rng)
    else:
        fn = resemble if problem == "resemble" else avoid
        res = fn(values, values if kind == "self" else tgt, quality_bound=quality_bound,
                 privacy_threshold=privacy_threshold, quality_distance=distance,
                 privacy_distance=privacy_distance, method=method,
                 size="target" if target_size else "histogram",
                 forbid_unvisited=forbid_unvisited, labels=labels)
    public = res.published()
    if output is None:
        if report is not None:
            _write_files([(report, {**res.to_dict(), "unmatched_sensitive": unmatched})])
        answer(public)
        return
    data: Any = public
    if out_fmt != "json":
        names = labels if labels is not None else [str(i) for i in range(res.histogram.size)]
        # Python strings, not numpy text (which drops a trailing NUL: "Gym\0" became "Gym")
        data = {"__table__": {"category": [str(n) for n in names],
                              "sanitized": res.histogram.astype(np.int64)},
                "__format__": out_fmt}
    items = [(output, data), (side, meta)]
    if report is not None:
        items.append((report, {**res.to_dict(), "unmatched_sensitive": unmatched}))
    _write_files(items)
    done({"problem": problem, "output": str(output), "sidecar": str(side),
          "report": None if report is None else str(report)},
         f"{problem}: published -> {output} (+ {side.name})"
         + (f"; private report -> {report}" if report is not None else ""))


# ----------------------------------------------------------------------------- commands
@app.command("hide")
@writes_files("input_path", "taxonomy", "resample_profile", "categories", "sensitive")
def hide_cmd(
    input_path: Path = INPUT,
    sensitive: List[str] = typer.Option([], "--sensitive", "-s",
                                        help="Sensitive category (repeat or comma-separate, or "
                                             "@FILE); with --taxonomy an internal node hides "
                                             "every place below it."),
    taxonomy: Optional[str] = TAXONOMY,
    categories: Optional[str] = CATEGORIES,
    domain_from_data: bool = FROM_DATA,
    allow_unmatched: bool = UNMATCHED,
    distance: str = DISTANCE,
    r: Optional[int] = typer.Option(None, "--redistribute", help="SLH_r: redistribute r visits instead of "
                                                      "all sensitive ones."),
    method: str = typer.Option("auto", "--method", help="auto, lho (min-plus DP) or convex "
                                                        "(greedy fast path); both exact."),
    forbid_unvisited: bool = FORBID,
    resample_size: Optional[int] = typer.Option(
        None, "--resample-size", help="Mitigation: resample every user's sanitized histogram "
                                      "to this public size (randomized; closes the size "
                                      "channel). Default: off (the paper's LHO)."),
    resample_mix: Optional[float] = typer.Option(
        None, "--resample-mix", help="Mitigation: share in [0, 1) of the mass moved to the "
                                     "public profile before resampling (default 0)."),
    resample_profile: Optional[Path] = typer.Option(
        None, "--resample-profile", help="Mitigation: public profile for --resample-mix "
                                         "(default: uniform over the non-sensitive categories)."),
    seed: Optional[int] = SEED,
    output: Optional[Path] = OUT,
    fmt: Optional[str] = OUTPUT_FORMAT,
    report: Optional[Path] = REPORT,
    user_column: str = USER_COL,
    category_column: str = CAT_COL,
    rollup_depth: Optional[int] = ROLLUP,
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
    force: bool = FORCE,
) -> None:
    """SLH: zero the sensitive places and redistribute their visits with the least quality loss."""
    _run("hide", input_path, output=output, report=report, sensitive=sensitive,
         categories=categories, domain_from_data=domain_from_data,
         allow_unmatched=allow_unmatched, taxonomy=taxonomy, distance=distance,
         privacy_distance="js", target=None, quality_bound=None, privacy_threshold=None,
         method=method, forbid_unvisited=forbid_unvisited, user_column=user_column,
         category_column=category_column, rollup_depth=rollup_depth, r=r,
         resample_size=resample_size, resample_mix=resample_mix,
         resample_profile=resample_profile, seed=seed, input_format=input_format,
         delimiter=delimiter, fmt=fmt)


def _tr_ta(problem):
    def cmd(
        input_path: Path = INPUT,
        target: str = typer.Option(..., "--target",
                                   help="Target profile: JSON {category: weight} or CSV "
                                        "category,count; a file with the --user-column gives "
                                        "one target per user; 'self' = each user's own "
                                        "histogram."),
        quality_bound: float = typer.Option(..., "--quality-bound", help="eps: largest "
                                                                         "acceptable d_q(H, H')."),
        privacy_threshold: Optional[float] = typer.Option(
            None, "--privacy-threshold", help="c: fail (exit 2) unless d_p(H', target) "
                                              + ("<= c." if problem == "resemble" else ">= c.")),
        distance: str = DISTANCE,
        privacy_distance: str = typer.Option("js", "--privacy-distance", help="Privacy "
                                                                              "distance d_p."),
        method: str = typer.Option("auto", "--method", help="auto (exact within limits, else "
                                                            "heuristic), exact, heuristic."),
        target_size: bool = typer.Option(False, "--target-size", help="Give H' the target's "
                                                                      "size (variant |H''|)."),
        taxonomy: Optional[str] = TAXONOMY,
        categories: Optional[str] = CATEGORIES,
        domain_from_data: bool = FROM_DATA,
        forbid_unvisited: bool = FORBID,
        output: Optional[Path] = OUT,
        fmt: Optional[str] = OUTPUT_FORMAT,
        report: Optional[Path] = REPORT,
        user_column: str = USER_COL,
        category_column: str = CAT_COL,
        rollup_depth: Optional[int] = ROLLUP,
        input_format: Optional[str] = INPUT_FORMAT,
        delimiter: Optional[str] = DELIMITER,
        force: bool = FORCE,
    ) -> None:
        _run(problem, input_path, output=output, report=report, sensitive=None,
             categories=categories, domain_from_data=domain_from_data, allow_unmatched=False,
             taxonomy=taxonomy, distance=distance, privacy_distance=privacy_distance,
             target=target, quality_bound=quality_bound, privacy_threshold=privacy_threshold,
             method=method, forbid_unvisited=forbid_unvisited, user_column=user_column,
             category_column=category_column, rollup_depth=rollup_depth,
             target_size=target_size, input_format=input_format, delimiter=delimiter,
             fmt=fmt)

    cmd.__doc__ = ("TR: the histogram closest to the target within the quality bound (RO exact, "
                   "RH heuristic; gap to the Lagrangian bound in the private report)."
                   if problem == "resemble"
                   else "TA: the histogram farthest from the target within the quality bound (AO "
                        "exact, AH heuristic; gap to the Lagrangian bound in the private "
                        "report).")
    return cmd


app.command("resemble")(writes_files("input_path", "target", "taxonomy")(_tr_ta("resemble")))
app.command("avoid")(writes_files("input_path", "target", "taxonomy")(_tr_ta("avoid")))


def bench(
    quick: bool = typer.Option(False, "--quick", help="Smaller sizes."),
    adversary: bool = typer.Option(False, "--adversary",
                                   help="Only the measured adversary on the NYC weekly "
                                        "histograms (LHO vs the resample mitigation)."),
) -> None:
    """Speed and real-data benchmark of veil.visits (benchmarks/visits.py)."""
    import runpy
    import sys

    root = Path(__file__).resolve().parents[3]
    script = root / "benchmarks" / "visits.py"
    if not script.exists():
        raise ParameterError(f"benchmark script {script} not found (run from a source checkout)")
    sys.argv = ([str(script)] + (["--quick"] if quick else [])
                + (["--only", "h"] if adversary else []))
    import contextlib
    import io

    from .common import json_mode

    if not json_mode():
        runpy.run_path(str(script), run_name="__main__")
        return
    # the script prints its tables: with --json they become the answer's lines (and stderr)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        runpy.run_path(str(script), run_name="__main__")
    lines = buf.getvalue().splitlines()
    for line in lines:
        status(line)
    answer({"benchmark": str(script), "quick": bool(quick), "adversary": bool(adversary),
            "lines": lines})
