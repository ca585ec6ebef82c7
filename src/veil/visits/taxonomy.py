"""Category trees: pick sensitive places by naming a node; every place below it is sensitive.

Loads the Foursquare venue-category tree (its JSON, or the flat CSV
``id,name,parent_id,...``) and user trees in JSON or CSV:

* JSON: a list of nodes ``{"name": ..., "categories"|"children": [...]}`` (the
  Foursquare format), a single such node, or nested objects
  ``{"Food": {"Pizza Place": {}, "Cafe": {}}}``;
* CSV: columns ``name,parent`` (or ``name,parent_id`` with ``id``), or one
  column ``path`` with ``A > B > C`` paths.

Names are matched exactly (case and spacing included); an unknown name is an
error with a "did you mean" suggestion. Old category names used in the 2012
Foursquare check-in files are mapped to the v2 tree by
:data:`FOURSQUARE_2012_ALIASES` (listed in ``../shared/data/README.md``).
"""

from __future__ import annotations

import csv
import difflib
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..errors import DataError, ParameterError
from ..validation import check_int

__all__ = ["Taxonomy", "FOURSQUARE_2012_ALIASES", "foursquare_taxonomy"]

#: 2012 check-in category names -> Foursquare v2 tree names.
FOURSQUARE_2012_ALIASES: dict[str, str] = {
    "Mall": "Shopping Mall",
    "Subway": "Metro Station",
    "Light Rail": "Light Rail Station",
    "Ferry": "Boat or Ferry",
    "Cafe": "Café",
    "Drugstore / Pharmacy": "Pharmacy",
    "Gas Station / Garage": "Gas Station",
    "Athletic & Sport": "Athletics & Sports",
    "Car Dealership": "Auto Dealership",
    "Ramen /  Noodle House": "Noodle House",
    "Malaysian Restaurant": "Malay Restaurant",
    "Spa / Massage": "Spa",
}


