"""Does the toy policy repair from feedback? p(repair | revealing feedback) and the base's Iter-1 / Iter-3.

MURPHY credits a failed attempt with the success of its refinements, so the mechanism has something to act on only
when a policy's refinement after an informative failure succeeds more often than a blind retry. This measures it
for a toy policy (default: the shipped one, `murphy_lab/toy/policy/`), on held-out (test-split) functions:

- **revealing feedback** (`murphy_lab.toy.world.revealing`): the feedback of a failed attempt *reveals what the
  repair needs* when, after it, the prompt, the attempt and the feedback together determine the function: the
  lock states A (its second assert failed, so the attempt's B passed the first), or it states B on a task whose
  prompt gives A. For each task one such attempt is made (`murphy_lab.toy.measure.revealing_attempt`: with A hidden,
  the right B and a wrong A; with A given, the right A and a wrong B), executed for its real feedback, and the
  refinement prompt the scaffold would send is sampled `--samples` times at temperature 1.
- **p(repair | revealing feedback)**: the share of those completions whose program passes the hidden test.
- **base Iter-1 / Iter-3**: pass@1 (%) of the Reflexion-style scaffold (`murphy_lab.evaluate`) on the test split,
  from the first attempt alone and with up to two refinements (`murphy_lab.toy.measure.measure_policy`).

    .venv/bin/python benchmarks/toy_repair.py --quick     # 100 tasks x 4 samples; 200 tasks x 1 run (~1 min)
    .venv/bin/python benchmarks/toy_repair.py             # 288 tasks x 8 samples; 288 tasks x 4 runs

The last line is `toy repair: p(repair | revealing feedback) <p>, base Iter-1 <a>, Iter-3 <b>` (a, b in percent).
Sampling is seeded, so a policy gives the same line on every run (docs/toy_world.md §4.2 reports it).
"""

from __future__ import annotations

import argparse

from murphy_lab.toy.build import SHIPPED
from murphy_lab.toy.measure import measure_policy, repair_rate


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "model_dir", nargs="?", default=str(SHIPPED), help="a toy policy (default: the shipped one)"
    )
    p.add_argument("--quick", action="store_true", help="fewer tasks and samples (about a minute on 2 cores)")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    args = p.parse_args(argv)
    import torch  # heavy: imported once the arguments are known

    torch.set_num_threads(args.threads)
    repair_tasks, samples, eval_tasks, runs = (100, 4, 200, 1) if args.quick else (288, 8, 288, 4)
    rep = repair_rate(args.model_dir, n_tasks=repair_tasks, samples=samples)
    by_mask = ", ".join(f"{mask} hidden {v:.2f}" for mask, v in rep["by_mask"].items())
    print(
        f"p(repair | revealing feedback) over {rep['n']} completions ({repair_tasks} tasks x {samples}): "
        f"{rep['p']:.3f} ({by_mask})"
    )
    out = measure_policy(args.model_dir, n_tasks=eval_tasks, runs=runs, iters=(1, 2, 3))
    print(f"base pass@1 (%), {eval_tasks} test tasks x {runs} run(s):")
    print(out["table"].to_string(index=False))
    iter1, iter3 = out["pass@1"][1], out["pass@1"][3]
    print(
        f"toy repair: p(repair | revealing feedback) {rep['p']:.2f}, base Iter-1 {iter1:.1f}, Iter-3 {iter3:.1f}"
    )


if __name__ == "__main__":
    main()
