"""``pokerbot watch``: a training run, live, as the Deep CFR explainer (docs/commands/watch.md).

``reader`` follows a run directory read-only; ``exact`` computes what the value networks
estimate on small games; ``kuhn`` holds Kuhn's equilibrium family; ``model`` turns all of it
into per-iteration views; ``panels`` has one widget per panel; ``app`` wires them together.
"""
