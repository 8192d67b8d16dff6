"""The game as ACPC defines it: game definitions, cards, hand ranking, the rules engine,
MATCHSTATE text, the compiled public betting tree, and (later) the TCP client and dealer.

Nothing here imports from ``bot``, ``training`` or ``tui``.
"""
