"""One widget per panel of ``pokerbot watch``; each has ``show(model, iteration)``."""
