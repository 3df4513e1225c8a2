"""Scored trees -> training rows: MURPHY's credit for a trainer that is not murphy_lab's.

A tree scored by `scoring.score_tree` (any rule of `credit.CREDIT_RULES`) holds one advantage per kept node. A
trainer that knows nothing of trees needs only rows, one per trained completion:

    prompt_ids      the tokens the completion was sampled from (task prompt, or refinement prompt [task, code, f(v)])
    completion_ids  the sampled tokens
    advantage       Â(v), one scalar for every completion token (None on a pruned node)
    credit, reward  r~(v) and r(v): a trainer that computes its own advantages reads the credit as the reward
    group_id        one integer per response group (siblings: one prompt), distinct across the trees passed
    turn, node_id   the node's turn and its path from the root ("task/0.2": the root's child 0, its child 2)
    kept            False for a node dropped by InterP / IntraP

That is the contract two trainers consume (docs/credit_rules.md, "Plugging MURPHY's credit into another trainer"):

- TRL's experimental async GRPO worker (`trl.experimental.async_grpo`, TRL 1.16) queues one `RolloutSample` per
  completion: `input_ids` (prompt + completion), `completion_mask`, `old_log_probs`, `advantage`, `group_id`;
  `TrainingRow.rollout_sample()` builds that mapping. `rows_to_batch` builds the generation batch TRL's
  `GRPOTrainer`'s loss reads (prompt_ids / prompt_mask left-padded, completion_ids / completion_mask,
  advantages).
- verl's registered advantage estimators (`register_adv_est`) take `token_level_rewards` (B, T), `response_mask`
  (B, T) and `index` (the group of each row) and return (advantages, returns): pass the rows' advantages as the
  scalar reward with a pass-through estimator, or the rows' credits with `index = group_id` to verl's GRPO, which
  then computes MURPHY's advantages of a sibling-group rule itself.

Token ids come from `node.meta["prompt_ids"]` / `["completion_ids"]` (the trainer records them while growing a
tree) or, when a tree has none (a saved or hand-built tree), from `tokenize(text) -> list[int]`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from murphy_lab.tree import Node, RolloutTree

Tokenize = Callable[[Any], list[int]]  # a prompt (str or chat messages) or a completion -> token ids


@dataclass(frozen=True)
class TrainingRow:
    """One trained completion of a scored tree (module docstring: the fields and who reads them)."""

    prompt_ids: list[int]
    completion_ids: list[int]
    advantage: float | None
    credit: float | None
    reward: float
    group_id: int
    turn: int
    node_id: str
    task_id: str
    kept: bool

    def rollout_sample(self, old_log_probs: Sequence[float] | None = None) -> dict[str, Any]:
        """The fields of TRL's async `RolloutSample` the trainer reads: input_ids = prompt + completion, a mask that
        is 1 on completion tokens, the generator's log-probabilities (zeros when None: recompute them on-policy),
        the advantage and the group id. Arrays are numpy, as the worker queues them."""
        import numpy as np

        if self.advantage is None:
            raise ValueError(
                f"node {self.node_id} has no advantage (pruned or unscored): it trains on nothing"
            )
        n_p, n_c = len(self.prompt_ids), len(self.completion_ids)
        logps = np.zeros(n_p + n_c, dtype=np.float32)
        if old_log_probs is not None:
            if len(old_log_probs) != n_c:
                raise ValueError(f"old_log_probs: {len(old_log_probs)} values for {n_c} completion tokens")
            logps[n_p:] = old_log_probs
        return {
            "input_ids": np.array(self.prompt_ids + self.completion_ids, dtype=np.int64),
            "completion_mask": np.array([0] * n_p + [1] * n_c, dtype=np.int64),
            "old_log_probs": logps,
            "advantage": float(self.advantage),
            "group_id": self.group_id,
            "metrics": {"reward": float(self.reward)},
        }


def _ids(node: Node, key: str, text: Any, tokenize: Tokenize | None, node_id: str) -> list[int]:
    if key in node.meta:
        return list(node.meta[key])
    if tokenize is None:
        raise ValueError(f"node {node_id} has no meta[{key!r}]: pass tokenize= to encode its text")
    return list(tokenize(text))


def tree_rows(
    trees: Sequence[RolloutTree], tokenize: Tokenize | None = None, include_pruned: bool = False
) -> list[TrainingRow]:
    """The training rows of scored trees, tree by tree, each tree's groups breadth-first (turn-1 group first).

    Every kept non-root node with an advantage is a row; with `include_pruned`, pruned nodes are rows too
    (`kept=False`, advantage None) so a caller can count or inspect what pruning dropped. A kept node without an
    advantage means the tree was not scored: an error, not a silent zero.
    """
    rows, group_id = [], 0
    for t_index, tree in enumerate(trees):
        task = tree.task_id or f"tree{t_index}"
        paths = {id(tree.root): ""}
        for parent, members in tree.groups():
            for i, node in enumerate(parent.children):
                paths[id(node)] = f"{paths[id(parent)]}.{i}".lstrip(".")
            for node in members:
                node_id = f"{task}/{paths[id(node)]}"
                if node.pruned and not include_pruned:
                    continue
                if not node.pruned and node.advantage is None:
                    raise ValueError(
                        f"node {node_id} is kept but has no advantage: score the tree first "
                        "(scoring.score_tree)"
                    )
                rows.append(
                    TrainingRow(
                        prompt_ids=_ids(node, "prompt_ids", node.prompt, tokenize, node_id),
                        completion_ids=_ids(node, "completion_ids", node.completion, tokenize, node_id),
                        advantage=None if node.pruned else float(node.advantage),
                        credit=None if node.credit is None else float(node.credit),
                        reward=float(node.reward),
                        group_id=group_id,
                        turn=int(node.turn),
                        node_id=node_id,
                        task_id=tree.task_id,
                        kept=not node.pruned,
                    )
                )
            group_id += 1
    return rows


def rows_to_batch(rows: Sequence[TrainingRow], pad_token_id: int) -> dict[str, Any]:
    """The kept rows as TRL's GRPO generation batch (torch tensors): prompt_ids / prompt_mask left-padded,
    completion_ids / completion_mask right-padded, advantages (B,), group_ids (B,) (verl's `index`)."""
    import torch

    rows = [r for r in rows if r.kept]
    if not rows:
        raise ValueError("no kept rows to batch")
    p_len = max(len(r.prompt_ids) for r in rows)
    c_len = max(len(r.completion_ids) for r in rows)

    def padded(ids: list[int], width: int, left: bool) -> tuple[list[int], list[int]]:
        pad = [pad_token_id] * (width - len(ids))
        mask = [1] * len(ids)
        return (pad + ids, [0] * len(pad) + mask) if left else (ids + pad, mask + [0] * len(pad))

    prompts = [padded(r.prompt_ids, p_len, left=True) for r in rows]
    completions = [padded(r.completion_ids, c_len, left=False) for r in rows]
    return {
        "prompt_ids": torch.tensor([p for p, _ in prompts]),
        "prompt_mask": torch.tensor([m for _, m in prompts]),
        "completion_ids": torch.tensor([c for c, _ in completions]),
        "completion_mask": torch.tensor([m for _, m in completions]),
        "advantages": torch.tensor([r.advantage for r in rows], dtype=torch.float32),
        "group_ids": torch.tensor([r.group_id for r in rows]),
    }


__all__ = ["TrainingRow", "rows_to_batch", "tree_rows"]
