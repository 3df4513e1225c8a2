"""One model, three MBPP scores: the packaged code model (Qwen2.5-Coder-0.5B-Instruct) answers the same MBPP tasks
under three protocols, greedy, and every answer is kept (notebook 12_benchmark_protocol reads them; nothing there
regenerates).

    nice -n 5 python benchmarks/mbpp_protocols.py                 # 40 tasks x 3 protocols (resumable)
    nice -n 5 python benchmarks/mbpp_protocols.py --tasks 4       # a quick look

The tasks: the first `--tasks` ids (in id order) that are in the original release's test split (ids 11-510) AND in
the sanitized release (the hand-verified 427), so each task exists under every protocol.

    original    the package's path (`murphy_lab.evaluate`, greedy Iter-1): the original release's text and its first
                assert in our prompt (`prompts.first_prompt`: "<text>\\nYour code should pass this test:\\n<assert>"
                then "### Code:"), one user message in the model's ChatML template, the code model's generation
                defaults (768 tokens, stop at the closed code block), `extract_program`, the sandboxed executor on the
                original release's three asserts (and its test_setup_code)
    sanitized   the same path on the sanitized release's text and asserts (and its test_imports)
    published   the published protocol's prompt (Qwen2.5-Coder's `qwencoder-eval/instruct/eval_plus`, as EvalPlus
                builds MBPP prompts): system "You are an intelligent programming assistant to produce Python
                algorithmic solutions", user "Can you complete the following Python function?" and a ```python
                fence holding a docstring with the sanitized text and its first assert; the assistant turn pre-filled
                with "```python\\n"; greedy, up to 1,024 new tokens (theirs), stopped at the fence's close (the
                program is the code before it: nothing after the fence is read). Scored on the sanitized release's
                asserts: EvalPlus's own base tests (its repaired asserts) and MBPP+'s extra inputs are not available
                offline, so this protocol changes the prompt and nothing else against `sanitized`.

Each protocol's answers are appended to `<out>/<protocol>.jsonl` (one line per task: task id, the exact text the
model was conditioned on, the completion, its token count, the program read from it, the executor's status,
reward and feedback on the hidden tests; at the end, the statement text and the tests of the release it was scored
on) as each chunk of `--chunk` tasks ends, so a killed run resumes where it stopped. `<out>/summary.json` holds the pass counts and the settings. Last line:

    mbpp protocols: <n> tasks, original <a>%, sanitized <b>%, published prompt <c>% (greedy, <model>, <dtype>)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "data" / "mbpp_protocols"
# MBPP's original files: $MURPHY_LAB_MBPP, else ../shared/data/mbpp beside the checkout (or beside its worktrees' folder)
MBPP_FILES = next(
    (
        p
        for p in (
            Path(os.environ.get("MURPHY_LAB_MBPP", "/nonexistent")),
            *(ROOT.parents[i] / "shared" / "data" / "mbpp" for i in (0, 1)),
        )
        if p.is_dir()
    ),
    ROOT.parent / "shared" / "data" / "mbpp",
)
PROTOCOLS = ("original", "sanitized", "published")
# Qwen2.5-Coder's instruct EvalPlus evaluation (qwencoder-eval/instruct/eval_plus): its system string, request line,
# assistant pre-fill and length limit
PUBLISHED_SYSTEM = "You are an intelligent programming assistant to produce Python algorithmic solutions"
PUBLISHED_REQUEST = "Can you complete the following Python function?"
PUBLISHED_PREFILL = "```python\n"
PUBLISHED_MAX_NEW_TOKENS = 1024


def select_ids(n: int, files: Path = MBPP_FILES) -> list[int]:
    """The first `n` task ids (ascending) in the original release's test split (11-510) and in the sanitized
    release."""
    sanitized = {row["task_id"] for row in json.loads((files / "sanitized-mbpp.json").read_text())}
    return sorted(i for i in sanitized if 11 <= i <= 510)[:n]


def evalplus_prompt(text: str, first_assert: str) -> str:
    """EvalPlus's MBPP prompt: a docstring holding the task text and its first assert."""
    return f'"""\n{text.strip()}\n{first_assert.strip()}\n"""\n'


def published_messages(text: str, first_assert: str) -> list[dict]:
    """The published protocol's chat: system string, then the request with the fenced EvalPlus prompt."""
    user = f"{PUBLISHED_REQUEST}\n```python\n{evalplus_prompt(text, first_assert).strip()}\n```"
    return [{"role": "system", "content": PUBLISHED_SYSTEM}, {"role": "user", "content": user}]


def published_text(tokenizer, text: str, first_assert: str) -> str:
    """The exact text the model continues under the published protocol: the chat rendered with the generation
    prompt, then the assistant's pre-filled fence."""
    rendered = tokenizer.apply_chat_template(
        published_messages(text, first_assert), tokenize=False, add_generation_prompt=True
    )
    return rendered + PUBLISHED_PREFILL


