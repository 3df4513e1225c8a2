"""ReVeal's tagged turn format: the prompt, the tolerant parser of one round, and the test-case extractor.

One *round* of ReVeal is one model completion with a generation turn followed by a verification turn, and the
tool's reply appended after it (ReVeal §3.1, Fig. 2; tag names as published):

    <generation-think> reasoning about the task </generation-think>
    <generation-answer> the candidate program (a ```python block or bare code) </generation-answer>
    <verification-think> what could break the program </verification-think>
    <verification-answer> test cases: `assert` statements, or Input:/Output: pairs for stdin programs </verification-answer>
    <tool-feedback> written by the environment, never by the model (murphy_lab.baselines.reveal.verify) </tool-feedback>

The parser never fails: every defect it works around is listed in `Round.issues` so transcripts and tests can see
them (missing or unclosed tags, duplicates, aliases such as `<answer>` / `<verify>`, a hallucinated
<tool-feedback>, code found outside the tags, unparsable test lines).
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field

from murphy_lab.executor.types import IOTest
from murphy_lab.prompts import extract_code, extract_program

GEN_THINK, GEN_ANSWER = "generation-think", "generation-answer"
VER_THINK, VER_ANSWER = "verification-think", "verification-answer"
FEEDBACK = "tool-feedback"
# Aliases we accept for each section (the published tag first). `<think>` is read as the generation think when no
# code has been seen yet, else as the verification think.
ALIASES = {
    GEN_THINK: (GEN_THINK,),
    GEN_ANSWER: (GEN_ANSWER, "answer", "code"),
    VER_THINK: (VER_THINK,),
    VER_ANSWER: (VER_ANSWER, "verify", "verification", "tests", "test"),
    FEEDBACK: (FEEDBACK,),
    "think": ("think",),
}
_NAME = {alias: canon for canon, names in ALIASES.items() for alias in names}
_TAG = re.compile(r"<\s*(/?)\s*([A-Za-z][\w-]*)\s*>")

INSTRUCTIONS = """\
### How to answer
Work in rounds. In every round write, in this order:
<generation-think> your reasoning </generation-think>
<generation-answer>
```python
the complete program
```
</generation-answer>
<verification-think> which inputs could break the program </verification-think>
<verification-answer>
{test_format}
</verification-answer>
The tool then runs your tests on your program (and checks the tests themselves) and answers in <tool-feedback>.
Stop when your program passes your tests; otherwise fix the program or the tests in the next round.
"""
ASSERT_FORMAT = "one assert per line, e.g. assert f(2) == 4"
IO_FORMAT = "Input:\n<stdin of one test>\nOutput:\n<expected stdout>\n(repeat for every test)"


def first_prompt(task_prompt: str, io: bool = False) -> str:
    """The round-1 prompt: the task statement, the format instructions, and the opening of round 1 (plain text)."""
    how = INSTRUCTIONS.format(test_format=IO_FORMAT if io else ASSERT_FORMAT)
    return f"{task_prompt.rstrip()}\n{how}### Round 1\n"


def feedback_block(text: str, next_round: int | None) -> str:
    """The tool's reply appended after a round, and the opening of the next round (None: no next round)."""
    tail = f"### Round {next_round}\n" if next_round is not None else ""
    return f"\n<{FEEDBACK}>\n{text.strip()}\n</{FEEDBACK}>\n{tail}"


@dataclass
class Round:
    """One parsed round. `cut` is where the model's turn ends (after </verification-answer>; text past it —
    e.g. a <tool-feedback> the model wrote itself — is not the model's turn and is not trained on); `split` is where
    the verification turn begins (generation tokens are [0, split), verification tokens [split, cut))."""

    text: str
    gen_think: str = ""
    code: str = ""
    ver_think: str = ""
    tests_text: str = ""
    has_code_tag: bool = False
    has_tests_tag: bool = False
    split: int = 0
    cut: int = 0
    issues: list[str] = field(default_factory=list)


