"""Playing: the Agent interface and every agent, infoset encoding, the networks that play,
policy bundles, match running, variance-aware statistics, exact best response, and the
``pokerbot`` CLI.

Depends on ``protocol`` only. The one exception is the CLI: ``bot/commands/train.py`` and
``bot/commands/solve.py`` import ``training`` and ``bot/commands/play.py`` imports ``tui`` inside
their command functions (``tests/test_import_directions.py`` holds every arrow).
"""
