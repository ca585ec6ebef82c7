"""Empirical privacy auditing, shipped so users can audit mechanisms too.

An audit can only find violations; it never proves privacy (each mechanism's
docstring says why it is private). Three kinds of checks:

A. **Conformance** (:func:`conformance_ks`, :func:`conformance_chi2`): the
   noise follows the claimed distribution, at a stated alpha (default 1e-6).
B. **DP ratio audit** (:func:`dp_ratio_audit`): sample the mechanism on two
   fixed neighbouring inputs, count a family of events chosen *before*
   sampling, and bound ``ln P_A(E) / P_B(E)`` from below with exact
   Clopper-Pearson intervals, Bonferroni-corrected so the family-wise error
   is at most alpha. PASS iff the lower bound on epsilon is at most the
   claimed epsilon times a declared analytic correction.
C. **Structure** (:func:`check_integer_outputs`, :func:`check_on_grid`,
   :func:`check_rejects_nonfinite`).

Canaries are deliberately broken twins of a mechanism (noise halved, wrong
sensitivity, ...): the same audit with the same seeds must FAIL on them,
which is the power check of the audit itself.
"""

from .core import (AuditResult, Event, TestResult, check_integer_outputs, check_on_grid,
                   check_rejects_nonfinite, clopper_pearson, conformance_chi2, conformance_ks,
                   dp_ratio_audit, events_balls, events_lr_levels, events_points,
                   events_tails, events_threshold)

__all__ = [
    "AuditResult", "Event", "TestResult", "clopper_pearson", "dp_ratio_audit",
    "events_points", "events_threshold", "events_lr_levels", "events_balls", "events_tails",
    "conformance_ks", "conformance_chi2", "check_integer_outputs", "check_on_grid",
    "check_rejects_nonfinite",
]
