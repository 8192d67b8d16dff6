"""Tabular card-abstraction baselines: suit isomorphism (``isomorphism``), hand-strength
features (``features``), percentile and k-means buckets (``buckets``, ``kmeans``), named
abstractions and their cached tables (``spec``, ``build``, ``estimate``), the ES Linear MCCFR
solver (``solver``, ``strategy``) and ``pokerbot train --algo abstraction`` (``run``)."""
