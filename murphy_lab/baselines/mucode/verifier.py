"""µCode's learned verifier R_φ(x, y): a scalar-head model trained on the generator's own correct/incorrect samples.

The verifier scores a response y to the ORIGINAL task prompt x (not the multi-turn history: µCode's verifier
judges code, and the official pair builder keeps only the first user message). Its base is the generator's base
with a one-output head (`AutoModelForSequenceClassification(num_labels=1)`; for our OLMo-2-architecture tiny models
`Olmo2ForSequenceClassification` loads the causal LM's weights and adds a fresh `score` head).

Training data (convert_multiturn_preference.py): for every task with at least one correct response (hidden tests
all pass) and one incorrect, draw `pairs_per_task` pairs (y+, y-) with replacement. Loss:

    Bradley-Terry (the paper's choice):   L = -log σ( R(x, y+) - R(x, y-) )                  averaged over pairs
    BCE (the paper's ablation):           L = BCE(σ(R(x, y+)), 1) + BCE(σ(R(x, y-)), 0)      averaged over rows

Training runs through TRL's `RewardTrainer`, whose loss *is* the BT loss above (`bradley_terry_loss` is the
teaching version; a test checks that both give the same number on the same model). BCE swaps in `compute_loss`
of a subclass and trains on the same pairs' members, each with its own label (the official BCE script reads
unpaired rows; using the pairs keeps the two losses on identical data). Inputs are tokenized here, by `encode`,
so that training and scoring see exactly the same token sequence.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from murphy_lab.tree import RolloutTree
from murphy_lab.trl_args import stage_args


# --- the losses (plain torch, the teaching versions) -------------------------------------------------------------
def bradley_terry_loss(r_chosen: torch.Tensor, r_rejected: torch.Tensor) -> torch.Tensor:
    """Mean of -log σ(r+ - r-) over pairs; `r_chosen`, `r_rejected`: (P,) scores of the correct / incorrect."""
    if r_chosen.shape != r_rejected.shape:
        raise ValueError(
            f"r_chosen and r_rejected differ in shape: {tuple(r_chosen.shape)} vs {tuple(r_rejected.shape)}"
        )
    return -F.logsigmoid(r_chosen - r_rejected).mean()  # Bradley-Terry: P(y+ ≻ y-) = σ(r+ - r-)


def bce_loss(r_chosen: torch.Tensor, r_rejected: torch.Tensor) -> torch.Tensor:
    """Pointwise BCE on the pairs' members: the correct labeled 1, the incorrect 0; mean over the 2P rows."""
    logits = torch.cat([r_chosen, r_rejected])  # (2P,)
    labels = torch.cat([torch.ones_like(r_chosen), torch.zeros_like(r_rejected)])  # (2P,)
    return F.binary_cross_entropy_with_logits(logits, labels)


# --- data --------------------------------------------------------------------------------------------------------
def candidates(tree: RolloutTree) -> list[dict]:
    """Every sampled response of a tree (its attempts; never a reference solution) as dicts with completion/meta."""
    if "reference" in tree.meta:
        raise ValueError(
            f"tree {tree.task_id!r} carries a reference candidate (tree.meta['reference']): µCode's candidates are "
            "sampled attempts only (docs/mucode.md); drop it"
        )
    return [{"completion": n.completion, "meta": n.meta} for n in tree.nodes()]


def preference_pairs(trees: Sequence[RolloutTree], pairs_per_task: int = 32, seed: int = 0) -> list[dict]:
    """(x, y+, y-) rows: `pairs_per_task` draws with replacement per task that has both kinds (see module doc)."""
    rng = random.Random(seed)
    rows = []
    for tree in trees:
        cands = candidates(tree)
        pos = [c["completion"] for c in cands if c["meta"].get("correct")]
        neg = [c["completion"] for c in cands if "correct" in c["meta"] and not c["meta"]["correct"]]
        if not pos or not neg:
            continue  # no pair to learn from (the official script skips such prompts too)
        for _ in range(pairs_per_task):
            rows.append(
                {
                    "task_id": tree.task_id,
                    "prompt": tree.root.prompt,
                    "chosen": rng.choice(pos),
                    "rejected": rng.choice(neg),
                }
            )
    return rows


