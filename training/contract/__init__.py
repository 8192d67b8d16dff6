"""The run contract every trainer follows: the one resolver and entry (``entry``), the run
directory with atomic checksummed checkpoints (``rundir``, ``lock``, ``progress``), the interrupt
policy and checkpoint clock (``stop``), the Ray cluster start and actor pool (``cluster``), the
strength signal on large games (``strength``) and the run's plots (``plots``)."""
