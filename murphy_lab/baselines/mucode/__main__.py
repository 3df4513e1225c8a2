"""Run µCode (rollouts -> verifier -> relabel -> SFT, then evaluation): `python -m murphy_lab.baselines.mucode`.

    python -m murphy_lab.baselines.mucode --config reproduce/configs/qwen3-1.7b/mucode.yaml --output-dir runs/mucode
    python -m murphy_lab.baselines.mucode --check --config reproduce/configs/qwen3-1.7b/mucode.yaml --gpus 8
    python -m murphy_lab.baselines.mucode --profile smoke --output-dir runs/mucode-smoke --set rounds=1

`--set` names MuCodeConfig fields (`baselines/mucode/config.py`; dotted names reach into mappings such as
`task_args.path=...`). The options, the fields' names and types and the config are checked before TRL is imported;
`--check` then checks the model, data, GPUs and vLLM as `python -m murphy_lab.train --check` does (exit 0 or 2),
and a run refuses the same problems before anything is written.
"""

from __future__ import annotations

from pathlib import Path

from murphy_lab import cli
from murphy_lab.baselines.mucode.config import MuCodeConfig
from murphy_lab.fields import field_types
from murphy_lab.preflight import check
from murphy_lab.profiles import PROFILES


def parser() -> cli.Parser:
    p = cli.Parser("python -m murphy_lab.baselines.mucode", __doc__)
    p.add_argument("--config", help="YAML/JSON file of MuCodeConfig fields (method: mucode allowed)")
    p.add_argument("--output-dir", help="run directory (stages, models, eval/table.csv); required to train")
    p.add_argument("--profile", help=f"run profile: {' | '.join(PROFILES)} (overrides the file's `profile`)")
    p.add_argument(
        "--resume", action="store_true", help="skip the stages that already finished in --output-dir"
    )
    cli.add_set(p, "override MuCodeConfig fields (dotted names reach into mappings)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument(
        "--check", action="store_true", help="check the config, data, model, GPUs and packages; load nothing"
    )
    p.add_argument("--gpus", type=int, help="with --check: the GPUs of the machine the run will start on")
    return p


def options(a) -> tuple[dict, dict]:
    """(plain, dotted) `--set` values once the options are accepted; `cli.Refused` lists every problem at once."""
    plain, nested, problems = cli.sets(a.set, field_types(MuCodeConfig))
    problems.append(cli.choice(a.profile, PROFILES, "--profile"))
    if a.config and not Path(a.config).is_file():
        problems.append(f"--config: no such file {a.config!r}")
    if not a.check and not a.output_dir:
        problems.append("--output-dir is required to run (or give --check)")
    cli.refuse(problems)
    return plain, nested


def config_of(a, plain: dict, nested: dict) -> MuCodeConfig:
    """The MuCodeConfig the command line describes, validated (a ValueError names every problem)."""
    if a.config:
        cfg = MuCodeConfig.from_file(a.config, profile=a.profile, **plain)
    else:
        cfg = MuCodeConfig.for_profile(a.profile or "smoke", **plain)
    return cli.apply_nested(cfg, nested).validate()


def main(argv: list[str] | None = None) -> Path | None:
    a = parser().parse(argv)
    plain, nested = options(a)
    if a.check:
        try:
            cfg = config_of(a, plain, nested)
        except ValueError as err:  # the config's own problems, listed as --check lists every problem
            cli.report_problems(str(err).splitlines(), "")
        cli.report_problems(
            check(cfg, a.gpus),
            f"ok: {a.config or cfg.profile} passes the checks (µCode fields, data, model, GPUs, packages)",
        )
        return None
    cfg = config_of(a, plain, nested)
    cli.refuse(check(cfg))
    from murphy_lab.baselines.mucode.pipeline import run_mucode  # TRL: once the inputs are accepted

    final = run_mucode(cfg, a.output_dir, resume=a.resume, progress=not a.no_progress)
    print(f"µCode generator: {final}\nIter-k table: {a.output_dir}/eval/table.csv")
    return final


if __name__ == "__main__":
    cli.run(main)
