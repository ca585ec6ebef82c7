"""Re-identification risk of a table: prosecutor, journalist, marketer; uniqueness.

The definitions are El Emam's, as ARX reports them ("Guide to the
De-Identification of Personal Health Information"). Rows are grouped into
*equivalence classes* by their quasi-identifier (QI) text; a class of the
table has ``f`` rows, and the same QI tuple has ``F`` rows in the population
(``F = f`` when no population is given: the table is its own population, the
worst case, ``F >= f``). Rows whose every QI cell is the suppression marker
are *suppressed*: they are left out, as ARX does (they match every tuple
and no one in particular).

* **prosecutor** (the attacker knows the person is in the table): a row's
  risk is ``1/f``. *highest* = ``1/min f``; *records at risk* = share of rows
  with ``1/f > threshold``; *success rate* (average risk) = classes / rows;
* **journalist** (the attacker matches against a population register):
  a row's risk is ``1/F``. *highest* = ``1/min F``; *records at risk* as
  above with ``F``; *success rate* = ``max(classes / sum F, mean f/F)``;
* **marketer** (the attacker re-identifies as many rows as possible):
  *success rate* = ``(1/n) sum_j f_j / F_j``;
* **uniqueness**: *sample uniques* = share of rows in classes of size 1;
  *population uniques*: with a population table, the share of its rows that
  are unique in it; else, with a sampling fraction ``pi`` (the table is a
  sample of ``n / pi`` people), Zayatz's (1991) estimate: the share of sample
  uniques that are population uniques is
  ``c1 H(1; 1) / sum_i c_i H(1; i)`` (``c_i`` classes of size ``i``, ``H(1; i)``
  the hypergeometric probability that a population class of size ``i`` shows
  one row in a sample of ``n`` out of ``n / pi``), and population uniques are
  ``c1 * that / pi`` out of ``n / pi``. Without either, ``pi = 1``.

Risk is computed from the published text only, so it can be reported next
to a published table (the risk of the *input* belongs in the private report).

Examples
--------
>>> import pandas as pd
>>> t = pd.DataFrame({"age": ["30", "30", "31", "32", "32", "32"], "sex": ["F"] * 6})
>>> r = reidentification_risk(t, ["age", "sex"])
>>> r["prosecutor"]["highest"], round(r["prosecutor"]["success_rate"], 3)
(1.0, 0.5)
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import DataError, ParameterError
from .data import as_columns, cell_text

__all__ = ["reidentification_risk", "class_sizes", "format_risk"]


def class_sizes(table: Any, qi: Sequence[str], *, marker: str = "*"
                ) -> tuple[np.ndarray, list[tuple[str, ...]], int]:
    """Sizes of the QI classes (suppressed rows left out), their tuples, suppressed rows."""
    cols = as_columns(table)
    qi = _check_qi(qi, cols)
    text = [cell_text(cols[a], name=a) for a in qi]
    if not text or len(text[0]) == 0:
        raise DataError("the table has no rows")
    stacked = np.stack([t.astype(str) for t in text], axis=1)
    supp = np.all(stacked == marker, axis=1)
    kept = stacked[~supp]
    if kept.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), [], int(supp.sum())
    uniq, counts = np.unique(kept, axis=0, return_counts=True)
    return counts.astype(np.int64), [tuple(r) for r in uniq.tolist()], int(supp.sum())


def _check_qi(qi, cols) -> list[str]:
    if isinstance(qi, str):
        qi = [s.strip() for s in qi.split(",") if s.strip()]
    qi = [str(a) for a in qi]
    if not qi:
        raise ParameterError("qi must name at least one column")
    missing = [a for a in qi if a not in cols]
    if missing:
        raise ParameterError(f"qi columns {missing} are not in the table (columns: "
                             f"{', '.join(cols)})")
    if len(set(qi)) != len(qi):
        raise ParameterError(f"qi lists a column twice: {qi}")
    return qi


def _zayatz(sizes: np.ndarray, pi: float) -> tuple[float, float]:
    """(share of sample rows that are population uniques, share of population that is unique)."""
    from scipy.stats import hypergeom

    n = int(sizes.sum())
    c = np.bincount(sizes)
    c1 = int(c[1]) if len(c) > 1 else 0
    if c1 == 0 or n == 0:
        return 0.0, 0.0
    N = max(int(round(n / pi)), n)
    i = np.flatnonzero(c)
    i = i[i > 0]
    w = hypergeom.pmf(1, N, i, n)
    denom = float((c[i] * w).sum())
    cond = float(c1 * hypergeom.pmf(1, N, 1, n)) / denom if denom > 0 else 0.0
    uniques_sample = c1 * cond
    return uniques_sample / n, (uniques_sample / pi) / N


def reidentification_risk(table: Any, qi: Sequence[str] | str, *, population: Any = None,
                          sampling_fraction: float | None = None, threshold: float = 0.2,
                          marker: str = "*") -> dict[str, Any]:
    """Prosecutor, journalist and marketer risk and uniqueness (module docstring).

    Parameters
    ----------
    table : DataFrame, pyarrow Table, TextTable or mapping of columns
    qi : list of str or comma-separated str
    population : table, optional
        A population table with the same QI columns in the same representation
        (for an anonymized table: generalized the same way).
    sampling_fraction : float in (0, 1], optional
        Share of the population in the table, for the uniqueness estimate when no
        population table is given.
    threshold : float in (0, 1]
        Highest acceptable risk of one record (for "records at risk").
    marker : str
        Rows with this text in every QI cell are suppressed (left out).

    Returns
    -------
    dict
        ``records``, ``suppressed_records``, ``classes``, ``prosecutor``,
        ``journalist``, ``marketer``, ``uniqueness`` (see the module docstring).
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) \
            or not 0 < threshold <= 1:
        raise ParameterError(f"threshold must be a number in (0, 1], got {threshold!r}")
    if sampling_fraction is not None:
        if isinstance(sampling_fraction, bool) or not isinstance(sampling_fraction, (int, float)) \
                or not 0 < sampling_fraction <= 1:
            raise ParameterError(f"sampling_fraction must be in (0, 1], got "
                                 f"{sampling_fraction!r}")
        if population is not None:
            raise ParameterError("give a population table or a sampling fraction, not both")
    f, tuples, suppressed = class_sizes(table, qi, marker=marker)
    n = int(f.sum())
    out: dict[str, Any] = {"records": n, "suppressed_records": suppressed,
                           "classes": int(len(f)), "threshold": float(threshold)}
    if n == 0:  # every row suppressed: no QI tuple singles anyone out
        zero = {"highest": 0.0, "success_rate": 0.0, "records_at_risk": 0.0}
        out.update(prosecutor={**zero, "records_with_highest_risk": 0.0}, journalist=dict(zero),
                   marketer={"success_rate": 0.0},
                   uniqueness={"sample_uniques": 0.0, "population_uniques": 0.0,
                               "population_model": "every row is suppressed"})
        return out
    if population is not None:
        Fp, ptuples, _ = class_sizes(population, qi, marker=marker)
        lookup = dict(zip(ptuples, Fp.tolist()))
        F = np.array([lookup.get(t, 0) for t in tuples], dtype=np.int64)
        if np.any(F < f):
            i = int(np.flatnonzero(F < f)[0])
            raise DataError(f"the population has {int(F[i])} rows with {tuples[i]!r} but the "
                            f"table has {int(f[i])}: the table must be a sample of it")
        pop_unique = float((Fp == 1).sum() / Fp.sum())
        source = "population table"
    else:
        F = f
        pi = 1.0 if sampling_fraction is None else float(sampling_fraction)
        sample_pu, pop_unique = _zayatz(f, pi)
        source = ("the table is the population" if sampling_fraction is None
                  else f"Zayatz estimate, sampling fraction {pi:g}")
    rec = np.repeat(1.0 / f, f)
    out["prosecutor"] = {"highest": float(1.0 / f.min()), "success_rate": len(f) / n,
                         "records_at_risk": float((rec > threshold).mean()),
                         "records_with_highest_risk": float(f[f == f.min()].sum() / n)}
    recj = np.repeat(1.0 / F, f)
    out["journalist"] = {"highest": float(1.0 / F.min()),
                         "success_rate": max(len(f) / float(F.sum()), float((f / F).sum() / n)),
                         "records_at_risk": float((recj > threshold).mean())}
    out["marketer"] = {"success_rate": float((f / F).sum() / n)}
    out["uniqueness"] = {"sample_uniques": float((f == 1).sum() / n),
                         "population_uniques": float(pop_unique), "population_model": source}
    if population is None and sampling_fraction is not None:
        out["uniqueness"]["sample_uniques_in_population"] = float(sample_pu)
    return out


def format_risk(r: dict[str, Any], title: str = "") -> str:
    """A plain-text table of :func:`reidentification_risk` (figures from the dict)."""
    p, j, m, u = r["prosecutor"], r["journalist"], r["marketer"], r["uniqueness"]
    lines = [title] if title else []
    lines += [f"records {r['records']} (suppressed, left out: {r['suppressed_records']}), "
              f"classes {r['classes']}, threshold {r['threshold']:g}",
              "| attacker | highest risk | records at risk | success rate |",
              "|---|---|---|---|",
              f"| prosecutor | {p['highest']:.4f} | {100 * p['records_at_risk']:.2f}% | "
              f"{100 * p['success_rate']:.2f}% |",
              f"| journalist | {j['highest']:.4f} | {100 * j['records_at_risk']:.2f}% | "
              f"{100 * j['success_rate']:.2f}% |",
              f"| marketer | - | - | {100 * m['success_rate']:.2f}% |",
              f"sample uniques {100 * u['sample_uniques']:.2f}%, population uniques "
              f"{100 * u['population_uniques']:.4f}% ({u['population_model']})"]
    return "\n".join(lines)
