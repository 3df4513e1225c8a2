"""A resumed run says nothing about the weights its checkpoint stores once for two names (a model whose output
layer is tied to its input embeddings): transformers' "missing keys ['lm_head.weight']" is dropped at its source
(murphy_lab.trainer.run.quiet_tied_keys); a genuinely missing weight is still reported."""

from __future__ import annotations

import logging
import shutil

import pytest
import torch

from murphy_lab.config import MurphyConfig
from murphy_lab.train import train
from murphy_lab.trainer.run import MISSING_KEYS, quiet_tied_keys


class _Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(4, 2)
        self.lm_head = torch.nn.Linear(2, 4, bias=False)
        self.lm_head.weight = self.embed.weight  # tied: one tensor, two names
        self.other = torch.nn.Linear(2, 2)


class _Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def trainer_log():
    logger, handler = logging.getLogger("transformers.trainer"), _Records()
    logger.addHandler(handler)
    yield handler.messages
    logger.removeHandler(handler)


def test_only_tied_missing_keys_are_silenced(trainer_log):
    logger = logging.getLogger("transformers.trainer")
    with quiet_tied_keys(_Tied()):
        logger.warning(f"{MISSING_KEYS}{['lm_head.weight']}.")
        logger.warning(f"{MISSING_KEYS}{['other.weight']}.")
        logger.warning("something else")
    logger.warning(f"{MISSING_KEYS}{['lm_head.weight']}.")  # outside a resume: untouched
    assert trainer_log == [
        f"{MISSING_KEYS}['other.weight'].",
        "something else",
        f"{MISSING_KEYS}['lm_head.weight'].",
    ]


@pytest.mark.slow
def test_a_resumed_run_does_not_report_its_tied_output_layer_missing(
    tmp_path, tiny_model_path, executor, trainer_log
):
    cfg = MurphyConfig.for_profile(
        "smoke", model=tiny_model_path, max_steps=2, save_steps=1, per_device_train_batch_size=4
    )
    train(cfg, tmp_path / "whole", executor=executor)
    killed = tmp_path / "killed"  # killed after step 1: checkpoint-1 on disk
    shutil.copytree(tmp_path / "whole", killed, ignore=shutil.ignore_patterns("checkpoint-2", "final"))
    (killed / "metrics.jsonl").write_text((killed / "metrics.jsonl").read_text().splitlines(True)[0])
    train(cfg, killed, resume=True, executor=executor)
    assert not [m for m in trainer_log if m.startswith(MISSING_KEYS)], trainer_log
