"""murphy_lab: MURPHY (arXiv 2511.07833) — feedback-conditioned rollout trees, retrospective credit, multi-turn GRPO.

Start with `murphy_lab.tree` (the data), then `credit`, `prune`, `grpo` (pure functions over trees).
"""

__version__ = "0.1.0"
