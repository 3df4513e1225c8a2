"""docs/gpu.md: every command of the GPU start page parses with its command's own parser (and names files that
exist), the README links the page, and the page marks what has not run on a GPU."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from murphy_lab import eval_cli, train
from murphy_lab.experiments import data, jobs

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "gpu.md").read_text()
PARSERS = {"murphy_lab.train": train.parser, "murphy_lab.experiments.jobs": jobs.parser,
           "murphy_lab.experiments.data": data.parser, "murphy_lab.eval_cli": eval_cli.parser}  # fmt: skip


def commands() -> list[list[str]]:
    """The page's shell commands: each line of its ```bash blocks, comments and env assignments dropped."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", PAGE, re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if not line or line.startswith(("#", "export ", "git clone", "source ")):
                continue
            argv = shlex.split(line)
            while argv and re.fullmatch(r"[A-Z_]+=\S*", argv[0]):
                argv = argv[1:]
            out.append(argv)
    return out


def test_the_page_has_commands_and_the_readme_links_it():
    assert len(commands()) >= 15
    assert "docs/gpu.md" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("argv", commands(), ids=lambda a: " ".join(a)[:60])
def test_every_command_parses_and_names_files_that_exist(argv):
    if argv[:2] == [".venv/bin/python", "-m"] and argv[2] in PARSERS:
        PARSERS[argv[2]]().parse_args(argv[3:])  # an unknown option or a bad value exits here
    elif argv[0].startswith("reproduce/configs/launch/"):
        assert (ROOT / argv[0]).is_file() and (ROOT / argv[1]).is_file()
    elif argv[:2] == [".venv/bin/python", "benchmarks/gpu_check.py"]:
        assert set(argv[2:]) <= {"--cpu"}
    elif argv[0] == ".venv/bin/papermill":
        assert (ROOT / argv[1]).is_file() and argv[argv.index("--cwd") + 1] == "reproduce"
    else:  # install, download, scheduler
        assert argv[0] in (".venv/bin/pip", "python3", "huggingface-cli", "sbatch", "bash"), argv


def test_every_gpu_only_step_is_marked_not_yet_run():
    for heading in ("## 4.", "## 5.", "## 6."):
        line = next(line for line in PAGE.splitlines() if line.startswith(heading))
        assert "not yet run on a GPU" in line, line
    table = PAGE.split("## What has and has not run on a GPU")[1]
    assert "| not yet run on a GPU |" in table and "measured" not in table.lower()
