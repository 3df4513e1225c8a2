"""`build_toy_policy`: corpus -> SFT from scratch -> a cached checkpoint that loads through `from_pretrained`.

    path = build_toy_policy()                # "toy": ~200k-parameter OLMo-2-style char LM, a few minutes on 2 cores
    path = build_toy_policy(size="smoke")    # a few seconds, for tests
    python -m murphy_lab.toy.build [--size toy|smoke] [--cache-dir DIR] [--seed 0]

The checkpoint directory is `<cache_dir>/<size>-<hash>/` where the hash covers the whole config, the corpus
version and a fingerprint of the executor's feedback format, so a changed executor rebuilds instead of serving a
model trained on stale feedback. The build is deterministic for a seed (same corpus, same init, same batches).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from murphy_lab.toy.corpus import NoiseConfig, build_corpus
from murphy_lab.toy.execution import get_executor

CORPUS_VERSION = 1  # bump when the world or the corpus changes in a way the config does not show


@dataclass
class ToyPolicyConfig:
    """Everything that determines the toy policy (its hash names the cache directory)."""

    hidden: int = 64  # width of the OLMo-2-style LM
    layers: int = 3
    heads: int = 4
    n_chains: int = 4000  # expert chains in the SFT corpus (each gives 1-3 examples)
    steps: int = 1500  # SFT optimizer steps
    batch_size: int = 64
    lr: float = 3e-3
    warmup: int = 50
    noise: NoiseConfig = field(default_factory=NoiseConfig)


ALIASES = {"small": "toy"}  # other names callers use for the default size

SIZES = {
    "toy": ToyPolicyConfig(),
    "toy-long": ToyPolicyConfig(steps=3000),  # a clearly better base (docs/toy_world.md §4.4), ~10 min idle
    "smoke": ToyPolicyConfig(hidden=16, layers=1, heads=2, n_chains=60, steps=12, batch_size=8, warmup=2),
}


def default_cache_dir() -> Path:
    """`$MURPHY_LAB_CACHE/toy` or `~/.cache/murphy_lab/toy`."""
    root = os.environ.get("MURPHY_LAB_CACHE") or Path.home() / ".cache" / "murphy_lab"
    return Path(root) / "toy"


def feedback_fingerprint(executor) -> str:
    """A short hash of the executor's feedback on three probe programs (right, wrong, broken)."""
    from murphy_lab.toy.world import Spec, program, to_task

    task = to_task(Spec("add", 6, 12), "probe")
    jobs = [(program("add", a, b), task.visible_tests) for a, b in ((6, 12), (6, 7), (4, 12))]
    jobs.append(("def f(x)\n    return x*6+12\n", task.visible_tests))
    text = "\n---\n".join(r.feedback for r in executor.run_many(jobs))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def config_hash(cfg: ToyPolicyConfig, seed: int, fingerprint: str) -> str:
    blob = json.dumps({"cfg": asdict(cfg), "seed": seed, "v": CORPUS_VERSION, "fb": fingerprint}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def build_toy_policy(size: str = "toy", cache_dir: str | Path | None = None, seed: int = 0,
                     progress: bool = False, threads: int | None = 2, **overrides) -> str:
    """Build (or fetch from the cache) the toy policy; return its checkpoint directory.

    `size` picks a preset in `SIZES`; keyword `overrides` replace config fields (e.g. `steps=800`).
    The directory holds the model, the char tokenizer, `build.json` (config, SFT loss log, timings, corpus
    statistics) and `corpus.jsonl`.
    """
    size = ALIASES.get(size, size)
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    cfg = replace(SIZES[size], **overrides)
    executor = get_executor()
    out = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    final = out / f"{size}-{config_hash(cfg, seed, feedback_fingerprint(executor))}"
    if (final / "build.json").exists():
        return str(final)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from murphy_lab.policy.tiny import build_tiny_model
    from murphy_lab.toy.sft import sft

    old_threads = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        t0 = time.time()
        corpus = build_corpus(cfg.n_chains, executor, seed=seed, noise=cfg.noise, progress=progress)
        t_corpus = time.time() - t0
        out.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=out))
        build_tiny_model(tmp, hidden=cfg.hidden, layers=cfg.layers, heads=cfg.heads, seed=seed, overwrite=True)
        model = AutoModelForCausalLM.from_pretrained(tmp)
        tok = AutoTokenizer.from_pretrained(tmp)
        torch.manual_seed(seed)
        log = sft(model, tok, corpus, cfg.steps, cfg.batch_size, cfg.lr, cfg.warmup, seed=seed, progress=progress)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        with open(tmp / "corpus.jsonl", "w") as f:
            for e in corpus:
                f.write(json.dumps(e) + "\n")
        info = {
            "size": size, "seed": seed, "config": asdict(cfg), "corpus_version": CORPUS_VERSION,
            "executor": type(executor).__module__ + "." + type(executor).__name__,
            "parameters": sum(p.numel() for p in model.parameters()),
            "corpus_examples": len(corpus),
            "corpus_turns": {t: sum(e["turn"] == t for e in corpus) for t in (1, 2, 3)},
            "corpus_seconds": round(t_corpus, 1), "total_seconds": round(time.time() - t0, 1),
            "final_loss": log[-1]["smoothed"], "loss_log": log,
        }
        (tmp / "build.json").write_text(json.dumps(info, indent=1))
        if final.exists():  # a concurrent build finished first; keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.replace(tmp, final)
    finally:
        torch.set_num_threads(old_threads)
    return str(final)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Build (or find in the cache) the toy world's policy.")
    p.add_argument("--size", default="toy", choices=sorted(SIZES) + sorted(ALIASES))
    p.add_argument("--cache-dir", default=None, help="default: $MURPHY_LAB_CACHE/toy or ~/.cache/murphy_lab/toy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=None, help="override the preset's SFT steps")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    kw = {"steps": args.steps} if args.steps else {}
    path = build_toy_policy(args.size, args.cache_dir, args.seed, progress=True, threads=args.threads, **kw)
    info = json.loads((Path(path) / "build.json").read_text())
    print(f"{path}\n  parameters {info['parameters']:,}  corpus {info['corpus_examples']} examples  "
          f"final SFT loss {info['final_loss']:.3f}  built in {info['total_seconds']} s")


if __name__ == "__main__":
    main()
