"""Train/eval hygiene: which training tasks repeat an evaluation task (KodCode is synthetic and may hold near-copies
of MBPP or HumanEval problems).

Two texts match when they are equal after normalization:
- statements (``task.metadata["statement"]`` when a loader records it, else ``task.prompt``): lower-cased, every run of
  non-alphanumeric characters made one space; a statement of at least `min_chars` normalized characters that
  appears inside the other task's statement also counts (a copied problem with a sentence added);
- references: parsed and unparsed with `ast` (comments, docstrings and formatting dropped), then whitespace collapsed.

This finds copies and light edits. `find_near_duplicates` adds near-duplicates: texts of at least `min_shingles`
word 5-grams (statements) or token 5-grams (normalized references) whose sets of 5-grams have a Jaccard similarity of
at least `threshold` (a problem with a few words or lines changed); short texts are left to the exact rules (two toy
programs ``x*8+2`` and ``x*7+29`` share most of their few 5-grams and are different problems). Paraphrases and
renamed variables are still not found.
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
    """One training task that repeats one evaluation task; `kind` is "statement", "statement-contained",
    "reference", "statement-near" or "reference-near"."""

    train: Task
    eval: Task
    kind: str
    # the Jaccard similarity of a near-duplicate ("statement-near", "reference-near"); 1 otherwise
    score: float = 1.0

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


def shingles(words: Sequence[str], n: int = 5) -> frozenset[tuple[str, ...]]:
    """The set of `n`-grams of a sequence of words or tokens."""
    return frozenset(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def _code_words(code: str) -> list[str]:
    return re.findall(r"[A-Za-z_][A-Za-z_0-9]*|\d+|\S", normalize_code(code))


def find_near_duplicates(
    train_tasks: Sequence[Task],
    eval_tasks: Sequence[Task],
    threshold: float = 0.6,
    n: int = 5,
    min_shingles: int = 20,
) -> list[Overlap]:
    """Every (training task, evaluation task) pair whose statements or references are near-duplicates: Jaccard
    similarity |A ∩ B| / |A ∪ B| of their `n`-gram sets >= `threshold`, for texts of at least `min_shingles` n-grams.

    One `Overlap` per pair and kind ("statement-near", "reference-near"), with its score, in training order.
    """
    found: list[Overlap] = []
    for kind, text_of in (
        ("statement-near", lambda t: shingles(_statement(t).split(), n)),
        ("reference-near", lambda t: shingles(_code_words(t.reference), n) if t.reference else frozenset()),
    ):
        eval_sets = [text_of(t) for t in eval_tasks]
        index: dict[tuple[str, ...], list[int]] = {}
        for j, grams in enumerate(eval_sets):
            if len(grams) >= min_shingles:
                for g in grams:
                    index.setdefault(g, []).append(j)
        for train in train_tasks:
            grams = text_of(train)
            if len(grams) < min_shingles:
                continue
            shared: dict[int, int] = {}
            for g in grams:
                for j in index.get(g, ()):
                    shared[j] = shared.get(j, 0) + 1
            for j, both in shared.items():
                score = both / (len(grams) + len(eval_sets[j]) - both)  # Jaccard = |A ∩ B| / |A ∪ B|
                if score >= threshold:
                    found.append(Overlap(train, eval_tasks[j], kind, round(score, 3)))
    order = {id(t): i for i, t in enumerate(train_tasks)}
    return sorted(found, key=lambda o: order[id(o.train)])
