"""One real-size MURPHY step on one GPU, in one command (meant to finish in <= 8 min on one H200).

    python benchmarks/gpu_check.py            # CUDA: the Qwen3-1.7B architecture, random weights, bf16
    python benchmarks/gpu_check.py --cpu      # here: a tiny Qwen3 through the same code path, fp32, seconds

Each run is a fresh `MurphyTrainer` doing one optimizer step (`max_steps=1`) with transformers generation:
  1. MURPHY, G1 = G2 = 8, S = 2, 4 tasks, MaRS, no pruning; with prefix sharing on and off when MurphyConfig has a
     `prefix_sharing` field (otherwise a printed note says the comparison was skipped);
  2. plain GRPO (G = 8, one turn) on the same 4 tasks, for comparison.
Per run: the time split from the trainer's metrics.jsonl (generation; execution; scoring = pruning, credit,
advantages and the π_old / π_ref log-prob passes; optimization = the rest of the step), peak GPU memory
(`torch.cuda.max_memory_allocated`; on CPU the process's peak RSS) and generated tokens per second of generation
time. The last line is the summary:
    gpu check: <device> murphy step <s> s (...) peak <MiB> MiB, <tok/s> gen tok/s | ... | grpo step <s> s ... peak <MiB> MiB

The model: Qwen3-1.7B's architecture (`QWEN3_1_7B`, the values of its config.json; nothing is downloaded), random
weights, saved to a temporary folder and loaded by TRL like a checkpoint (bf16 on CUDA), with the reference model
for β = 0.04. The tokenizer is murphy_lab's character tokenizer; the model keeps Qwen3's 151,936-row embedding and
LM head, and generation is restricted to the tokenizer's characters with EOS suppressed, so every completion is
exactly `--max-new` tokens long (a random model would otherwise stop at random) and the tasks (murphy_lab.smoke's
text-answer tasks, which random text passes in part) give every group varied rewards.

Install on the GPU box (docs/gpu.md, "Install"): the project's venv with the gpu extra, then run it from that venv:

    python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 && .venv/bin/pip install -e ".[gpu]"
    .venv/bin/python benchmarks/gpu_check.py

A GPU box without internet access installs the same set from wheels fetched on a machine that has it (same Python
version and platform as the box):

    pip download -d wheels torch==2.13.0 -e ".[gpu]"            # on the connected machine; copy wheels/ over
    .venv/bin/pip install --no-index --find-links wheels torch==2.13.0 -e ".[gpu]"   # on the GPU box

The script needs only PyTorch, transformers, accelerate, TRL and datasets (vLLM and DeepSpeed are not used: one
process, transformers generation); it first imports what it needs and names any missing module before it builds
anything. Not yet run on a GPU: the numbers it prints there are still to be measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

# Qwen3-1.7B's config.json (Qwen/Qwen3-1.7B), written out: the machine cannot download it.
QWEN3_1_7B = dict(
    vocab_size=151936,
    hidden_size=2048,
    intermediate_size=6144,
    num_hidden_layers=28,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
    max_position_embeddings=40960,
    rope_theta=1_000_000.0,
    rms_norm_eps=1e-6,
    hidden_act="silu",
    tie_word_embeddings=True,
    attention_bias=False,
    use_sliding_window=False,
    max_window_layers=28,
)
# --cpu: the same family, small enough for seconds on two cores
TINY_QWEN3 = dict(
    QWEN3_1_7B,
    vocab_size=512,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_window_layers=2,
)
NEEDED = ("torch", "transformers", "accelerate", "trl", "datasets", "pyarrow", "pandas", "yaml", "murphy_lab")


def missing_modules() -> list[str]:
    """The modules this check imports that are not installed (named before anything heavy happens)."""
    out = []
    for name in NEEDED:
        try:
            importlib.import_module(name)
        except ImportError as e:
            out.append(f"{name} ({e})")
    return out


def build_random_model(path: Path, arch: dict, dtype: str = "float32", seed: int = 0) -> str:
    """Save a random-init Qwen3 with `arch` and murphy_lab's character tokenizer to `path`; returns the path.

    The embedding keeps `arch["vocab_size"]` rows (at least the tokenizer's size); ids past the tokenizer decode
    to nothing.
    """
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    from murphy_lab.policy.tiny import char_tokenizer

    tok = char_tokenizer(
        chat_template="{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    cfg = Qwen3Config(
        **{**arch, "vocab_size": max(arch["vocab_size"], len(tok))},
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(seed)
    with torch.device("cuda" if torch.cuda.is_available() and dtype != "float32" else "cpu"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=getattr(torch, dtype))
    model.save_pretrained(path)
    tok.save_pretrained(path)
    del model
    return str(path)


def run_config(model: str, vocab_size: int, max_new: int, cpu: bool, **fields):
    """The MurphyConfig of one check run: one optimizer step over 4 tasks (rows x micro-steps / G1 = 4): on CUDA
    1 row x 32 micro-steps (a 151,936-wide LM head makes rows expensive), on CPU 8 x 4."""
    from murphy_lab.config import MurphyConfig
    from murphy_lab.policy.tiny import char_tokenizer

    # ids past its characters, and EOS, are never sampled: every completion is max_new long
    tok = char_tokenizer()
    suppress = [tok.eos_token_id, *range(len(tok), vocab_size)]
    trl = dict(
        generation_kwargs={"suppress_tokens": suppress}, lr_scheduler_type="constant", max_grad_norm=1.0
    )
    rows = 8 if cpu else 1
    if not cpu:
        trl["model_init_kwargs"] = {"dtype": "bfloat16"}
    base = dict(
        profile="paper",
        model=model,
        tasks="smoke",
        chat=True,
        g1=8,
        g2=8,
        turns=2,
        per_device_train_batch_size=rows,
        gradient_accumulation_steps=32 // rows,
        steps_per_generation=32 // rows,
        max_completion_length=max_new,
        max_steps=1,
        bf16=not cpu,
        gradient_checkpointing=not cpu,
        save_steps=10_000,
        report_to="none",
        executor={"timeout": 5.0, "workers": 1 if cpu else 8},
        trl=trl,
    )
    return MurphyConfig.from_dict({**base, **fields})


def one_step(name: str, config, out: Path) -> dict:
    """Train one step with `config` in `out`; the step's metrics plus peak memory (MiB) and generated tokens/s."""
    import torch

    from murphy_lab.train import train

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    train(config, out)
    wall = time.perf_counter() - t0
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x.strip()]
    m = next(x for x in lines if x.get("generated"))
    peak = (
        torch.cuda.max_memory_allocated()
        if torch.cuda.is_available()
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    ) / 2**20
    gen_tokens = m.get("completions/mean_length", 0.0) * m.get("trajectories/total", 0.0)
    row = dict(
        run=name,
        step_s=m["time/step_s"],
        generation_s=m["time/generation_s"],
        execution_s=m["time/execution_s"],
        scoring_s=m["time/scoring_s"],
        optimization_s=m["time/optimization_s"],
        peak_mib=peak,
        wall_s=wall,
        trajectories=m.get("trajectories/total"),
        kept=m.get("trajectories/kept"),
        gen_tok_s=gen_tokens / m["time/generation_s"] if m["time/generation_s"] else float("nan"),
    )
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return row


