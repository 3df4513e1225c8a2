"""Shared fixtures: the tiny local model (built once per session) and one executor for the session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory) -> str:
    """A random-init tiny causal LM + char tokenizer saved with save_pretrained (murphy_lab.policy.tiny)."""
    import torch

    from murphy_lab.policy.tiny import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", hidden=32, layers=2, heads=4, seed=0)


@pytest.fixture(scope="session")
def executor():
    """The sandboxed Executor (one warm worker, shared by the session; the executor tests use it wherever they need
    no limits of their own, and rely on its one slot: jobs run one after another by one worker and server)."""
    from murphy_lab.executor import Executor

    with Executor(timeout=5, workers=1) as ex:
        yield ex
