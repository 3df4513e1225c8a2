"""llama.cpp as a rollout engine for the code model, measured: its decode speed on this CPU and the mismatch between
its samples' log-probs and the bf16 policy's (what the trainer's importance-sampling correction would see).

    python -m venv /tmp/llama && /tmp/llama/bin/pip install llama-cpp-python==0.3.36    # builds llama.cpp (~13 min)
    /tmp/llama/bin/python benchmarks/llama_cpp_rollouts.py --sample --gguf /tmp/qwen.gguf   # samples + their log-probs
    python benchmarks/llama_cpp_rollouts.py --score                                        # the policy's log-probs

`--gguf`: the shipped GGUF, reassembled once with `python benchmarks/llama_cpp_rollouts.py --write-gguf /tmp/qwen.gguf`
(`policy.packaged.gguf_path`, SHA-256 checked). `--sample` runs without this package (only llama_cpp and the
prompts file written by `--prompts`); one thread, one sequence at a time (llama-cpp-python's API). Files go to
$BENCH_OUT (default: the temporary folder). docs/real_model.md reports the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

OUT = Path(os.environ.get("BENCH_OUT", tempfile.gettempdir()))
PROMPTS, SAMPLES = OUT / "llama_prompts.json", OUT / "llama_samples.json"


def write_prompts(n: int = 4) -> None:
    """n training tasks' turn-1 prompts in the code model's chat template (random.Random(1) over the real-cpu set)."""
    from transformers import AutoTokenizer

    from murphy_lab.policy import CODE_MODEL, real_model_path
    from murphy_lab.profiles import TRAIN_DATA
    from murphy_lab.prompts import first_prompt
    from murphy_lab.tasks import load_tasks

    tok = AutoTokenizer.from_pretrained(str(real_model_path(CODE_MODEL)))
    source, args = TRAIN_DATA["mbpp-train"]
    tasks = load_tasks(source, **args)
    random.Random(1).shuffle(tasks)
    PROMPTS.write_text(
        json.dumps(
            [
                tok.apply_chat_template(
                    [{"role": "user", "content": first_prompt(t.prompt)}],
                    tokenize=False,
                    add_generation_prompt=True,
                )
                for t in tasks[:n]
            ]
        )
    )


def sample(gguf: str, max_tokens: int = 256) -> None:
    """llama.cpp samples (T 1.0, no top-k / top-p) and the sampler's log-prob of each sampled token."""
    import numpy as np
    from llama_cpp import Llama

    llm = Llama(
        model_path=gguf, n_ctx=2048, n_threads=1, n_threads_batch=1, verbose=False, seed=0, logits_all=True
    )
    out, cpu, tokens = [], 0.0, 0
    for prompt in json.loads(PROMPTS.read_text()):
        ids = llm.tokenize(prompt.encode(), add_bos=False, special=True)
        t0, new = time.process_time(), []
        for tok in llm.generate(ids, temp=1.0, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0, reset=True):
            if tok == llm.token_eos() or len(new) >= max_tokens:
                break
            new.append(tok)
        cpu, tokens = cpu + time.process_time() - t0, tokens + len(new)
        llm.reset()
        llm.eval(ids + new)  # one pass over prompt + completion: log-softmax at each position
        scores = np.array(llm.scores[len(ids) - 1 : len(ids) - 1 + len(new)], dtype=np.float64)
        top = scores.max(1, keepdims=True)
        logz = np.log(np.exp(scores - top).sum(1)) + top[:, 0]
        out.append(
            {
                "prompt_ids": ids,
                "completion_ids": new,
                "sampler_logps": (scores[np.arange(len(new)), new] - logz).tolist(),
            }
        )
    SAMPLES.write_text(json.dumps(out))
    print(
        f"llama.cpp sampling: {tokens} tokens in {cpu:.1f} CPU-s, {tokens / cpu:.1f} tokens/CPU-s (1 thread, "
        f"one sequence at a time)"
    )


def score() -> None:
    """The bf16 policy's log-probs of the sampler's tokens, against the sampler's."""
    import torch
    from transformers import AutoModelForCausalLM

    from murphy_lab.policy import CODE_MODEL, real_model_path

    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(
        str(real_model_path(CODE_MODEL)), dtype=torch.bfloat16
    ).eval()
    diffs = []
    for r in json.loads(SAMPLES.read_text()):
        ids = torch.tensor([r["prompt_ids"] + r["completion_ids"]])
        with torch.no_grad():
            logits = model(ids).logits[0, len(r["prompt_ids"]) - 1 : -1].float()
        logp = torch.log_softmax(logits, -1).gather(1, torch.tensor(r["completion_ids"])[:, None])[:, 0]
        diffs.append(logp - torch.tensor(r["sampler_logps"]))  # log π_θ - log π_sampler, per token
    d = torch.cat(diffs)
    ratio = d.exp()
    print(
        f"{d.numel()} tokens: log π_policy(bf16) - log π_llama.cpp(Q4_K_M): mean {d.mean():+.4f}, mean |.| "
        f"{d.abs().mean():.4f}, max |.| {d.abs().max():.3f}; token ratios outside [0.5, 2]: "
        f"{100 * float(((ratio < 0.5) | (ratio > 2)).float().mean()):.2f}%, above 3: "
        f"{100 * float((ratio > 3).float().mean()):.2f}%; sequence log-ratios "
        f"{[round(float(x.sum()), 2) for x in diffs]}"
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--write-gguf", metavar="PATH", help="reassemble the shipped GGUF to PATH")
    p.add_argument("--prompts", action="store_true", help="write the prompts file")
    p.add_argument("--sample", action="store_true", help="sample with llama.cpp (needs llama_cpp)")
    p.add_argument("--gguf", help="with --sample: the GGUF file")
    p.add_argument("--score", action="store_true", help="score the samples with the bf16 policy")
    a = p.parse_args(argv)
    if a.write_gguf:
        import shutil

        from murphy_lab.policy.packaged import CODE_MODEL, gguf_path

        work = Path(tempfile.mkdtemp(prefix="gguf-"))
        shutil.move(str(gguf_path(CODE_MODEL, work)), a.write_gguf)
    if a.prompts:
        write_prompts()
    if a.sample:
        if not a.gguf:
            p.error("--sample needs --gguf")
        sample(a.gguf)
    if a.score:
        score()


if __name__ == "__main__":
    main()
