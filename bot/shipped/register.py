"""Registers the agent name ``default``: the bot shipped for the game (see :mod:`bot.shipped`)."""

from bot.agents.registry import register_name
from bot.shipped import load_default

register_name("default", load_default)
