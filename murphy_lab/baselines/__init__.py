"""Baselines that share MURPHY's machinery: GRPO (single turn), GRPO-MT, and (in their own modules) µCode, ReVeal."""

from murphy_lab.baselines.rules import grpo_mt, grpo_single

__all__ = ["grpo_mt", "grpo_single"]
