"""Baselines that share MURPHY's machinery: GRPO (single turn), GRPO-MT, and (in their own modules) µCode, ReVeal."""

from murphy_lab.modes import grpo_mt, grpo_single  # the rules live with the mode table; baselines.rules aliases them

__all__ = ["grpo_mt", "grpo_single"]
