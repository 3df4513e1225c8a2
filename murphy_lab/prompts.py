"""Prompts and code extraction: the turn-1 prompt, the feedback-conditioned refinement prompt, parsing outputs.

The refinement prompt is q = [task prompt, previous code, executor feedback] (MURPHY §3.1; Reflexion-style),
written in our own words. Plain text here (small local models are trained on exactly these strings);
chat models get the same text as a user message (see murphy_lab.policy).

One reading of a model's answer everywhere — training rewards, µCode, ReVeal's fallback, every evaluation
scaffold: `extract_program` for code (`read_answer` / `answer_extractor`; text answers are stripped). `extract_code`
is the short teaching version (same program on clean code, fenced or not).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

FIRST_TEMPLATE = "{task}\n### Code:\n"
REFINE_TEMPLATE = "{task}\n### Previous attempt:\n{code}\n### Feedback:\n{feedback}\n### Fixed code:\n"


def first_prompt(task_prompt: str) -> str:
    """The turn-1 prompt for a task statement."""
    return FIRST_TEMPLATE.format(task=task_prompt.rstrip())


def refine_prompt(
    task_prompt: str,
    code: str,
    feedback: str,
    max_tokens: int | None = None,
    count: Callable[[str], int] = len,
) -> str:
    """The refinement prompt q = [task prompt, v's code, v's feedback] for a failed candidate v.

    With `max_tokens` (`prompt_budget`: the model's context minus the completion length), the quoted code and
    feedback are cut to fit, `count(text)` measuring the prompt (e.g. a tokenizer's length; default characters):
    see `fit_refinement`.
    """
    task = task_prompt.rstrip()

    def render(c: str, f: str) -> str:
        return REFINE_TEMPLATE.format(task=task, code=c, feedback=f)

    return render(*fit_refinement(render, code.rstrip(), feedback.rstrip(), max_tokens, count))


# ---------------------------------------------------------------------------------------------------------------
# The prompt budget: a turn-2 prompt (task + up to a completion's worth of code + feedback) plus the next completion
# must fit the model's positions (OLMo-2-7B has 4,096)
# ---------------------------------------------------------------------------------------------------------------
TRUNCATED = "\n... [truncated {n} chars]"


def prompt_budget(max_positions: int, max_new_tokens: int, overhead: int = 0) -> int:
    """Tokens a prompt may take: the model's positions (config.max_position_embeddings) minus the completion
    length and the chat template's own tokens (`overhead`): max_positions - max_new_tokens - overhead."""
    budget = max_positions - max_new_tokens - overhead
    if budget <= 0:
        raise ValueError(
            f"max_new_tokens={max_new_tokens} (+ {overhead} template tokens) leaves no room for a prompt in "
            f"{max_positions} positions"
        )
    return budget


def token_budget(
    tokenizer,
    max_positions: int | None,
    max_new_tokens: int,
    chat: bool = False,
    template_kwargs: dict | None = None,
) -> dict:
    """`refine_prompt` keywords (max_tokens, count) for a model known by its tokenizer and positions, as the
    trainer renders prompts: plain text with the tokenizer's special tokens, or one user message through the chat
    template (`template_kwargs`). {} when the positions are unknown."""
    if not max_positions:
        return {}

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    if chat:
        empty = [{"role": "user", "content": ""}]
        template = tokenizer.apply_chat_template(
            empty, tokenize=False, add_generation_prompt=True, **(template_kwargs or {})
        )
        overhead = count(template)
    else:
        overhead = len(tokenizer("")["input_ids"])  # BOS / EOS the tokenizer adds itself
    return {"max_tokens": prompt_budget(int(max_positions), max_new_tokens, overhead), "count": count}


def policy_budget(policy, max_new_tokens: int | None = None) -> dict:
    """`refine_prompt` keywords (max_tokens, count) for a tokenizer-backed policy (TransformersPolicy, VLLMPolicy):
    its context minus `max_new_tokens` (default: the policy's) and the chat template's tokens, counted with its
    tokenizer, the template included. {} when the policy has no tokenizer or no known context (ScriptedPolicy)."""
    positions = context_length(policy)
    if positions is None or not hasattr(policy, "num_tokens") or not hasattr(policy, "render"):
        return {}
    overhead = policy.num_tokens(policy.render(""))
    new = max_new_tokens if max_new_tokens is not None else policy.max_new_tokens
    return {"max_tokens": prompt_budget(positions, new, overhead), "count": policy.num_tokens}


def context_length(policy) -> int | None:
    """The positions a policy's model has: config.max_position_embeddings (transformers), max_model_len (vLLM)."""
    config = getattr(getattr(policy, "model", None), "config", None)
    if getattr(config, "max_position_embeddings", None):
        return int(config.max_position_embeddings)
    engine = getattr(getattr(policy, "llm", None), "llm_engine", None)
    length = getattr(getattr(engine, "model_config", None), "max_model_len", None)
    return int(length) if length else None


def truncate(text: str, keep: int) -> str:
    """The first `keep` characters of `text` and a visible marker saying how many were cut (text if it fits)."""
    return text if len(text) <= keep else text[: max(keep, 0)] + TRUNCATED.format(n=len(text) - max(keep, 0))


def fit_refinement(
    render: Callable[[str, str], str],
    code: str,
    feedback: str,
    max_tokens: int | None,
    count: Callable[[str], int] = len,
) -> tuple[str, str]:
    """(code, feedback) cut so that the prompt `render(code, feedback)` counts at most `max_tokens` (None: no
    limit); the rest of the prompt (the task) is never cut.

    Each part keeps its head (a program's start, the first failing test) and ends in a visible "... [truncated N
    chars]" marker. The budget is shared fairly: both parts are cut to the same largest length k that fits (a part
    shorter than k stays whole), then the longer part takes what is left. When even bare markers do not fit, both
    are cut to their markers (the task alone is then over budget).
    """
    if max_tokens is None:
        return code, feedback

    def fits(c: str, f: str) -> bool:
        text = render(c, f)
        # every token (characters, BPE, byte fallback) covers at least one UTF-8 byte: a prompt of at most
        # max_tokens bytes fits without being tokenized (the common case: no tokenizer call per refinement)
        return len(text.encode("utf-8", "surrogatepass")) <= max_tokens or count(text) <= max_tokens

    if fits(code, feedback):
        return code, feedback
    k = _longest(lambda k: fits(truncate(code, k), truncate(feedback, k)), max(len(code), len(feedback)))
    if k is None:
        return truncate(code, 0), truncate(feedback, 0)
    c, f = truncate(code, k), truncate(feedback, k)
    if len(code) > k and len(feedback) <= k:  # the feedback is whole: the code takes the rest
        c = truncate(code, _longest(lambda j: fits(truncate(code, j), f), len(code)))
    elif len(feedback) > k and len(code) <= k:
        f = truncate(feedback, _longest(lambda j: fits(c, truncate(feedback, j)), len(feedback)))
    return c, f


def _longest(ok: Callable[[int], bool], n: int) -> int | None:
    """The largest k in [0, n) with ok(k) (ok is monotone: shorter always fits when longer does), else None."""
    if not ok(0):
        return None
    lo, hi = 0, n - 1  # ok(lo) holds
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


_FENCE = re.compile(r"```[ \t]*(?:python|py|Python|python3)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)


def extract_code(completion: str) -> str:
    """The program in a model output: thinking sections removed, then the fenced block(s), else the whole text."""
    text = _THINK.sub("", completion)
    blocks = [b.strip("\n") for b in _FENCE.findall(text)]
    if blocks:
        return max(blocks, key=len) + "\n"
    return text.strip("\n") + "\n" if text.strip() else ""


# ---------------------------------------------------------------------------------------------------------------
# Robust extraction (additions; `extract_code` above keeps its contract — see `extract_program` for messy outputs)
# ---------------------------------------------------------------------------------------------------------------
_CLOSE_THINK = "</think>"
_FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w.+#-]*)[^\n`]*$")
_PY_LANGS = {"", "python", "py", "python3", "py3", "python2"}
_CODE_START = re.compile(r"^(def |async def |class |import |from [\w.]+ import |@\w|if __name__)")


def strip_thinking(text: str) -> str:
    """Remove reasoning sections: `<think>...</think>` blocks, an unclosed `<think>` to the end, and everything
    before an orphan `</think>` (chat templates of reasoning models such as Qwen3 may open the block in the prompt)."""
    text = _THINK.sub("", text)
    if _CLOSE_THINK in text:
        text = text[text.rindex(_CLOSE_THINK) + len(_CLOSE_THINK) :]
    return text


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced block as (language, body), read line by line (``` or ~~~ fences, an unclosed last block runs
    to the end of the text, as in a truncated generation).

    Code before the first fence that the fence closes without having opened it (the text starts with a top-level
    code line and the first fence is a bare one) is a Python block too: SmolLM2-135M-Instruct, asked for
    "### Code:", usually writes the program, then a bare closing fence, then prose (tests/fixtures/smollm2).
    """
    blocks, lang, fence, body = [], None, "", []
    lines = text.split("\n")
    first = next((i for i, line in enumerate(lines) if _FENCE_LINE.match(line)), None)
    if first is not None and not _FENCE_LINE.match(lines[first]).group(2):
        start = next((i for i, line in enumerate(lines[:first]) if _CODE_START.match(line)), None)
        if start is not None:  # the bare fence closes the code above it (read as unfenced code is: step 3)
            code = "\n".join(lines[start:first]).rstrip()
            blocks.append(("", code if parses(code) else _code_span(code.split("\n")) or code))
            lines = lines[first + 1 :]
    for line in lines:
        m = _FENCE_LINE.match(line)
        if lang is None:
            if m:
                fence, lang, body = m.group(1), m.group(2).lower(), []
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2):
            blocks.append((lang, "\n".join(body)))
            lang = None
        else:
            body.append(line)
    if lang is not None:
        blocks.append((lang, _complete_lines("\n".join(body))))
    return blocks


def _complete_lines(body: str) -> str:
    """An unclosed block (the generation hit its length limit inside it) without its cut-off last top-level
    statement: the body up to the last top-level line at which what comes before parses and still defines a
    function or class (a function cut in its middle is not patched up); else the body unchanged."""
    if parses(body):
        return body
    lines = body.split("\n")
    for j in range(len(lines) - 1, 0, -1):
        if not lines[j][:1].strip():  # not the start of a top-level statement
            continue
        head = "\n".join(lines[:j]).rstrip()
        if parses(head):
            return head if _defines(head) else body
    return body


def parses(code: str) -> bool:
    """True when `code` is syntactically valid Python."""
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def extract_program(completion: str) -> str:
    """The program in a messy model output; a more forgiving superset of `extract_code` for chat models.

    1. thinking sections removed (`strip_thinking`);
    2. fenced Python blocks (untagged or python/py/python3; blocks in other languages such as ```bash or ```text
       are ignored; code closed by a fence it never opened counts as a block; an unclosed block cut by the length
       limit loses its unfinished last statement, `fenced_blocks`): the one that parses, defines a function or
       class, and is longest wins (ties: the last one);
    3. no Python fence: the text itself when it parses; else the longest span of lines that starts at a top-level
       `def`/`class`/`import`/`from`/`@` line and parses (prose before and after dropped);
    4. else the text unchanged (the executor then reports the syntax error as feedback).
    Clean code, fenced or not, gives the same program as `extract_code`.
    """
    text = strip_thinking(completion)
    blocks = fenced_blocks(text)
    python = [body.strip("\n") for lang, body in blocks if lang in _PY_LANGS and body.strip()]
    if python:
        best = max(enumerate(python), key=lambda ib: (parses(ib[1]), _defines(ib[1]), len(ib[1]), ib[0]))[1]
        return best + "\n"
    if blocks:  # only non-Python blocks (shell commands, sample output): drop them, look at the prose
        text = _drop_blocks(text)
    text = text.strip("\n")
    if not text.strip():
        return ""
    if parses(text):
        return text + "\n"
    span = _code_span(text.split("\n"))
    return (span if span is not None else text) + "\n"


def _defines(code: str) -> bool:
    return bool(re.search(r"^\s*(async\s+)?(def|class)\s", code, re.MULTILINE))


def _drop_blocks(text: str) -> str:
    out, inside, fence = [], False, ""
    for line in text.split("\n"):
        m = _FENCE_LINE.match(line)
        if not inside and m:
            inside, fence = True, m.group(1)[0]
        elif inside and m and m.group(1)[0] == fence and not m.group(2):
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def _code_span(lines: list[str], max_lines: int = 400) -> str | None:
    """The longest run of lines that starts at a top-level code line and parses (None if there is none)."""
    lines = lines[:max_lines]
    best = None
    for i, line in enumerate(lines):
        if not _CODE_START.match(line):
            continue
        for j in range(len(lines), i, -1):  # longest first
            if best is not None and j - i <= best[1] - best[0]:
                break
            chunk = "\n".join(lines[i:j]).rstrip()
            if chunk and parses(chunk):
                best = (i, j)
                break
    return None if best is None else "\n".join(lines[best[0] : best[1]]).strip("\n")


def read_answer(completion: str, kind: str = "code") -> str:
    """THE reading of a model output, in training and evaluation alike: `extract_program` for code tasks, the
    stripped text for text-answer tasks (``Task.metadata["answer"] == "text"``, run as ``ANSWER = '<text>'``)."""
    if kind not in ("code", "text"):
        raise ValueError(f"answer kind must be 'code' or 'text', got {kind!r}")
    return completion.strip() if kind == "text" else extract_program(completion)


def answer_extractor(tasks) -> Callable[[str], str]:
    """completion -> answer (`read_answer`) for a batch of tasks; refuses a batch mixing text and code tasks."""
    kinds = {(getattr(t, "metadata", None) or {}).get("answer", "code") for t in tasks}
    if len(kinds) > 1:
        raise ValueError(f"tasks mix answer kinds {sorted(kinds)} (metadata['answer']); split them")
    if kinds == {"text"}:
        return lambda completion: read_answer(completion, "text")
    return extract_program


# ---------------------------------------------------------------------------------------------------------------
# Chat messages (chat models get the same plain text as a user message, after a short system message)
# ---------------------------------------------------------------------------------------------------------------
SYSTEM_PROMPT = "You write correct, self-contained Python programs. Answer with the complete program in one ```python block."


def first_messages(task_prompt: str, system: str | None = SYSTEM_PROMPT) -> list[dict]:
    """The turn-1 prompt as chat messages: [system], user = `first_prompt(task_prompt)`."""
    return _messages(first_prompt(task_prompt), system)


def refine_messages(
    task_prompt: str, code: str, feedback: str, system: str | None = SYSTEM_PROMPT
) -> list[dict]:
    """The refinement prompt q = [task, code, feedback] as chat messages: [system], user = `refine_prompt(...)`."""
    return _messages(refine_prompt(task_prompt, code, feedback), system)


def _messages(user: str, system: str | None) -> list[dict]:
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]


# ---------------------------------------------------------------------------------------------------------------
# Prompts of the other refinement scaffolds (murphy_lab.scaffolds): reflection, self-evaluation, guided repair
# ---------------------------------------------------------------------------------------------------------------
REFLECT_TEMPLATE = (
    "{task}\n### Attempt:\n{code}\n### Feedback:\n{feedback}\n"
    "### In two or three sentences, say why the attempt fails and what to change:\n"
)
SELF_EVAL_TEMPLATE = (
    "{task}\n### Candidate:\n{code}\n### Is the candidate correct? Answer with a score from 0 to 10:\n"
)
GUIDED_REFINE_TEMPLATE = (
    "{task}\n### Previous attempt:\n{code}\n### Feedback:\n{feedback}\n### Notes:\n{notes}\n### Fixed code:\n"
)


def reflect_prompt(task_prompt: str, code: str, feedback: str) -> str:
    """Ask for a short verbal diagnosis of a failed attempt (a "reflection", as in Reflexion/LATS/DoT)."""
    return REFLECT_TEMPLATE.format(task=task_prompt.rstrip(), code=code.rstrip(), feedback=feedback.rstrip())


def self_eval_prompt(task_prompt: str, code: str) -> str:
    """Ask the model to score a candidate (LATS's self-evaluation term of the node value)."""
    return SELF_EVAL_TEMPLATE.format(task=task_prompt.rstrip(), code=code.rstrip())


def guided_refine_prompt(
    task_prompt: str,
    code: str,
    feedback: str,
    notes: list[str] | str,
    max_tokens: int | None = None,
    count: Callable[[str], int] = len,
) -> str:
    """The refinement prompt with reflections attached as notes; with no notes it equals `refine_prompt`.
    `max_tokens` / `count` budget the quoted code and feedback as in `refine_prompt`."""
    notes = (
        "\n".join(f"- {n.strip()}" for n in notes if n.strip())
        if not isinstance(notes, str)
        else notes.strip()
    )
    if not notes:
        return refine_prompt(task_prompt, code, feedback, max_tokens, count)
    task = task_prompt.rstrip()

    def render(c: str, f: str) -> str:
        return GUIDED_REFINE_TEMPLATE.format(task=task, code=c, feedback=f, notes=notes)

    return render(*fit_refinement(render, code.rstrip(), feedback.rstrip(), max_tokens, count))


def parse_score(text: str, scale: float = 10.0) -> float | None:
    """The first number in a self-evaluation answer, divided by `scale` and clipped to [0, 1] (None if none)."""
    m = re.search(r"-?\d+(?:\.\d+)?", strip_thinking(text))
    return None if m is None else min(1.0, max(0.0, float(m.group()) / scale))
