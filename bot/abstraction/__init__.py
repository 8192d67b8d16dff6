"""Card abstractions at play time: the named specs (buckets and recipe per round, where the
files live), the built bucket tables and the policy's row layout, size and time estimates,
buckets computed from the cards at decision time, the tabular abstraction agents, the
``abstraction`` bundle kind, and the compact format of the shipped hold'em bot.

Building and solving an abstraction is ``training.abstraction``'s job. Imports ``bot.agents``,
``bot.shipped`` and the helpers (``bot.errors``, ``bot.progress``); never ``bot.evaluation``
or ``bot.flop`` (``tests/architecture/test_bot_layers.py``).
"""
