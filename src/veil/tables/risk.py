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
  ``c1 * that / pi`` out of ``n / pi``. Without either, ``pi = 1``. The ratios
  ``H(1; i) / H(1; 1)`` are computed in closed form (a product of ``i - 1``
  factors), so any fraction in (0, 1] works, down to the smallest float: as
  ``pi -> 0`` the estimate tends to ``(c1 / n)^2`` for both shares.

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

import math
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
    """(share of sample rows that are population uniques, share of population that is unique).

    Zayatz's estimate needs only the ratios ``r_i = H(1; i) / H(1; 1)`` of the
    hypergeometric probabilities that a population class of size ``i`` shows one
    row in a sample of ``n`` out of ``N``. With ``H(1; i) = i C(N-i, n-1) / C(N, n)``
    they telescope to a product of ``i - 1`` factors::

        r_i = i * prod_{s=1}^{i-1} (1 - (n - 1) / (N - s))

    computed here in log space (``log1p``; one cumulative sum over s up to the
    largest class size, at most n terms in all). It is accurate to float64
    rounding for every ``N`` (a relative error of about the largest class size
    times 1e-16; for ``N < 2^53`` each factor is formed from exact integers), and
    it needs no hypergeometric routine: ``scipy.stats.hypergeom``
    with the population as a Python int above 2^63 failed (``1e-300`` gave a
    TypeError) and below that it took minutes (``1e-15`` on six rows: about 8
    minutes). As ``N -> inf`` every factor tends to 1 and ``r_i -> i``, so the
    estimate converges to ``cond = c1 / n``; when ``n / pi`` overflows float64
    (``pi`` below about ``n * 5.6e-309``) that limit is used, and it is what the
    product gives already when ``(n - 1) / N`` is below float64's resolution.
    """
    n = int(sizes.sum())
    c = np.bincount(sizes)
    c1 = int(c[1]) if len(c) > 1 else 0
    if c1 == 0 or n == 0:
        return 0.0, 0.0
    i = np.flatnonzero(c)
    i = i[i > 0]
    big = n / pi  # the population size; an exact integer N >= n when it is finite
    N = max(int(round(big)), n) if math.isfinite(big) else math.inf
    imax = int(i.max())
    logr = np.log(i.astype(float))
    if N != math.inf and imax > 1:
        # L(m) = sum_{s=1}^{m} log(1 - (n - 1) / (N - s)), in chunks (bounded memory)
        need = i - 1                      # sorted, the L(m) wanted per class size
        got = np.empty(len(i))
        got[need == 0] = 0.0
        run, start, chunk = 0.0, 1, 1 << 20
        j = int(np.searchsorted(need, 1))
        while start <= imax - 1 and j < len(need):
            stop = min(start + chunk, imax)       # s in [start, stop)
            svals = np.arange(start, stop, dtype=float)
            x = (n - 1) / (float(N) - svals)
            # a factor 1 - x <= 0 happens only once s >= N - n + 1, and the product then
            # holds the factor 0 (s = N - n + 1, since s runs over every integer): r_i = 0
            terms = np.full(len(x), -np.inf)
            ok = x < 1.0
            terms[ok] = np.log1p(-x[ok])
            cum = run + np.cumsum(terms)
            while j < len(need) and need[j] < stop:
                got[j] = cum[need[j] - start]
                j += 1
            run = float(cum[-1]) if cum.size else run
            start = stop
        logr = logr + got
    r = np.exp(logr)                      # r_1 = 1; r_i = 0 when C(N - i, n - 1) = 0
    denom = float((c[i] * r).sum())       # >= c1 > 0
    cond = c1 / denom
    uniques_sample = c1 * cond
    # population uniques (uniques_sample / pi) out of N people; pi * N ~ n (no overflow)
    pop_share = uniques_sample / n if N == math.inf else uniques_sample / (pi * float(N))
    return uniques_sample / n, pop_share


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
