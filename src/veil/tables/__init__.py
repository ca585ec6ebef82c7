"""Diversity-constrained k-anonymization by suppression (``veil.tables``).

* :mod:`~veil.tables.constraints`: diversity constraints ``(X[t], lo, hi)`` and
  their text syntax (``sex=Female, race=White: 10..50``);
* :mod:`~veil.tables.reasoning`: the four axioms, implication (Algorithm 1),
  satisfiability, minimal cover, and an exact implication test;
* :mod:`~veil.tables.validate`: validation of a table by one generated DuckDB query;
* :mod:`~veil.tables.anonymity`: suppression, equivalence classes, metrics;
* :mod:`~veil.tables.baselines`: constraint-free k-anonymizers (sort-and-cut,
  optimal cut, Mondrian-style);
* :mod:`~veil.tables.diverse`: DIVA, the (k, Sigma)-anonymization.

k-anonymity is not differential privacy: it hides which of at least k rows
carries a published quasi-identifier tuple, nothing more (see
``docs/tables.md``).
"""

from .anonymity import Anonymization, anonymity_metrics, equivalence_classes, suppression_mask
from .baselines import (k_anonymize, mondrian_clusters, optimal_cut_clusters,
                        sort_and_cut_clusters)
from .constraints import (ConstraintSyntaxError, DiversityConstraint, format_constraints,
                          load_constraints, parse_constraints)
from .diverse import STRATEGIES, DivaInfeasibleError, anonymize, diva, merge_clusterings
from .reasoning import (Satisfiability, axiom_extend, axiom_intersect, axiom_reduce,
                        axiom_relax, implied_range, implies, implies_exact, is_minimal,
                        is_satisfiable, minimal_cover, redundant_constraints, satisfiability)
from .validate import ConstraintStatus, check_constraints, count_targets, validation_sql

__all__ = [
    "Anonymization", "anonymity_metrics", "equivalence_classes", "suppression_mask",
    "k_anonymize", "mondrian_clusters", "optimal_cut_clusters", "sort_and_cut_clusters",
    "ConstraintSyntaxError", "DiversityConstraint", "format_constraints", "load_constraints",
    "parse_constraints",
    "STRATEGIES", "DivaInfeasibleError", "anonymize", "diva", "merge_clusterings",
    "Satisfiability", "axiom_extend", "axiom_intersect", "axiom_reduce", "axiom_relax",
    "implied_range", "implies", "implies_exact", "is_minimal", "is_satisfiable",
    "minimal_cover", "redundant_constraints", "satisfiability",
    "ConstraintStatus", "check_constraints", "count_targets", "validation_sql",
]
