"""The executor's contract: rewards, statuses, feedback formats, IO tests, input checking, lifecycle."""

from __future__ import annotations

import pickle

import pytest

from murphy_lab.executor import ExecutionResult, Executor, IOTest, TestSuite, execute, feedback

ADD = "def f(x):\n    return x + 1\n"


@pytest.fixture(scope="module")
def ex():
    with Executor(workers=2, timeout=1.0, memory_mb=512) as e:  # own: tests time out at 1 s, two slots
        yield e


def test_reward_is_the_pass_fraction(ex):
    res = ex.run(ADD, ["assert f(1) == 2", "assert f(2) == 3", "assert f(3) == 5", "assert f(0) == 7"])
    assert (res.passed, res.total, res.reward, res.status) == (2, 4, 0.5, "failed")


def test_all_passing_program_is_solved(ex):
    res = ex.run(ADD, ["assert f(1) == 2"])
    assert res.solved and res.status == "passed" and res.feedback == feedback.ALL_PASSED


def test_failed_assert_feedback_quotes_the_actual_value(ex):
    res = ex.run(ADD, ["assert f(2) == 7"])
    assert res.feedback == "Tests failed:\nassert f(2) == 7  # output: 3"


def test_failing_assert_inside_check_is_shown_with_the_calling_test(ex):
    suite = TestSuite(
        cases=("check(f)",),
        setup="def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(2) == 4\n",
    )
    res = ex.run(ADD, suite)
    assert "assert candidate(2) == 4  # output: 3  (via: check(f))" in res.feedback


def test_exception_feedback_has_the_program_frames_and_no_harness_frames(ex):
    res = ex.run("def f(x):\n    return 1 / x\n", ["assert f(0) == 1"])
    assert res.status == "error"
    assert (
        "ZeroDivisionError: division by zero" in res.feedback and 'File "solution.py", line 2' in res.feedback
    )
    assert "harness" not in res.feedback and "worker" not in res.feedback


def test_small_and_large_programs_get_the_same_feedback(ex):
    # a small program is compiled by the worker, a large one by its program process (protocol.py)
    pad = "#" * 99 + "\n"
    small = "def f(x):\n    return 1 / x\n"
    large = small + pad * 700  # over 64 KB of text
    results = [ex.run(p, ["assert f(2) == 0.5", "assert f(0) == 1"]) for p in (small, large)]
    assert [r.outcomes[0].status for r in results] == ["passed", "passed"]
    assert results[0].feedback == results[1].feedback
    assert 'File "solution.py", line 2' in results[1].feedback


def test_syntax_error_is_reported_once_with_its_line(ex):
    res = ex.run("def f(x) return 1\n", ["assert f(1) == 1", "assert f(2) == 1"])
    assert res.status == "syntax" and res.reward == 0.0 and res.total == 2
    assert res.feedback.startswith(feedback.SYNTAX) and "line 1" in res.feedback


def test_setup_runs_before_the_cases_and_program_names_are_importable(ex):
    suite = TestSuite(cases=("assert g(1) == 2",), setup="from solution import f\ng = f\n")
    assert ex.run(ADD, suite).solved


def test_program_main_block_does_not_run_for_assert_tests(ex):
    prog = ADD + "if __name__ == '__main__':\n    raise SystemExit(input())\n"
    assert ex.run(prog, ["assert f(1) == 2"]).solved


def test_programs_compile_as_plain_python_does(ex):
    # no __future__ feature of the executor's own modules (postponed annotations) leaks into the program
    prog = "def f(x: int) -> int:\n    return x\n\nKIND = type(f.__annotations__['x']).__name__\n"
    assert ex.run(prog, ["assert KIND == 'type'"]).solved
    assert ex.run(prog + "print(KIND)\n", [IOTest("", "type\n")]).solved


def test_test_code_compiles_as_plain_python_does(ex):
    suite = TestSuite(
        cases=("assert type(g.__annotations__['x']) is type",), setup="def g(x: int):\n    pass\n"
    )
    assert ex.run(ADD, suite).solved


def test_python_numeric_equality_is_kept(ex):
    res = ex.run("def f():\n    return 2.0\n", ["assert f() == 2", "assert [f()] == [2]", "assert f() > 1"])
    assert res.solved


def test_builtin_subclasses_compare_as_their_base(ex):
    prog = (
        "from collections import namedtuple, OrderedDict\nP = namedtuple('P', 'a b')\n"
        "def f():\n    return P(1, 2)\ndef g():\n    return OrderedDict(a=1)\n"
    )
    assert ex.run(prog, ["assert f() == (1, 2)", "assert g() == {'a': 1}"]).solved


