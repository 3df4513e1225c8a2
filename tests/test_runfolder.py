"""murphy_lab.runfolder: a run folder's newest complete checkpoint and the config it records."""

from __future__ import annotations

import json

from murphy_lab.config import MurphyConfig
from murphy_lab.runfolder import last_checkpoint, record_resume, recorded_config


def test_a_checkpoint_a_kill_left_half_written_is_skipped(tmp_path):
    for step, state in ((2, '{"global_step": 2}'), (4, '{"global_st')):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text(state)
    (tmp_path / "checkpoint-6").mkdir()  # killed before trainer_state.json was written
    assert last_checkpoint(tmp_path) == tmp_path / "checkpoint-2"


def test_no_checkpoint_and_no_config_read_as_none(tmp_path):
    assert last_checkpoint(tmp_path) is None and recorded_config(tmp_path) is None


def test_the_recorded_config_is_config_yaml_with_each_allowed_change_in_order(tmp_path):
    MurphyConfig.for_profile("smoke", max_steps=2).to_yaml(tmp_path / "config.yaml")
    (tmp_path / "checkpoint-2").mkdir()
    record_resume(tmp_path, tmp_path / "checkpoint-2", {"max_steps": {"recorded": 2, "given": 5}})
    record_resume(tmp_path, None, {})  # a resume that changed nothing
    record_resume(tmp_path, tmp_path / "checkpoint-2", {"max_steps": {"recorded": 5, "given": 9}})
    assert recorded_config(tmp_path) == MurphyConfig.for_profile("smoke", max_steps=9)
    lines = [json.loads(line) for line in (tmp_path / "resumes.jsonl").read_text().splitlines()]
    assert [ln["checkpoint"] for ln in lines] == ["checkpoint-2", None, "checkpoint-2"]
