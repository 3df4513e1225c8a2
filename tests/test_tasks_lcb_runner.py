"""LiveCodeBench programs run as lcb_runner runs them (issue 38): each verdict below is the one lcb_runner's own
`run_test` gave (lcb_runner/evaluation/testing_util.py at 16de2a1, run in a multiprocessing child as
`check_correctness` runs it, stdin on /dev/null); before `lcb_harness` the first seven were scored the other way."""

from __future__ import annotations

import json

import pytest
from lcb import FUNCTIONAL_ROW, STDIN_ROW

from murphy_lab.tasks.lcb_harness import IMPORT_HEADER, stdin_harness
from murphy_lab.tasks.livecodebench import livecodebench_task

READ2 = "a = int(input())\nb = int(input())\n"
STDIN_CASES = {  # name: (program, whether lcb_runner passes it on input "2\n3\n" -> "5\n")
    # the seven of issue 38
    "sys.stdin.buffer.readline": (
        "import sys\na = int(sys.stdin.buffer.readline())\n"
        "b = int(sys.stdin.buffer.readline())\nprint(a + b)\n",
        False,
    ),  # the first line twice
    "os.write(1, ...)": ("import os\n" + READ2 + "os.write(1, str(a + b).encode() + b'\\n')\n", False),
    "global in a helper": (
        "cnt = 0\ndef inc():\n    global cnt\n    cnt += 1\n"
        + READ2
        + "for _ in range(a + b):\n    inc()\nprint(cnt)\n",
        False,
    ),  # cnt is a local there
    "open(0).read()": ("a, b = map(int, open(0).read().split())\nprint(a + b)\n", False),
    "a guard that is not last": (
        "def main():\n    " + READ2.replace("\n", "\n    ") + "print(a + b)\n"
        "if __name__ == '__main__':\n    main()\nx = 1\n",
        False,
    ),
    "quit()": (READ2 + "print(a + b)\nquit()\n", False),
    "sys.exit(1) after the answer": ("import sys\n" + READ2 + "print(a + b)\nsys.exit(1)\n", True),
    # more of lcb_runner's rules
    "the last guard": (
        "def main():\n    " + READ2.replace("\n", "\n    ") + "print(a + b)\n"
        'if __name__ == "__main__":\n    main()\n',
        True,
    ),
    "for line in sys.stdin": (
        "import sys\nprint(sum(int(line) for line in sys.stdin))\n",
        False,
    ),  # not iterable
    "from sys import stdin": (
        "from sys import stdin\na = int(stdin.readline())\nb = int(stdin.readline())\nprint(a + b)\n",
        True,
    ),  # patched on the object bound at load time
    "from sys import stdout": ("from sys import stdout\n" + READ2 + "stdout.write(str(a + b))\n", False),
    "sys.stdout.buffer": ("import sys\n" + READ2 + "sys.stdout.buffer.write(str(a + b).encode())\n", False),
    "readlines keeps the last empty line": (
        "import sys\nls = sys.stdin.readlines()\nprint(len(ls) + 2)\n",
        True,
    ),
    "from __future__": ("from __future__ import annotations\n" + READ2 + "print(a + b)\n", False),
    "exit() after the answer": (READ2 + "print(a + b)\nexit()\nprint(7)\n", True),
}


def stdin_task(cases):
    tests = [{"input": i, "output": o, "testtype": "stdin"} for i, o in cases]
    return livecodebench_task({**STDIN_ROW, "public_test_cases": json.dumps(tests), "private_test_cases": ""})


def functional_task(cases, func_name="f"):
    tests = [{"input": i, "output": o, "testtype": "functional"} for i, o in cases]
    return livecodebench_task(
        {
            **FUNCTIONAL_ROW,
            "public_test_cases": json.dumps(tests),
            "private_test_cases": "",
            "metadata": json.dumps({"func_name": func_name}),
        }
    )


