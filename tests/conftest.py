"""Shared fixtures: the tiny local model (built once per session) and an executor for policy/rollout tests."""

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
    """The real sandboxed Executor when it exists, else an in-process stand-in for trusted test programs."""
    try:
        from murphy_lab.executor import Executor
    except ImportError:
        return _InProcessExecutor()
    return Executor(timeout=5)


class _InProcessExecutor:
    """Stand-in: exec each assert after the program in a fresh namespace (ONLY for the programs tests write)."""

    def run(self, program, tests):
        from murphy_lab.executor.types import ExecutionResult, TestSuite

        suite, passed, lines = TestSuite.of(tests), 0, []
        for case in suite.cases:
            try:
                ns: dict = {}
                exec(compile(suite.setup + "\n" + program, "<program>", "exec"), ns)
                exec(case, ns)
                passed += 1
                lines.append(f"passed: {case}")
            except Exception as e:  # noqa: BLE001 - any error is a failed test
                lines.append(f"failed: {case} # {type(e).__name__}: {e}")
        total = len(suite.cases)
        status = "passed" if total and passed == total else "failed"
        return ExecutionResult(passed / total if total else 0.0, passed, total, status, "\n".join(lines))

    def run_many(self, jobs):
        return [self.run(p, t) for p, t in jobs]
