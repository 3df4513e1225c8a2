"""benchmarks/gpu_check.py --cpu: the GPU check's code path (random Qwen3, MurphyTrainer steps) runs here and prints
its summary line."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_gpu_check_cpu_prints_the_summary_line(tmp_path):
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "--cpu", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    last = out.stdout.strip().splitlines()[-1]
    assert re.fullmatch(
        r"gpu check: cpu murphy .*step [\d.]+ s .*peak \d+ MiB.* \| grpo step [\d.]+ s .*peak \d+ MiB.*", last
    ), last
