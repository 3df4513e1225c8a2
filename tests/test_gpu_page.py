"""docs/gpu.md, walked: every command of the GPU start page runs, in order, exactly as written (`pagewalk`), against
a stand-in hub (`fakehub`: `hf download` and `datasets.load_dataset` reach it through HF_ENDPOINT) and stand-in
GPU tools. A step that needs GPUs ends, on this CPU machine, in its one-line refusal — never a traceback. The
install lines are checked against pyproject.toml and the Makefile (installing the gpu extra means vLLM's CUDA build).
The same data command offline gives one line per dataset naming `--source NAME=PATH`, exit 2, and writes nothing."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from fakehub import FakeHub, paper_repos
from pagewalk import ROOT, Walk, commands

PAGE = ROOT / "docs" / "gpu.md"
COMMANDS = commands(PAGE)

# A step that needs what this machine lacks (CUDA GPUs, vLLM): the line it must end in here, with exit status != 0.
GPU_ONLY = {
    "benchmarks/gpu_check.py": r"^gpu check: no CUDA device; pass --cpu",
    "murphy_lab.train --check": r"^GPUs: the config needs at least 3 .*\nvllm: .*\ndeepspeed: .*$",
    "jobs check": r"^vllm: the paper profile evaluates with vLLM and it is not installed",
    "bash jobs/paper.sh 0": r"error: profile='paper' trains 1.7B.7B models and needs CUDA GPUs",
    "jobs run": r"error: profile='paper' trains 1.7B.7B models and needs CUDA GPUs",
}


def test_the_page_has_its_commands_and_the_readme_links_it():
    assert len(COMMANDS) >= 20 and "docs/gpu.md" in (ROOT / "README.md").read_text()
    placeholders = [c for c in COMMANDS if ("<" in c or "/path/to" in c) and not c.startswith("git clone")]
    assert not placeholders  # each line runs as written (the clone's URL is yours: the walk is its checkout)


def test_the_install_lines_name_the_pins_and_extras_the_project_has():
    text = (ROOT / "pyproject.toml").read_text()
    extras = set(
        re.findall(r"^(\w+) = \[", text.split("[project.optional-dependencies]")[1].split("\n[")[0], re.M)
    )
    installs = [shlex.split(c) for c in COMMANDS if c.startswith(".venv/bin/pip install")]
    assert len(installs) == 3
    for argv in installs:
        for arg in argv[3:]:
            if arg.startswith("torch=="):
                assert f"pip install -q {arg}" in (ROOT / "Makefile").read_text()  # the CPU path's pin
            else:
                assert arg.startswith("-e") or set(re.findall(r"\[(.*)\]", arg)[0].split(",")) <= extras, arg


def mbpp_release(folder: Path) -> Path:
    """MBPP's two release files, with three test-split tasks (ids 11-13) each."""
    folder.mkdir()
    add = {"code": "def add(a, b):\n    return a + b\n", "test_list": ["assert add(1, 2) == 3"]}
    full = [
        {"task_id": i, "text": f"Add ({i}).", "test_setup_code": "", "challenge_test_list": [], **add}
        for i in (11, 12, 13)
    ]
    (folder / "mbpp.jsonl").write_text("".join(json.dumps(r) + "\n" for r in full))
    sanitized = [
        {"task_id": i, "prompt": f"Add ({i}).", "source_file": "x", "test_imports": [], **add}
        for i in (11, 12, 13)
    ]
    (folder / "sanitized-mbpp.json").write_text(json.dumps(sanitized))
    return folder


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_every_command_of_the_page_runs_as_written(tmp_path, tiny_model_path):
    with FakeHub(tmp_path / "hub") as hub:
        expected = paper_repos(hub.root, model=Path(tiny_model_path))
        walk = Walk(tmp_path, hub)
        mbpp_release(walk.dir / "mbpp")
        ran = []
        for line in COMMANDS:
            if line.startswith(("git clone", "python3 -m venv", ".venv/bin/pip install")):
                continue  # the checkout and its venv are the walk's (the install lines: the test above)
            result = walk.run(line)
            ran.append(line)
            assert "Traceback" not in result.output, f"{line}\n{result.output[-3000:]}"
            refusal = next((v for k, v in GPU_ONLY.items() if k in line and "--cpu" not in line), None)
            if refusal is None:
                assert result.returncode == 0, f"{line}\n{result.output[-3000:]}"
            else:  # a GPU step: its one line here
                assert result.returncode != 0 and re.search(refusal, result.output.strip(), re.M), (
                    f"{line}\n{result.output[-3000:]}"
                )
        assert len(ran) >= 18

        manifest = json.loads((walk.dir / "data" / "manifest.json").read_text())["datasets"]
        # the default sources, MBPP then replaced
        assert {k: v["tasks"] for k, v in manifest.items()} == expected
        assert (
            manifest["MBPP"]["read_from"] == "mbpp"
            and manifest["MBPP"]["files"]["mbpp/mbpp.jsonl"]["rows"] == 3
        )
        # through the hub
        assert any(r.startswith("GET /datasets/KodCode/KodCode-V1/resolve/") for r in hub.requests)
        # `hf download`, through the hub
        assert (walk.dir / "models" / "Qwen3-1.7B" / "config.json").is_file()
        # the one-GPU smoke step, on CPU
        assert (walk.dir / "runs" / "smoke" / "final" / "config.json").is_file()
        assert (walk.dir / "jobs" / "logs").is_dir() and walk.stub_calls("sbatch") == [
            ["jobs/paper.sh"],
            ["jobs/paper-eval.sh"],
        ]
        # the launch scripts: 2 runs of train_8xh100.sh, colocate, 2 layouts
        trained = walk.stub_calls("accelerate")
        assert len(trained) == 5 and all("murphy_lab.train" in argv for argv in trained)
        # the tables, no GPU
        assert (walk.dir / "reproduce" / "results" / "paper" / "main_table.ipynb").is_file()


