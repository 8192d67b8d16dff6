"""Producing policies, one folder per family: the run contract every trainer follows
(``contract``), tabular CFR (``tabular``), the lossless FHP solve (``flop``), Deep CFR / SD-CFR /
DREAM (``deep_cfr``), NFSP (``nfsp``), card abstractions and their MCCFR (``abstraction``), and
the pieces more than one family shares (``common``)."""

from protocol.numba_cache import key_numba_cache

key_numba_cache()  # before any kernel is decorated (protocol/numba_cache.py)
