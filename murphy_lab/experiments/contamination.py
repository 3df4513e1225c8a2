"""Decontamination: a profile's training tasks checked against every benchmark it evaluates on.

`check(train_tasks, {benchmark: tasks})` pairs every training task with every evaluation task it repeats: the same
or a contained statement, the same reference program (`tasks.overlap.find_overlap`), or a near-duplicate statement
or reference (`find_near_duplicates`: 5-gram Jaccard >= 0.6). `check_profile(name)` loads the profile's training
set (`profiles.TRAIN_DATA`) and its benchmarks (`profiles.benchmark_tasks`) and checks them; `write_report` puts
``contamination.md`` and ``contamination.json`` beside the tables (``results/<profile>/``).

`refuse_overlap(name)` is the gate (`experiments.plan.require_resources`, run by `setup` before anything trains): a
profile with ``Profile.refuse_overlap`` (the paper profile) stops, naming the pairs, when its training set repeats a
task of its benchmarks, unless told to train anyway (``MURPHY_LAB_ALLOW_OVERLAP=1`` in the environment).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from murphy_lab.profiles import TRAIN_DATA, Profile, benchmark_tasks, get_profile
from murphy_lab.tasks import load_tasks
from murphy_lab.tasks.overlap import find_near_duplicates, find_overlap, normalize_code
from murphy_lab.tasks.task import Task

ALLOW_ENV = "MURPHY_LAB_ALLOW_OVERLAP"  # "1": train on an overlapping set anyway (the report still says so)
# strongest first
KINDS = ("statement", "reference", "statement-contained", "statement-near", "reference-near")
SHOWN = 50  # pairs listed in the Markdown report
LISTED = 500  # pairs listed in the JSON report (its summary counts all)


@dataclass
class ContaminationReport:
    """Which training tasks repeat which evaluation tasks, per benchmark."""

    profile: str
    train_data: str
    n_train: int
    benchmarks: dict[str, int]  # benchmark -> evaluation tasks checked
    pairs: list[dict] = field(default_factory=list)
    """One per overlapping (training task, evaluation task): benchmark, train_id, eval_id, kind (the strongest of
    `KINDS`), score (Jaccard for a near-duplicate, else 1), same_reference (the references are equal too)."""

    @property
    def overlapping(self) -> bool:
        return bool(self.pairs)

    def summary(self) -> list[dict]:
        """One row per (benchmark, kind): pairs, distinct training tasks, distinct evaluation tasks."""
        rows = []
        for bench in self.benchmarks:
            for kind in KINDS:
                found = [p for p in self.pairs if p["benchmark"] == bench and p["kind"] == kind]
                if found:
                    rows.append(
                        dict(
                            benchmark=bench,
                            kind=kind,
                            pairs=len(found),
                            train_tasks=len({p["train_id"] for p in found}),
                            eval_tasks=len({p["eval_id"] for p in found}),
                            same_reference=sum(p["same_reference"] for p in found),
                        )
                    )
        return rows

    def to_json(self) -> dict:
        return dict(
            profile=self.profile,
            train_data=self.train_data,
            n_train=self.n_train,
            benchmarks=self.benchmarks,
            overlapping=self.overlapping,
            summary=self.summary(),
            pairs_total=len(self.pairs),
            pairs=self.pairs[:LISTED],
        )

    def markdown(self) -> str:
        benches = ", ".join(f"{b} ({n} tasks)" for b, n in self.benchmarks.items())
        lines = [
            f"# Training/evaluation overlap: profile `{self.profile}`",
            "",
            f"Training set `{self.train_data}` ({self.n_train} tasks) against {benches}. Rules "
            "(`murphy_lab.tasks.overlap`): the same normalized statement, one statement inside the other (40+ "
            "characters), the same reference program after `ast` normalization, or a near-duplicate statement or "
            'reference (5-gram Jaccard >= 0.6, texts of 20+ 5-grams). Paraphrases are not found. "same reference": '
            "pairs whose reference programs are also equal after normalization; a statement pair without one is the "
            "same text with another solution (e.g. the toy world's prompt templates, whose hidden constants differ).",
            "",
        ]
        if not self.pairs:
            return "\n".join(lines + ["**No overlap found.**", ""])
        lines += [
            "| benchmark | kind | pairs | training tasks | evaluation tasks | same reference |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['benchmark']} | {r['kind']} | {r['pairs']} | {r['train_tasks']} | {r['eval_tasks']} | "
            f"{r['same_reference']} |"
            for r in self.summary()
        ]
        listed = min(LISTED, len(self.pairs))
        lines += [
            "",
            f"First {min(SHOWN, len(self.pairs))} of {len(self.pairs)} pairs ({listed} in the JSON):",
            "",
            "| training task | evaluation task | benchmark | kind | score |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {p['train_id']} | {p['eval_id']} | {p['benchmark']} | {p['kind']} | {p['score']:g} |"
            for p in self.pairs[:SHOWN]
        ]
        return "\n".join(lines + [""])


def check(
    train_tasks: Sequence[Task],
    benchmarks: Mapping[str, Sequence[Task]],
    profile: str = "",
    train_data: str = "",
) -> ContaminationReport:
    """Every (training task, evaluation task) pair that overlaps, per benchmark: one pair per kind's strongest."""
    pairs = []
    code = {}  # id(task) -> its normalized reference

    def same_reference(a: Task, b: Task) -> bool:
        for t in (a, b):
            if id(t) not in code:
                code[id(t)] = normalize_code(t.reference) if t.reference else None
        return code[id(a)] is not None and code[id(a)] == code[id(b)]

    for bench, eval_tasks in benchmarks.items():
        found = find_overlap(train_tasks, eval_tasks) + find_near_duplicates(train_tasks, eval_tasks)
        best: dict[tuple[str, str], dict] = {}
        for o in found:
            key = (o.train.task_id, o.eval.task_id)
            row = dict(
                benchmark=bench,
                train_id=o.train.task_id,
                eval_id=o.eval.task_id,
                kind=o.kind,
                score=o.score,
                same_reference=same_reference(o.train, o.eval),
            )
            if key not in best or KINDS.index(o.kind) < KINDS.index(best[key]["kind"]):
                best[key] = row
        pairs += best.values()
    return ContaminationReport(
        profile, train_data, len(train_tasks), {b: len(t) for b, t in benchmarks.items()}, pairs
    )