def test_stdin_programs_score_as_lcb_runner_scores_them(executor):
    task = stdin_task([("2\n3\n", "5\n")])
    names = list(STDIN_CASES)
    results = executor.run_many([(task.program(STDIN_CASES[n][0]), task.hidden_tests) for n in names])
    got = {n: r.solved for n, r in zip(names, results)}
    assert got == {n: want for n, (_, want) in STDIN_CASES.items()}


def test_a_runtime_error_shows_the_programs_own_lines_and_the_wrapping_function(executor):
    task = stdin_task([("2\n3\n", "5\n")])
    res = executor.run(task.program(STDIN_CASES["global in a helper"][0]), task.hidden_tests)
    assert res.status == "error" and "NameError: name 'cnt' is not defined" in res.feedback
    assert 'File "solution.py", line 4, in inc' in res.feedback and "<prelude>" not in res.feedback


def test_a_syntax_error_is_still_a_syntax_error_and_a_top_level_return_is_legal_as_in_lcb_runner(executor):
    task = stdin_task([("2\n3\n", "5\n")])
    assert executor.run(task.program("print(\n"), task.hidden_tests).status == "syntax"
    # lcb_runner wraps the program in a function before compiling it: a top-level `return` is legal there (issue 45)
    res = executor.run(task.program(READ2 + "print(a + b)\nif a:\n    return\n"), task.hidden_tests)
    assert res.status == "passed", res.feedback


def test_the_harness_keeps_the_header_and_the_program_text(executor):
    odd = "print('__HEADER__', '__CODE__')\n"  # the template's own markers, in a program's text
    task = stdin_task([("\n", "__HEADER__ __CODE__\n")])
    assert executor.run(task.program(odd), task.hidden_tests).solved
    code = "print(1)\n"
    prelude = stdin_harness(code)
    assert repr(IMPORT_HEADER) in prelude and repr(code) in prelude
    program = stdin_task([("1\n", "1\n")]).program(code)
    assert str(program).endswith(code) and program.prelude == prelude


def test_one_solution_instance_serves_all_of_a_problems_tests(executor):
    task = functional_task([("1", "1"), ("1", "2"), ("1", "3")])
    counter = (
        "class Solution:\n    def __init__(self):\n        self.calls = 0\n"
        "    def f(self, x):\n        self.calls += 1\n        return self.calls\n"
    )
    assert executor.run(task.program(counter), task.hidden_tests).solved  # fresh instances would give 1, 1, 1


@pytest.mark.slow
def test_loading_has_its_own_limit_as_in_lcb_runner(executor):
    task = functional_task([("1", "1")])
    code = "import time\ntime.sleep(4)\nclass Solution:\n    def f(self, x):\n        time.sleep(3)\n        return x\n"
    assert task.hidden_tests.load_timeout == 6.0
    assert executor.run(task.program(code), task.hidden_tests).solved  # 4 s load + 3 s test, each under 6 s


def test_a_top_level_function_serves_when_there_is_no_solution_class(executor):
    task = functional_task([("1", "2"), ("2", "3")])
    assert executor.run(task.program("def f(x):\n    return x + 1\n"), task.hidden_tests).solved
    assert not executor.run(task.program("def g(x):\n    return x + 1\n"), task.hidden_tests).solved


def test_quit_is_none_in_functional_programs_too(executor):
    task = functional_task([("1", "1")])
    res = executor.run(
        task.program("class Solution:\n    def f(self, x):\n        quit()\n"), task.hidden_tests
    )
    assert not res.solved and "'NoneType' object is not callable" in res.feedback


@pytest.mark.parametrize("harness", ["livecodebench-stdin", "livecodebench-functional"])
def test_the_tasks_name_their_harness(harness):
    task = functional_task([("1", "1")]) if harness.endswith("functional") else stdin_task([("1\n", "1\n")])
    assert task.metadata["harness"] == harness and "program_prefix" not in task.metadata
