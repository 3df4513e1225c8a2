"""`python -m murphy_lab.baselines.mucode --config FILE --output-dir DIR [--profile smoke|toy|paper] [--resume]`."""

from __future__ import annotations

import argparse

from murphy_lab.baselines.mucode.config import MuCodeConfig
from murphy_lab.baselines.mucode.pipeline import run_mucode
from murphy_lab.profiles import PROFILES


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m murphy_lab.baselines.mucode", description=__doc__)
    ap.add_argument("--config", help="YAML/JSON file of MuCodeConfig fields (method: mucode allowed)")
    ap.add_argument("--output-dir", required=True, help="run directory (stages, models, eval/table.csv)")
    ap.add_argument("--profile", choices=sorted(PROFILES), help="run profile; overrides the file's `profile`")
    ap.add_argument(
        "--resume", action="store_true", help="skip the stages that already finished in --output-dir"
    )
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)
    if args.config:
        cfg = MuCodeConfig.from_file(args.config, profile=args.profile)
    else:
        cfg = MuCodeConfig.for_profile(args.profile or "smoke")
    final = run_mucode(cfg, args.output_dir, resume=args.resume, progress=not args.no_progress)
    print(f"µCode generator: {final}\nIter-k table: {args.output_dir}/eval/table.csv")


if __name__ == "__main__":
    main()
