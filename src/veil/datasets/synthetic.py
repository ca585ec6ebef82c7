"""Synthetic data for the embedded demo: a city, its places, people moving in it, and a census.

Everything here is generated from a random generator, with no network and no
files: ``veil demo`` and the tests run on these data so they work on a fresh
machine. The generators are vectorized numpy and deterministic given a seed.

* :func:`category_tree` -- a small built-in place-category tree (82
  nodes, three levels) with *sensitive* subtrees (health and medicine,
  religious places).
* :func:`synthetic_city` -- a fictional city: a latitude/longitude bounding box
  around a centre, a grid of cells over it, and points of interest (POIs) with
  leaf categories, clustered in districts of different character.
* :func:`mobility_model` and :func:`synthetic_trajectories` -- users moving
  from cell to cell by a first-order Markov chain (stay, or step to one of the
  8 neighbouring cells, preferring cells with many places), with timestamps.
* :func:`synthetic_checkins` -- check-ins ``(user, category, time, lat, lon)``:
  each user has personal category tastes and a home, visits places of a
  category near home, at hours typical of that category.
* :func:`synthetic_census` -- an Adult-like census table (age, education,
  marital-status, occupation, race, sex, native-country, salary) with
  correlated marginals (age drives marriage, education drives occupation and
  salary, ...).

Seeds
-----
Every generator takes ``rng=`` (a :class:`numpy.random.Generator`) or
``seed=``. The seed is **for experiments and tests**: it makes the synthetic
*data* reproducible. It has nothing to do with the privacy of veil's outputs,
but the same rule applies everywhere in veil: a mechanism run with a known seed
gives no privacy.

Examples
--------
>>> from veil.datasets.synthetic import synthetic_city, synthetic_checkins
>>> city = synthetic_city(n_pois=500, seed=1)
>>> ci = synthetic_checkins(city, n_users=20, mean_per_user=10, seed=2)
>>> ci.visit_histograms().shape == (20, city.categories.n_leaves)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..distances import EARTH_RADIUS_M
from ..errors import ParameterError
from ..random import make_rng
from ..validation import check_finite_array, check_int, check_positive, check_probability

__all__ = [
    "CategoryTree",
    "City",
    "MobilityModel",
    "Trajectories",
    "CheckIns",
    "category_tree",
    "synthetic_city",
    "mobility_model",
    "synthetic_trajectories",
    "synthetic_checkins",
    "synthetic_census",
    "columns_to_arrow",
    "CENSUS_COLUMNS",
    "CENSUS_QUASI_IDENTIFIERS",
    "CENSUS_SENSITIVE",
    "SENSITIVE_CATEGORIES",
]

_M_PER_DEG_LAT = math.pi * EARTH_RADIUS_M / 180.0

# ---------------------------------------------------------------------------
# Place categories
# ---------------------------------------------------------------------------

# Internal nodes are dicts, lists hold leaves. Written for veil (not copied from any
# real taxonomy); names are ordinary English place words.
_TREE_SPEC: dict[str, Any] = {
    "Food": ["Coffee Shop", "Bakery", "Restaurant", "Fast Food", "Pizza Place", "Food Market"],
    "Nightlife": ["Bar", "Pub", "Nightclub", "Wine Bar"],
    "Shops & Services": {
        "Groceries": ["Supermarket", "Convenience Store"],
        "Retail": ["Clothing Store", "Bookstore", "Hardware Store", "Electronics Store"],
        "Services": ["Bank", "Post Office", "Hair Salon", "Laundry"],
    },
    "Health & Medicine": {
        "Hospital": ["General Hospital", "Emergency Room", "Maternity Ward"],
        "Clinic": ["General Practice", "Dentist", "Mental Health Clinic", "Sexual Health Clinic",
                   "Addiction Treatment Center"],
        "Pharmacy & Care": ["Pharmacy", "Physiotherapy"],
    },
    "Religious Places": ["Church", "Mosque", "Synagogue", "Temple", "Meditation Center"],
    "Arts & Entertainment": ["Museum", "Cinema", "Theatre", "Stadium", "Art Gallery"],
    "Outdoors & Sports": ["Park", "Beach", "Gym", "Swimming Pool", "Playground"],
    "Travel & Transport": ["Train Station", "Bus Stop", "Ferry Terminal", "Hotel"],
    "Education": ["School", "University", "Library", "Kindergarten"],
    "Work": ["Office", "Coworking Space", "Factory", "Warehouse"],
    "Residence": ["Home", "Apartment Building", "Student Residence"],
    "Government": ["City Hall", "Courthouse", "Police Station"],
}

#: Names of the subtrees whose leaves are sensitive by default.
SENSITIVE_CATEGORIES: tuple[str, ...] = ("Health & Medicine", "Religious Places")

# Relative popularity of leaves for check-ins (default 1).
_POPULARITY = {
    "Coffee Shop": 6.0, "Restaurant": 5.0, "Fast Food": 4.0, "Supermarket": 5.0, "Bar": 3.0,
    "Home": 8.0, "Office": 6.0, "Park": 3.0, "Gym": 3.0, "Bus Stop": 4.0, "Train Station": 3.0,
    "Pizza Place": 2.5, "Convenience Store": 3.0, "University": 2.0, "School": 1.5,
    "Emergency Room": 0.3, "Maternity Ward": 0.2, "Mental Health Clinic": 0.3,
    "Sexual Health Clinic": 0.2, "Addiction Treatment Center": 0.15, "Synagogue": 0.4,
    "Mosque": 0.5, "Temple": 0.4, "Meditation Center": 0.3, "Courthouse": 0.3, "Stadium": 0.6,
    "Ferry Terminal": 0.8, "Factory": 1.2, "Warehouse": 0.8,
}

# Typical hours of the day for each top-level category: (centres, width in hours).
_HOURS = {
    "Food": ((8.0, 12.5, 19.5), 1.3),
    "Nightlife": ((21.5, 23.5, 1.0), 1.5),
    "Shops & Services": ((11.0, 15.0, 17.5), 2.0),
    "Health & Medicine": ((9.5, 14.0), 2.0),
    "Religious Places": ((10.0, 18.0), 1.5),
    "Arts & Entertainment": ((15.0, 20.0), 2.0),
    "Outdoors & Sports": ((7.0, 17.5), 1.8),
    "Travel & Transport": ((8.0, 17.5), 1.2),
    "Education": ((9.0, 13.0), 2.0),
    "Work": ((9.0, 14.0), 2.2),
    "Residence": ((7.0, 21.0), 2.0),
    "Government": ((10.5, 14.5), 1.5),
}


@dataclass(frozen=True)
class CategoryTree:
    """A rooted place-category tree stored as arrays.

    Attributes
    ----------
    names : tuple of str
        Node names; node 0 is the root ``"Place"``. Names are unique.
    parent : numpy.ndarray of int64
        ``parent[i]`` is the parent node of node ``i`` (``-1`` for the root).
    sensitive : tuple of str
        Names of the nodes whose subtrees are sensitive by default.

    Examples
    --------
    >>> t = category_tree()
    >>> "Mosque" in t.leaf_names[t.sensitive_leaf_mask()]
    True
    """

    names: tuple[str, ...]
    parent: np.ndarray
    sensitive: tuple[str, ...] = SENSITIVE_CATEGORIES

    @cached_property
    def _index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.names)}

    @property
    def n_nodes(self) -> int:
        return len(self.names)

    @cached_property
    def depth(self) -> np.ndarray:
        """Depth of every node (root 0); parents always precede children."""
        d = np.zeros(self.n_nodes, dtype=np.int64)
        for i in range(1, self.n_nodes):  # tree construction order: one pass, ~60 nodes
            d[i] = d[self.parent[i]] + 1
        return d

    @cached_property
    def is_leaf(self) -> np.ndarray:
        has_child = np.zeros(self.n_nodes, dtype=bool)
        has_child[self.parent[self.parent >= 0]] = True
        return ~has_child

    @cached_property
    def leaves(self) -> np.ndarray:
        """Node indices of the leaves, in tree order; a leaf's *position* here is its category id."""
        return np.flatnonzero(self.is_leaf)

    @property
    def n_leaves(self) -> int:
        return int(self.leaves.size)

    @cached_property
    def leaf_names(self) -> np.ndarray:
        return np.array([self.names[i] for i in self.leaves])

    def index(self, name: str) -> int:
        """Node index of ``name`` (ParameterError with suggestions if unknown)."""
        try:
            return self._index[name]
        except KeyError:
            import difflib

            close = difflib.get_close_matches(name, self.names, n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise ParameterError(f"unknown place category {name!r}{hint}") from None

    @cached_property
    def _ancestors(self) -> np.ndarray:
        """Boolean matrix A[a, i] = node a is an ancestor of (or equal to) node i."""
        a = np.eye(self.n_nodes, dtype=bool)
        for i in range(1, self.n_nodes):  # parents precede children
            a[:, i] |= a[:, self.parent[i]]
        return a

    def leaves_under(self, name: str) -> np.ndarray:
        """Category ids (leaf positions) of every leaf in the subtree of ``name``."""
        return np.flatnonzero(self._ancestors[self.index(name)][self.leaves])

    def sensitive_leaf_mask(self, names: tuple[str, ...] | list[str] | None = None) -> np.ndarray:
        """Boolean mask over category ids: leaves below any of ``names`` (default: :attr:`sensitive`)."""
        names = self.sensitive if names is None else tuple(names)
        mask = np.zeros(self.n_leaves, dtype=bool)
        for n in names:
            mask[self.leaves_under(n)] = True
        return mask

    @cached_property
    def top_level(self) -> np.ndarray:
        """For every category id, the node index of its top-level ancestor (depth 1)."""
        tops = np.flatnonzero(self.depth == 1)
        return tops[np.argmax(self._ancestors[np.ix_(tops, self.leaves)], axis=0)]

    def path(self, name: str) -> list[str]:
        """Names from the root's child down to ``name``."""
        i, out = self.index(name), []
        while i > 0:
            out.append(self.names[i])
            i = int(self.parent[i])
        return out[::-1]

    def edges(self) -> list[tuple[str, str]]:
        """``(parent name, child name)`` pairs, e.g. to build another taxonomy object."""
        return [(self.names[p], self.names[i]) for i, p in enumerate(self.parent) if p >= 0]


def category_tree() -> CategoryTree:
    """The built-in place-category tree (deterministic, no randomness).

    Three levels below the root ``"Place"``: 12 top-level categories, some with
    sub-categories, and 63 leaves (82 nodes in all). The subtrees ``"Health & Medicine"`` and
    ``"Religious Places"`` are marked sensitive.

    Examples
    --------
    >>> t = category_tree()
    >>> t.path("Dentist")
    ['Health & Medicine', 'Clinic', 'Dentist']
    """
    names: list[str] = ["Place"]
    parent: list[int] = [-1]

    def add(spec: Any, p: int) -> None:
        if isinstance(spec, dict):
            for k, v in spec.items():
                names.append(k)
                parent.append(p)
                add(v, len(names) - 1)
        else:
            for leaf in spec:
                names.append(leaf)
                parent.append(p)

    add(_TREE_SPEC, 0)
    return CategoryTree(tuple(names), np.asarray(parent, dtype=np.int64))


# ---------------------------------------------------------------------------
# City
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class City:
    """A fictional city: bounding box, grid and points of interest.

    The grid has ``rows x cols`` cells of equal size in degrees; cell ``c`` is
    at row ``c // cols`` (counted from the south) and column ``c % cols``
    (from the west).

    Attributes
    ----------
    name : str
    centre_lat, centre_lon : float
    south, west, north, east : float
        Bounding box in degrees.
    rows, cols : int
    poi_lat, poi_lon : numpy.ndarray of float64
    poi_category : numpy.ndarray of int64
        Category id (position in ``categories.leaves``) of each POI.
    categories : CategoryTree
    """

    name: str
    centre_lat: float
    centre_lon: float
    south: float
    west: float
    north: float
    east: float
    rows: int
    cols: int
    poi_lat: np.ndarray
    poi_lon: np.ndarray
    poi_category: np.ndarray
    categories: CategoryTree

    @property
    def bbox(self) -> tuple[float, float, float, float]:
        """``(south, west, north, east)`` in degrees."""
        return (self.south, self.west, self.north, self.east)

    @property
    def n_cells(self) -> int:
        return self.rows * self.cols

    @property
    def n_pois(self) -> int:
        return int(self.poi_lat.size)

    @property
    def cell_deg(self) -> tuple[float, float]:
        """Cell height and width in degrees (lat, lon)."""
        return ((self.north - self.south) / self.rows, (self.east - self.west) / self.cols)

    @property
    def cell_size_m(self) -> tuple[float, float]:
        """Approximate cell height and width in metres (at the centre latitude)."""
        dlat, dlon = self.cell_deg
        return (dlat * _M_PER_DEG_LAT,
                dlon * _M_PER_DEG_LAT * math.cos(math.radians(self.centre_lat)))

    def cell_of(self, lat, lon) -> np.ndarray:
        """Cell index of each point; ``-1`` outside the bounding box."""
        lat = np.asarray(lat, dtype=np.float64)
        lon = np.asarray(lon, dtype=np.float64)
        dlat, dlon = self.cell_deg
        r = np.floor((lat - self.south) / dlat).astype(np.int64)
        c = np.floor((lon - self.west) / dlon).astype(np.int64)
        # points exactly on the north/east edge belong to the last row/column
        r = np.where(lat == self.north, self.rows - 1, r)
        c = np.where(lon == self.east, self.cols - 1, c)
        inside = (r >= 0) & (r < self.rows) & (c >= 0) & (c < self.cols)
        return np.where(inside, r * self.cols + c, -1)

    def cell_centres(self) -> tuple[np.ndarray, np.ndarray]:
        """Latitudes and longitudes of the cell centres, each of shape ``(n_cells,)``."""
        dlat, dlon = self.cell_deg
        cells = np.arange(self.n_cells)
        return (self.south + (cells // self.cols + 0.5) * dlat,
                self.west + (cells % self.cols + 0.5) * dlon)

    def to_local_m(self, lat, lon) -> tuple[np.ndarray, np.ndarray]:
        """Equirectangular metres east and north of the centre (good at city scale)."""
        lat = np.asarray(lat, dtype=np.float64)
        lon = np.asarray(lon, dtype=np.float64)
        return ((lon - self.centre_lon) * _M_PER_DEG_LAT * math.cos(math.radians(self.centre_lat)),
                (lat - self.centre_lat) * _M_PER_DEG_LAT)

    def poi_counts(self) -> np.ndarray:
        """Number of POIs in every cell, shape ``(n_cells,)``."""
        return np.bincount(self.cell_of(self.poi_lat, self.poi_lon), minlength=self.n_cells)


# district characters: multipliers of top-level categories
_DISTRICTS = {
    "downtown": {"Food": 3.0, "Nightlife": 4.0, "Shops & Services": 3.0,
                 "Arts & Entertainment": 3.0, "Government": 3.0, "Religious Places": 1.5},
    "residential": {"Residence": 5.0, "Education": 2.5, "Food": 1.2, "Religious Places": 2.0,
                    "Outdoors & Sports": 1.5},
    "business": {"Work": 6.0, "Food": 1.5, "Travel & Transport": 2.0},
    "harbour": {"Travel & Transport": 4.0, "Work": 2.0, "Nightlife": 1.5},
    "campus": {"Education": 5.0, "Health & Medicine": 3.0, "Outdoors & Sports": 2.0},
    "green": {"Outdoors & Sports": 6.0, "Residence": 1.5},
}


def _inverse_cdf_rows(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One categorical draw per row of ``weights`` (rows need not be normalised)."""
    cum = np.cumsum(weights, axis=1)
    cum /= cum[:, -1:]
    return np.minimum((u[:, None] >= cum).sum(axis=1), weights.shape[1] - 1)


def _categorical_by_group(weights: np.ndarray, group: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One categorical draw per item from row ``group[i]`` of ``weights`` (rows unnormalised).

    Same result as ``_inverse_cdf_rows(weights[group], u)`` but in memory proportional to
    ``weights`` rather than to the number of items: the normalised cumulative rows, shifted
    by their row index, form one increasing array that ``searchsorted`` inverts.
    """
    G, K = weights.shape
    cum = np.cumsum(weights, axis=1)
    cum /= cum[:, -1:]
    cum[:, -1] = 1.0
    flat = (cum + np.arange(G)[:, None]).ravel()
    idx = np.searchsorted(flat, group + u, side="right") - group * K
    return np.clip(idx, 0, K - 1)


def synthetic_city(*, n_pois: int = 2000, rows: int = 20, cols: int = 20,
                   width_km: float = 10.0, height_km: float = 8.0,
                   centre: tuple[float, float] = (44.0, -32.0), name: str = "Port Veil",
                   n_districts: int = 8, rng: np.random.Generator | None = None,
                   seed: int | None = None) -> City:
    """Generate a fictional city with points of interest.

    The default centre (44 N, 32 W) is in the open Atlantic, so the city is
    plainly fictional; the bounding box spans ``width_km x height_km`` around
    it. POIs are drawn from ``n_districts`` Gaussian districts (each with a
    character -- downtown, residential, business, harbour, campus, green --
    that makes some categories more common) plus 15% uniform background, and
    are clipped to the box.

    Parameters
    ----------
    n_pois : int
    rows, cols : int
        Grid shape (cells of equal size in degrees).
    width_km, height_km : float
    centre : (lat, lon)
    name : str
    n_districts : int
    rng : numpy.random.Generator, optional
    seed : int, optional
        For experiments and tests: makes the data reproducible.

    Returns
    -------
    City

    Examples
    --------
    >>> city = synthetic_city(n_pois=300, seed=0)
    >>> bool(((city.poi_lat >= city.south) & (city.poi_lat <= city.north)).all())
    True
    """
    n_pois = check_int(n_pois, "n_pois", minimum=1)
    rows = check_int(rows, "rows", minimum=1, maximum=2000)
    cols = check_int(cols, "cols", minimum=1, maximum=2000)
    width_km = check_positive(width_km, "width_km")
    height_km = check_positive(height_km, "height_km")
    n_districts = check_int(n_districts, "n_districts", minimum=1)
    c = check_finite_array(centre, "centre", ndim=1)
    if c.size != 2 or not (-80 <= c[0] <= 80) or not (-180 <= c[1] <= 180):
        raise ParameterError(f"centre must be (lat, lon) with |lat| <= 80, got {tuple(c)!r}")
    if height_km / 2 >= 0.9 * (90 - abs(c[0])) * _M_PER_DEG_LAT / 1000:
        raise ParameterError(f"height_km={height_km} is too large for a city at latitude {c[0]}")
    rng = make_rng(rng, seed=seed)
    lat0, lon0 = float(c[0]), float(c[1])
    half_lat = height_km * 500.0 / _M_PER_DEG_LAT
    half_lon = width_km * 500.0 / (_M_PER_DEG_LAT * math.cos(math.radians(lat0)))
    south, north, west, east = lat0 - half_lat, lat0 + half_lat, lon0 - half_lon, lon0 + half_lon

    tree = category_tree()
    tops = [tree.names[i] for i in np.flatnonzero(tree.depth == 1)]
    kinds = list(_DISTRICTS)
    # district 0 is downtown at the centre; the others around it
    d_kind = np.array([0] + list(rng.permutation(np.resize(np.arange(1, len(kinds)),
                                                           max(n_districts - 1, 0)))))[:n_districts]
    d_cy = np.concatenate(([0.0], rng.uniform(-0.7, 0.7, n_districts - 1)))  # in half-box units
    d_cx = np.concatenate(([0.0], rng.uniform(-0.7, 0.7, n_districts - 1)))
    d_sd = np.concatenate(([0.12], rng.uniform(0.08, 0.2, n_districts - 1)))
    mult = np.ones((n_districts, len(tops)))
    for d in range(n_districts):
        for top, m in _DISTRICTS[kinds[d_kind[d]]].items():
            mult[d, tops.index(top)] = m
    district_w = np.concatenate(([2.0], np.ones(n_districts - 1)))
    # n_districts + 1 sources: the last is the uniform background
    src_p = np.concatenate((0.85 * district_w / district_w.sum(), [0.15]))
    src = rng.choice(n_districts + 1, size=n_pois, p=src_p)
    bg = src == n_districts
    ds = np.where(bg, 0, src)
    y = np.where(bg, rng.uniform(-1, 1, n_pois), d_cy[ds] + d_sd[ds] * rng.standard_normal(n_pois))
    x = np.where(bg, rng.uniform(-1, 1, n_pois), d_cx[ds] + d_sd[ds] * rng.standard_normal(n_pois))
    y, x = np.clip(y, -1, 1), np.clip(x, -1, 1)
    poi_lat = np.clip(lat0 + y * half_lat, south, north)
    poi_lon = np.clip(lon0 + x * half_lon, west, east)

    # categories: leaf base weight (sqrt of popularity: places are less skewed than visits)
    base = np.sqrt(np.array([_POPULARITY.get(n, 1.0) for n in tree.leaf_names]))
    top_pos = np.searchsorted(np.flatnonzero(tree.depth == 1), tree.top_level)
    w = base[None, :] * mult[:, top_pos]                      # (n_districts, n_leaves)
    w = np.vstack((w, base[None, :]))                         # background row
    poi_category = _categorical_by_group(w, src, rng.random(n_pois)).astype(np.int64)
    return City(name, lat0, lon0, south, west, north, east, rows, cols,
                poi_lat, poi_lon, poi_category, tree)


# ---------------------------------------------------------------------------
# Mobility
# ---------------------------------------------------------------------------

_OFFSETS = np.array([(0, 0), (-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)])


@dataclass(frozen=True)
class MobilityModel:
    """First-order Markov chain over the cells of a city grid.

    From cell ``i`` a user stays (neighbour slot 0) or moves to one of the 8
    neighbouring cells: ``neighbours[i, k]`` is the target cell of slot ``k``
    (``-1`` off the grid, with probability 0) and ``probs[i, k]`` its
    probability.
    """

    rows: int
    cols: int
    neighbours: np.ndarray
    probs: np.ndarray
    initial: np.ndarray

    @property
    def n_cells(self) -> int:
        return self.rows * self.cols

    def transition_matrix(self) -> np.ndarray:
        """Dense ``(n_cells, n_cells)`` row-stochastic matrix (for grids up to 100 x 100)."""
        if self.n_cells > 10_000:
            raise ParameterError(f"transition_matrix is dense; {self.n_cells} cells is too many "
                                 "(use neighbours/probs)")
        m = np.zeros((self.n_cells, self.n_cells))
        i = np.repeat(np.arange(self.n_cells), self.neighbours.shape[1])
        j = self.neighbours.ravel()
        ok = j >= 0
        np.add.at(m, (i[ok], j[ok]), self.probs.ravel()[ok])
        return m


def mobility_model(city: City, *, stay: float = 0.55, attraction: float = 1.0) -> MobilityModel:
    """The Markov mobility model of a city (deterministic given the city).

    Parameters
    ----------
    city : City
    stay : float
        Probability of staying in the same cell at a step.
    attraction : float
        Exponent on ``1 + POI count`` of a neighbour: moves prefer busy cells.

    Examples
    --------
    >>> m = mobility_model(synthetic_city(n_pois=100, rows=5, cols=5, seed=0))
    >>> bool(abs(m.transition_matrix().sum(axis=1) - 1).max() < 1e-12)
    True
    """
    stay = check_probability(stay, "stay")
    attraction = check_positive(attraction, "attraction") if attraction != 0 else 0.0
    rows, cols = city.rows, city.cols
    cells = np.arange(city.n_cells)
    r = cells[:, None] // cols + _OFFSETS[None, :, 0]
    c = cells[:, None] % cols + _OFFSETS[None, :, 1]
    ok = (r >= 0) & (r < rows) & (c >= 0) & (c < cols)
    nb = np.where(ok, r * cols + c, -1)
    attract = (1.0 + city.poi_counts()) ** attraction
    w = np.where(ok, attract[np.where(ok, nb, 0)], 0.0)
    w[:, 0] = 0.0
    tot = w.sum(axis=1, keepdims=True)
    move = np.divide(w, tot, out=np.zeros_like(w), where=tot > 0)
    p = (1.0 - stay) * move
    p[:, 0] = np.where(tot[:, 0] > 0, stay, 1.0)
    return MobilityModel(rows, cols, nb, p, attract / attract.sum())


@dataclass(frozen=True)
class Trajectories:
    """Users' positions at regular timestamps, one row per (user, step), sorted by user then time.

    Attributes
    ----------
    user, step, cell : numpy.ndarray of int64
    time : numpy.ndarray of datetime64[s]
    lat, lon : numpy.ndarray of float64
        A point inside the cell (uniform within the cell).
    n_users, n_steps, step_seconds : int
    """

    user: np.ndarray
    step: np.ndarray
    time: np.ndarray
    cell: np.ndarray
    lat: np.ndarray
    lon: np.ndarray
    n_users: int
    n_steps: int
    step_seconds: int

    def cells_matrix(self) -> np.ndarray:
        """Cell indices as an ``(n_users, n_steps)`` matrix."""
        return self.cell.reshape(self.n_users, self.n_steps)

    def columns(self) -> dict[str, np.ndarray]:
        return {"user": self.user, "step": self.step, "time": self.time, "cell": self.cell,
                "lat": self.lat, "lon": self.lon}

    def to_arrow(self):
        """The rows as a :class:`pyarrow.Table`."""
        return columns_to_arrow(self.columns())


def synthetic_trajectories(city: City, *, n_users: int = 100, n_steps: int = 288,
                           step_seconds: int = 300, start: str = "2026-03-02T08:00:00",
                           model: MobilityModel | None = None,
                           rng: np.random.Generator | None = None,
                           seed: int | None = None) -> Trajectories:
    """Simulate users moving over the city grid by the Markov model.

    The initial cell is drawn from the model's attractiveness distribution;
    each step follows :func:`mobility_model` (vectorized over users, one numpy
    step per timestamp). The reported point is uniform inside the cell.

    Parameters
    ----------
    city : City
    n_users, n_steps : int
    step_seconds : int
        Time between consecutive fixes.
    start : str
        ISO timestamp of step 0.
    model : MobilityModel, optional
        Defaults to ``mobility_model(city)``.
    rng, seed
        Random source; ``seed`` for experiments and tests.

    Examples
    --------
    >>> city = synthetic_city(n_pois=200, rows=8, cols=8, seed=0)
    >>> tr = synthetic_trajectories(city, n_users=3, n_steps=10, seed=1)
    >>> tr.cells_matrix().shape
    (3, 10)
    """
    n_users = check_int(n_users, "n_users", minimum=1)
    n_steps = check_int(n_steps, "n_steps", minimum=1)
    step_seconds = check_int(step_seconds, "step_seconds", minimum=1)
    try:
        t0 = np.datetime64(start, "s")
    except ValueError:
        raise ParameterError(f"start must be an ISO timestamp, got {start!r}") from None
    model = mobility_model(city) if model is None else model
    if model.n_cells != city.n_cells:
        raise ParameterError(f"model has {model.n_cells} cells but the city has {city.n_cells}")
    rng = make_rng(rng, seed=seed)
    cum = np.cumsum(model.probs, axis=1)
    cum /= cum[:, -1:]
    cells = np.empty((n_users, n_steps), dtype=np.int64)
    cells[:, 0] = rng.choice(city.n_cells, size=n_users, p=model.initial)
    u = rng.random((n_users, n_steps))
    for t in range(1, n_steps):  # a Markov chain is sequential in time; vectorized over users
        s = cells[:, t - 1]
        k = np.minimum((u[:, t, None] >= cum[s]).sum(axis=1), cum.shape[1] - 1)
        cells[:, t] = model.neighbours[s, k]
    flat = cells.ravel()
    dlat, dlon = city.cell_deg
    lat = city.south + (flat // city.cols + rng.random(flat.size)) * dlat
    lon = city.west + (flat % city.cols + rng.random(flat.size)) * dlon
    lat = np.clip(lat, city.south, city.north)
    lon = np.clip(lon, city.west, city.east)
    step = np.tile(np.arange(n_steps, dtype=np.int64), n_users)
    return Trajectories(np.repeat(np.arange(n_users, dtype=np.int64), n_steps), step,
                        t0 + step * np.timedelta64(step_seconds, "s"), flat, lat, lon,
                        n_users, n_steps, step_seconds)


# ---------------------------------------------------------------------------
# Check-ins
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class CheckIns:
    """Check-ins, one row each, sorted by user then time.

    Attributes
    ----------
    user, category, poi : numpy.ndarray of int64
        ``category`` is a category id (position in ``categories.leaves``).
    time : numpy.ndarray of datetime64[s]
    lat, lon : numpy.ndarray of float64
    n_users : int
    categories : CategoryTree
    """

    user: np.ndarray
    category: np.ndarray
    poi: np.ndarray
    time: np.ndarray
    lat: np.ndarray
    lon: np.ndarray
    n_users: int
    categories: CategoryTree

    def __len__(self) -> int:
        return int(self.user.size)

    @property
    def category_name(self) -> np.ndarray:
        return self.categories.leaf_names[self.category]

    def visit_histograms(self) -> np.ndarray:
        """Per-user visit counts per category, shape ``(n_users, n_categories)``, int64."""
        L = self.categories.n_leaves
        return np.bincount(self.user * L + self.category,
                           minlength=self.n_users * L).reshape(self.n_users, L).astype(np.int64)

    def columns(self) -> dict[str, np.ndarray]:
        return {"user": self.user, "category": self.category_name, "time": self.time,
                "lat": self.lat, "lon": self.lon}

    def to_arrow(self):
        """``(user, category, time, lat, lon)`` as a :class:`pyarrow.Table` (category by name)."""
        return columns_to_arrow(self.columns())


def _hour_profiles(tree: CategoryTree) -> np.ndarray:
    """(n_top, 24) weights of the hour of day for each top-level category."""
    tops = [tree.names[i] for i in np.flatnonzero(tree.depth == 1)]
    h = np.arange(24) + 0.5
    prof = np.empty((len(tops), 24))
    for k, top in enumerate(tops):
        centres, width = _HOURS.get(top, ((12.0,), 4.0))
        d = np.abs(h[:, None] - np.asarray(centres)[None, :])
        d = np.minimum(d, 24 - d)
        prof[k] = np.exp(-0.5 * (d / width) ** 2).sum(axis=1) + 0.01
    return prof


def synthetic_checkins(city: City, *, n_users: int = 200, mean_per_user: float = 40.0,
                       days: int = 28, start: str = "2026-03-02", taste: float = 0.5,
                       locality_m: float = 1500.0, candidates: int = 8,
                       rng: np.random.Generator | None = None,
                       seed: int | None = None) -> CheckIns:
    """Generate check-ins at the city's places.

    Each user has a home (a random POI location) and personal tastes: a
    Dirichlet draw around the global category popularity (``taste`` is its
    concentration; smaller means more idiosyncratic users). The number of
    check-ins per user is Poisson(``mean_per_user``) (at least 1). For each
    check-in: a category from the user's tastes, then ``candidates`` random
    places of that category, of which one is chosen with weight
    ``exp(-distance to home / locality_m)``; a day uniform over ``days`` and an
    hour typical of the category. The position is the place plus about 10 m of
    GPS jitter. Only categories that have at least one place can be drawn.

    Parameters
    ----------
    city : City
    n_users : int
    mean_per_user : float
    days : int
    start : str
        ISO date of the first day.
    taste, locality_m : float
    candidates : int
    rng, seed
        Random source; ``seed`` for experiments and tests.

    Examples
    --------
    >>> city = synthetic_city(n_pois=400, seed=0)
    >>> ci = synthetic_checkins(city, n_users=5, mean_per_user=20, seed=3)
    >>> set(ci.to_arrow().column_names) == {"user", "category", "time", "lat", "lon"}
    True
    """
    n_users = check_int(n_users, "n_users", minimum=1)
    mean_per_user = check_positive(mean_per_user, "mean_per_user")
    days = check_int(days, "days", minimum=1)
    taste = check_positive(taste, "taste")
    locality_m = check_positive(locality_m, "locality_m")
    candidates = check_int(candidates, "candidates", minimum=1, maximum=256)
    try:
        d0 = np.datetime64(start, "D").astype("datetime64[s]")
    except ValueError:
        raise ParameterError(f"start must be an ISO date, got {start!r}") from None
    rng = make_rng(rng, seed=seed)
    tree = city.categories
    L = tree.n_leaves
    pois_per_cat = np.bincount(city.poi_category, minlength=L)
    pop = np.array([_POPULARITY.get(n, 1.0) for n in tree.leaf_names]) * (pois_per_cat > 0)
    alpha = taste * L * pop / pop.sum()
    g = rng.gamma(np.where(alpha > 0, alpha, 1.0), size=(n_users, L)) * (alpha > 0)
    g += 1e-12 * (alpha > 0)  # a user whose gamma draws all underflow still has tastes
    pref = g / g.sum(axis=1, keepdims=True)
    home = rng.integers(0, city.n_pois, size=n_users)
    hx, hy = city.to_local_m(city.poi_lat[home], city.poi_lon[home])

    counts = np.maximum(rng.poisson(mean_per_user, size=n_users), 1)
    user = np.repeat(np.arange(n_users, dtype=np.int64), counts)
    n = user.size
    cat = _categorical_by_group(pref, user, rng.random(n)).astype(np.int64)

    # places grouped by category: random candidates of the drawn category
    order = np.argsort(city.poi_category, kind="stable")
    first = np.concatenate(([0], np.cumsum(pois_per_cat)[:-1]))
    poi = np.empty(n, dtype=np.int64)
    chunk = max(1, (1 << 21) // candidates)  # bounded memory for millions of check-ins
    for a in range(0, n, chunk):
        sl = slice(a, min(n, a + chunk))
        c_, u_ = cat[sl], user[sl]
        cand = order[first[c_, None] + (rng.random((c_.size, candidates))
                                        * pois_per_cat[c_, None]).astype(np.int64)]
        px, py = city.to_local_m(city.poi_lat[cand], city.poi_lon[cand])
        dist = np.hypot(px - hx[u_, None], py - hy[u_, None])
        w = np.exp(-(dist - dist.min(axis=1, keepdims=True)) / locality_m)
        poi[sl] = cand[np.arange(c_.size), _inverse_cdf_rows(w, rng.random(c_.size))]

    top_pos = np.searchsorted(np.flatnonzero(tree.depth == 1), tree.top_level)
    hours = _categorical_by_group(_hour_profiles(tree), top_pos[cat], rng.random(n))
    secs = (rng.integers(0, days, size=n) * 86400 + hours * 3600
            + rng.integers(0, 3600, size=n)).astype(np.int64)
    time = d0 + secs.astype("timedelta64[s]")
    jitter = rng.normal(0.0, 10.0, size=(n, 2))  # metres
    lat = city.poi_lat[poi] + jitter[:, 1] / _M_PER_DEG_LAT
    lon = city.poi_lon[poi] + jitter[:, 0] / (_M_PER_DEG_LAT * math.cos(math.radians(city.centre_lat)))
    lat = np.clip(lat, city.south, city.north)
    lon = np.clip(lon, city.west, city.east)
    srt = np.lexsort((secs, user))
    return CheckIns(user[srt], cat[srt], poi[srt], time[srt], lat[srt], lon[srt], n_users, tree)


# ---------------------------------------------------------------------------
# Census table
# ---------------------------------------------------------------------------

#: Column order of :func:`synthetic_census`.
CENSUS_COLUMNS: tuple[str, ...] = ("age", "education", "marital-status", "occupation", "race",
                                   "sex", "native-country", "salary")
#: The quasi-identifiers used in the k-anonymity literature on Adult.
CENSUS_QUASI_IDENTIFIERS: tuple[str, ...] = CENSUS_COLUMNS[:7]
#: The sensitive attribute.
CENSUS_SENSITIVE = "salary"

# (value, education-num, base share)
_EDUCATION = (
    ("Preschool", 1, 0.2), ("1st-4th", 2, 0.5), ("5th-6th", 3, 1.0), ("7th-8th", 4, 2.0),
    ("9th", 5, 1.6), ("10th", 6, 2.9), ("11th", 7, 3.6), ("12th", 8, 1.3), ("HS-grad", 9, 32.0),
    ("Some-college", 10, 22.0), ("Assoc-voc", 11, 4.2), ("Assoc-acdm", 12, 3.3),
    ("Bachelors", 13, 16.4), ("Masters", 14, 5.3), ("Prof-school", 15, 1.8),
    ("Doctorate", 16, 1.3),
)
# minimum plausible age for each education-num
_EDU_MIN_AGE = np.array([17, 17, 17, 17, 17, 17, 17, 17, 18, 18, 19, 19, 21, 23, 24, 26])
_MARITAL = ("Married-civ-spouse", "Never-married", "Divorced", "Separated", "Widowed",
            "Married-spouse-absent", "Married-AF-spouse")
# (occupation, base share, log-weight per year of schooling above 10, log-weight if female)
_OCCUPATION = (
    ("Prof-specialty", 13.0, 0.45, 0.1), ("Craft-repair", 13.0, -0.25, -2.2),
    ("Exec-managerial", 13.0, 0.30, -0.4), ("Adm-clerical", 12.0, 0.0, 1.2),
    ("Sales", 11.5, 0.05, 0.0), ("Other-service", 10.5, -0.30, 0.8),
    ("Machine-op-inspct", 6.5, -0.30, -0.3), ("Transport-moving", 5.0, -0.25, -2.0),
    ("Handlers-cleaners", 4.5, -0.35, -1.3), ("Farming-fishing", 3.2, -0.30, -1.8),
    ("Tech-support", 3.0, 0.15, 0.1), ("Protective-serv", 2.1, -0.05, -1.3),
    ("Priv-house-serv", 0.5, -0.40, 2.0), ("Armed-Forces", 0.05, 0.0, -1.5),
)
_RACE = (("White", 85.4), ("Black", 9.6), ("Asian-Pac-Islander", 3.2),
         ("Amer-Indian-Eskimo", 1.0), ("Other", 0.8))
# native-country shares by race (rows follow _RACE)
_COUNTRIES = ("United-States", "Mexico", "Philippines", "Germany", "Canada", "Puerto-Rico",
              "El-Salvador", "India", "Cuba", "England", "China", "Jamaica", "Vietnam", "Italy")
_COUNTRY_BY_RACE = np.array([
    # US    MX   PH   DE   CA   PR   SV   IN   CU   EN   CN   JM   VN   IT
    [92.5, 2.4, 0.0, 0.6, 0.5, 0.3, 0.4, 0.0, 0.4, 0.4, 0.0, 0.0, 0.0, 0.3],   # White
    [93.0, 0.0, 0.0, 0.1, 0.1, 0.4, 0.0, 0.0, 0.2, 0.1, 0.0, 2.8, 0.0, 0.0],   # Black
    [40.0, 0.0, 18.0, 0.0, 0.5, 0.0, 0.0, 12.0, 0.0, 0.0, 8.0, 0.0, 6.0, 0.0],  # Asian-Pac
    [98.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],   # Amer-Indian
    [55.0, 18.0, 0.0, 0.0, 0.0, 12.0, 5.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],  # Other
])


def _onehot_draw(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return _inverse_cdf_rows(weights, rng.random(weights.shape[0]))


def synthetic_census(n_rows: int = 10_000, *, missing_rate: float = 0.0,
                     rng: np.random.Generator | None = None,
                     seed: int | None = None) -> dict[str, np.ndarray]:
    """An Adult-like census table with correlated columns.

    Columns (:data:`CENSUS_COLUMNS`): ``age`` (int64, 17-90, right-skewed,
    mean about 38); ``education`` (16 levels; advanced degrees need a minimum
    age); ``marital-status`` (driven by age and sex: the young are mostly
    never married, widowhood grows with age and is more common for women);
    ``occupation`` (14 values, driven by education and sex); ``race``;
    ``sex`` (about two thirds male); ``native-country`` (driven by race);
    ``salary`` (``"<=50K"`` / ``">50K"``, logistic in age, education,
    marriage, sex and occupation; about a quarter above 50K). Text columns are
    numpy unicode arrays. The values follow the spelling of the UCI Adult data
    so code written for one runs on the other; the numbers are invented.

    Parameters
    ----------
    n_rows : int
    missing_rate : float
        Share of ``occupation`` and ``native-country`` cells replaced by ``"?"``
        (as in Adult), independently.
    rng, seed
        Random source; ``seed`` for experiments and tests.

    Returns
    -------
    dict of str to numpy.ndarray
        Columns in :data:`CENSUS_COLUMNS` order, all of length ``n_rows``.

    Examples
    --------
    >>> t = synthetic_census(1000, seed=0)
    >>> list(t) == list(CENSUS_COLUMNS), int(t["age"].min()) >= 17
    (True, True)
    """
    n = check_int(n_rows, "n_rows", minimum=1)
    missing_rate = check_probability(missing_rate, "missing_rate")
    rng = make_rng(rng, seed=seed)

    age = np.minimum(17 + np.floor(rng.gamma(2.2, 9.6, size=n)), 90).astype(np.int64)
    female = rng.random(n) < 0.331
    race = _onehot_draw(np.tile([w for _, w in _RACE], (n, 1)), rng)

    edu_share = np.array([s for _, _, s in _EDUCATION])
    edu_w = np.tile(edu_share, (n, 1)) * (age[:, None] >= _EDU_MIN_AGE[None, :])
    # older cohorts were a little less schooled
    edu_num_all = np.arange(1, 17)
    edu_w *= np.exp(-0.012 * np.clip(age - 45, 0, None)[:, None] * (edu_num_all[None, :] - 9))
    edu = _onehot_draw(edu_w, rng)
    edu_num = edu + 1

    # marital status: logits by age and sex
    a = (age - 17) / 10.0
    logit = np.column_stack([
        -1.3 + 1.6 * a - 0.22 * a ** 2 - 0.5 * female,          # married-civ-spouse
        2.0 - 1.2 * a + 0.05 * a ** 2,                           # never married
        -2.4 + 1.3 * a - 0.16 * a ** 2 + 0.5 * female,           # divorced
        -3.6 + 0.8 * a - 0.1 * a ** 2 + 0.6 * female,            # separated
        -7.6 + 1.4 * a - 0.02 * a ** 2 + 1.4 * female,           # widowed
        -4.5 + 0.5 * a - 0.06 * a ** 2,                          # married-spouse-absent
        -9.0 + np.zeros(n),                                      # married-AF-spouse
    ])
    marital = _onehot_draw(np.exp(logit - logit.max(axis=1, keepdims=True)), rng)

    occ_base = np.log([s for _, s, _, _ in _OCCUPATION])
    occ_edu = np.array([e for _, _, e, _ in _OCCUPATION])
    occ_fem = np.array([f for _, _, _, f in _OCCUPATION])
    occ_logit = (occ_base[None, :] + np.clip(edu_num - 10, -6, 6)[:, None] * occ_edu[None, :]
                 + female[:, None] * occ_fem[None, :])
    occ = _onehot_draw(np.exp(occ_logit - occ_logit.max(axis=1, keepdims=True)), rng)

    country = _onehot_draw(_COUNTRY_BY_RACE[race], rng)

    occ_effect = np.array([0.9, -0.1, 1.0, -0.3, 0.2, -1.2, -0.5, -0.2, -1.0, -0.9,
                           0.3, 0.4, -2.0, 0.0])
    ya = np.minimum(age, 60) - 17
    z = (-4.6 + 0.085 * ya - 0.0009 * ya ** 2 + 0.34 * (edu_num - 9).clip(-4, None)
         + 2.6 * (marital == 0) - 0.4 * female + occ_effect[occ] + 0.1 * (country == 0))
    rich = rng.random(n) < 1.0 / (1.0 + np.exp(-z))

    occupation = np.array([o for o, *_ in _OCCUPATION])[occ]
    native = np.array(_COUNTRIES)[country]
    if missing_rate > 0:
        occupation = np.where(rng.random(n) < missing_rate, "?", occupation)
        native = np.where(rng.random(n) < missing_rate, "?", native)
    return {
        "age": age,
        "education": np.array([e for e, _, _ in _EDUCATION])[edu],
        "marital-status": np.array(_MARITAL)[marital],
        "occupation": occupation,
        "race": np.array([r for r, _ in _RACE])[race],
        "sex": np.where(female, "Female", "Male"),
        "native-country": native,
        "salary": np.where(rich, ">50K", "<=50K"),
    }


def columns_to_arrow(columns: dict[str, np.ndarray]):
    """A dict of equal-length numpy columns as a :class:`pyarrow.Table` (e.g. for DuckDB).

    Examples
    --------
    >>> columns_to_arrow(synthetic_census(10, seed=0)).num_rows
    10
    """
    import pyarrow as pa

    return pa.table({k: pa.array(np.asarray(v).tolist() if np.asarray(v).dtype.kind == "U"
                                 else np.asarray(v)) for k, v in columns.items()})
