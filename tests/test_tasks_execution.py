"""Benchmark references pass their own tests in our executor (the loaders' end-to-end check)."""

from __future__ import annotations

from pathlib import Path

import pytest

from murphy_lab.tasks import load_humaneval, load_mbpp

executor = pytest.importorskip("murphy_lab.executor", reason="the executor package is not available")
Executor = getattr(executor, "Executor", None)
if Executor is None:  # pragma: no cover - while the executor was being written
    pytest.skip("murphy_lab.executor has no Executor yet", allow_module_level=True)

MBPP_DIR = next(
    (
        p
        for p in (Path("/work/shared/data/mbpp"), Path(__file__).parents[2] / "shared/data/mbpp")
        if (p / "sanitized-mbpp.json").is_file()
    ),
    None,
)


@pytest.fixture(scope="module")
def ex():
    with Executor(timeout=10, workers=2) as ex:
        yield ex


def _failures(ex, tasks, suite: str) -> list[tuple[str, str]]:
    jobs = [(t.program(t.reference), getattr(t, suite)) for t in tasks if getattr(t, suite).cases]
    results = ex.run_many(jobs)
    names = [t.task_id for t in tasks if getattr(t, suite).cases]
    return [(name, r.feedback[:300]) for name, r in zip(names, results) if not r.solved]


@pytest.mark.slow
def test_humaneval_references_pass_their_hidden_tests(ex):
    assert _failures(ex, load_humaneval(), "hidden_tests") == []


@pytest.mark.slow
def test_humaneval_references_pass_their_visible_tests(ex):
    assert _failures(ex, load_humaneval(), "visible_tests") == []


# The references of these tasks import `cmath`; on machines where the Python install is not readable by the
# sandbox user (e.g. pyenv under a 0700 /root) the sandbox cannot import C modules the warm worker did not import
# already. An executor matter, reported; tracked by the xfail test below.
SANDBOX_IMPORT_GAPS = {"mbpp/124", "mbpp/252"}


@pytest.mark.slow
@pytest.mark.skipif(MBPP_DIR is None, reason="original MBPP files not present")
def test_mbpp_sanitized_test_references_pass_their_hidden_tests(ex):
    tasks = [
        t for t in load_mbpp("test", "sanitized", source=MBPP_DIR) if t.task_id not in SANDBOX_IMPORT_GAPS
    ]
    assert len(tasks) == 257 - len(SANDBOX_IMPORT_GAPS)
    assert _failures(ex, tasks, "hidden_tests") == []


@pytest.mark.slow
@pytest.mark.skipif(MBPP_DIR is None, reason="original MBPP files not present")
@pytest.mark.xfail(reason="sandbox cannot import cmath where the Python install is unreadable to its user")
def test_mbpp_references_that_import_cmath_pass_their_hidden_tests(ex):
    tasks = [t for t in load_mbpp("test", "sanitized", source=MBPP_DIR) if t.task_id in SANDBOX_IMPORT_GAPS]
    assert _failures(ex, tasks, "hidden_tests") == []
