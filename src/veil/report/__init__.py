"""Plots and the self-contained HTML report (``veil demo``, ``veil report``)."""
