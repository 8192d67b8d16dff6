"""The tests, in folders that mirror the packages (``architecture/`` holds the layering, typing
and docs checks). Every folder is a package, so a test module is named by its path
(``tests.training.deep_cfr.test_dream``) and one test module imports another's helpers by that
name."""
