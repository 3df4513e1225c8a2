"""Prompts and code extraction: the turn-1 prompt, the feedback-conditioned refinement prompt, parsing outputs.

The refinement prompt is q = [task prompt, previous code, executor feedback] (MURPHY §3.1; Reflexion-style),
written in our own words. Plain text here (small local models are trained on exactly these strings);
chat models get the same text as a user message (see murphy_lab.policy).
"""

from __future__ import annotations

import re

FIRST_TEMPLATE = "{task}\n### Code:\n"
REFINE_TEMPLATE = "{task}\n### Previous attempt:\n{code}\n### Feedback:\n{feedback}\n### Fixed code:\n"


def first_prompt(task_prompt: str) -> str:
    """The turn-1 prompt for a task statement."""
    return FIRST_TEMPLATE.format(task=task_prompt.rstrip())


def refine_prompt(task_prompt: str, code: str, feedback: str) -> str:
    """The refinement prompt q = [task prompt, v's code, v's feedback] for a failed candidate v."""
    return REFINE_TEMPLATE.format(task=task_prompt.rstrip(), code=code.rstrip(), feedback=feedback.rstrip())


_FENCE = re.compile(r"```[ \t]*(?:python|py|Python|python3)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)


def extract_code(completion: str) -> str:
    """The program in a model output: thinking sections removed, then the fenced block(s), else the whole text."""
    text = _THINK.sub("", completion)
    blocks = [b.strip("\n") for b in _FENCE.findall(text)]
    if blocks:
        return max(blocks, key=len) + "\n"
    return text.strip("\n") + "\n" if text.strip() else ""
