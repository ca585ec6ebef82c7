"""``veil budget``: the privacy ledger (declared totals, what was spent, interrupted runs)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Optional

import typer

from .common import DELIMITER, INPUT_FORMAT, LEDGER, answer, done, json_mode, status

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="The privacy ledger: declared totals and what was spent.")

DATA = typer.Argument(..., help="The dataset: a CSV/Parquet/JSON file (or a GeoLife .plt "
                      "track), any copy or format of it, or a dataset id from `veil budget "
                      "show`.", show_default=False)


def identity_of(path: Path, input_format: Optional[str], delimiter: Optional[str]):
    """The identity of DATA, read the way the DP commands read it."""
    from ..identity import identity_of_file, identity_of_table

    if path.suffix.lower() == ".plt":
        from ..geo.temporal.io import read_track

        tr = read_track(path)
        return identity_of_table({"time": tr.t, "lat": tr.lat, "lon": tr.lon}, label=str(path))
    return identity_of_file(path, format=input_format, delimiter=delimiter)


def _dataset(led, data: str, input_format, delimiter):
    """(dataset id or None, identity or None) for a path or an id prefix."""
    p = Path(data)
    if p.exists():
        ident = identity_of(p, input_format, delimiter)
        return led.find(ident), ident
    return led.lookup(data), None


def _words(budget: str) -> str:
    return {"epsilon": "epsilon", "epsilon_per_metre": "epsilon per metre"}[budget]


def _describe(s) -> list[str]:
    from ..ledger import BUDGETS

    lines = [f"dataset {s.id[:12]}  {s.label}"]
    others = [n for n in s.names if n != s.label]
    if others:
        lines.append(f"  also seen as: {', '.join(others)}")
    for b in BUDGETS:
        total = s.totals[b]
        used = s.spent[b] + s.reserved[b]
        if total is None and used == 0:
            continue
        units = sorted(s.units[b])
        tot = "not declared (one release allowed)" if total is None else f"{total:.6g}"
        rem = "" if total is None else f", remaining {s.remaining(b):.6g}"
        res = f", reserved {s.reserved[b]:.6g} by unfinished runs" if s.reserved[b] else ""
        lines.append(f"  {_words(b)}: total {tot}, spent {s.spent[b]:.6g}{res}{rem}"
                     f"{' (per ' + ' and per '.join(units) + ')' if units else ''}")
        if len(units) > 1:
            lines.append("    mixed units: the total bounds the per-record loss; per user it "
                         "holds only if each person contributed one record to the record-level "
                         "releases")
    for e in s.entries:
        outs = ", ".join(Path(o).name for o in e["outputs"]) or "-"
        state = {"committed": "spent", "reserved": "RESERVED", "released": "released"}[e["state"]]
        lines.append(f"  {e['created']}  {e['id']}  {state:8s}  {_words(e['budget'])} "
                     f"{e['amount']:.6g} per {e['unit']}  {e['command']}  -> {outs}")
        if e["state"] == "reserved":
            lines.append(f"    not committed (interrupted?): if {outs} was never published, "
                         f"`veil budget release {e['id']}` cancels it")
    return lines


@app.command("set")
def set_cmd(
    data: str = DATA,
    total: Optional[float] = typer.Option(None, "--total", help="Total pure-DP epsilon this "
                                          "dataset may ever spend, summed over every release."),
    total_per_metre: Optional[float] = typer.Option(
        None, "--total-per-metre", help="Total geo-indistinguishability budget (epsilon per "
                                        "metre) for `veil location obfuscate` releases."),
    raise_total: bool = typer.Option(False, "--raise", help="Allow raising a total that was "
                                     "already declared (a decision about these people's "
                                     "privacy: say it explicitly)."),
    ledger: Optional[Path] = LEDGER,
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
) -> None:
    """Declare the total budget of a dataset (every copy and format of its rows).

    Example: veil budget set census.csv --total 4
    """
    from ..errors import ParameterError
    from ..ledger import Ledger, check_other_ledgers, ledger_path
    from ..validation import check_epsilon

    # the totals are checked before the ledger is opened (a refused --total -1 created it)
    if total is None and total_per_metre is None:
        raise ParameterError("give --total (epsilon) and/or --total-per-metre")
    for value, opt in ((total, "--total"), (total_per_metre, "--total-per-metre")):
        if value is not None:
            check_epsilon(value, opt)
    path = ledger_path(ledger)
    p = Path(data)
    if not p.exists():
        from ..errors import DataError

        raise DataError("no such file (give the data file whose total to declare)", path=data)
    ident = identity_of(p, input_format, delimiter)
    check_other_ledgers(ident, None, path, data)
    with contextlib.closing(Ledger(path)) as led:
        s = led.set_total(ident, total=total, total_per_metre=total_per_metre,
                          raise_total=raise_total, label=data)
    done({"ledger": str(path), "dataset": s.to_dict()}, "\n".join(_describe(s)))


@app.command("show")
def show_cmd(
    data: Optional[str] = typer.Argument(None, help="A dataset (file or id); default: all.",
                                         show_default=False),
    ledger: Optional[Path] = LEDGER,
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
) -> None:
    """What was spent on what, when, by which command (and runs that did not finish).

    Example: veil budget show census.csv
    """
    from ..ledger import Ledger, ledger_path, legacy_note

    path = ledger_path(ledger)
    if legacy_note():
        status(legacy_note())
    if not path.exists():
        answer({"ledger": str(path), "datasets": []},
               f"ledger {path}: empty (no release recorded yet)")
        return
    with contextlib.closing(Ledger(path)) as led:
        if data is None:
            ids = led.datasets()
        else:
            ds, _ = _dataset(led, data, input_format, delimiter)
            if ds is None:
                answer({"ledger": str(path), "datasets": []},
                       f"ledger {path}: nothing recorded for {data}")
                return
            ids = [ds]
        summaries = [led.summary(i) for i in ids]
        events = {i: led.events(i) for i in ids}
    if json_mode():
        answer({"ledger": str(path),
                "datasets": [json.loads(json.dumps(dict(s.to_dict(), events=events[s.id]),
                                                   default=str)) for s in summaries]})
        return
    lines = [f"ledger {path}: {len(summaries)} dataset(s)"]
    for s in summaries:
        lines.extend(_describe(s))
    answer(None, "\n".join(lines))


@app.command("release")
def release_cmd(
    reservation: str = typer.Argument(..., help="The reservation id shown by `veil budget "
                                      "show` (RESERVED entries).", show_default=False),
    ledger: Optional[Path] = LEDGER,
    force: bool = typer.Option(False, "--force", help="Cancel even though the reservation's "
                               "output exists (only if it was never published)."),
) -> None:
    """Cancel a reservation left by a run that did not finish (its budget comes back).

    Refused while the run's output exists (it may have been published) and for committed
    releases (spent budget never comes back).

    Example: veil budget release 3f2a9c1b7d4e
    """
    from ..ledger import Ledger, ledger_path

    path = ledger_path(ledger)
    if not path.exists():
        from ..errors import ParameterError

        raise ParameterError(f"ledger {path} does not exist: nothing to release")
    with contextlib.closing(Ledger(path)) as led:
        e = led.cancel(reservation, force=force, why="veil budget release")
    already = e["state"] == "released"  # the entry as it was before this command
    done({"released": e["id"], "budget": e["budget"], "amount": float(e["amount"]),
          "input": e["input"], "already_released": already},
         f"reservation {e['id']} was already released: nothing changed" if already else
         f"released reservation {e['id']}: {_words(e['budget'])} {e['amount']:.6g} of "
         f"{e['input']} is available again")
