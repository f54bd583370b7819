"""On-policy distillation: teacher routing and serving (``teachers``), the specialists
stage and the distillation stage (``stages.distill``). The per-token advantage itself is an
entry of the advantage registry (``advantages.distill``)."""
