"""`build_toy_policy`: corpus -> SFT from scratch -> a cached checkpoint that loads through `from_pretrained`.

    path = build_toy_policy()                # "toy": ~200k-parameter OLMo-2-style char LM, a few minutes on 2 cores
    path = build_toy_policy(size="smoke")    # a few seconds, for tests
    python -m murphy_lab.toy.build [--size toy|smoke] [--cache-dir DIR] [--seed 0]

The checkpoint directory is `<cache_dir>/<size>-<hash>/` where the hash covers the whole config, the corpus
version and a fingerprint of the executor's feedback format, so a changed executor rebuilds instead of serving a
model trained on stale feedback.

The default policy (`size="toy"`, seed 0) ships with the package in `murphy_lab/toy/policy/` (≈ 0.5 MB): when its
recorded hash equals the one computed here, `build_toy_policy()` returns it and builds nothing, so `make demo`
and notebook 06 never rebuild. `python -m murphy_lab.toy.build --ship` rebuilds it and replaces the shipped copy
(needed after a change to the world, the corpus or the executor's feedback; `tests/test_toy.py` says so).

The build is deterministic for a seed: the corpus is a function of the seed (expert programs run with a generous
timeout, and a starved executor stops the build instead of changing the data), and SFT uses a seeded init,
seeded batches and a fixed thread count (`threads`, recorded in build.json; CPU kernels may sum in another order
with another thread count).
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
from murphy_lab.toy.tokenizer import PIECES

CORPUS_VERSION = 3  # bump when the world or the corpus changes in a way the config does not show
# v2: broken attempts are cut off before their constants; every task hides at least one constant
# v3: each repair quotes its own task's feedback (v2 quoted another task's for most); the tokenizer with one token
#     per constant and per fixed phrase (toy/tokenizer.py); repairs miscopy 10% (was 25%) and break 5% (was 10%)
# seconds per expert program (each runs in microseconds; only a starved machine comes close)
CORPUS_TIMEOUT = 30.0
BUILD_THREADS = 1  # torch threads of the default build (the shipped policy was built with it)
SHIPPED = Path(__file__).resolve().parent / "policy"  # the shipped default policy (size "toy", seed 0)


@dataclass
class ToyPolicyConfig:
    """Everything that determines the toy policy (its hash names the cache directory)."""

    hidden: int = 64  # width of the OLMo-2-style LM
    layers: int = 3
    heads: int = 4
    n_chains: int = 4000  # expert chains in the SFT corpus (each gives 1-3 examples)
    steps: int = 3000  # SFT optimizer steps (copying from the feedback is learned by ~1,300)
    batch_size: int = 64
    lr: float = 3e-3
    warmup: int = 50
    noise: NoiseConfig = field(default_factory=lambda: NoiseConfig(min_hidden=0))  # corpus: easy tasks too


ALIASES = {"small": "toy"}  # other names callers use for the default size

SIZES = {
    "toy": ToyPolicyConfig(),
    "toy-long": ToyPolicyConfig(steps=6000),  # twice the SFT of the shipped default
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
    blob = json.dumps(
        {"cfg": asdict(cfg), "seed": seed, "v": CORPUS_VERSION, "fb": fingerprint, "pieces": PIECES},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def shipped_policy(expected_hash: str | None = None) -> str | None:
    """The shipped policy's directory when it exists (and, given `expected_hash`, was built from that config)."""
    info = SHIPPED / "build.json"
    if not info.exists():
        return None
    if expected_hash is not None and json.loads(info.read_text()).get("config_hash") != expected_hash:
        return None
    return str(SHIPPED)


def build_toy_policy(
    size: str = "toy",
    cache_dir: str | Path | None = None,
    seed: int = 0,
    progress: bool = False,
    threads: int | None = BUILD_THREADS,
    ship: bool = False,
    **overrides,
) -> str:
    """Build (or fetch from the cache) the toy policy; return its checkpoint directory.

    `size` picks a preset in `SIZES`; keyword `overrides` replace config fields (e.g. `steps=800`).
    The directory holds the model, the char tokenizer, `build.json` (config, SFT loss log, timings, corpus
    statistics) and `corpus.jsonl`.
    """
    size = ALIASES.get(size, size)
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    cfg = replace(SIZES[size], **overrides)
    executor = get_executor(timeout=CORPUS_TIMEOUT)
    try:
        return _build(size, cfg, seed, executor, cache_dir, progress, threads, ship)
    finally:
        getattr(executor, "close", lambda: None)()


