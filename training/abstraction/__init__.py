"""Tabular card-abstraction baselines, the training side: hand-strength and OCHS features
(``features``), percentile, k-means and potential-aware buckets (``buckets``, ``kmeans``,
``potential``), cached bucket tables (``build``), the ES Linear MCCFR solver (``solver``,
``strategy``) and ``pokerbot train --algo abstraction`` (``run``). What playing needs (the named
specs, table loading, suit isomorphism, cost estimates) lives in ``bot.abstraction`` and
``protocol.isomorphism``."""
