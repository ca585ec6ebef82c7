"""DP density maps of locations: from points to a published 2-D histogram, per person.

A *map* counts points (check-ins, GPS fixes, trip origins) in the cells of a public grid over a
public box (:class:`MapGrid`, named public regions in :data:`REGIONS`), bounds how many points
each person contributes (:func:`grid_counts`, in DuckDB), and publishes the counts with an
eps-DP mechanism (:func:`publish`): Identity, UG and AG (Qardaji et al. ICDE 2013), a quadtree
with geometric budget and constrained inference (Cormode et al. ICDE 2012), PrivTree (Zhang et
al. SIGMOD 2016), HB2D, DAWA-2D (Hilbert order + 1-D DAWA) and HDMM with a Kronecker strategy
(McKenna et al. PVLDB 2018), or ``auto`` (a public rule fitted on DPBench's 2-D data and six maps of
the shared point files).
:func:`publish_points` does all three steps from a file; :func:`write_map` writes the table,
GeoJSON, PNG and GeoTIFF outputs, :func:`read_map` and :func:`query_boxes` answer rectangle
queries from a published map.

The protected unit is stated in every release: ``protects='user'`` (one person with at most
``max_points`` points: neighbouring inputs differ by one person) or ``'record'`` (one point).
"""

from __future__ import annotations

from .api import MECHANISMS, METHODS, publish
from .grid import REGIONS, MapGrid, parse_bbox, parse_shape, region_bbox
from .hdmm import hdmm
from .mechanisms import ag, dawa2d, hb2d, identity, quadtree, ug
from .output import PublishedMap, read_map, write_map
from .pipeline import publish_points
from .points import PointCounts, data_extent, grid_counts
from .privtree import privtree
from .query import query_boxes

__all__ = [
    "MapGrid", "REGIONS", "region_bbox", "parse_bbox", "parse_shape",
    "PointCounts", "grid_counts", "data_extent",
    "METHODS", "MECHANISMS", "publish", "publish_points",
    "identity", "ug", "ag", "quadtree", "hb2d", "privtree", "dawa2d", "hdmm",
    "write_map", "read_map", "PublishedMap", "query_boxes",
]