def test_the_data_step_offline_is_one_line_per_dataset_naming_its_source_and_writes_nothing(tmp_path):
    line = next(c for c in COMMANDS if "murphy_lab.experiments.data" in c and "--source" not in c)
    walk = Walk(tmp_path)
    walk.env.update(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "empty-cache"))
    result = walk.run(line)
    lines = result.output.strip().splitlines()
    assert result.returncode == 2 and "Traceback" not in result.output
    # HumanEval: bundled
    assert [ln.split(":")[1].strip() for ln in lines] == ["kodcode-1k", "MBPP", "LCB-v6"]
    assert all(f"--source {ln.split(':')[1].strip()}=PATH" in ln for ln in lines)
    assert not (walk.dir / "data").exists() and not list(walk.dir.glob(".data*"))


def test_the_check_offline_names_the_hub_clients_download_command(tmp_path):
    line = next(c for c in COMMANDS if "murphy_lab.train --check" in c)
    walk = Walk(tmp_path)
    walk.env.update(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "empty-cache"))
    output = walk.run(line.replace("--set model=models/Qwen3-1.7B", "")).output
    assert (
        "hf download Qwen/Qwen3-1.7B --local-dir models/Qwen3-1.7B" in output
        and "huggingface-cli" not in output
    )


def test_the_hub_clients_current_command_is_named_everywhere():
    """`huggingface-cli` is the hub client's old name; the installed client ships `hf`."""
    files = [
        p
        for p in [
            *ROOT.glob("docs/*.md"),
            ROOT / "README.md",
            *ROOT.glob("murphy_lab/**/*.py"),
            *ROOT.glob("reproduce/configs/launch/*"),
        ]
        if p.is_file()
    ]
    assert not [str(p) for p in files if "huggingface-cli" in p.read_text()]
    assert (Path(sys.prefix) / "bin" / "hf").exists()
    done = subprocess.run(
        [str(Path(sys.prefix) / "bin" / "hf"), "download", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "--local-dir" in done.stdout


def test_every_gpu_only_step_is_marked_not_yet_run():
    for heading in ("## 4.", "## 5.", "## 6."):
        line = next(line for line in PAGE.read_text().splitlines() if line.startswith(heading))
        assert "not yet run on a GPU" in line, line
    table = PAGE.read_text().split("## What has and has not run on a GPU")[1]
    assert "| not yet run on a GPU |" in table and "measured" not in table.lower()
