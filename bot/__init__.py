"""Playing: the Agent interface and every agent, infoset encoding, the networks that play,
match running, variance-aware statistics, exact best response, and the ``pokerbot`` CLI.

Depends on ``protocol`` only (``training`` is imported lazily by the CLI's ``train`` command).
"""
