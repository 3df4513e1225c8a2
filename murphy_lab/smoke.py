"""The `smoke` profile: a tiny random model and four hand-made tasks, so every training code path runs in seconds.

A random character-level model writes no valid Python, so code tasks would give every candidate reward 0, every
advantage 0 and no gradient. The smoke tasks are therefore *text-answer* tasks (`metadata["answer"] = "text"`): the
trainer turns a completion into the program `ANSWER = '<completion>'` (always valid Python), and the tests — run by
the real executor — check properties of that string. Random text passes some tests and fails others, so rewards
vary inside every group, advantages are non-zero and parameters move: enough to exercise the whole loop, nothing
more. (The `toy` profile is where learning means something.)
"""

from __future__ import annotations

from pathlib import Path

from murphy_lab.policy.tiny import build_tiny_model
from murphy_lab.tasks.task import Task

# (task id, prompt, tests on the string ANSWER); the first test is the visible one
_SMOKE = [
    (
        "smoke/digit",
        "Write a short text that contains a digit.",
        ["assert any(c.isdigit() for c in ANSWER)", "assert len(ANSWER) >= 4"],
    ),
    (
        "smoke/space",
        "Write two words separated by a space.",
        ["assert ' ' in ANSWER.strip()", "assert len(ANSWER) >= 3"],
    ),
    (
        "smoke/lower",
        "Write a word in lower case letters.",
        ["assert ANSWER.strip().islower()", "assert ANSWER.strip().isalpha()", "assert len(ANSWER) >= 2"],
    ),
    (
        "smoke/punct",
        "Write a sentence that ends with a period.",
        ["assert ANSWER.rstrip().endswith('.')", "assert len(set(ANSWER)) >= 3"],
    ),
]


def smoke_tasks(n: int | None = None) -> list[Task]:
    """The hand-made smoke tasks (text answers; see the module docstring); the first `n` when given."""
    tasks = [
        Task(
            task_id=tid,
            prompt=prompt,
            visible_tests=tests[:1],
            hidden_tests=tests,
            source="smoke",
            metadata={"answer": "text"},
        )
        for tid, prompt, tests in _SMOKE
    ]
    return tasks if n is None else tasks[:n]


def build_smoke(workdir: str | Path) -> tuple[str, list[Task]]:
    """(path of a tiny random OLMo-2-style model built under `workdir`, the smoke tasks)."""
    path = build_tiny_model(Path(workdir) / "smoke-model", hidden=32, layers=2, heads=4, seed=0)
    return path, smoke_tasks()
