"""Location privacy: geometry, geo-indistinguishability, l-privacy, and release under temporal correlations."""
