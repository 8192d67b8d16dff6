"""The game as ACPC defines it: game definitions, cards, hand ranking, the rules engine,
MATCHSTATE text, the compiled public betting tree, and (later) the TCP client and dealer.

Nothing here imports from ``bot``, ``training`` or ``tui``.
"""

from protocol.numba_cache import key_numba_cache

key_numba_cache()  # before any kernel is decorated (protocol/numba_cache.py)