def published_program(completion: str) -> str:
    """The program of a published-protocol answer: the pre-filled fence + the completion, read as every answer is
    read here (`prompts.extract_program`; a fence left open is closed first)."""
    from murphy_lab.prompts import extract_program

    body = completion.split("```")[0]
    return extract_program(f"{PUBLISHED_PREFILL}{body.rstrip()}\n```")


def _fence_closed(tokenizer, prompt_len: int):
    """A stopping criterion: a row is done once its generated text holds a fence (the pre-filled one's close)."""
    import torch

    def done(input_ids, scores, **kw):
        out = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        for i in range(input_ids.shape[0]):
            if "`" in tokenizer.decode(input_ids[i, -1:]):
                out[i] = "```" in tokenizer.decode(input_ids[i, prompt_len:], skip_special_tokens=True)
        return out

    return done


def generate_published(policy, texts: list[str], max_new_tokens: int) -> tuple[list[str], list[int]]:
    """Greedy continuations of fully rendered texts with the policy's model (left-padded batch), each stopped at
    its closing fence; returns the completions and their token counts."""
    import torch
    from transformers import StoppingCriteriaList

    tok = policy.tokenizer
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    width = enc["input_ids"].shape[1]
    with torch.inference_mode():
        seqs = policy.model.generate(
            **enc,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
            stopping_criteria=StoppingCriteriaList([_fence_closed(tok, width)]),
        )
    new = seqs[:, width:]
    ends = {tok.pad_token_id, tok.eos_token_id}
    counts = [next((t + 1 for t, x in enumerate(row) if x in ends), len(row)) for row in new.tolist()]
    return tok.batch_decode(new, skip_special_tokens=True), counts


def tasks_for(ids: list[int], files: Path = MBPP_FILES) -> dict[str, list]:
    """{"full": [...], "sanitized": [...]}: the same ids as `Task`s of each release (test split)."""
    from murphy_lab.tasks import load_tasks

    out = {}
    for variant in ("full", "sanitized"):
        by_id = {
            t.metadata["mbpp_task_id"]: t
            for t in load_tasks("mbpp", split="test", variant=variant, source=str(files))
        }
        out[variant] = [by_id[i] for i in ids]
    return out


def _raw_rows(ids: list[int], files: Path = MBPP_FILES) -> dict[int, dict]:
    return {
        r["task_id"]: r
        for r in json.loads((files / "sanitized-mbpp.json").read_text())
        if r["task_id"] in ids
    }


def run_protocol(name: str, policy, tasks: list, rows: dict, executor, chunk: int, out: Path) -> None:
    """Answer and score `tasks` under protocol `name`; append to `out/<name>.jsonl` chunk by chunk."""
    from murphy_lab.evaluate import evaluate
    from murphy_lab.prompts import first_prompt

    path = out / f"{name}.jsonl"
    done = (
        {json.loads(line)["task_id"] for line in path.read_text().splitlines()} if path.is_file() else set()
    )
    todo = [t for t in tasks if t.task_id not in done]
    t0 = time.perf_counter()
    for start in range(0, len(todo), chunk):
        part = todo[start : start + chunk]
        lines = []
        if name == "published":
            raw = [rows[t.metadata["mbpp_task_id"]] for t in part]
            texts = [published_text(policy.tokenizer, r["prompt"], r["test_list"][0]) for r in raw]
            completions, counts = generate_published(policy, texts, PUBLISHED_MAX_NEW_TOKENS)
            programs = [published_program(c) for c in completions]
            results = executor.run_many([t.job(p, "hidden") for t, p in zip(part, programs)])
            for t, text, c, n, p, r in zip(part, texts, completions, counts, programs, results):
                lines.append(
                    dict(
                        task_id=t.task_id,
                        protocol=name,
                        conditioned_on=text,
                        completion=c,
                        tokens=n,
                        cut=n >= PUBLISHED_MAX_NEW_TOKENS,
                        program=p,
                        status=r.status,
                        reward=r.reward,
                        passed=r.reward >= 1.0,
                        feedback=r.feedback,
                    )
                )
        else:
            df = evaluate(policy, part, executor, iters=[1], runs=1, seed=0, progress=False)
            records = {r["task_id"]: r for r in df.attrs["records"]}
            # the hidden tests' feedback (the records keep each verdict's status and reward, not its text)
            again = executor.run_many(
                [t.job(records[t.task_id]["attempts"][0]["code"], "hidden") for t in part]
            )
            for t, r in zip(part, again):
                rec = records[t.task_id]
                attempt, hidden = rec["attempts"][0], rec["hidden"]["0"]
                lines.append(
                    dict(
                        task_id=t.task_id,
                        protocol=name,
                        conditioned_on=policy.render(first_prompt(t.prompt)),
                        completion=attempt["completion"],
                        tokens=attempt["tokens"],
                        cut=attempt["tokens"] >= policy.max_new_tokens,
                        program=attempt["code"],
                        status=hidden["status"],
                        reward=hidden["reward"],
                        passed=rec["solved"]["1"],
                        feedback=r.feedback,
                    )
                )
        with open(path, "a") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")
        n_done = len(done) + start + len(part)
        print(f"{name}: {n_done}/{len(tasks)} tasks ({time.perf_counter() - t0:.0f} s)", flush=True)


