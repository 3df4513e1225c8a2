"""The GRPO / GRPO-MT credit rules, kept importable here: they live in murphy_lab/modes.py with the mode table."""

from murphy_lab.modes import chains, grpo_mt, grpo_single

__all__ = ["chains", "grpo_mt", "grpo_single"]
