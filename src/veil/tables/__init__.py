"""Tables: k-anonymity by suppression and generalization, diversity constraints, risk (``veil.tables``).

* :mod:`~veil.tables.data`, :mod:`~veil.tables.textio`: one value semantics (a
  cell's value is its text) and files read and written as text, every
  unchanged cell byte for byte;
* :mod:`~veil.tables.constraints`: diversity constraints ``(X[t], lo, hi)`` and
  their text syntax (``sex=Female, race=White: 10..50``);
* :mod:`~veil.tables.reasoning`, :mod:`~veil.tables.exact`: the four axioms,
  implication (Algorithm 1), satisfiability, minimal cover, and exact
  reasoning by integer programming;
* :mod:`~veil.tables.validate`: validation of a table by one generated DuckDB query;
* :mod:`~veil.tables.anonymity`: suppression, equivalence classes, metrics;
* :mod:`~veil.tables.baselines`: constraint-free k-anonymizers (sort-and-cut,
  optimal cut, Mondrian-style);
* :mod:`~veil.tables.diverse`: DIVA, the (k, Sigma)-anonymization;
* :mod:`~veil.tables.hierarchy`, :mod:`~veil.tables.generalize`: ARX-style
  hierarchies, full-domain recoding (optimal lattice search), local
  recoding, Mondrian on a hierarchy;
* :mod:`~veil.tables.models`: distinct / entropy l-diversity, t-closeness;
* :mod:`~veil.tables.metrics`, :mod:`~veil.tables.risk`: granularity and
  non-uniform entropy per attribute; prosecutor, journalist and marketer
  risk, uniqueness.

k-anonymity is not differential privacy: it hides which of at least k rows
carries a published quasi-identifier tuple, nothing more (see
``docs/tables.md``).
"""

from .anonymity import Anonymization, anonymity_metrics, equivalence_classes, suppression_mask
from .baselines import (k_anonymize, mondrian_clusters, optimal_cut_clusters,
                        sort_and_cut_clusters)
from .constraints import (ConstraintSyntaxError, DiversityConstraint, format_constraints,
                          load_constraints, parse_constraints)
from .data import cell_text, read_table
from .diverse import METHODS, STRATEGIES, DivaInfeasibleError, anonymize, diva, merge_clusterings
from .generalize import (GeneralizationInfeasibleError, global_recoding, local_recoding,
                         mondrian_generalize)
from .hierarchy import Hierarchy, load_hierarchies
from .metrics import utility_metrics
from .models import DistinctLDiversity, EntropyLDiversity, TCloseness
from .reasoning import (Satisfiability, axiom_extend, axiom_intersect, axiom_reduce,
                        axiom_relax, implied_range, implies, implies_exact, is_minimal,
                        is_satisfiable, minimal_cover, redundant_constraints, satisfiability)
from .risk import reidentification_risk
from .textio import TextTable, read_text_table
from .validate import ConstraintStatus, check_constraints, count_targets, validation_sql

__all__ = [
    "Anonymization", "anonymity_metrics", "equivalence_classes", "suppression_mask",
    "k_anonymize", "mondrian_clusters", "optimal_cut_clusters", "sort_and_cut_clusters",
    "ConstraintSyntaxError", "DiversityConstraint", "format_constraints", "load_constraints",
    "parse_constraints", "cell_text", "read_table",
    "METHODS", "STRATEGIES", "DivaInfeasibleError", "anonymize", "diva", "merge_clusterings",
    "GeneralizationInfeasibleError", "global_recoding", "local_recoding", "mondrian_generalize",
    "Hierarchy", "load_hierarchies", "utility_metrics",
    "DistinctLDiversity", "EntropyLDiversity", "TCloseness",
    "Satisfiability", "axiom_extend", "axiom_intersect", "axiom_reduce", "axiom_relax",
    "implied_range", "implies", "implies_exact", "is_minimal", "is_satisfiable",
    "minimal_cover", "redundant_constraints", "satisfiability", "reidentification_risk",
    "TextTable", "read_text_table",
    "ConstraintStatus", "check_constraints", "count_targets", "validation_sql",
]