def annotate(out: Path, tasks: dict[str, list]) -> None:
    """Give every transcript line the statement text and the tests it was scored on (its release's), so the
    transcripts explain themselves without the release files."""
    for name in PROTOCOLS:
        path = out / f"{name}.jsonl"
        if not path.is_file():
            continue
        by_id = {t.task_id: t for t in tasks["full" if name == "original" else "sanitized"]}
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            task = by_id[row["task_id"]]
            row.setdefault("statement", task.metadata["statement"])
            row.setdefault("tests", list(task.hidden_tests.cases))
            row.setdefault("test_setup", task.hidden_tests.setup)
            row.setdefault("entry_points", list(task.hidden_tests.entry_points))
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def summarize(out: Path, ids: list[int], settings: dict) -> dict:
    """Pass counts per protocol over the tasks present in every protocol's file; written to summary.json."""
    per = {}
    for name in PROTOCOLS:
        rows = [json.loads(line) for line in (out / f"{name}.jsonl").read_text().splitlines()]
        per[name] = {r["task_id"]: r["passed"] for r in rows}
    common = [f"mbpp/{i}" for i in ids if all(f"mbpp/{i}" in per[p] for p in PROTOCOLS)]
    summary = dict(
        settings,
        n_tasks=len(common),
        task_ids=common,
        passed={p: sum(per[p][t] for t in common) for p in PROTOCOLS},
        pass_at_1={
            p: round(100 * sum(per[p][t] for t in common) / max(1, len(common)), 1) for p in PROTOCOLS
        },
    )
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", type=int, default=40, help="how many tasks (default 40)")
    p.add_argument(
        "--out", type=Path, default=OUT, help=f"where the transcripts go (default {OUT.relative_to(ROOT)})"
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: two spin at every barrier on a busy 2-core machine)",
    )
    p.add_argument("--chunk", type=int, default=8, help="tasks per generation batch (default 8)")
    p.add_argument("--protocols", default=",".join(PROTOCOLS), help="which protocols (comma-separated)")
    p.add_argument(
        "--mbpp", type=Path, default=MBPP_FILES, help="the folder with MBPP's original release files"
    )
    a = p.parse_args(argv)
    chosen = [x for x in a.protocols.split(",") if x]
    if any(x not in PROTOCOLS for x in chosen) or not chosen:
        print(f"mbpp_protocols: --protocols must name some of {', '.join(PROTOCOLS)}", file=sys.stderr)
        return 2
    if a.tasks < 1 or a.chunk < 1:
        print("mbpp_protocols: --tasks and --chunk must be at least 1", file=sys.stderr)
        return 2
    if not (a.mbpp / "mbpp.jsonl").is_file() or not (a.mbpp / "sanitized-mbpp.json").is_file():
        print(
            f"mbpp_protocols: no MBPP release files (mbpp.jsonl, sanitized-mbpp.json) in {a.mbpp}; set "
            f"MURPHY_LAB_MBPP or --mbpp",
            file=sys.stderr,
        )
        return 2

    import torch

    from murphy_lab.executor import Executor
    from murphy_lab.policy import CODE_MODEL, TransformersPolicy, generation_defaults

    torch.set_num_threads(a.threads)
    ids = select_ids(a.tasks, a.mbpp)
    tasks = tasks_for(ids, a.mbpp)
    rows = _raw_rows(ids, a.mbpp)
    a.out.mkdir(parents=True, exist_ok=True)
    policy = TransformersPolicy(
        CODE_MODEL, temperature=0.0, dtype="bfloat16", batch_size=a.chunk, **generation_defaults(CODE_MODEL)
    )
    with Executor(workers=1, timeout=3.0) as executor:
        for name in chosen:
            run_protocol(
                name,
                policy,
                tasks["full" if name == "original" else "sanitized"],
                rows,
                executor,
                a.chunk,
                a.out,
            )
    annotate(a.out, tasks)
    if not all((a.out / f"{x}.jsonl").is_file() for x in PROTOCOLS):
        return 0
    settings = dict(
        model=CODE_MODEL,
        dtype="bfloat16",
        decoding="greedy",
        chunk=a.chunk,
        max_new_tokens={
            "original": policy.max_new_tokens,
            "sanitized": policy.max_new_tokens,
            "published": PUBLISHED_MAX_NEW_TOKENS,
        },
        command="python benchmarks/mbpp_protocols.py" + (f" --tasks {a.tasks}" if a.tasks != 40 else ""),
    )
    s = summarize(a.out, ids, settings)
    print(
        f"mbpp protocols: {s['n_tasks']} tasks, original {s['pass_at_1']['original']}%, sanitized "
        f"{s['pass_at_1']['sanitized']}%, published prompt {s['pass_at_1']['published']}% (greedy, {CODE_MODEL}, "
        f"bfloat16)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
