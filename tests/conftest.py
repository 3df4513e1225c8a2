"""Shared fixtures: the tiny local model (built once per session) and one executor for the session; every test
runs with the torch thread count it found (one test's `set_num_threads`, or a CLI's `--threads`, ends with it)."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture(autouse=True)
def _torch_threads_restored():
    """Put torch's CPU thread count back after each test that changed it (two threads spin at every barrier on the
    2-core machine: docs/testing.md)."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch else None
    yield
    if before is not None and torch.get_num_threads() != before:
        torch.set_num_threads(before)


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
