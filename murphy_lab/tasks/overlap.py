"""Train/eval hygiene: which training tasks repeat an evaluation task (KodCode is synthetic and may hold near-copies
of MBPP or HumanEval problems).

Two texts match when they are equal after normalization:
- statements (``task.metadata["statement"]`` when a loader records it, else ``task.prompt``): lower-cased, every run of
  non-alphanumeric characters made one space; a statement of at least `min_chars` normalized characters that
  appears inside the other task's statement also counts (a copied problem with a sentence added);
- references: parsed and unparsed with `ast` (comments, docstrings and formatting dropped), then whitespace collapsed.

This finds copies and light edits, not paraphrases or renamed variables.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass

from murphy_lab.tasks.task import Task


def normalize_text(text: str) -> str:
    """Lower-case words and numbers separated by single spaces."""
    return " ".join(re.split(r"[^0-9a-z]+", text.lower())).strip()


def normalize_code(code: str) -> str:
    """The program without comments, docstrings and formatting (falls back to collapsed whitespace)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return " ".join(code.split())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]  # drop the docstring
    return " ".join(ast.unparse(tree).split())


@dataclass(frozen=True)
class Overlap:
    """One training task that repeats one evaluation task; `kind` is "statement", "statement-contained" or
    "reference"."""

    train: Task
    eval: Task
    kind: str

    def __iter__(self):  # unpack as (train, eval, kind)
        return iter((self.train, self.eval, self.kind))


def _statement(task: Task) -> str:
    return normalize_text(task.metadata.get("statement") or task.prompt)


def find_overlap(
    train_tasks: Sequence[Task], eval_tasks: Sequence[Task], min_chars: int = 40
) -> list[Overlap]:
    """Every (training task, evaluation task) pair whose statements or reference programs match (module docstring).

    Returns one `Overlap` per pair (the strongest kind: statement, then reference, then containment), in training
    order. Empty means no overlap found.
    """
    by_statement: dict[str, list[Task]] = {}
    by_reference: dict[str, list[Task]] = {}
    for task in eval_tasks:
        by_statement.setdefault(_statement(task), []).append(task)
        if task.reference:
            by_reference.setdefault(normalize_code(task.reference), []).append(task)
    long_eval = [(s, ts) for s, ts in by_statement.items() if len(s) >= min_chars]
    found: list[Overlap] = []
    for train in train_tasks:
        statement = _statement(train)
        matches = [(task, "statement") for task in by_statement.get(statement, [])]
        if train.reference:
            matches += [(task, "reference") for task in by_reference.get(normalize_code(train.reference), [])]
        if len(statement) >= min_chars:
            matches += [
                (task, "statement-contained")
                for text, tasks in long_eval
                if text in statement or statement in text
                for task in tasks
            ]
        seen: set[int] = set()
        for task, kind in matches:  # one pair per (train, eval) task, the strongest kind first
            if id(task) not in seen:
                seen.add(id(task))
                found.append(Overlap(train, task, kind))
    return found