def test_objects_of_the_programs_class_compare_by_its_own_eq_and_never_to_plain_data(ex):
    # between two of the program's objects its own __eq__ answers (as in one process); against the test's own plain
    # data never: a program object equals no value of the test's
    prog = (
        "class V:\n    def __init__(self, x):\n        self.x = x\n    def __eq__(self, o):\n"
        "        return self.x == o.x\nONE = V(1)\ndef f():\n    return V(3)\ndef g():\n    return ONE\n"
    )
    tests = [
        "assert f() == V(3)",
        "assert g() is g() and g() == ONE and g() is ONE",
        "assert f().x == 3",
        "assert f() == 3",
    ]
    res = ex.run(prog, tests)
    assert [o.status for o in res.outcomes] == ["passed", "passed", "passed", "failed"]
    assert (
        "(a V object of the program: not plain data: it answers for itself, and equals no value of the test's)"
        in res.feedback
    )


def test_io_test_compares_stdout_after_normalizing_trailing_whitespace(ex):
    prog = "a, b = map(int, input().split())\nprint(a + b, '  ')\n"
    res = ex.run(prog, [IOTest("1 2\n", "3\n\n"), IOTest("2 2", "5")])
    assert (res.passed, res.status) == (1, "failed")
    assert res.feedback == "Tests failed:\nWrong Answer\nInput:\n2 2\nExpected:\n5\nGot:\n4"


def test_io_feedback_values_are_cut_to_300_characters(ex):
    res = ex.run("print('x' * 1000)", [IOTest("y" * 1000, "z")])
    got = res.feedback.split("Got:\n")[1]
    assert got.startswith("x" * 300) and "more characters" in got and len(got) < 400


def test_io_program_may_end_with_sys_exit_zero(ex):
    prog = "import sys\nprint(int(input()) * 2)\nsys.exit(0)\n"
    assert ex.run(prog, [IOTest("4", "8")]).solved


def test_io_runtime_error_is_reported_with_the_input(ex):
    res = ex.run("print(1 // int(input()))", [IOTest("0", "1")])
    assert res.status == "error" and res.feedback.startswith("Tests failed:\nRuntime Error\nInput:\n0\n")


def test_run_many_returns_one_result_per_job_in_order(ex):
    jobs = [(f"def f():\n    return {i}\n", [f"assert f() == {i % 3}"]) for i in range(12)]
    res = ex.run_many(jobs)
    assert [r.solved for r in res] == [i % 3 == i for i in range(12)]


def test_empty_test_list_gives_zero_reward_and_no_tests_status(ex):
    res = ex.run(ADD, [])
    assert (res.reward, res.total, res.status) == (0.0, 0, "no_tests")


def test_result_carries_one_outcome_per_test(ex):
    res = ex.run(ADD, ["assert f(1) == 2", "assert f(1) == 3"])
    assert [o.status for o in res.outcomes] == ["passed", "failed"] and isinstance(res, ExecutionResult)


@pytest.mark.parametrize(
    "bad, match",
    [
        (("x", "assert True"), "tests must be a list"),
        ((1, []), "program"),
        (("x", [3]), "test 0"),
        ("x", "pair"),
    ],
)
def test_bad_jobs_raise_clear_errors(ex, bad, match):
    with pytest.raises(TypeError, match=match):
        ex.run_many([bad])


def test_bad_settings_raise_value_error():
    with pytest.raises(ValueError, match="timeout"):
        Executor(timeout=0)


def test_executor_pickles_its_settings_and_restarts_workers(ex):
    clone = pickle.loads(pickle.dumps(ex))
    try:
        assert clone.timeout == ex.timeout and clone.run(ADD, ["assert f(1) == 2"]).solved
    finally:
        clone.close()


def test_closed_executor_restarts_on_next_use():
    e = Executor(workers=1)  # own: it is closed
    e.close()
    assert e.run(ADD, ["assert f(1) == 2"]).solved
    e.close()


def test_execute_convenience_runs_one_program():
    assert execute(ADD, ["assert f(1) == 2"], workers=1).solved


def test_an_interrupted_run_leaves_no_stale_replies_behind():
    import signal

    def interrupt(*_):
        raise KeyboardInterrupt

    with Executor(workers=1, timeout=5) as e:  # own: the run it interrupts must not reach other tests
        old = signal.signal(signal.SIGALRM, interrupt)
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        try:
            with pytest.raises(KeyboardInterrupt):
                e.run_many([("import time\ntime.sleep(3)\n", ["assert True"])] * 3)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        assert [r.reward for r in e.run_many([(ADD, ["assert f(1) == 2"]), (ADD, ["assert f(1) == 3"])])] == [
            1,
            0,
        ]


def test_a_run_interrupted_while_its_workers_start_leaves_no_unread_hello(monkeypatch):
    # the interrupt of the test above can strike while the workers start (a loaded machine): a slot whose hello was
    # never read was kept, and the next run read that hello as a job's reply (KeyError: 'outcomes')
    with Executor(workers=1, timeout=5) as e:
        real = Executor._read_message
        calls = []

        def interrupted_once(self, slot, deadline):
            calls.append(1)
            if len(calls) == 1:
                raise KeyboardInterrupt
            return real(self, slot, deadline)

        monkeypatch.setattr(Executor, "_read_message", interrupted_once)
        with pytest.raises(KeyboardInterrupt):
            e.run_many([(ADD, ["assert f(1) == 2"])])
        assert [r.reward for r in e.run_many([(ADD, ["assert f(1) == 2"]), (ADD, ["assert f(1) == 3"])])] == [
            1,
            0,
        ]


