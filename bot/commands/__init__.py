"""One module per CLI command; :mod:`bot.cli` loads them lazily."""
