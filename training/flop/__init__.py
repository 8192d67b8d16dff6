"""The lossless full-width solve of flop hold'em (FHP): its vectorised CFR and the CFR update of
the tables (``cfr``), the checkpointed solve run (``solve``) and the exact per-flop evaluation of a
Deep CFR network policy (``evaluation``)."""
