"""The random streams of a Deep CFR run: every iteration and player draws each of its random
choices from its own generator, seeded by ``(seed, t, p, stream)``, so a resumed run, and a
traversal on a Ray worker (:mod:`training.deep_cfr.ray_traversal`), repeat exactly what the
single-process run draws (:mod:`training.deep_cfr.trainer`)."""

from __future__ import annotations

from enum import IntEnum


class Stream(IntEnum):
    """The random streams of one iteration and player (values are the seeds' last component,
    unchanged from when they were numbered, so runs reproduce exactly)."""

    TRAVERSAL = 0
    """Deals and sampled actions of the traversals."""
    RESERVOIR = 1
    """Reservoir sampling of the memories."""
    VALUE_INIT = 2
    """Initial weights of the value network."""
    VALUE_BATCHES = 3
    """Minibatches of the value network's fit."""
    AVERAGE_INIT = 4
    """Initial weights of the average network (player slot 2)."""
    AVERAGE_BATCHES = 5
    """Minibatches of the average network's fit (player slot 2)."""
