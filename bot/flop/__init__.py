"""Flop hold'em (FHP) as range vectors per flop: the game's per-flop arrays, the exact best
response one flop at a time, every kind of policy read as flop tables, and the shipped FHP
network bot.

The top of the playing layers: imports ``bot.agents``, ``bot.shipped``, ``bot.abstraction``,
``bot.evaluation`` and the helpers (``bot.errors``, ``bot.progress``);
``tests/architecture/test_bot_layers.py`` checks it.
"""
