"""Tabular CFR on games whose public tree fits in memory (Kuhn, Leduc): full-width CFR, CFR+,
Linear CFR and DCFR (``cfr``), external-sampling MCCFR (``mccfr``) and the loop of
``pokerbot solve`` over a run directory (``solve``)."""