class Taxonomy:
    """A rooted forest of category names (names are unique).

    Parameters
    ----------
    names : sequence of str
    parents : sequence of int
        Index of each node's parent, ``-1`` for a root.
    aliases : mapping, optional
        Extra names accepted for a node (``alias -> name``).

    Examples
    --------
    >>> t = Taxonomy.from_nested({"Medical": {"Hospital": {}, "Dentist": {}}, "Food": {}})
    >>> sorted(t.leaves_under(["Medical"]))
    ['Dentist', 'Hospital']
    >>> t.sensitive_mask(["Food", "Hospital", "Dentist"], ["Medical"]).tolist()
    [False, True, True]
    """

    def __init__(self, names: Sequence[str], parents: Sequence[int], *,
                 aliases: Mapping[str, str] | None = None, source: str | None = None):
        self.names = [str(x) for x in names]
        self.parents = np.asarray(parents, dtype=np.int64)
        self.source = source
        if self.parents.shape != (len(self.names),):
            raise ParameterError("parents must have one entry per name")
        self.index: dict[str, int] = {}
        for i, nm in enumerate(self.names):
            if nm in self.index:
                raise DataError(f"category name {nm!r} appears twice in the tree; names must be "
                                "unique", path=source)
            self.index[nm] = i
        self.children: list[list[int]] = [[] for _ in self.names]
        for i, p in enumerate(self.parents):
            if p >= 0:
                self.children[int(p)].append(i)
        self.aliases = dict(aliases or {})
        for a, target in self.aliases.items():
            if target not in self.index:
                raise ParameterError(f"alias {a!r} points to unknown category {target!r}")
        self.depth = np.zeros(len(self.names), dtype=np.int64)
        order = self._topological()
        for i in order:
            p = self.parents[i]
            if p >= 0:
                self.depth[i] = self.depth[p] + 1

    def _topological(self) -> list[int]:
        roots = [i for i, p in enumerate(self.parents) if p < 0]
        if not roots and self.names:
            raise DataError("the tree has no root (a parent cycle)", path=self.source)
        out, stack = [], list(roots)
        while stack:
            i = stack.pop()
            out.append(i)
            stack.extend(self.children[i])
        if len(out) != len(self.names):
            raise DataError("the tree has a parent cycle", path=self.source)
        return out

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: str) -> bool:
        return name in self.index or name in self.aliases

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_nodes(cls, nodes: Iterable[Mapping], *, aliases=None, source=None) -> "Taxonomy":
        """From Foursquare-style nodes ``{"name", "categories"|"children"}``."""
        names: list[str] = []
        parents: list[int] = []
        stack = [(node, -1) for node in reversed(list(nodes))]
        while stack:
            node, par = stack.pop()
            if not isinstance(node, Mapping) or "name" not in node:
                raise DataError("every tree node must be an object with a 'name'", path=source)
            i = len(names)
            names.append(str(node["name"]))
            parents.append(par)
            kids = node.get("categories", node.get("children", [])) or []
            stack.extend((k, i) for k in reversed(list(kids)))
        return cls(names, parents, aliases=aliases, source=source)

    @classmethod
    def from_nested(cls, tree: Mapping, *, aliases=None, source=None) -> "Taxonomy":
        """From nested objects ``{name: {child: {...}, ...}, ...}``."""
        names: list[str] = []
        parents: list[int] = []
        stack = [(k, v, -1) for k, v in reversed(list(tree.items()))]
        while stack:
            name, sub, par = stack.pop()
            i = len(names)
            names.append(str(name))
            parents.append(par)
            if sub:
                if not isinstance(sub, Mapping):
                    raise DataError(f"children of {name!r} must be an object", path=source)
                stack.extend((k, v, i) for k, v in reversed(list(sub.items())))
        return cls(names, parents, aliases=aliases, source=source)

    @classmethod
    def from_json(cls, path: str | Path, *, aliases=None) -> "Taxonomy":
        p = Path(path)
        from ..io.read import read_json

        data = read_json(p, what="taxonomy file")
        if isinstance(data, list):
            return cls.from_nodes(data, aliases=aliases, source=str(p))
        if isinstance(data, Mapping) and "name" in data:
            return cls.from_nodes([data], aliases=aliases, source=str(p))
        if isinstance(data, Mapping) and isinstance(data.get("categories"), list):
            return cls.from_nodes(data["categories"], aliases=aliases, source=str(p))
        if isinstance(data, Mapping):
            return cls.from_nested(data, aliases=aliases, source=str(p))
        raise DataError("a JSON taxonomy must be a list of nodes or nested objects", path=str(p))

    @classmethod
    def from_csv(cls, path: str | Path, *, aliases=None) -> "Taxonomy":
        p = Path(path)
        try:
            with p.open(newline="", encoding="utf-8") as fh:
                rows = list(csv.DictReader(fh))
        except FileNotFoundError:
            raise DataError("taxonomy file not found", path=str(p)) from None
        if not rows:
            raise DataError("the taxonomy CSV has no rows", path=str(p))
        cols = set(rows[0])
        names: list[str] = []
        parents: list[int] = []
        if "name" in cols and ("parent_id" in cols and "id" in cols):
            ids = {r["id"]: i for i, r in enumerate(rows)}
            for ln, r in enumerate(rows, start=1):
                names.append(r["name"])
                pid = (r["parent_id"] or "").strip()
                if pid and pid not in ids:
                    raise DataError(f"parent_id {pid!r} is not an id in the file", path=str(p),
                                    row=ln, column="parent_id")
                parents.append(ids[pid] if pid else -1)
        elif "name" in cols and "parent" in cols:
            pos = {r["name"]: i for i, r in enumerate(rows)}
            for ln, r in enumerate(rows, start=1):
                names.append(r["name"])
                par = (r["parent"] or "").strip()
                if par and par not in pos:
                    raise DataError(f"parent {par!r} is not a name in the file", path=str(p),
                                    row=ln, column="parent")
                parents.append(pos[par] if par else -1)
        elif "path" in cols:
            pos: dict[str, int] = {}
            for ln, r in enumerate(rows, start=1):
                parts = [s.strip() for s in r["path"].split(">") if s.strip()]
                par = -1
                for s in parts:
                    if s not in pos:
                        pos[s] = len(names)
                        names.append(s)
                        parents.append(par)
                    par = pos[s]
        else:
            raise DataError("a CSV taxonomy needs columns name,parent (or id,name,parent_id, or "
                            f"path); found {sorted(cols)}", path=str(p))
        return cls(names, parents, aliases=aliases, source=str(p))

    @classmethod
    def load(cls, path: str | Path, *, aliases=None) -> "Taxonomy":
        """Load a JSON or CSV tree (by extension)."""
        p = Path(path)
        if p.suffix.lower() == ".json":
            return cls.from_json(p, aliases=aliases)
        if p.suffix.lower() in (".csv", ".txt"):
            return cls.from_csv(p, aliases=aliases)
        raise ParameterError(f"taxonomy {str(p)!r}: use a .json or .csv file")

    # ---- queries ------------------------------------------------------------------------
    def resolve(self, name: str) -> str:
        """The canonical name of ``name`` (exact match or alias), else a did-you-mean error."""
        if name in self.index:
            return name
        if name in self.aliases:
            return self.aliases[name]
        pool = list(self.index) + list(self.aliases)
        hint = difflib.get_close_matches(str(name), pool, n=3, cutoff=0.6)
        extra = f"; did you mean {' or '.join(map(repr, hint))}?" if hint else ""
        raise ParameterError(f"unknown category {name!r}{extra}")

    def _descendants(self, i: int) -> list[int]:
        out, stack = [], [i]
        while stack:
            j = stack.pop()
            out.append(j)
            stack.extend(self.children[j])
        return out

    def subtree(self, names: Iterable[str]) -> set[str]:
        """Every node at or below the named nodes (internal nodes included)."""
        out: set[str] = set()
        for nm in ([names] if isinstance(names, str) else names):
            out.update(self.names[j] for j in self._descendants(self.index[self.resolve(nm)]))
        return out

    def leaves_under(self, names: Iterable[str]) -> set[str]:
        """The leaves at or below the named nodes."""
        return {s for s in self.subtree(names) if not self.children[self.index[s]]}

    def ancestor(self, name: str, depth: int = 0) -> str:
        """The ancestor of ``name`` at ``depth`` (0 = its root); itself if shallower."""
        depth = check_int(depth, "depth", minimum=0)  # -1 looped for ever past the root
        i = self.index[self.resolve(name)]
        while self.depth[i] > depth:
            i = int(self.parents[i])
        return self.names[i]

    def match_labels(self, labels: Sequence[str]) -> tuple[list[str | None], list[str]]:
        """Canonical tree name for each label (None if absent) and the unmatched labels."""
        out: list[str | None] = []
        missing: list[str] = []
        for lab in labels:
            if lab in self.index:
                out.append(lab)
            elif lab in self.aliases:
                out.append(self.aliases[lab])
            else:
                out.append(None)
                missing.append(lab)
        return out, missing

    def sensitive_mask(self, labels: Sequence[str], selected: Iterable[str]) -> np.ndarray:
        """Boolean mask over ``labels``: True where the label lies in a selected subtree.

        Labels that are not in the tree are never sensitive (see :meth:`match_labels`).
        """
        sub = self.subtree(selected)
        canon, _ = self.match_labels(labels)
        return np.array([c is not None and c in sub for c in canon], dtype=bool)


def foursquare_taxonomy() -> Taxonomy:
    """The Foursquare v2 venue-category tree from the shared data, with the 2012 aliases."""
    from ..datasets import shared_data_path

    return Taxonomy.from_json(shared_data_path("foursquare-nyc", "foursquare_categories_v2.json"),
                              aliases=FOURSQUARE_2012_ALIASES)
