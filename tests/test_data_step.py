"""The data step (`python -m murphy_lab.experiments.data`): a plan's datasets written to local files that the
loaders read offline, with counts and SHA-256 in a manifest; training configs and evaluation then read them."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from fakehub import FakeHub, paper_repos
from test_tasks_loaders import kod_row, lcb_row

from murphy_lab import config as config_module
from murphy_lab import experiments as X
from murphy_lab.cli import Refused
from murphy_lab.experiments import data as D
from murphy_lab.experiments.dispatch import benchmark_tasks_for
from murphy_lab.methods import get_method
from murphy_lab.tasks import load_tasks

MBPP = Path("/work/shared/data/mbpp")


def kodcode_fixture(root: Path) -> Path:
    """A hub-layout KodCode folder: 6 eligible rows and one without a solution."""
    rows = [kod_row(f"q{i}") for i in range(6)] + [kod_row("bad", solution="")]
    (root / "data").mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(root / "data" / "train-00000-of-00001.parquet")
    return root


def lcb_fixture(root: Path) -> Path:
    root.mkdir(parents=True)
    rows = [
        lcb_row("a1", "easy", "2025-02-10T00:00:00", functional=True),
        lcb_row("a2", "hard", "2025-03-01T00:00:00", functional=False),
    ]
    (root / "test6.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_plan_datasets_of_the_paper_profile():
    assert {k: v[0] for k, v in D.plan_datasets("paper").items()} == {
        "kodcode-1k": "kodcode",
        "HumanEval": "humaneval",
        "MBPP": "mbpp",
        "LCB-v6": "livecodebench",
    }
    assert D.plan_datasets("toy") == {}  # generated in code


def test_hub_datasets_from_fixtures_are_written_and_read_back_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    plan = D.plan_datasets("paper")
    datasets = {k: plan[k] for k in ("kodcode-1k", "LCB-v6", "HumanEval")}
    sources = {
        "kodcode-1k": str(kodcode_fixture(tmp_path / "kod")),
        "LCB-v6": str(lcb_fixture(tmp_path / "lcb")),
    }
    out = tmp_path / "data"
    manifest = D.main(
        ["--out", str(out), "--only", *datasets, "--source", *(f"{k}={v}" for k, v in sources.items())]
    )
    ds = manifest["datasets"]
    assert {k: ds[k]["tasks"] for k in ds} == {"kodcode-1k": 6, "LCB-v6": 2, "HumanEval": 164}
    assert ds["kodcode-1k"]["files"]["kodcode/train.jsonl"]["rows"] == 6  # the selected rows only
    assert ds["LCB-v6"]["files"]["livecodebench/test6.jsonl"]["rows"] == 2
    for entry in ds.values():
        for name, info in entry["files"].items():
            assert info["sha256"] == hashlib.sha256((out / name).read_bytes()).hexdigest()
    # the same tasks, in the same order, from the written files as from the source
    same = load_tasks("kodcode", n=1000, seed=0, source=sources["kodcode-1k"])
    again = load_tasks("kodcode", n=1000, seed=0, source=str(out / "kodcode"))
    assert [t.task_id for t in again] == [t.task_id for t in same]
    assert json.loads((out / "manifest.json").read_text()) == manifest


@pytest.mark.skipif(not MBPP.is_dir(), reason="no local MBPP copy at /work/shared/data/mbpp")
def test_mbpp_original_files_are_copied_with_checksums(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    manifest = D.write_data(tmp_path, {"MBPP": D.plan_datasets("paper")["MBPP"]}, {"MBPP": str(MBPP)})
    entry = manifest["datasets"]["MBPP"]
    assert entry["tasks"] == 500  # the paper's split: full MBPP, test ids 11-510
    assert entry["files"]["mbpp/mbpp.jsonl"]["rows"] == 974


def test_training_configs_and_evaluation_read_the_local_files(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    plan = D.plan_datasets("paper")
    D.write_data(
        tmp_path / "data",
        {k: plan[k] for k in ("kodcode-1k", "HumanEval", "LCB-v6")},
        {"kodcode-1k": str(kodcode_fixture(tmp_path / "kod")), "LCB-v6": str(lcb_fixture(tmp_path / "lcb"))},
    )
    monkeypatch.setenv("MURPHY_LAB_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(config_module, "_cuda_available", lambda: True)  # the recipe asks for vLLM and bf16
    exp = X.Experiment("paper", "Qwen3-1.7B", "murphy", benchmarks=("HumanEval", "LCB-v6"))
    # the recipe's task_args, plus where the rows are
    cfg = get_method("murphy").config(exp, "Qwen/Qwen3-1.7B")
    assert cfg.task_args == {"n": 1000, "seed": 0, "source": str((tmp_path / "data" / "kodcode").resolve())}
    assert X.train_key(exp) == X.train_key(
        X.Experiment("paper", "Qwen3-1.7B", "murphy", benchmarks=("HumanEval", "LCB-v6"))
    )
    assert len(benchmark_tasks_for(exp, "HumanEval")) == 164
    assert [t.task_id for t in benchmark_tasks_for(exp, "LCB-v6")] == ["lcb/a1", "lcb/a2"]


def test_a_bad_source_name_is_one_line(tmp_path):
    with pytest.raises(ValueError, match="names no dataset of the plan: \\['KodCode'\\]"):
        D.write_data(tmp_path, D.plan_datasets("paper"), {"KodCode": "/x"})
    with pytest.raises(ValueError, match=r"--source: unknown 'KodCode' \(did you mean 'kodcode-1k'\?\)"):
        D.main(["--out", str(tmp_path / "d"), "--source", "KodCode=/x"])


@pytest.mark.slow
def test_every_dataset_is_written_from_its_default_source_through_the_hub(tmp_path):
    """The GPU page's first command as written: no --source, so every dataset comes from its loader's default hub id
    (KodCode's crashed with a TypeError here), read from a stand-in hub through the same code as huggingface.co."""
    with FakeHub(tmp_path / "hub") as hub:
        expected = paper_repos(hub.root)
        done = subprocess.run(
            [sys.executable, "-m", "murphy_lab.experiments.data", "--profile", "paper", "--out", "data"],
            cwd=tmp_path,
            env=hub.env(tmp_path / "hf-home"),
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((tmp_path / "data" / "manifest.json").read_text())["datasets"]
    assert {k: v["tasks"] for k, v in manifest.items()} == expected
    assert {v["read_from"] for v in manifest.values()} == {"default"}
    assert not list(tmp_path.glob(".data*"))  # the staging folder is gone


def test_offline_each_dataset_is_one_line_naming_its_local_source_and_nothing_is_written(
    tmp_path, monkeypatch
):
    from murphy_lab import preflight

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    monkeypatch.setattr(preflight, "_hub_cache", lambda: tmp_path / "hub")
    with pytest.raises(Refused) as err:
        D.main(["--profile", "paper", "--out", str(tmp_path / "data")])
    assert [p.split(":")[0] for p in err.value.problems] == ["kodcode-1k", "MBPP", "LCB-v6"]
    for line in err.value.problems:
        name = line.split(":")[0]
        assert (
            f"not cached here, and the hub is unreachable (HF_HUB_OFFLINE=1); give a local copy with --source "
            f"{name}=PATH" in line
        )
    with pytest.raises(Refused, match="MBPP: --source '/no/such' does not exist"):
        D.main(
            [
                "--profile",
                "paper",
                "--out",
                str(tmp_path / "data"),
                "--only",
                "MBPP",
                "--source",
                "MBPP=/no/such",
            ]
        )
    with pytest.raises(Refused, match=r"--only: unknown 'mbpp' \(did you mean 'MBPP'\?\)"):
        D.main(["--profile", "paper", "--out", str(tmp_path / "data"), "--only", "mbpp"])
    assert not list(tmp_path.iterdir())
