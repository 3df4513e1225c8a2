"""benchmarks/mbpp_protocols.py and the transcripts it committed (docs/data/mbpp_protocols/, read by notebook 12):
the published protocol's prompt as Qwen's EvalPlus evaluation builds it, the program read from a pre-filled answer,
bad arguments refused before anything loads, and every committed verdict reproduced by the executor."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data" / "mbpp_protocols"
MBPP = Path(os.environ.get("MURPHY_LAB_MBPP", ROOT.parent / "shared" / "data" / "mbpp"))
if not MBPP.is_dir():
    MBPP = ROOT.parents[1] / "shared" / "data" / "mbpp"


def _tool():
    spec = importlib.util.spec_from_file_location("mbpp_protocols", ROOT / "benchmarks" / "mbpp_protocols.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(protocol: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / f"{protocol}.jsonl").read_text().splitlines()]


def test_the_published_prompt_is_the_request_and_a_fenced_docstring_with_the_first_assert():
    tool = _tool()
    system, user = tool.published_messages("Write a function to add two numbers. ", "assert add(1, 2) == 3")
    assert system == {"role": "system", "content": tool.PUBLISHED_SYSTEM}
    assert user["content"] == (
        'Can you complete the following Python function?\n```python\n"""\n'
        'Write a function to add two numbers.\nassert add(1, 2) == 3\n"""\n```'
    )


def test_the_published_text_ends_with_the_prefilled_fence_after_the_assistant_turn(tiny_model_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    tok.chat_template = (
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    text = _tool().published_text(tok, "Add.", "assert add(1, 2) == 3")
    assert text.endswith("<|assistant|>```python\n") and text.startswith("<|system|>")


@pytest.mark.parametrize(
    "completion, program",
    [
        ("def f(x):\n    return x\n```\nThis function returns x.", "def f(x):\n    return x"),
        ("def f(x):\n    return x\n", "def f(x):\n    return x"),  # cut before the fence closed
        ("```\n", ""),
    ],
)
def test_the_program_of_a_published_answer_is_the_code_before_the_closing_fence(completion, program):
    assert _tool().published_program(completion).strip() == program


@pytest.mark.parametrize(
    "args, says",
    [
        (["--protocols", "original,nope"], "--protocols must name"),
        (["--tasks", "0"], "at least 1"),
        (["--mbpp", "/nonexistent"], "no MBPP release files"),
    ],
)
def test_bad_arguments_get_one_line_and_exit_2_before_anything_is_written(args, says, tmp_path, capsys):
    out = tmp_path / "out"
    assert _tool().main([*args, "--out", str(out)]) == 2
    assert says in capsys.readouterr().err and not out.exists()


@pytest.mark.skipif(not MBPP.is_dir(), reason="MBPP's original files are not beside the checkout")
def test_the_tasks_are_the_first_ids_of_the_original_test_split_the_sanitized_release_kept():
    ids = _tool().select_ids(40, MBPP)
    sanitized = {r["task_id"] for r in json.loads((MBPP / "sanitized-mbpp.json").read_text())}
    assert (
        len(ids) == 40 and ids == sorted(ids) and set(ids) <= sanitized and all(11 <= i <= 510 for i in ids)
    )
    assert [i for i in range(11, ids[-1] + 1) if i in sanitized] == ids


def test_the_committed_transcripts_cover_the_same_tasks_under_every_protocol():
    summary = json.loads((DATA / "summary.json").read_text())
    assert summary["n_tasks"] == len(summary["task_ids"]) == 40
    for protocol in ("original", "sanitized", "published"):
        rows = _rows(protocol)
        assert [r["task_id"] for r in rows] == summary["task_ids"]
        assert summary["passed"][protocol] == sum(r["passed"] for r in rows)
        assert all(r["statement"] and r["tests"] and r["conditioned_on"] for r in rows)
    published = _rows("published")
    assert all(
        r["conditioned_on"].endswith("```python\n") and "Can you complete" in r["conditioned_on"]
        for r in published
    )


@pytest.mark.slow
def test_every_committed_verdict_is_what_the_executor_says_of_its_program():
    from murphy_lab.executor import Executor
    from murphy_lab.executor.types import TestSuite

    jobs, verdicts = [], []
    for protocol in ("original", "sanitized", "published"):
        for r in _rows(protocol):
            name = r["program"]
            jobs.append(
                (
                    name,
                    TestSuite(
                        cases=tuple(r["tests"]),
                        setup=r["test_setup"],
                        timeout=3.0,
                        entry_points=tuple(r.get("entry_points", ())),
                    ),
                )
            )
            verdicts.append((protocol, r["task_id"], r["passed"]))
    with Executor(timeout=3.0, workers=2) as executor:
        results = executor.run_many(jobs)
    differ = [
        (p, t, want, r.status) for (p, t, want), r in zip(verdicts, results) if (r.reward >= 1.0) != want
    ]
    assert differ == []
