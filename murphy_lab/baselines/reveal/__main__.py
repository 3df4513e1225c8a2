"""Train ReVeal from a recipe: `python -m murphy_lab.baselines.reveal`.

    python -m murphy_lab.baselines.reveal --config reproduce/configs/qwen3-1.7b/reveal.yaml --output-dir runs/reveal
    python -m murphy_lab.baselines.reveal --check --config reproduce/configs/qwen3-1.7b/reveal.yaml --gpus 8
    python -m murphy_lab.baselines.reveal --config ... --output-dir ... --resume --set rounds=2 use_vllm=false

A recipe is MurphyConfig fields plus a `reveal:` mapping of ReVealConfig fields (`baselines/reveal/config.py`);
`--set` names a field of either (`rounds=2` or `reveal.rounds=2`; dotted items merge into mapping fields such as
`task_args.path=...`). The options, the fields' names and types and the recipe are checked before TRL is imported;
`--check` then checks the MurphyConfig ReVeal trains with as `python -m murphy_lab.train --check` does (data, model,
GPUs, packages) and exits 0 or 2, and a run refuses the same problems before anything is written.
"""

from __future__ import annotations

from pathlib import Path

from murphy_lab import cli
from murphy_lab.baselines.reveal.config import ReVealConfig, as_chains, load_recipe
from murphy_lab.config import MurphyConfig
from murphy_lab.fields import field_types
from murphy_lab.preflight import check

SCHEMA = {**field_types(MurphyConfig), **field_types(ReVealConfig), "reveal": dict}  # ReVeal's γ is its own


def parser() -> cli.Parser:
    p = cli.Parser("python -m murphy_lab.baselines.reveal", __doc__)
    p.add_argument("--config", required=True, help="reveal.yaml: MurphyConfig fields and a `reveal:` mapping")
    p.add_argument("--output-dir", help="run folder (required to train)")
    p.add_argument(
        "--resume", action="store_true", help="continue from the newest checkpoint in --output-dir"
    )
    cli.add_set(p, "override MurphyConfig / ReVealConfig fields (dotted names reach into mappings)")
    p.add_argument(
        "--check", action="store_true", help="check the recipe, data, model, GPUs and packages; load nothing"
    )
    p.add_argument("--gpus", type=int, help="with --check: the GPUs of the machine the run will start on")
    return p


def main(argv: list[str] | None = None) -> Path | None:
    a = parser().parse(argv)
    plain, nested, problems = cli.sets(a.set, SCHEMA)
    if not Path(a.config).is_file():
        problems.append(f"--config: no such file {a.config!r}")
    if not a.check and not a.output_dir:
        problems.append("--output-dir is required to train (or give --check)")
    cli.refuse(problems)
    plain.update(nested.pop("reveal", {}))  # reveal.rounds=2 is rounds=2
    config, reveal = load_recipe(a.config, validate=False, **plain)
    config = cli.apply_nested(config, nested)
    problems = reveal.problems() + check(as_chains(config, reveal), a.gpus)  # as train_reveal runs it
    if a.check:
        cli.report_problems(
            problems,
            f"ok: {a.config} passes the checks (ReVeal and MurphyConfig fields, data, model, GPUs, packages)",
        )
        return None
    cli.refuse(problems)
    from murphy_lab.baselines.reveal.trainer import train_reveal  # TRL: once the inputs are accepted

    final = train_reveal(config, a.output_dir, reveal, resume=a.resume)
    print(f"final model: {final}")
    return final


if __name__ == "__main__":
    cli.run(main)
