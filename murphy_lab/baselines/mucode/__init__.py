"""µCode: multi-turn code generation through single-step rewards (Jain et al., ICML 2025, arXiv 2502.20380).

One of the systems MURPHY is compared with in every row of its main table: learn a verifier, let it pick the best
answer for every visited state, and imitate those choices. Expert iteration, M rounds:

    for r = 1..M:
        D_r  <- multi-turn chains of π_{r-1}: 15 chains × 3 turns per task, T = 0.7, visible-test feedback
        D    <- D_1 ∪ ... ∪ D_r;   labels from the hidden tests (the oracle)
        R_φ  <- Bradley-Terry on (x, y+, y-) pairs from D       (from the base; lr 1e-6, 2 epochs)
        y*(x) = argmax_{y ∈ Y(x)} 100·[y correct] + R_φ(x, y)    one-step recoverability: one answer per task
        π_r  <- SFT on {(s_t, y*(x)) : states s_t of failed chains} ∪ correct chains      (lr 5e-7, 2 epochs)
    inference: multi-turn best-of-N, ŷ_t = argmax_i R_φ(x, y_t^i) at every turn; and plain Iter-k without R_φ

Modules: `rollouts` (chains + oracle labels), `verifier` (pairs, BT/BCE losses, TRL RewardTrainer, scoring),
`relabel` (the expert; pure), `sft` (TRL SFTTrainer), `inference` (the best-of-N scaffold), `pipeline` (stages,
cache, `run_mucode`), `config` (MuCodeConfig; its profile presets are in murphy_lab.profiles). Command line:

    python -m murphy_lab.baselines.mucode --profile smoke --output-dir runs/mucode-smoke
    python -m murphy_lab.baselines.mucode --config reproduce/configs/mucode.yaml --output-dir runs/mucode [--resume]

Where the public description (paper + official code, github.com/portal-cornell/muCode) is silent or where we
depart, and what we chose:

1. State = MURPHY's refinement prompt [task, last code, last feedback], not the whole chat history µCode feeds its
   generator: our policies (the toy model in particular) are trained on exactly these strings, and MURPHY's
   evaluation scaffold uses them. Chains are trees grown with G2 = 1.
2. A chain stops at a *visible* pass; the label of every attempt is its own hidden-test verdict (the official
   pair builder labels every non-final turn incorrect, which differs only when a non-final attempt passes the
   hidden tests while failing visible ones).
3. Verifier input: the original task prompt x + the response (official: first user message + response). Pairs:
   32 per task with replacement. BCE (ablation) is trained on the same pairs' members, each with its own label.
4. The expert's candidate set Y(x) is every SAMPLED attempt of every chain of x, never the task's reference
   solution: the official rollout data can carry the canonical solution (eval_rm.py's `remove_canonical`), but a
   gold program among the candidates makes every relabeled target correct — supervision none of the RL methods
   compared with µCode receives. The gold-augmented variant is not offered.
5. Rounds: mucode.sh updates the generator twice and trains a third verifier on the last generator's rollouts for
   best-of-N; `rounds=2, final_verifier=True` (the paper profile) is that schedule. Each round fine-tunes from
   the base on all relabeled data so far, and each verifier trains from the base on all pairs so far (as mucode.sh);
   `sft_from="previous"` is the alternative. Verifier and SFT batch sizes follow mucode.sh.
6. Best-of-N size N is not fixed by the paper (best_of_n.sh takes it as an argument): default 5. An attempt in
   Iter-k is the chosen program of a turn; all N generations are counted as model calls in the table's `calls`.
7. Max new tokens per attempt is not stated: 1024 by default.
"""

from murphy_lab.baselines.mucode.config import MuCodeConfig

# at once: `relabel` is also a submodule's name, which an import of that submodule would bind here instead
from murphy_lab.baselines.mucode.relabel import choice_key, expert_choice, relabel
from murphy_lab.lazy import lazy

# name -> the module that defines it, imported on first use (TRL, torch: not for the command's --check)
_LAZY = {
    "VerifierBestOfN": "inference",
    **dict.fromkeys(("evaluate_mucode", "finished_stages", "run_mucode", "stage"), "pipeline"),
    **dict.fromkeys(("collect_rollouts", "label_with_oracle"), "rollouts"),
    **dict.fromkeys(
        ("Verifier", "bce_loss", "bradley_terry_loss", "encode", "preference_pairs", "train_verifier"),
        "verifier",
    ),
}


__getattr__ = lazy(__name__, _LAZY, globals())


__all__ = [
    "MuCodeConfig",
    "Verifier",
    "VerifierBestOfN",
    "bce_loss",
    "bradley_terry_loss",
    "choice_key",
    "collect_rollouts",
    "encode",
    "evaluate_mucode",
    "expert_choice",
    "finished_stages",
    "label_with_oracle",
    "preference_pairs",
    "relabel",
    "run_mucode",
    "stage",
    "train_verifier",
]
