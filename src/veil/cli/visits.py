"""``veil visits hide|resemble|avoid``: sanitize one histogram or every user of a check-in file.

Input is either one histogram (JSON ``{"category": count}`` / a list, or CSV
``category,count``) or a check-in table with a user column (CSV, TSV, Parquet,
JSON), which is sanitized user by user. These are deterministic optimisations,
not differential privacy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import numpy as np
import typer

from ..errors import ParameterError

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Sanitize location-visit histograms: hide sensitive places, resemble or "
                       "avoid a target profile (deterministic, not differential privacy).")
BENCH_NAME = "visits"

INPUT = typer.Argument(..., help="One histogram (JSON/CSV category,count) or a check-in file "
                                 "with a user column (CSV/TSV/Parquet).")
OUT = typer.Option(None, "--output", "-o", help="Output file (.json/.csv/.parquet), written "
                                               "atomically; default: JSON on stdout (one "
                                               "histogram only).")
SUMMARY = typer.Option(None, "--summary", help="Per-user summary file (check-in input); default "
                                               "OUTPUT with '.summary' before the extension.")
TAXONOMY = typer.Option(None, "--taxonomy", help="Category tree (.json/.csv) or 'foursquare' for "
                                                 "the shared Foursquare v2 tree (with the 2012 "
                                                 "name aliases).")
DISTANCE = typer.Option("js", "--distance", help="Quality distance d_q: js, kl, l1, l2, chi2, "
                                                 "hellinger.")
USER_COL = typer.Option("user", "--user-column", help="User column of a check-in file.")
CAT_COL = typer.Option("category", "--category-column", help="Category column of a check-in "
                                                             "file.")
FORBID = typer.Option(False, "--forbid-unvisited", help="Never add visits to places the user "
                                                       "never visited.")
ROLLUP = typer.Option(None, "--rollup-depth", help="With --taxonomy: map every category (input "
                                                   "and target) to its ancestor at this depth "
                                                   "(0 = roots) before solving.")


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


def _canon(labels, tax, depth):
    """Canonical names through the taxonomy (aliases, optional roll-up); unknown names kept."""
    if tax is None or labels is None:
        if depth is not None:
            raise ParameterError("--rollup-depth needs --taxonomy")
        return labels
    canon, _ = tax.match_labels(labels)
    out = []
    for lab, c in zip(labels, canon):
        if c is None:
            out.append(lab)
        else:
            out.append(tax.ancestor(c, depth) if depth is not None else c)
    return out


def _merge(labels, values):
    """Sum values of equal labels (after a roll-up); keep first-seen order."""
    pos: dict[str, int] = {}
    out: list[float] = []
    for lab, v in zip(labels, values):
        if lab in pos:
            out[pos[lab]] += v
        else:
            pos[lab] = len(out)
            out.append(v)
    return list(pos), np.asarray(out)


def _sensitive_mask(labels, names, tax):
    from ..visits.hide import resolve_bins

    if not names:
        return np.zeros(len(labels), dtype=bool)
    flat = [s.strip() for n in names for s in n.split(",") if s.strip()]
    if tax is not None:
        return tax.sensitive_mask(labels, flat)
    if labels is None:
        try:
            ints = [int(x) for x in flat]
        except ValueError:
            raise ParameterError("--sensitive names bins but the histogram has no category "
                                 "names; give bin indices or a labeled histogram") from None
        return ints
    return resolve_bins(flat, len(labels), labels, "--sensitive")


def _coarser_hint(labels, names, tax) -> str:
    """Suggest the ancestor when the data's categories are coarser than the selected nodes."""
    if tax is None:
        return ""
    flat = [s.strip() for n in names for s in n.split(",") if s.strip()]
    labs = set(labels)
    hits = set()
    for nm in flat:
        node = tax.resolve(nm)
        for d in range(int(tax.depth[tax.index[node]]) - 1, -1, -1):
            anc = tax.ancestor(node, d)
            if anc in labs:
                hits.add(anc)
                break
    if not hits:
        return ""
    return ("; the data's categories are coarser than the selection: its ancestor(s) "
            f"{sorted(hits)} are in the data (select those to hide the whole category)")


def _target(path, labels, tax, depth):
    from ..visits.batch import align_target
    from ..visits.io import read_profile

    if path is None:
        raise ParameterError("--target is required")
    tl, tv = read_profile(path, what="target")
    if (tv < 0).any() or not np.isfinite(tv).all():
        raise ParameterError(f"--target {str(path)!r} has negative or non-finite values")
    if tl is None or labels is None:
        if (tl is None) != (labels is None):
            raise ParameterError("--target and the histogram must both name their categories or "
                                 "both be plain lists")
        return labels, tv
    tl = _canon(tl, tax, depth)
    tl, tv = _merge(tl, tv)
    return align_target(tl, tv, labels)  # (domain, target)


