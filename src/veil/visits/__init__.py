"""Location-visit histogram sanitization (paper 000).

* :func:`hide` -- sensitive location hiding (SLH / SLH_r), exact (LHO or the
  convex greedy fast path);
* :func:`resemble` -- target resemblance (TR): exact RO, heuristic RH, with a
  Lagrangian bound and the gap reported;
* :func:`avoid` -- target avoidance (TA): exact AO, heuristic AH;
* :class:`Taxonomy` -- category trees (Foursquare or user supplied);
* :func:`sanitize_checkins` -- per-user batch over a check-in file.

These are deterministic optimisations, not differential privacy.
"""

from .hide import convex_allocate, hide, lho
from .resemble import avoid, resemble
from .result import VisitResult

__all__ = ["hide", "resemble", "avoid", "lho", "convex_allocate", "VisitResult"]
