"""µCode's expert: one-step relabeling of every visited state with the best response to its task.

One-step recoverability (µCode §3): from ANY intermediate state of a code task, one correct program ends the
episode, so the optimal action at a state s_t of task x does not depend on the history — it is a correct answer to
x. The local expert therefore picks, among all responses collected for x, the one that scores highest,

    y*(x) = argmax_{y ∈ Y(x)} key(y),   key = 100·[y passes the hidden tests] + R_φ(x, y)   ('oracle+verifier')

(create_merged_RS_data.py adds 100 × label to the verifier score; 'verifier' drops the oracle term, 'oracle' ranks
by hidden pass fraction and breaks ties with R_φ). The SFT set (create_merged_RS_data + convert_multi_to_many):

- relabeled: the `num_to_relabel` failed chains of x with the highest R_φ on their last attempt; every state of
  those chains (the prompt of each of its attempts: turn 1's q(1), then each refinement prompt) gets target y*(x);
- positive (`keep_positive`): every correct chain keeps its own final answer as the target for each of its states.

Y(x) holds the SAMPLED attempts only, never the task's reference solution (docs/mucode.md).

Pure functions over labeled trees: attempts carry `meta["oracle"]`, `meta["correct"]` (rollouts.py) and
`meta["verifier"]` (Verifier.score_trees); a tree typed by hand works the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from murphy_lab.modes import chains
from murphy_lab.tree import RolloutTree

ORACLE_WEIGHT = 100.0  # create_merged_RS_data.py: reward + 100 * label


def choice_key(meta: dict, relabel_with: str = "oracle+verifier") -> Any:
    """The expert's ranking key of one candidate (larger is better)."""
    v = float(meta.get("verifier", 0.0))
    if relabel_with == "oracle+verifier":
        return ORACLE_WEIGHT * float(bool(meta.get("correct"))) + v  # µCode's key
    if relabel_with == "verifier":
        return v
    if relabel_with == "oracle":
        return (float(meta.get("oracle", 0.0)), v)
    raise ValueError(f"relabel_with must be 'oracle+verifier', 'verifier' or 'oracle', got {relabel_with!r}")


def expert_choice(tree: RolloutTree, relabel_with: str = "oracle+verifier") -> dict:
    """y*(x): the sampled attempt with the largest key; the first one wins ties."""
    from murphy_lab.baselines.mucode.verifier import candidates  # torch: not on the command's --check path

    cands = candidates(tree)
    if not cands:
        raise ValueError(f"tree {tree.task_id!r} has no candidates to choose from")
    return max(cands, key=lambda c: choice_key(c["meta"], relabel_with))


def relabel(
    trees: Sequence[RolloutTree],
    relabel_with: str = "oracle+verifier",
    num_to_relabel: int = 3,
    keep_positive: bool = True,
) -> list[dict]:
    """The multi-turn SFT set: rows {task_id, prompt (the state), completion (the target), kind, turn}."""
    rows = []
    for tree in trees:
        if not tree.root.children:
            continue
        best = expert_choice(tree, relabel_with)
        cs = chains(tree)  # G independent chains (grown with g2 = 1)
        failed = [c for c in cs if not c[-1].meta.get("correct")]
        failed.sort(key=lambda c: -float(c[-1].meta.get("verifier", 0.0)))  # highest R_φ first (stable)
        if num_to_relabel:
            failed = failed[:num_to_relabel]
        for chain in failed:
            for node in chain:  # every state s_t of the chain -> y*(x)
                rows.append(_row(tree, node.prompt, best["completion"], "relabeled", node.turn))
        if keep_positive:
            for chain in cs:
                if chain[-1].meta.get("correct"):
                    for node in chain:
                        rows.append(_row(tree, node.prompt, chain[-1].completion, "positive", node.turn))
    return rows


def _row(tree: RolloutTree, prompt: Any, completion: str, kind: str, turn: Any) -> dict:
    return {
        "task_id": tree.task_id,
        "prompt": prompt,
        "completion": completion,
        "kind": kind,
        "turn": int(turn or 1),
    }
