"""Baselines with their own training pipelines: µCode (`mucode/`) and ReVeal (`reveal/`).

Each is a method plug-in (`murphy_lab.methods`): its package's `method.py` holds its registry entry. GRPO and
GRPO-MT train with MURPHY's trainer (their credit rules are in `murphy_lab.scoring`).
"""