def check_profile(profile: str | Profile, benchmarks: Sequence[str] | None = None) -> ContaminationReport:
    """`check` on a profile's training set and its benchmarks (all of each benchmark, not only `n_eval_tasks`)."""
    profile = get_profile(profile)
    source, args = TRAIN_DATA[profile.train_data]
    train = load_tasks(source, **args)
    evals = {b: benchmark_tasks(profile, b) for b in (benchmarks or profile.benchmarks)}
    return check(train, evals, profile.name, profile.train_data)


def decontaminated(parts: Sequence[Sequence], against: Sequence[Sequence]) -> list[Task]:
    """A training set without the tasks that repeat an evaluation task: the tasks of `parts` (each a task source and
    its loader arguments, `[source, {args}]`, concatenated in order) minus every task that `check` pairs with a task
    of `against` (the held-out sets, given the same way). A task source itself ("module:function" path), so a
    profile's `TRAIN_DATA` entry names it (the real-cpu profile: MBPP's train, validation and prompt splits against
    sanitized MBPP's test split and HumanEval)."""
    train = [t for source, args in parts for t in load_tasks(source, **dict(args))]
    held_out = {f"{source} {i}": load_tasks(source, **dict(args)) for i, (source, args) in enumerate(against)}
    dropped = {p["train_id"] for p in check(train, held_out).pairs}
    return [t for t in train if t.task_id not in dropped]


def write_report(report: ContaminationReport, out_dir: str | Path) -> list[Path]:
    """``contamination.md`` and ``contamination.json`` in `out_dir` (the profile's results folder)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / "contamination.md", out / "contamination.json"
    md.write_text(report.markdown())
    js.write_text(json.dumps(report.to_json()) + "\n")
    return [md, js]


def refuse_overlap(profile: str | Profile) -> ContaminationReport | None:
    """Stop a profile with ``refuse_overlap`` before it trains on a set that repeats one of its benchmarks' tasks
    (unless ``MURPHY_LAB_ALLOW_OVERLAP=1``); None for a profile that does not ask."""
    profile = get_profile(profile)
    if not profile.refuse_overlap:
        return None
    report = check_profile(profile)
    if report.overlapping and os.environ.get(ALLOW_ENV) != "1":
        first = "; ".join(f"{p['train_id']} ~ {p['eval_id']} ({p['kind']})" for p in report.pairs[:3])
        raise RuntimeError(
            f"profile={profile.name!r}: {len(report.pairs)} training/evaluation task pair(s) overlap (e.g. {first}); "
            f"write the report with contamination.write_report(contamination.check_profile({profile.name!r}), "
            f"out_dir), remove them from the training set, or set {ALLOW_ENV}=1 to train anyway"
        )
    return report
