"""The executor must work when Python (a virtual environment, a checkout) lives under /tmp, as in a CI clone.

The worker mounts a private tmpfs over /tmp; the installation under it has to stay visible to the worker, and the
per-test sweep of the private /tmp must never delete the real files.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SCRIPT = """
from murphy_lab.executor import Executor
with Executor(timeout=5, workers=1) as ex:
    res = ex.run("import json, decimal\\ndef f():\\n    return json.dumps(1)", ["assert f() == '1'"])
    print(res.status, res.reward, ex.isolation)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux namespaces")
def test_executor_runs_from_a_venv_under_tmp_and_leaves_it_intact():
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *sys.path[1:]]))
        out = subprocess.run(
            [str(venv / "bin" / "python"), "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.startswith("passed 1.0"), out.stdout + out.stderr[-2000:]
        assert (venv / "pyvenv.cfg").exists() and (venv / "bin" / "python").exists()
