"""What plays: the :class:`~bot.agents.base.Agent` interface and its baselines, the one policy
bundle format, and the agents of trained policies: Deep CFR / SD-CFR and NFSP networks with
their infoset encoding, tabular policies over the dense infoset index of a small game.

The lowest layer of ``bot`` after its helpers: imports ``protocol`` and ``bot.errors`` /
``bot.progress`` only. These modules define their loaders; :mod:`bot.registry`, above every
kind's module (``bot.abstraction``, ``bot.flop``, ``bot.shipped`` too), registers them, so no
import runs up (``tests/architecture/test_bot_layers.py``).
"""