ORIGINAL = typer.Option(False, "--include-original",
                        help="Also write the original counts next to the sanitized ones (for "
                             "analysis only: never publish such a file).")


def _public_dict(res, include_original: bool) -> dict:
    d = res.to_dict()
    if not include_original:
        d.pop("original", None)
        d.pop("original_size", None)
    return d


def _write_single(res, output: Optional[Path], include_original: bool = False):
    from ..visits.batch import write_table

    if output is None:
        typer.echo(json.dumps(_public_dict(res, include_original), indent=2))
        return
    from .common import output_path

    output = output_path(output)
    ext = output.suffix.lower().lstrip(".")
    if ext == "json":
        from ..io import write_json

        write_json(_public_dict(res, include_original), output)
    else:
        labels = res.labels or [str(i) for i in range(res.histogram.size)]
        cols = {"category": np.asarray(labels), "original": res.original,
                "sanitized": res.histogram}
        if not include_original:
            del cols["original"]
        write_table(cols, output)
    typer.echo(f"{res.problem}: {res.algorithm} quality_loss={res.quality_loss:.6g}"
               + (f" privacy={res.privacy_value:.6g} gap={res.gap:.3g}"
                  if res.privacy_value is not None else "") + f" -> {output}", err=True)


def _run(problem: str, input_path: Path, *, output, summary, sensitive, taxonomy, distance,
         privacy_distance, target, quality_bound, privacy_threshold, method, forbid_unvisited,
         user_column, category_column, rollup_depth, target_size=False, r=None,
         include_original=False):
    from ..visits import avoid, hide, resemble
    from ..visits.batch import load_checkins, sanitize_users, write_table
    from ..visits.io import is_checkin_file, read_histogram

    if not input_path.exists():
        raise ParameterError(f"input file {str(input_path)!r} not found")
    tax = _taxonomy(taxonomy)
    if problem == "hide" and not sensitive:
        raise ParameterError("--sensitive is required (category names, or bin indices)")
    if problem != "hide" and quality_bound is None:
        raise ParameterError("--quality-bound is required")
    if is_checkin_file(input_path, user_column):
        if output is None:
            raise ParameterError("--output is required for a check-in file")
        if r is not None:
            raise ParameterError("--r (SLH_r) applies to one histogram, not to a check-in file")
        if target_size:
            raise ParameterError("--target-size applies to one histogram, not to a check-in "
                                 "file")
        from .common import output_path

        output = output_path(output)
        uh = load_checkins(input_path, user_column=user_column, category_column=category_column)
        labels = _canon(uh.categories, tax, rollup_depth)
        if labels != uh.categories:  # merge categories that became equal
            newl, _ = _merge(labels, np.zeros(len(labels)))
            pos = {nm: i for i, nm in enumerate(newl)}
            remap = np.array([pos[x] for x in labels], dtype=np.int64)
            uh.cat = remap[uh.cat]
            uh.categories = newl
            # re-aggregate duplicate (user, category) rows
            key = np.repeat(np.arange(uh.n_users), np.diff(uh.offsets)) * len(newl) + uh.cat
            uk, inv = np.unique(key, return_inverse=True)
            cnt = np.bincount(inv, weights=uh.count).astype(np.int64)
            users_of = uk // len(newl)
            uh.cat = uk % len(newl)
            uh.count = cnt
            uh.offsets = np.searchsorted(users_of, np.arange(uh.n_users + 1))
            labels = newl
        sens = None
        if problem == "hide":
            sens = np.flatnonzero(np.asarray(_sensitive_mask(labels, sensitive, tax)))
            if sens.size == 0:
                raise ParameterError("--sensitive matched no category of the file "
                                     f"({len(labels)} categories): nothing to hide"
                                     + _coarser_hint(labels, sensitive, tax))
        tgt = None
        if problem != "hide":
            domain, tgt = _target(target, labels, tax, rollup_depth)
            if len(domain) > len(labels):
                uh.categories = domain
            labels = domain
        kw = dict(distance=distance, forbid_unvisited=forbid_unvisited, method=method,
                  labels=labels)
        if problem != "hide":
            kw.update(quality_bound=quality_bound, privacy_threshold=privacy_threshold,
                      privacy_distance=privacy_distance)
        br = sanitize_users(uh, problem=problem, sensitive=sens, target=tgt, **kw)
        summ = summary or output.with_name(output.stem + ".summary" + (output.suffix or ".csv"))
        table = br.table if include_original else {k: v for k, v in br.table.items()
                                                    if k != "original"}
        write_table(table, output)
        write_table(br.summary, summ)
        typer.echo(f"{problem}: {uh.n_users} users in {br.runtime_s:.2f} s, status "
                   f"{br.status_counts()} -> {output}, {summ}", err=True)
        return
    labels, values = read_histogram(input_path)
    labels = _canon(labels, tax, rollup_depth) if labels is not None else None
    if labels is not None:
        labels, values = _merge(labels, values)
    if problem == "hide":
        sens = _sensitive_mask(labels, sensitive, tax)
        if labels is not None and tax is not None and not np.asarray(sens).any():
            raise ParameterError("--sensitive matched no category of the histogram: nothing "
                                 "to hide" + _coarser_hint(labels, sensitive, tax))
        res = hide(values, sensitive=sens, distance=distance, r=r, method=method,
                   forbid_unvisited=forbid_unvisited, labels=labels)
    else:
        domain, tgt = _target(target, labels, tax, rollup_depth)
        if labels is not None and len(domain) > len(labels):
            values = np.concatenate([values, np.zeros(len(domain) - len(labels))])
        labels = domain
        fn = resemble if problem == "resemble" else avoid
        res = fn(values, tgt, quality_bound=quality_bound, privacy_threshold=privacy_threshold,
                 quality_distance=distance, privacy_distance=privacy_distance, method=method,
                 size="target" if target_size else "histogram",
                 forbid_unvisited=forbid_unvisited, labels=labels)
    _write_single(res, output, include_original)