def _build(
    size: str,
    cfg: ToyPolicyConfig,
    seed: int,
    executor,
    cache_dir,
    progress: bool,
    threads: int | None,
    ship: bool,
) -> str:
    digest = config_hash(cfg, seed, feedback_fingerprint(executor))
    out = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    final = out / f"{size}-{digest}"
    if not ship and (shipped := shipped_policy(digest)):
        return shipped
    if (final / "build.json").exists() and not ship:
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
        build_tiny_model(
            tmp,
            hidden=cfg.hidden,
            layers=cfg.layers,
            heads=cfg.heads,
            seed=seed,
            overwrite=True,
            pieces=PIECES,
        )
        model = AutoModelForCausalLM.from_pretrained(tmp)
        tok = AutoTokenizer.from_pretrained(tmp)
        torch.manual_seed(seed)
        log = sft(
            model, tok, corpus, cfg.steps, cfg.batch_size, cfg.lr, cfg.warmup, seed=seed, progress=progress
        )
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        with open(tmp / "corpus.jsonl", "w") as f:
            for e in corpus:
                f.write(json.dumps(e) + "\n")
        info = {
            "size": size,
            "seed": seed,
            "config": asdict(cfg),
            "corpus_version": CORPUS_VERSION,
            "executor": type(executor).__module__ + "." + type(executor).__name__,
            "parameters": sum(p.numel() for p in model.parameters()),
            "corpus_examples": len(corpus),
            "corpus_turns": {t: sum(e["turn"] == t for e in corpus) for t in (1, 2, 3)},
            "config_hash": digest,
            "threads": torch.get_num_threads(),
            "corpus_seconds": round(t_corpus, 1),
            "total_seconds": round(time.time() - t0, 1),
            "final_loss": log[-1]["smoothed"],
            "loss_log": log,
        }
        (tmp / "build.json").write_text(json.dumps(info, indent=1))
        if ship:
            _ship(tmp)
        if final.exists():  # a concurrent build (or an earlier one) finished first; keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.replace(tmp, final)
    finally:
        torch.set_num_threads(old_threads)
    return str(SHIPPED) if ship else str(final)


SHIPPED_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "build.json",
)  # not corpus.jsonl (2.6 MB; the build recreates it)


def _ship(built: Path) -> None:
    """Replace the shipped policy by the files of `built` (a finished build directory)."""
    if SHIPPED.exists():
        shutil.rmtree(SHIPPED)
    SHIPPED.mkdir()
    for name in SHIPPED_FILES:
        if (built / name).exists():
            shutil.copy2(built / name, SHIPPED / name)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Build (or find in the cache) the toy world's policy.")
    p.add_argument("--size", default="toy", choices=sorted(SIZES) + sorted(ALIASES))
    p.add_argument(
        "--cache-dir", default=None, help="default: $MURPHY_LAB_CACHE/toy or ~/.cache/murphy_lab/toy"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=None, help="override the preset's SFT steps")
    p.add_argument(
        "--threads", type=int, default=BUILD_THREADS, help="torch threads (the result depends on it)"
    )
    p.add_argument(
        "--ship", action="store_true", help="rebuild and replace the shipped policy in murphy_lab/toy/policy"
    )
    args = p.parse_args(argv)
    kw = {"steps": args.steps} if args.steps else {}
    if args.ship and (args.size, args.seed, kw) != ("toy", 0, {}):
        p.error("--ship rebuilds the default policy only (--size toy --seed 0, no --steps)")
    path = build_toy_policy(
        args.size, args.cache_dir, args.seed, progress=True, threads=args.threads, ship=args.ship, **kw
    )
    info = json.loads((Path(path) / "build.json").read_text())
    print(
        f"{path}\n  parameters {info['parameters']:,}  corpus {info['corpus_examples']} examples  "
        f"final SFT loss {info['final_loss']:.3f}  built in {info['total_seconds']} s"
    )


if __name__ == "__main__":
    main()
