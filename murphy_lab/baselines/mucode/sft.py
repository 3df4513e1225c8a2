"""The generator update of expert iteration: supervised fine-tuning on the relabeled (state, y*) set with TRL's SFTTrainer.

Rows are prompt-completion pairs, so TRL computes the loss on the completion tokens only (`completion_only_loss`),
i.e. maximum likelihood of the expert's answer given the state:  L = -Σ_t log π_θ(y*_t | s, y*_<t).
Plain-text models get `prompt + completion + EOS` (the exact strings the toy model is trained on); chat models
(`chat=True`) get a user message and an assistant message through the tokenizer's chat template.
Published: lr 5e-7, 2 epochs, batch 1 × 4 accumulation steps (mucode.sh); smaller models need larger rates.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from murphy_lab.trl_args import stage_args


def sft_generator(
    rows: Sequence[dict],
    base: str,
    output_dir: str | Path,
    *,
    lr: float = 5e-7,
    epochs: float = 2,
    batch_size: int = 1,
    grad_accum: int = 4,
    max_length: int = 8192,
    chat: bool = False,
    chat_template_kwargs: dict | None = None,
    seed: int = 0,
    bf16: bool | None = None,
    trl_kwargs: dict | None = None,
) -> dict:
    """Fine-tune the causal LM at `base` on rows {prompt, completion}; save model + tokenizer to output_dir/model."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    if not rows:
        raise ValueError("rows is empty: the relabeled SFT set has no (state, response) pair to train on")
    output_dir = Path(output_dir)
    tok = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base)
    if chat:  # TRL reads a row's chat_template_kwargs: the template is rendered as for generation
        extra = {"chat_template_kwargs": dict(chat_template_kwargs)} if chat_template_kwargs else {}
        data = [
            {
                "prompt": [{"role": "user", "content": r["prompt"]}],
                "completion": [{"role": "assistant", "content": r["completion"]}],
                **extra,
            }
            for r in rows
        ]
    else:
        data = [{"prompt": str(r["prompt"]), "completion": r["completion"]} for r in rows]
    args = stage_args(
        SFTConfig,
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
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(data), processing_class=tok)
    out = trainer.train()
    trainer.save_model(str(output_dir / "model"))
    tok.save_pretrained(output_dir / "model")
    return {"rows": len(rows), "train_loss": float(out.training_loss), "steps": int(out.global_step)}