def describe(r: dict) -> str:
    return (
        f"{r['run']} step {r['step_s']:.1f} s (generation {r['generation_s']:.1f}, execution "
        f"{r['execution_s']:.1f}, scoring {r['scoring_s']:.1f}, optimization {r['optimization_s']:.1f}; "
        f"{r['trajectories']:.0f} trajectories) peak {r['peak_mib']:.0f} MiB, {r['gen_tok_s']:.0f} gen tok/s"
    )


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--cpu", action="store_true", help="tiny Qwen3, fp32, on this machine's CPU (same code path)"
    )
    p.add_argument("--max-new", type=int, help="tokens per completion (default 512 on CUDA, 8 with --cpu)")
    p.add_argument("--workdir", help="where the model and runs go (default: a temporary folder)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads with --cpu")
    a = p.parse_args(argv)
    missing = missing_modules()
    if missing:
        raise SystemExit("gpu check: missing " + "; ".join(missing) + " (see this script's docstring)")
    import torch

    from murphy_lab.config import MurphyConfig

    if not a.cpu and not torch.cuda.is_available():
        raise SystemExit("gpu check: no CUDA device; pass --cpu to run the same path on this machine")
    if a.cpu:
        torch.set_num_threads(a.threads)
    device = "cpu" if a.cpu else torch.cuda.get_device_name(0)
    max_new = a.max_new or (8 if a.cpu else 512)
    work = Path(a.workdir or tempfile.mkdtemp(prefix="gpu_check_"))
    t0 = time.perf_counter()
    arch = TINY_QWEN3 if a.cpu else QWEN3_1_7B
    model = build_random_model(work / "model", arch, dtype="float32" if a.cpu else "bfloat16")
    print(
        f"model: {'tiny Qwen3' if a.cpu else 'Qwen3-1.7B architecture'}, random init, saved in "
        f"{time.perf_counter() - t0:.1f} s; {max_new} tokens per completion; device {device}",
        flush=True,
    )
    runs = [("murphy", {})]
    if "prefix_sharing" in {f.name for f in dataclasses.fields(MurphyConfig)}:
        runs = [
            ("murphy", {"prefix_sharing": True}),
            ("murphy, prefix sharing off", {"prefix_sharing": False}),
        ]
    else:
        print(
            "note: MurphyConfig has no `prefix_sharing` field yet: the prefix-sharing on/off comparison is skipped"
        )
    runs.append(("grpo", {"mode": "grpo", "turns": 1}))
    rows = []
    for i, (name, fields) in enumerate(runs):
        row = one_step(
            name, run_config(model, arch["vocab_size"], max_new, a.cpu, **fields), work / f"run{i}"
        )
        print(describe(row), flush=True)
        rows.append(row)
    print(f"total {time.perf_counter() - t0:.0f} s")
    print(f"gpu check: {device} " + " | ".join(describe(r) for r in rows))
    return rows


if __name__ == "__main__":
    main()
