"""Deep CFR and Single Deep CFR (Brown et al. 2019; Steinberger 2019) and their outcome-sampling
variants: the trainer (``trainer``), its config and presets (``config``), the network fits
(``fit``), the policy bundle and checkpoints (``files``), batched external-sampling traversals
(``traversal``, on Ray workers: ``ray_traversal``; their seeds: ``streams``), merged memories and their incremental log
(``merged_memory``, ``memory_log``), and DREAM / OS-SD-CFR (``dream``, ``outcome_sampling``,
``q_baseline``; Steinberger et al. 2020)."""
