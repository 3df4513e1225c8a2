"""ReVeal (Jin et al., "ReVeal: Self-Evolving Code Agents via Reliable Self-Verification", ICLR 2026): the paper's
self-verification baseline — alternating generation and verification turns, self-written tests checked against the
gold solution, turn-level rewards and TAPO advantages — on MURPHY's trainer, executor and evaluation.

    format.py    the tagged round (<generation-think/answer>, <verification-think/answer>, <tool-feedback>),
                 a parser that tolerates malformed tags and lists what it repaired, test-case extraction
    verify.py    the tool: validate tests on the reference, run the program on the valid ones, write feedback
    chain.py     rollouts: chains of rounds, one generation call and one executor batch per round
    rewards.py   outcome / generation / verification rewards and TAPO advantages (exact definitions there)
    config.py    ReVealConfig, a recipe's two configs (load_recipe), as_chains; read without TRL
    trainer.py   ReVealTrainer(MurphyTrainer) (per-token advantages), train_reveal
    __main__.py  python -m murphy_lab.baselines.reveal --config reveal.yaml --output-dir DIR [--check] [--set F=V]
    scaffold.py  ReVealScaffold (scaffold "reveal": its rounds, public-test feedback as every column),
                 ReVealOwnScaffold ("reveal-own": its own loop, an extra row), evaluate_reveal
    method.py    ReVeal's entry in murphy_lab.methods: trained from an experiment, evaluated in its rounds with the
                 same public-test feedback as every other column

Published and followed: the turn structure and tag names; tests validated against the gold solution (a test the
reference fails is invalid); feedback with runtime errors, invalid tests, expected vs actual and pass/fail; an
outcome reward plus dense per-turn generation and verification rewards; turn-level credit (TAPO); 3 rounds in
training and more at test time. Where the paper is silent we chose, and say so in the module that computes it:
the exact reward formulas and TAPO combination (rewards.py), the stopping rule (chain.py), no reference at test
time (scaffold.py), no format reward (a malformed round simply earns what its parsed content earns).

    from murphy_lab.baselines.reveal import ReVealConfig, train_reveal, evaluate_reveal
    final = train_reveal(MurphyConfig.for_profile("smoke"), "runs/reveal-smoke")
    df = evaluate_reveal(policy, tasks, executor, iters=(1, 3, 5), scaffold="reveal")
"""

from murphy_lab.baselines.reveal.chain import Chain, Turn, run_chains
from murphy_lab.baselines.reveal.config import ReVealConfig, load_recipe
from murphy_lab.baselines.reveal.format import Round, extract_tests, first_prompt, parse_round, reveal_extract
from murphy_lab.baselines.reveal.rewards import (
    generation_reward,
    returns,
    tapo,
    tapo_groups,
    turn_rewards,
    verification_reward,
)
from murphy_lab.baselines.reveal.scaffold import (
    REVEAL_SCAFFOLDS,
    ReVealOwnScaffold,
    ReVealScaffold,
    evaluate_reveal,
)
from murphy_lab.baselines.reveal.verify import Check, check_rounds, tool_feedback
from murphy_lab.lazy import lazy
from murphy_lab.scaffolds import SCAFFOLDS

for _name, _cls in REVEAL_SCAFFOLDS.items():  # evaluate(..., scaffold="reveal" / "reveal-own") once imported
    SCAFFOLDS.setdefault(_name, _cls)


# the trainer imports TRL: load it only when asked for
__getattr__ = lazy(
    __name__, dict.fromkeys(("ReVealTrainer", "train_reveal", "chain_stats"), "trainer"), globals()
)


__all__ = [
    "REVEAL_SCAFFOLDS",
    "Chain",
    "Check",
    "ReVealConfig",
    "ReVealOwnScaffold",
    "ReVealScaffold",
    "ReVealTrainer",
    "Round",
    "Turn",
    "chain_stats",
    "check_rounds",
    "evaluate_reveal",
    "extract_tests",
    "first_prompt",
    "generation_reward",
    "load_recipe",
    "parse_round",
    "returns",
    "reveal_extract",
    "run_chains",
    "tapo",
    "tapo_groups",
    "tool_feedback",
    "train_reveal",
    "turn_rewards",
    "verification_reward",
]
