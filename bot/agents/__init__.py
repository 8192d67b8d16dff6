"""What plays: the :class:`~bot.agents.base.Agent` interface and its baselines, the registry
that resolves ``--agent``/``--opponent`` names and paths, the one policy bundle format, and the
agents of trained policies: Deep CFR / SD-CFR and NFSP networks with their infoset encoding,
tabular policies over the dense infoset index of a small game.

The lowest layer of ``bot``: imports ``protocol`` and ``bot.errors`` / ``bot.progress`` only.
Agents defined higher up (``bot.abstraction``, ``bot.flop``, ``bot.shipped``) join the registry
through its plugin list (module names imported lazily), so no import runs up
(``tests/architecture/test_bot_layers.py``); the loaders of strategy files register in the
registry too, where ``bot.evaluation.best_response.load_strategy`` reads them.
"""
