"""The Textual app behind ``pokerbot play``: a person plays heads-up against a pokerbot agent."""

from protocol.numba_cache import key_numba_cache

key_numba_cache()  # before any kernel is decorated (protocol/numba_cache.py)
