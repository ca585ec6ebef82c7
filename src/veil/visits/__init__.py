"""Location-visit histogram sanitization (paper 000).

* :func:`hide` -- sensitive location hiding (SLH / SLH_r), exact (LHO or the
  convex greedy fast path); :func:`hide_many` for many users at once;
* :func:`resemble` -- target resemblance (TR): exact RO, heuristic RH, with a
  Lagrangian bound and the gap reported;
* :func:`avoid` -- target avoidance (TA): exact AO, heuristic AH;
* :class:`Taxonomy` -- category trees (Foursquare or user supplied);
* :func:`load_checkins` / :func:`sanitize_users` -- the per-user batch.

These are deterministic optimisations, not differential privacy; :class:`Resample`
is an optional randomized mitigation for :func:`hide` (see :mod:`veil.visits.mitigation`),
and :mod:`veil.visits.distinguishability` measures how well an adversary tells
sanitized users from untouched ones.
"""

from .batch import BatchResult, UserHistograms, load_checkins, sanitize_one, sanitize_users
from .distinguishability import Distinguishability, distinguishability
from .hide import convex_allocate, hide, hide_many, lho
from .mitigation import Resample
from .resemble import avoid, resemble
from .result import VisitResult
from .taxonomy import FOURSQUARE_2012_ALIASES, Taxonomy, foursquare_taxonomy

__all__ = ["hide", "hide_many", "resemble", "avoid", "lho", "convex_allocate", "VisitResult",
           "Taxonomy", "foursquare_taxonomy", "FOURSQUARE_2012_ALIASES", "load_checkins",
           "sanitize_one", "sanitize_users", "UserHistograms", "BatchResult", "Resample",
           "distinguishability", "Distinguishability"]
