"""Neural Fictitious Self-Play (Heinrich & Silver 2016): the learner (``learner``), its settings
(``config``), loss and schedule steps (``steps``), exact small-game count targets (``counts``),
diagnostics (``diagnostics``), the run loop (``run``) and the batched self-play games it steps
(``vector_env``)."""
