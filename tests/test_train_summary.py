"""`benchmarks/real_model.py --train-summary`: the real run's one line, read from run folders (built here: a base
run, MURPHY and GRPO-MT at MURPHY's samples, under way and finished), and from the committed real-cpu run."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
import yaml

from murphy_lab.paired import paired_difference

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(
    r"real training: (\S+) LoRA r(\d+), (\d+) steps x (\d+) tasks, held-out MBPP Iter-3 MURPHY (\S+) -> (\S+), "
    r"GRPO-MT (\S+) -> (\S+), difference (\S+) \[(\S+), (\S+)\], (\d+\.\d) core-hours(; PARTIAL: .+)?$"
)


@pytest.fixture(scope="module")
def real_model():
    spec = importlib.util.spec_from_file_location("real_model_bench", ROOT / "benchmarks" / "real_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def transcripts(path: Path, solved3: list[bool]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [dict(task_id=f"mbpp/{i}", run=0, solved={"1": False, "3": s}) for i, s in enumerate(solved3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def finished_run(root: Path, key: str, method: str, solved3: list[bool], eval_cpu_s: float, **cfg) -> None:
    run = root / "runs" / key
    transcripts(run / "transcripts_mbpp.jsonl", solved3)
    (run / "config.json").write_text(json.dumps(dict(method=method, **cfg)))
    (run / "done.json").write_text(json.dumps(dict(eval_cpu_s=eval_cpu_s)))


def training(
    root: Path, key: str, mode: str, g1: int, rows: int, steps: int, evals: dict[int, list[bool]]
) -> None:
    folder = root / "checkpoints" / key
    folder.mkdir(parents=True)
    cfg = dict(
        mode=mode, g1=g1, max_steps=20, lora_r=8, per_device_train_batch_size=rows, steps_per_generation=8
    )
    (folder / "config.yaml").write_text(yaml.safe_dump(cfg))
    lines = [{"step": s, "time/step_cpu_s": 600.0, "reward/turn1_mean": 0.25} for s in range(1, steps + 1)]
    lines[-1]["time/eval_cpu_s"] = 1200.0
    (folder / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    for step, solved3 in evals.items():
        transcripts(folder / "eval" / f"step_{step:06d}.jsonl", solved3)


BASE = [True] * 4 + [False] * 6  # 40
MURPHY = [True] * 6 + [False] * 4  # 60
MT = [True] * 3 + [False] * 7  # 30


def test_a_run_under_way_reads_its_latest_in_run_evaluation_and_says_partial(real_model, tmp_path):
    training(tmp_path, "m", "murphy", g1=4, rows=2, steps=12, evals={10: MURPHY})
    training(tmp_path, "t", "grpo_mt", g1=6, rows=3, steps=3, evals={})
    line = real_model.train_summary(tmp_path)
    assert line == (
        "real training: qwen2.5-coder-0.5b LoRA r8, 20 steps x 4 tasks, held-out MBPP Iter-3 MURPHY n/a -> 60.0, "
        "GRPO-MT n/a -> n/a, difference n/a [n/a, n/a], 3.2 core-hours; "  # (15 x 600 + 2 x 1200) / 3600
        "PARTIAL: MURPHY 12/20 steps (evaluated at step 10), GRPO-MT 3/20 steps"
    )
    assert LINE.match(line)


def test_finished_runs_give_the_final_evaluations_and_their_paired_difference(real_model, tmp_path):
    finished_run(tmp_path, "b", "base", BASE, eval_cpu_s=3600.0)
    finished_run(tmp_path, "f1", "murphy", MURPHY, eval_cpu_s=1800.0)
    finished_run(tmp_path, "f2", "grpo_mt", MT, eval_cpu_s=1800.0, budget="samples")
    training(
        tmp_path, "m", "murphy", g1=4, rows=2, steps=20, evals={10: BASE, 20: BASE}
    )  # finals win over these
    training(tmp_path, "t", "grpo_mt", g1=6, rows=3, steps=20, evals={10: BASE, 20: BASE})
    line = real_model.train_summary(tmp_path)
    d = paired_difference([100.0 * s for s in MURPHY], [100.0 * s for s in MT])
    hours = (3600 + 1800 + 1800 + 2 * (20 * 600 + 1200)) / 3600
    assert line == (
        "real training: qwen2.5-coder-0.5b LoRA r8, 20 steps x 4 tasks, held-out MBPP Iter-3 MURPHY 40.0 -> 60.0, "
        f"GRPO-MT 40.0 -> 30.0, difference {d.mean:+.1f} [{d.lo:+.1f}, {d.hi:+.1f}], {hours:.1f} core-hours"
    )
    assert LINE.match(line) and "PARTIAL" not in line


def test_the_committed_real_run_prints_the_issues_line(real_model):
    line = real_model.train_summary()
    m = LINE.match(line)
    assert m, line
    assert m.group(1) == "qwen2.5-coder-0.5b" and (m.group(3), m.group(4)) == ("20", "4")
