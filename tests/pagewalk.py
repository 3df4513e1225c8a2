"""Walk a docs page as its reader would: every line of its ```bash blocks, in order, run by bash exactly as written,
in a scratch checkout of this repository, with the hub stood in for by `fakehub.FakeHub` and the GPU tools a CPU
machine lacks (`accelerate`, `trl`, `curl`, `sbatch`) stood in for by recording stubs.

    walk = Walk(tmp_path, hub)            # a scratch checkout: the repo's files linked, .venv -> this test venv
    for line in commands(page):
        result = walk.run(line)           # export / source / cd change the walk's environment, the rest run in bash

A scratch checkout: every tracked top-level entry of the repository is linked into the folder (reproduce/ is a
real folder whose entries are linked, so a notebook's results land in the scratch folder), and `.venv` links the
venv running the tests. What the page's commands write (data/, models/, runs/, jobs/) stays in the scratch folder.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINKED = ("murphy_lab", "benchmarks", "docs", "notebooks", "pyproject.toml", "Makefile", "README.md", "tests")


def commands(page: Path) -> list[str]:
    """The lines of a page's ```bash blocks in order: a trailing `\\` joins the next line, comments are dropped."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.split(r"\s#", line)[0].strip()
            line = re.sub(r"\s+", " ", line)
            if line and not line.startswith("#"):
                out.append(line)
    return out


STUB_RECORD = f"""#!{sys.executable}
import json, os, sys
calls = os.environ["STUB_CALLS"]
with open(os.path.join(calls, os.path.basename(sys.argv[0]) + ".jsonl"), "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
"""
SBATCH = (
    STUB_RECORD
    + """
import re, subprocess
script = sys.argv[-1]
text = open(script).read()
out = re.search(r"^#SBATCH --output=(\\S+)", text, re.M).group(1)
folder = os.path.dirname(out)
if not (os.path.isabs(out) and os.path.isdir(folder)):
    sys.exit(f"sbatch: error: the --output folder {folder} does not exist (the job would fail with no log)")
if subprocess.run(["bash", "-n", script]).returncode:
    sys.exit("sbatch: error: the script does not parse")
print("Submitted batch job 1")
"""
)


@dataclass
class Result:
    line: str
    returncode: int
    output: str  # stdout and stderr together


class Walk:
    """A scratch checkout where a page's commands run, in one bash environment carried from line to line."""

    def __init__(self, root: Path, hub=None):
        self.dir = Path(root) / "checkout"
        self.dir.mkdir(parents=True)
        for name in LINKED:
            (self.dir / name).symlink_to(ROOT / name)
        reproduce = self.dir / "reproduce"
        reproduce.mkdir()
        for entry in (ROOT / "reproduce").iterdir():
            if entry.name not in ("results", "cache"):
                (reproduce / entry.name).symlink_to(entry)
        # each profile's folder real, its files linked
        for entry in (ROOT / "reproduce" / "results").iterdir():
            (reproduce / "results" / entry.name).mkdir(parents=True)
            for item in entry.iterdir() if entry.is_dir() else ():
                if item.name not in ("runs",):
                    (reproduce / "results" / entry.name / item.name).symlink_to(item)
        (self.dir / ".venv").symlink_to(Path(sys.prefix))
        self.calls = Path(root) / "calls"
        self.calls.mkdir()
        stubs = self.stubs = Path(root) / "stubs"
        stubs.mkdir()
        for name in ("accelerate", "trl"):
            (stubs / name).write_text(STUB_RECORD)
        (stubs / "sbatch").write_text(SBATCH)
        (stubs / "curl").write_text("#!/bin/sh\nexit 0\n")  # the (stub) vLLM server is healthy at once
        for stub in stubs.iterdir():
            stub.chmod(0o755)
        env = hub.env(Path(root) / "hf-home") if hub is not None else dict(os.environ)
        env = {k: v for k, v in env.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "MURPHY_LAB_DATA")}
        self.env = {
            **env,
            "PATH": f"{stubs}:{env['PATH']}",
            "STUB_CALLS": str(self.calls),
            "MPLBACKEND": "Agg",
        }
        self.env.pop("SLURM_ARRAY_TASK_ID", None)

    def run(self, line: str, timeout: float = 900) -> Result:
        """Run one line of the page: `export`, `source .venv/bin/activate` and `cd` change this walk's environment
        (as they would the reader's shell); every other line runs in bash, in the checkout, exactly as written."""
        if line.startswith("export "):
            name, value = line.removeprefix("export ").split("=", 1)
            self.env[name] = value.replace("$PWD", str(self.dir))
            return Result(line, 0, "")
        if line == "source .venv/bin/activate":
            self.env["VIRTUAL_ENV"] = str(self.dir / ".venv")
            rest = self.env["PATH"].removeprefix(f"{self.stubs}:")  # the stand-in GPU tools stay first
            self.env["PATH"] = f"{self.stubs}:{self.dir / '.venv' / 'bin'}:{rest}"
            return Result(line, 0, "")
        done = subprocess.run(
            ["bash", "-c", line], cwd=self.dir, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        return Result(line, done.returncode, done.stdout + done.stderr)

    def stub_calls(self, name: str) -> list[list[str]]:
        import json

        path = self.calls / f"{name}.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
