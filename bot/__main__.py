"""``python -m bot ARGS`` is ``pokerbot ARGS`` (handy in a checkout that is not the installed one)."""

from bot.cli import main

main()