def parse_round(text: str) -> Round:
    """Parse one round's completion into its four sections, tolerating malformed tags (see the module docstring).

    Rules: tag names are case-insensitive and may carry spaces (`< Generation-Answer >`); a section runs to its
    closing tag, else to the next opening tag, else to the end (reported as unclosed); a repeated section keeps the
    last one (reported); text after </verification-answer> is cut off; with no <generation-answer> the program is
    taken from the text before the verification turn (`prompts.extract_program`, reported).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    rd = Round(text=text)
    opens = []  # (canonical name, start of content, start of the tag) for every opening tag
    closes = []  # (canonical name, start of the tag, end of the tag)
    for m in _TAG.finditer(text):
        name = _NAME.get(m.group(2).lower())
        if name is None:
            continue
        if not m.group(1) and m.group(2).lower() != name and name != "think":
            rd.issues.append(f"<{m.group(2)}> read as <{name}>")
        (closes if m.group(1) else opens).append(
            (name, m.end() if not m.group(1) else m.start(), m.start(), m.end())
        )
    # name -> (tag start, content start, content end / close end)
    sections: dict[str, tuple[int, int, int]] = {}
    seen_code = False
    for i, (name, content, tag_start, _) in enumerate(opens):
        if name == "think":
            name = VER_THINK if seen_code else GEN_THINK
        if name == FEEDBACK:
            rd.issues.append("the model wrote a <tool-feedback> section itself (ignored, not trained on)")
            if VER_ANSWER in sections or GEN_ANSWER in sections:
                break
            continue
        nxt = opens[i + 1][2] if i + 1 < len(opens) else len(text)
        close = next((c for c in closes if c[0] in (opens[i][0], name) and content <= c[2] <= nxt), None)
        if close is None:
            rd.issues.append(f"<{name}> is not closed")
            end, after = nxt, nxt
        else:
            end, after = close[2], close[3]
        if name in sections:
            rd.issues.append(f"<{name}> appears more than once (the last one is used)")
        sections[name] = (tag_start, content, end, after)
        seen_code = seen_code or name == GEN_ANSWER
    body = {name: text[s[1] : s[2]].strip("\n") for name, s in sections.items()}
    rd.gen_think, rd.ver_think = body.get(GEN_THINK, "").strip(), body.get(VER_THINK, "").strip()
    ver_starts = [sections[n][0] for n in (VER_THINK, VER_ANSWER) if n in sections]
    rd.split = min(ver_starts) if ver_starts else len(text)
    if GEN_ANSWER in sections:
        rd.has_code_tag = True
        rd.code = extract_code(body[GEN_ANSWER])
        if sections[GEN_ANSWER][0] > rd.split:
            rd.issues.append("<generation-answer> comes after the verification turn")
    else:
        rd.issues.append("no <generation-answer>: the program is taken from the untagged text")
        rd.code = extract_program(_TAG.sub("", text[: rd.split]))
    if VER_ANSWER in sections:
        rd.has_tests_tag = True
        rd.tests_text = body[VER_ANSWER]
        rd.cut = sections[VER_ANSWER][3]
    else:
        rd.issues.append("no <verification-answer>: no test cases this round")
        fb = [o[2] for o in opens if o[0] == FEEDBACK]
        rd.cut = fb[0] if fb else len(text)
    rd.split = min(rd.split, rd.cut)
    return rd


_FENCE = re.compile(r"^[ \t]*(```|~~~).*$", re.MULTILINE)
_IO_HEAD = re.compile(r"^[ \t]*(input|expected output|expected|output)[ \t]*:[ \t]*(.*)$", re.IGNORECASE)


def extract_tests(tests_text: str, io: bool = False, max_tests: int = 10) -> tuple[list, list[str]]:
    """The test cases in a <verification-answer> section, and the issues met while reading them.

    Assert tasks: every top-level `assert` statement (multi-line ones included) when the section parses as Python,
    else every line starting with `assert` (reported). Stdin/stdout tasks: `Input:` / `Output:` pairs (`Expected:`
    and `Expected Output:` accepted; the value may sit on the header line or on the lines below) as IOTests.
    At most `max_tests` are kept (reported).
    """
    text = _FENCE.sub("", tests_text or "")
    issues: list[str] = []
    tests = _io_tests(text, issues) if io else _assert_tests(text, issues)
    if len(tests) > max_tests:
        issues.append(f"{len(tests)} test cases, only the first {max_tests} are run")
        tests = tests[:max_tests]
    return tests, issues


def _assert_tests(text: str, issues: list[str]) -> list[str]:
    text = textwrap.dedent(text).strip("\n")
    if not text.strip():
        return []
    try:
        tree = ast.parse(text)
    except SyntaxError:
        lines = [ln.strip() for ln in text.split("\n") if ln.strip().startswith("assert")]
        issues.append(
            f"the test block does not parse as Python; kept {len(lines)} line(s) starting with assert"
        )
        return lines
    tests = [ast.get_source_segment(text, node) for node in tree.body if isinstance(node, ast.Assert)]
    others = sum(not isinstance(node, ast.Assert) for node in tree.body)
    if others:
        issues.append(f"{others} statement(s) in the test block are not asserts (ignored)")
    return [t for t in tests if t]


def _io_tests(text: str, issues: list[str]) -> list[IOTest]:
    tests, key, buf, pending_input = [], None, [], None

    def flush():
        nonlocal pending_input
        value = "\n".join(buf).strip("\n")
        if key == "input":
            if pending_input is not None:
                issues.append("an Input: without an Output: (ignored)")
            pending_input = value
        elif key is not None:
            if pending_input is None:
                issues.append("an Output: without an Input: (ignored)")
            else:
                tests.append(IOTest(input=pending_input + "\n", output=value))
                pending_input = None

    for line in text.split("\n"):
        m = _IO_HEAD.match(line)
        if m:
            flush()
            key = "input" if m.group(1).lower() == "input" else "output"
            buf = [m.group(2)] if m.group(2).strip() else []
        elif key is not None:
            buf.append(line)
    flush()
    if pending_input is not None:
        issues.append("an Input: without an Output: (ignored)")
    return tests


def reveal_extract(completion: str) -> str:
    """The program of a ReVeal-format completion (its <generation-answer>), for other scaffolds' `extract=`."""
    return parse_round(completion).code
