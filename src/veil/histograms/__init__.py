"""Differentially private histogram publishing.

Mechanisms (each returns a :class:`veil.release.Release` recording how the
budget was split): :func:`identity`, :func:`noise_first`,
:func:`structure_first`, :func:`optimized_structure_first`, :func:`boost`,
:func:`hb`, :func:`sort_and_group`, :func:`ahp`, :func:`dawa`, :func:`hdmm`,
:func:`mwem`, :func:`coarse`, :func:`privtree`, and :func:`publish` (by name, with ``method='auto'``, whose
public rule is :func:`choose_method`).

Kernels: :func:`voptimal` (V-optimal partition DP), :func:`sorted_grouping`.
Evaluation: :mod:`veil.histograms.workload` (range queries, DPBench scaled
error, re-sampling) and :mod:`veil.histograms.evaluation`.

Neighbouring histograms differ by one record (one bin count changes by 1).
"""

from __future__ import annotations

from .api import (METHODS, choose_method, histogram_of, publish, publish_binned_records,
                  publish_bounded_records, publish_records)
from .basic import identity, noise_first
from .coarse import coarse
from .dawa import dawa
from .hdmm import hdmm, optimize_strategy
from .mwem import mwem
from .privtree import privtree
from .partition import sorted_grouping, voptimal, voptimal_reference
from .sortgroup import ahp, sort_and_group
from .structurefirst import optimized_structure_first, structure_first
from .tree import boost, hb, qardaji_branching

__all__ = [
    "METHODS", "choose_method", "publish", "publish_records", "publish_binned_records",
    "publish_bounded_records", "histogram_of",
    "identity", "noise_first", "structure_first", "optimized_structure_first",
    "boost", "hb", "sort_and_group", "ahp", "dawa", "hdmm", "optimize_strategy", "mwem",
    "coarse", "privtree",
    "voptimal", "voptimal_reference", "sorted_grouping", "qardaji_branching",
]