def encode(
    tokenizer: Any, prompt: Any, completion: str, chat: bool = False, template_kwargs: dict | None = None
) -> list[int]:
    """Token ids of (x, y) as the verifier reads them: prompt + response + EOS, or a user/assistant chat (rendered
    with the same chat-template arguments as the generator's prompts, `template_kwargs`)."""
    if chat:
        msgs = [{"role": "user", "content": prompt}, {"role": "assistant", "content": completion}]
        text = tokenizer.apply_chat_template(msgs, tokenize=False, **(template_kwargs or {}))
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])
    ids = list(tokenizer(str(prompt) + completion)["input_ids"])
    return ids + [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else ids


# --- training ----------------------------------------------------------------------------------------------------
def _bce_trainer_class():
    from trl import RewardTrainer

    class BCERewardTrainer(RewardTrainer):
        """TRL's RewardTrainer with the pointwise BCE loss (µCode's ablation) in place of Bradley-Terry."""

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            inputs["use_cache"] = False
            outputs = model(**inputs)
            r_chosen, r_rejected = torch.chunk(outputs.logits.squeeze(-1), chunks=2)  # (P,), (P,)
            loss = bce_loss(r_chosen, r_rejected)
            return (loss, outputs) if return_outputs else loss

    return BCERewardTrainer


def train_verifier(
    pairs: Sequence[dict],
    base: str,
    output_dir: str | Path,
    *,
    loss: str = "bt",
    lr: float = 1e-6,
    epochs: float = 2,
    batch_size: int = 4,
    grad_accum: int = 4,
    max_length: int = 2048,
    chat: bool = False,
    chat_template_kwargs: dict | None = None,
    seed: int = 0,
    bf16: bool | None = None,
    trl_kwargs: dict | None = None,
) -> dict:
    """Fit R_φ on `pairs` from the checkpoint `base` with TRL's RewardTrainer; save model + tokenizer to output_dir.

    Returns stats (pairs used, final training loss, accuracy). With no pairs the fresh head is saved untrained
    (`trained: False`) so the pipeline can go on; its scores are then noise and the report says so.
    """
    from datasets import Dataset
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from trl import RewardConfig, RewardTrainer

    if loss not in ("bt", "bce"):
        raise ValueError(f"loss must be 'bt' or 'bce', got {loss!r}")
    output_dir = Path(output_dir)
    tok = AutoTokenizer.from_pretrained(base)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    torch.manual_seed(seed)  # the fresh score head is drawn here
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    model.config.pad_token_id = tok.pad_token_id
    kw = dict(chat=chat, template_kwargs=chat_template_kwargs)
    rows = [
        {
            "chosen_ids": encode(tok, p["prompt"], p["chosen"], **kw),
            "rejected_ids": encode(tok, p["prompt"], p["rejected"], **kw),
        }
        for p in pairs
    ]
    rows = [r for r in rows if max(len(r["chosen_ids"]), len(r["rejected_ids"])) <= max_length]
    stats: dict = {"pairs": len(pairs), "pairs_used": len(rows), "loss_type": loss, "trained": bool(rows)}
    if rows:
        args = stage_args(
            RewardConfig,
            output_dir / "trainer",
            bf16=bf16,
            trl_kwargs=trl_kwargs,
            learning_rate=lr,
            num_train_epochs=epochs,
            per_device_train_batch_size=batch_size,
            gradient_accumulation_steps=grad_accum,
            max_length=max_length,
            seed=seed,
        )
        cls = RewardTrainer if loss == "bt" else _bce_trainer_class()
        trainer = cls(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok)
        out = trainer.train()
        logs = [h for h in trainer.state.log_history if "loss" in h]
        stats.update(
            train_loss=float(out.training_loss),
            steps=int(out.global_step),
            last_accuracy=logs[-1].get("accuracy") if logs else None,
        )
        model = trainer.model
    model.save_pretrained(output_dir / "model")
    tok.save_pretrained(output_dir / "model")
    (output_dir / "model" / "verifier.json").write_text(
        json.dumps(
            {"chat": chat, "chat_template_kwargs": chat_template_kwargs or {}, "max_length": max_length}
        )
        + "\n"
    )
    return stats


# --- scoring -----------------------------------------------------------------------------------------------------
class Verifier:
    """R_φ(x, y) from a saved verifier: `Verifier(path).score(prompts, completions) -> list[float]`."""

    def __init__(
        self,
        model_or_path: Any,
        tokenizer: Any = None,
        chat: bool | None = None,
        max_length: int | None = None,
        batch_size: int = 16,
        device: str | None = None,
    ):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        if isinstance(model_or_path, (str, Path)):
            path = Path(model_or_path)
            meta = (
                json.loads((path / "verifier.json").read_text()) if (path / "verifier.json").exists() else {}
            )
            model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
            tokenizer = tokenizer or AutoTokenizer.from_pretrained(path)
            chat = meta.get("chat", False) if chat is None else chat
            self.template_kwargs = meta.get("chat_template_kwargs", {})
            max_length = max_length or meta.get("max_length")
        else:
            model = model_or_path
            if tokenizer is None:
                raise ValueError("tokenizer is required when model_or_path is a model object")
        if not hasattr(self, "template_kwargs"):
            self.template_kwargs = {}
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(device).eval()
        self.tokenizer, self.chat = tokenizer, bool(chat)
        self.max_length, self.batch_size, self.device = max_length or 2048, batch_size, device

    def score(self, prompts: Sequence[Any], completions: Sequence[str]) -> list[float]:
        """R_φ(x_i, y_i) for each pair of the two lists (same length)."""
        if len(prompts) != len(completions):
            raise ValueError(
                f"prompts and completions differ in length: {len(prompts)} vs {len(completions)}"
            )
        pad = (
            self.tokenizer.pad_token_id
            if self.tokenizer.pad_token_id is not None
            else self.tokenizer.eos_token_id
        )
        seqs = [
            encode(self.tokenizer, p, c, self.chat, self.template_kwargs)[-self.max_length :]
            for p, c in zip(prompts, completions)
        ]
        out: list[float] = []
        with torch.inference_mode():
            for start in range(0, len(seqs), self.batch_size):
                chunk = seqs[start : start + self.batch_size]
                width = max(len(s) for s in chunk)
                ids = torch.full((len(chunk), width), pad, dtype=torch.long)  # (B, T), right padding
                mask = torch.zeros((len(chunk), width), dtype=torch.long)  # (B, T)
                for i, s in enumerate(chunk):
                    ids[i, : len(s)] = torch.tensor(s)
                    mask[i, : len(s)] = 1
                # (B, 1)
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
                out += logits.squeeze(-1).float().tolist()
        return out

    def score_trees(self, trees: Sequence[RolloutTree]) -> None:
        """Write R_φ(x, y) into `meta["verifier"]` of every attempt (x = the tree's root prompt)."""
        items = [(t.root.prompt, c) for t in trees for c in candidates(t)]
        scores = self.score([x for x, _ in items], [c["completion"] for _, c in items])
        for (_, c), s in zip(items, scores):
            c["meta"]["verifier"] = float(s)
