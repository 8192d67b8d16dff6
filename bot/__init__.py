"""Playing: every agent, how strong it is, and the ``pokerbot`` CLI, in sub-packages by job.

Lowest first; each imports only those below it (``tests/architecture/test_bot_layers.py`` checks every
arrow, with its documented exceptions):

* ``bot.errors``, ``bot.progress``: the error root (from ``protocol.errors``) and progress bars.
* ``bot.agents``: the Agent interface and registry, policy bundles, the Deep CFR / SD-CFR, NFSP
  and tabular agents with their encoding, networks and infoset index.
* ``bot.shipped``: the bots that ship inside the package (``--agent default``).
* ``bot.abstraction``: card abstractions at play time and their agents.
* ``bot.evaluation``: exact best response, LBR, matches, AIVAT, statistics, match reports.
* ``bot.flop``: flop hold'em as range vectors per flop (exact FHP best response, FHP policies).
* ``bot.cli`` and ``bot.commands``: the ``pokerbot`` command line, one module per command.

``bot`` imports ``protocol``, never ``training`` or ``tui``, except where
``tests/architecture/test_import_directions.py`` documents it (the CLI's commands that run training or the
table import them inside the command function).
"""

from protocol.numba_cache import key_numba_cache

key_numba_cache()  # before any kernel is decorated (protocol/numba_cache.py)