@app.command("hide")
def hide_cmd(
    input_path: Path = INPUT,
    sensitive: List[str] = typer.Option([], "--sensitive", "-s",
                                        help="Sensitive category (repeat or comma-separate); "
                                             "with --taxonomy an internal node hides every "
                                             "place below it."),
    taxonomy: Optional[str] = TAXONOMY,
    distance: str = DISTANCE,
    r: Optional[int] = typer.Option(None, "--r", help="SLH_r: redistribute r visits instead of "
                                                      "all sensitive ones."),
    method: str = typer.Option("auto", "--method", help="auto, lho (min-plus DP) or convex "
                                                        "(greedy fast path); both exact."),
    forbid_unvisited: bool = FORBID,
    output: Optional[Path] = OUT,
    summary: Optional[Path] = SUMMARY,
    user_column: str = USER_COL,
    category_column: str = CAT_COL,
    rollup_depth: Optional[int] = ROLLUP,
    include_original: bool = ORIGINAL,
) -> None:
    """SLH: zero the sensitive places and redistribute their visits with the least quality loss."""
    _run("hide", input_path, output=output, summary=summary, sensitive=sensitive,
         taxonomy=taxonomy, distance=distance, privacy_distance="js", target=None,
         quality_bound=None, privacy_threshold=None, method=method,
         forbid_unvisited=forbid_unvisited, user_column=user_column,
         category_column=category_column, rollup_depth=rollup_depth, r=r,
         include_original=include_original)


def _tr_ta(problem):
    def cmd(
        input_path: Path = INPUT,
        target: Path = typer.Option(..., "--target", help="Target profile: JSON {category: "
                                                          "weight} or CSV category,count."),
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
        forbid_unvisited: bool = FORBID,
        output: Optional[Path] = OUT,
        summary: Optional[Path] = SUMMARY,
        user_column: str = USER_COL,
        category_column: str = CAT_COL,
        rollup_depth: Optional[int] = ROLLUP,
        include_original: bool = ORIGINAL,
    ) -> None:
        _run(problem, input_path, output=output, summary=summary, sensitive=None,
             taxonomy=taxonomy, distance=distance, privacy_distance=privacy_distance,
             target=target, quality_bound=quality_bound, privacy_threshold=privacy_threshold,
             method=method, forbid_unvisited=forbid_unvisited, user_column=user_column,
             category_column=category_column, rollup_depth=rollup_depth,
             target_size=target_size, include_original=include_original)

    cmd.__doc__ = ("TR: the histogram closest to the target within the quality bound (RO exact, "
                   "RH heuristic; gap to the Lagrangian bound reported)." if problem == "resemble"
                   else "TA: the histogram farthest from the target within the quality bound (AO "
                        "exact, AH heuristic; gap to the Lagrangian bound reported).")
    return cmd


app.command("resemble")(_tr_ta("resemble"))
app.command("avoid")(_tr_ta("avoid"))


def bench(
    quick: bool = typer.Option(False, "--quick", help="Smaller sizes."),
) -> None:
    """Speed and real-data benchmark of veil.visits (benchmarks/visits.py)."""
    import runpy

    root = Path(__file__).resolve().parents[3]
    script = root / "benchmarks" / "visits.py"
    if not script.exists():
        raise ParameterError(f"benchmark script {script} not found (run from a source checkout)")
    import sys

    sys.argv = [str(script)] + (["--quick"] if quick else [])
    runpy.run_path(str(script), run_name="__main__")
