"""Baselines that share MURPHY's machinery: GRPO (single turn), GRPO-MT, and (in their own modules) µCode, ReVeal.

`grpo_mt` and `grpo_single` live with the mode table in murphy_lab/modes.py; `baselines.rules` aliases them too.
"""

from murphy_lab.modes import grpo_mt, grpo_single

__all__ = ["grpo_mt", "grpo_single"]
