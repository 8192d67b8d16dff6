"""How strong an agent is: exact best response and exploitability on small games, local best
response (sampled and exact), head-to-head matches in process or over the ACPC wire, AIVAT,
variance-aware statistics and the match report.

Measures agents through the :class:`~bot.agents.base.Agent` interface and the registry, so it
imports ``bot.agents`` and the helpers (``bot.errors``, ``bot.progress``) only, never a
particular kind of agent elsewhere (``tests/architecture/test_bot_layers.py``).
"""
