"""A small RL comparison in the toy world: GRPO vs GRPO-MT vs MURPHY at equal optimizer steps, over seeds.

    python -m murphy_lab.experiments.toy_compare --steps 40 --seeds 0 1 2 --out runs/toy-compare

Each (method, seed) run trains the cached toy policy with `murphy_lab.train.train` on the toy profile, then
measures Iter-k pass@1 on the test split (`measure.measure_policy`) and the informative share of the turn-1
failures in the run's last rollout trees (does the informative/uninformative distinction persist?). Results are
appended to `<out>/results.jsonl` as they finish; `summarize` turns them into mean ± std per method.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from murphy_lab import cli
from murphy_lab.config import MurphyConfig
from murphy_lab.modes import mode
from murphy_lab.profiles import training_set
from murphy_lab.toy.measure import informative_share, measure_policy
from murphy_lab.train import train
from murphy_lab.tree import load_trees

RUNS = {  # trainer fields per compared run: the mode's (murphy_lab.modes) and the variant
    "grpo": mode("grpo").fields(),
    "grpo_mt": mode("grpo_mt").fields(),
    "murphy_mars": dict(mode("murphy").fields(), credit="mars"),
    "murphy_mers": dict(mode("murphy").fields(), credit="mers", gamma=0.9),
    # InterP: 2 of the 4 turn-2 groups
    "murphy_mars_interp": dict(mode("murphy").fields(), credit="mars", b_grp=2),
}


def turn1_informative_share(run_dir: Path, last: int = 10) -> float:
    """Informative share of failed turn-1 candidates in the last `last` steps' trees of a training run."""
    files = sorted((run_dir / "trees").glob("step_*.jsonl"), key=lambda p: int(p.stem.split("_")[-1]))[-last:]
    nodes = [n for f in files for t in load_trees(str(f)) for n in t.root.children]
    return informative_share(nodes)


def run_one(
    method: str, seed: int, steps: int, out: Path, n_eval: int, runs: int, iters, **overrides
) -> dict:
    """Train one (method, seed) and measure it; return a result row."""
    kw = {**training_set("toy"), **RUNS[method], **overrides}  # the toy training set every method trains on
    cfg = MurphyConfig.for_profile("toy", seed=seed, max_steps=steps, save_steps=10 * steps, **kw).validate()
    run_dir = out / f"{method}-s{seed}"
    t0 = time.time()
    final = train(cfg, run_dir)
    t_train = time.time() - t0
    m = measure_policy(str(final), n_eval, runs, iters, seed=1234)
    return {
        "method": method,
        "seed": seed,
        "steps": steps,
        "train_s": round(t_train, 1),
        "pass@1": {int(k): float(v) for k, v in m["pass@1"].items()},
        "eval_informative_share": m["informative_share"],
        "eval_informative_share_turn1": m["informative_share_turn1"],
        "eval_failure_kinds": m["failure_kinds"],
        "train_turn1_informative_share": turn1_informative_share(run_dir),
    }


def _mean_std(values) -> str:
    vals = np.asarray([v for v in values if v is not None and v == v], dtype=float)
    return f"{vals.mean():.1f} ± {vals.std():.1f}" if len(vals) else "–"


def summarize(rows: list[dict]) -> str:
    """A markdown table: mean ± std over seeds (ddof 0) of Iter-k pass@1 (%) and the informative shares (%)."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    ks = sorted({int(k) for r in rows for k in r["pass@1"]})
    head = (
        "| method | seeds | "
        + " | ".join(f"Iter-{k}" for k in ks)
        + " | informative (eval) | informative (train t1) |"
    )
    lines = [head, "|" + "---|" * (len(ks) + 4)]
    for m in methods:
        rs = [r for r in rows if r["method"] == m]
        cells = [_mean_std([r["pass@1"].get(str(k), r["pass@1"].get(k)) for r in rs]) for k in ks]
        shares = [
            _mean_std([100 * r[key] for r in rs if r.get(key) is not None])
            for key in ("eval_informative_share", "train_turn1_informative_share")
        ]
        lines.append(f"| {m} | {len(rs)} | " + " | ".join(cells + shares) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = cli.Parser(
        "python -m murphy_lab.experiments.toy_compare",
        "GRPO vs GRPO-MT vs MURPHY in the toy world, equal steps, over seeds.",
    )
    p.add_argument("--methods", nargs="+", default=["grpo", "grpo_mt", "murphy_mars"], choices=sorted(RUNS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--lr", type=float, default=None, help="override the toy profile's learning rate")
    p.add_argument("--n-eval", type=int, default=200)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--iters", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--out", default="runs/toy-compare")
    p.add_argument("--model", default="", help="a policy checkpoint (default: the cached toy policy)")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse(argv)
    import torch  # heavy: only the command line sets its threads

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    over = {"learning_rate": args.lr} if args.lr else {}
    if args.model:
        over["model"] = args.model
    for seed in args.seeds:  # seed-major: a partial run still has every method at the first seeds
        for method in args.methods:
            row = run_one(method, seed, args.steps, out, args.n_eval, args.runs, args.iters, **over)
            with open(out / "results.jsonl", "a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    rows = [json.loads(ln) for ln in open(out / "results.jsonl") if ln.strip()]
    print(summarize(rows))


if __name__ == "__main__":
    cli.run(main)
