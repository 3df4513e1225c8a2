"""One process per run folder (`runfolder.held`): a second trainer of the same run is refused before it touches
anything, and a killed holder leaves no stale lock."""

import signal
import subprocess
import sys
import time

import pytest

from murphy_lab import runfolder
from murphy_lab.config import MurphyConfig

pytest.importorskip("fcntl")

HOLD = """
import sys, time
from murphy_lab.runfolder import held
with held(sys.argv[1]):
    print("held", flush=True)
    time.sleep(120)
"""


@pytest.fixture
def holder(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    yield run, proc
    proc.kill()
    proc.wait()


def test_a_second_process_is_refused_and_the_folder_is_untouched(holder):
    from murphy_lab.trainer import train

    run, proc = holder
    (run / "metrics.jsonl").write_text('{"step": 1}\n{"step": 2}\n')
    with pytest.raises(runfolder.RunBusy, match=rf"another process \(pid {proc.pid}\)"):
        train(MurphyConfig.for_profile("smoke", max_steps=1), run)
    assert (run / "metrics.jsonl").read_text() == '{"step": 1}\n{"step": 2}\n'  # not emptied by a new run
    assert not (run / "config.yaml").exists()


def test_a_killed_holder_leaves_no_stale_lock(holder):
    run, proc = holder
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(0.1)
    with runfolder.held(run):
        assert (run / runfolder.LOCK).read_text().startswith("pid ")
    with runfolder.held(run):  # released at the end of the block, taken again
        pass