def test_numpy_values_compare_as_python_would(ex):
    pytest.importorskip("numpy")
    prog = "import numpy as np\ndef f():\n    return np.int64(3)\ndef g():\n    return np.array([1, 2])\n"
    tests = [
        "assert f() == 3",
        "import numpy as np\nassert (g() == np.array([1, 2])).all() and g().dtype == np.array([1]).dtype",
        "import numpy as np\nassert not (g() == np.array([1, 3])).all()",
    ]
    assert ex.run(prog, tests).solved


def test_a_module_the_program_bound_is_the_tests_own_import_of_it(ex):
    # the test reads the program's `np`: it gets its own numpy (never the program's module object); a module it
    # cannot import itself (not the standard library's, not one of harness.IMPORTABLE) it is told of
    pytest.importorskip("numpy")
    prog = "import numpy as np, types\nfake = types.ModuleType('made_up_here')\ndef g():\n    return [1, 2]\n"
    res = ex.run(prog, ["assert g() == np.array([1, 2]).tolist()", "assert fake.x == 1"])
    assert [o.status for o in res.outcomes] == ["passed", "error"], res.feedback
    assert "the program's module 'made_up_here', which it does not import itself" in res.feedback


def test_unicode_and_multiline_asserts_are_quoted_exactly(ex):
    prog = "def f(x):\n    return {'é': x}\n"
    res = ex.run(prog, ["assert f(1) == {\n    'é': 2}"])
    assert res.feedback == "Tests failed:\nassert f(1) == {\n    'é': 2}  # output: {'é': 1}"


# --- IO programs end the way `python program.py` ends -------------------------------------------------------------
@pytest.mark.parametrize(
    "program, output",
    [
        ("import atexit\natexit.register(print, 'bye')\nprint('hi')\n", "hi\nbye"),
        (
            "import threading, time\ndef late():\n    time.sleep(0.2)\n    print('late')\n"
            "threading.Thread(target=late).start()\nprint('early')\n",
            "early\nlate",
        ),
        ("import os\nw = os.fdopen(1, 'w')\nw.write('unflushed')\n", "unflushed"),
        ("import sys\nsys.stdout.write('no newline, no flush')\n", "no newline, no flush"),
        ("import sys\nprint('answer')\nsys.exit(0)\nprint('never')\n", "answer"),
        ("print('answer')\nexit()\n", "answer"),
        ("import sys\nprint(sum(map(int, sys.stdin.read().split())))\nraise SystemExit\n", "3"),
    ],
    ids=[
        "atexit",
        "non-daemon thread",
        "os.fdopen(1) unflushed",
        "stdout unflushed",
        "sys.exit(0) mid-output",
        "exit()",
        "SystemExit",
    ],
)
def test_io_programs_end_as_python_ends_them(ex, program, output):
    res = ex.run(program, [IOTest("1 2\n", output)])
    assert res.solved, res.feedback


@pytest.mark.parametrize(
    "program, shown",
    [
        ("import sys\nprint('partial')\nsys.exit('bad input')\n", "bad input"),
        ("import sys\nsys.exit(3)\n", "exit status 3"),
        ("print('partial')\nraise ValueError('no')\n", 'File "solution.py", line 2, in <module>'),
        ("import os\nprint('lost in the buffer')\nos._exit(0)\n", "Got:\n\n"),
    ],
    ids=["sys.exit(message)", "sys.exit(3)", "uncaught exception", "os._exit skips the flush"],
)
def test_io_programs_that_end_badly_fail_as_python_would(ex, program, shown):
    res = ex.run(program + "", [IOTest("", "partial\n")])
    assert not res.solved and shown in res.feedback + "\n", res.feedback


WARNS = "def f(x):\n    return x is 1\n"  # CPython's compiler warns: "is" with a literal
IO_WARNS = "x = input()\nprint(x is 1 or x)\n"


@pytest.mark.parametrize(
    "pad", [0, 20_000]
)  # compiled by the worker / by the program process (large programs)
def test_a_programs_compile_warnings_are_not_printed_on_our_stderr(capfd, pad):
    with Executor(workers=1, timeout=2.0) as e:  # its own: spawned under the capture of this test's stderr
        asserted = e.run(WARNS + "#" * pad + "\n", ["assert f(1) == True"])
        io = e.run(IO_WARNS + "#" * pad + "\n", [IOTest(input="3\n", output="3\n")])
    assert asserted.solved and io.solved
    assert "SyntaxWarning" not in capfd.readouterr().err
