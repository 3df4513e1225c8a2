"""Supervised fine-tuning from scratch with completion-only loss (the toy policy's pre-training).

Loss = mean over completion tokens of -log p(token | prompt, earlier completion tokens); prompt tokens and padding
are masked with -100. Sequences are `prompt + completion + EOS` with no BOS, exactly what generation sees
(the char tokenizer adds no special tokens), so the model learns to stop after the program.
"""

from __future__ import annotations

import math
import random
import time

import torch


def encode(tok, prompt: str, completion: str) -> tuple[list[int], list[int]]:
    """(input ids, labels) for one example: labels are -100 on the prompt, the completion ids + EOS after it."""
    p = tok(prompt, add_special_tokens=False)["input_ids"]
    c = tok(completion, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    return p + c, [-100] * len(p) + c


def collate(rows: list[tuple[list[int], list[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a batch: input_ids, attention_mask, labels, each (B, T)."""
    t = max(len(ids) for ids, _ in rows)
    ids = torch.full((len(rows), t), pad_id, dtype=torch.long)  # (B, T)
    labels = torch.full((len(rows), t), -100, dtype=torch.long)  # (B, T)
    mask = torch.zeros((len(rows), t), dtype=torch.long)  # (B, T)
    for i, (x, y) in enumerate(rows):
        ids[i, : len(x)] = torch.tensor(x)
        labels[i, : len(y)] = torch.tensor(y)
        mask[i, : len(x)] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def sft(
    model,
    tok,
    examples: list[dict],
    steps: int,
    batch_size: int = 64,
    lr: float = 3e-3,
    warmup: int = 50,
    seed: int = 0,
    progress: bool = False,
    log_every: int = 25,
) -> list[dict]:
    """Train `model` in place on `examples` ({"prompt", "completion"}); return the loss log [{"step", "loss"}].

    AdamW, linear warmup then cosine decay to 10% of `lr`; batches drawn by a seeded shuffle, epoch after epoch,
    grouped by length within chunks of 32 batches (the refinement examples are 3-4x longer than turn-1 ones).
    """
    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be >= 1, got steps={steps!r}, batch_size={batch_size!r}")
    if not examples:
        raise ValueError("examples is empty: nothing to train on")
    from tqdm.auto import tqdm

    rng = random.Random(seed)
    data = [encode(tok, e["prompt"], e["completion"]) for e in examples]
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, betas=(0.9, 0.98))

    def lr_at(step: int) -> float:
        if step < warmup:
            return lr * (step + 1) / warmup
        progress_ = (step - warmup) / max(1, steps - warmup)
        return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress_)))

    model.train()
    batches: list[list[int]] = []
    log, running, t0 = [], None, time.time()
    bar = tqdm(range(steps), desc="toy SFT", disable=not progress)
    for step in bar:
        if not batches:  # a fresh epoch: shuffle, bucket by length (less padding), shuffle the batches
            order = list(range(len(data)))
            rng.shuffle(order)
            for start in range(0, len(order), batch_size * 32):
                chunk = sorted(order[start : start + batch_size * 32], key=lambda i: len(data[i][0]))
                batches += [chunk[j : j + batch_size] for j in range(0, len(chunk), batch_size)]
            rng.shuffle(batches)
        idx = batches.pop()
        batch = collate([data[i] for i in idx], tok.pad_token_id)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        loss = model(**batch).loss  # mean over completion tokens (labels != -100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        value = loss.item()
        running = value if running is None else 0.95 * running + 0.05 * value
        if step % log_every == 0 or step == steps - 1:
            log.append({"step": step, "loss": value, "smoothed": running, "elapsed_s": time.time() - t0})
            bar.set_postfix(loss=f"{running:.3f}")
    model.eval()
    return log
