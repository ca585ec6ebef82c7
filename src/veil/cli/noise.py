"""``veil noise``: generic noise mechanisms applied to one column of a file.

These commands exercise the whole pipeline (read with schema checks, add noise,
write the output and its sidecar atomically) before the capability-specific
commands exist, and stay useful for one-off releases of a column of counts.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

import typer

from .common import (DELIMITER, EPSILON, FORCE, INPUT, INPUT_FORMAT, LEDGER, OUTPUT,
                     OUTPUT_FORMAT, SEED, SPEND_AGAIN, check_epsilon_option, echo_release,
                     options_named, output_format, output_path, read_input, write_output,
                     writes_files)

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Generic noise mechanisms on a column of a file (geometric for counts).")


@app.command("counts")
@writes_files("input")
@options_named({"epsilon": "--epsilon", "sensitivity": "--sensitivity", "seed": "--seed"})
def counts(
    input: Path = INPUT,
    column: str = typer.Option(..., "--column", "-c",
                               help="Column of non-negative integer counts to protect."),
    epsilon: float = EPSILON,
    output: Path = OUTPUT,
    fmt: Optional[str] = OUTPUT_FORMAT,
    sensitivity: float = typer.Option(
        1.0, "--sensitivity",
        help="L1 sensitivity: the most one individual can change the column in total "
             "(1 for a histogram where each person is counted once)."),
    nonnegative: bool = typer.Option(
        False, "--nonnegative",
        help="Clamp noisy counts at 0 (post-processing: costs no budget, adds bias)."),
    input_format: Optional[str] = INPUT_FORMAT,
    delimiter: Optional[str] = DELIMITER,
    seed: Optional[int] = SEED,
    force: bool = FORCE,
    spend_again: bool = SPEND_AGAIN,
    ledger: Optional[Path] = LEDGER,
) -> None:
    """Add exact discrete Laplace (geometric) noise to a column of counts.

    The column is read and checked (integers >= 0, no missing cells), noise with
    scale sensitivity/epsilon is added to every row, and the table (other columns
    unchanged) is written to OUTPUT with a OUTPUT.meta.json sidecar stating the
    mechanism, epsilon and noise scale. The result is epsilon-DP when one
    individual changes the column by at most --sensitivity in L1 norm.

    Example: veil noise counts hist.csv --column count --epsilon 1 -o noisy.csv
    """
    import numpy as np
    import pyarrow as pa

    from ..mechanisms import geometric_mechanism
    from ..random import make_rng
    from ..validation import check_positive

    from .common import check_column_option

    eps = check_epsilon_option(epsilon)
    check_column_option(column, "--column")
    sens = check_positive(sensitivity, "--sensitivity")
    out = output_path(output)
    out_fmt = output_format(fmt, out)
    from .common import stages

    # progress on a terminal (5 x 10^6 rows took 23 s with nothing shown)
    with stages() as show:
        show(f"{Path(input).name}: reading column {column}")
        table = read_input(input, columns={column: "count"}, input_format=input_format,
                           delimiter=delimiter, keep_others=True)
        values = table.column(column).to_numpy()
        from ..errors import DataError
        from ..mechanisms import GEOMETRIC_MAX_VALUE

        over = np.flatnonzero(values > GEOMETRIC_MAX_VALUE)
        if over.size:  # before the charge; the noisy counts are 64-bit integers
            raise DataError(f"{int(values[over[0]])} is above 2**62, the largest count the "
                            f"geometric mechanism takes (the noisy counts are 64-bit integers)",
                            path=str(input), row=int(over[0]) + 1, column=column)
        from ..io import sidecar_path
        from ..ledger import charge

        show(f"{Path(input).name}: content identity for the privacy ledger (one pass)")
        charge(input, amount=eps, unit="record", read=[column], outputs=[out, sidecar_path(out)],
               format=input_format, delimiter=delimiter)
        show("geometric mechanism")
        rel = geometric_mechanism(values, epsilon=eps, sensitivity=sens, rng=make_rng(seed=seed))
        noisy = np.asarray(rel.value, dtype=np.int64)
        notes = list(rel.notes)
        if nonnegative:
            noisy = np.maximum(noisy, 0)
            notes.append("noisy counts clamped at 0 (post-processing)")
        if seed is not None:
            notes.append("produced with a fixed --seed: for experiments only, do not publish")
        idx = table.column_names.index(column)
        result = table.set_column(idx, column, pa.array(noisy, type=pa.int64()))
        rel = dataclasses.replace(
            rel, value=result, notes=tuple(notes),
            parameters={**rel.parameters, "column": column, "input": str(input),
                        "nonnegative": nonnegative, "rows": int(len(noisy))})
        show(f"writing {out.name}")
        data, meta = write_output(rel, out, out_fmt)
    echo_release(rel, data, meta)
