"""Issue 45, item 1: pytest files are run by real pytest in the sandboxed test worker, so a KodCode-style file is
scored per test id as pytest scores it.

The files below are the two kinds the issue found (each written first against real pytest: `test_real_pytest_agrees
_with_every_expectation` runs them there): correct programs that the old static imitation of pytest's collection
scored below 1 (`FALSE_FAILURES`), and wrong programs it rewarded with 1.0 because it dropped the test that catches
them (`FALSE_PASSES`). Each entry: the test file, the program, and pytest's outcome per test id.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

from murphy_lab.executor import Executor, IOTest, TestSuite
from murphy_lab.tasks.convert import pytest_file_suite

HERE = os.path.dirname(os.path.abspath(__file__))
STACK = "class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n        self.items.append(x)\n    def __len__(self):\n        return len(self.items)\n"
COUNTER = "class Counter:\n    def __init__(self):\n        self.value = 0\n    def increment(self):\n        self.value += 1\n"
REGISTRY = "_items = []\ndef register(x):\n    _items.append(x)\ndef count():\n    return len(_items)\ndef clear():\n    _items.clear()\n"

# correct programs: real pytest passes every test id; before, each scored below 1
FALSE_FAILURES = {
    "len of a program object": (
        "from solution import Stack\n\ndef test_len():\n    s = Stack()\n    s.push(1)\n    s.push(2)\n    assert len(s) == 2\n",
        STACK,
        {"test_len": "passed"},
    ),
    "str of a program object": (
        "from solution import Money\n\ndef test_str():\n    assert str(Money(5)) == '$5'\n",
        "class Money:\n    def __init__(self, n):\n        self.n = n\n    def __str__(self):\n        return f'${self.n}'\n",
        {"test_str": "passed"},
    ),
    "truth of a linked list's nodes": (
        "from solution import build\n\ndef test_walk():\n    node, total = build([1, 2, 3]), 0\n    while node:\n"
        "        total += node.val\n        node = node.next\n    assert total == 6\n",
        "class Node:\n    def __init__(self, val, next=None):\n        self.val, self.next = val, next\n"
        "def build(xs):\n    head = None\n    for x in reversed(xs):\n        head = Node(x, head)\n    return head\n",
        {"test_walk": "passed"},
    ),
    "== between two dataclass objects of the program": (
        "from solution import Point\n\ndef test_eq():\n    assert Point(1, 2) == Point(1, 2)\n",
        "from dataclasses import dataclass\n@dataclass\nclass Point:\n    x: int\n    y: int\n",
        {"test_eq": "passed"},
    ),
    "a module-scope fixture made once": (
        "import pytest\nfrom solution import Counter\n\n@pytest.fixture(scope='module')\ndef counter():\n    return Counter()\n\n"
        "def test_one(counter):\n    counter.increment()\n    assert counter.value == 1\n\n"
        "def test_two(counter):\n    counter.increment()\n    assert counter.value == 2\n",
        COUNTER,
        {"test_one": "passed", "test_two": "passed"},
    ),
    "an autouse fixture applied": (
        "import pytest\nfrom solution import clear, count, register\n\n@pytest.fixture(autouse=True)\ndef fresh():\n    clear()\n\n"
        "def test_a():\n    register('a')\n    assert count() == 1\n\ndef test_b():\n    register('b')\n    assert count() == 1\n",
        REGISTRY,
        {"test_a": "passed", "test_b": "passed"},
    ),
    "pytest.skip() at run time": (
        "import pytest\nfrom solution import add\n\ndef test_later():\n    pytest.skip('not yet')\n\n"
        "def test_add():\n    assert add(1, 2) == 3\n",
        "def add(a, b):\n    return a + b\n",
        {"test_later": "skipped", "test_add": "passed"},
    ),
    "capsys reads what the program printed": (
        "from solution import hello\n\ndef test_hello(capsys):\n    hello('bob')\n    assert capsys.readouterr().out == 'hi bob\\n'\n",
        "def hello(name):\n    print('hi', name)\n",
        {"test_hello": "passed"},
    ),
}
WRONG_ADD = "def add(a, b):\n    return a + b if a < 5 else 0\n"  # right only for small a
# wrong programs: real pytest fails a test id; before, the test that catches them was dropped and they got 1.0
FALSE_PASSES = {
    "a test under if": (
        "import sys\nfrom solution import add\n\ndef test_small():\n    assert add(1, 2) == 3\n\n"
        "if sys.version_info >= (3, 0):\n    def test_large():\n        assert add(5, 5) == 10\n",
        WRONG_ADD,
        {"test_small": "passed", "test_large": "failed"},
    ),
    "a test under try": (
        "from solution import add\n\ndef test_small():\n    assert add(1, 2) == 3\n\n"
        "try:\n    import math\nexcept ImportError:\n    pass\nelse:\n    def test_large():\n        assert add(5, 5) == 10\n",
        WRONG_ADD,
        {"test_small": "passed", "test_large": "failed"},
    ),
    "an inherited test method": (
        "from solution import add\n\nclass TestSmall:\n    a = 1\n    def test_add(self):\n        assert add(self.a, 2) == self.a + 2\n\n"
        "class TestLarge(TestSmall):\n    a = 5\n",
        WRONG_ADD,
        {"TestSmall::test_add": "passed", "TestLarge::test_add": "failed"},
    ),
    "a nested test class": (
        "from solution import add\n\nclass TestAdd:\n    def test_small(self):\n        assert add(1, 2) == 3\n\n"
        "    class TestLarge:\n        def test_large(self):\n            assert add(5, 5) == 10\n",
        WRONG_ADD,
        {"TestAdd::test_small": "passed", "TestAdd::TestLarge::test_large": "failed"},
    ),
    "a parameter list extended after its literal": (
        "import pytest\nfrom solution import add\n\nCASES = [(1, 2, 3)]\nCASES.append((5, 5, 10))\n\n"
        "@pytest.mark.parametrize('a, b, expected', CASES)\ndef test_add(a, b, expected):\n    assert add(a, b) == expected\n",
        WRONG_ADD,
        {"test_add[1-2-3]": "passed", "test_add[5-5-10]": "failed"},
    ),
    "a pytest.param marked skipif(False)": (
        "import pytest\nfrom solution import add\n\n@pytest.mark.parametrize('a, b, expected', [(1, 2, 3), "
        "pytest.param(5, 5, 10, marks=pytest.mark.skipif(False, reason='never'))])\n"
        "def test_add(a, b, expected):\n    assert add(a, b) == expected\n",
        WRONG_ADD,
        {"test_add[1-2-3]": "passed", "test_add[5-5-10]": "failed"},
    ),
    "an assert after a fixture's yield": (
        "import pytest\nfrom solution import Box\n\n@pytest.fixture\ndef box():\n    b = Box()\n    yield b\n    assert b.closed\n\n"
        "def test_put(box):\n    box.put(1)\n    box.close()\n    assert box.items == [1]\n",
        "class Box:\n    def __init__(self):\n        self.items, self.closed = [], False\n    def put(self, x):\n"
        "        self.items.append(x)\n    def close(self):\n        pass\n",
        {"test_put": "error"},
    ),
    "an assert in unittest's tearDown": (
        "import unittest\nfrom solution import Box\n\nclass TestBox(unittest.TestCase):\n    def setUp(self):\n        self.box = Box()\n"
        "    def tearDown(self):\n        self.assertTrue(self.box.closed)\n    def test_put(self):\n        self.box.put(1)\n"
        "        self.box.close()\n        self.assertEqual(self.box.items, [1])\n",
        "class Box:\n    def __init__(self):\n        self.items, self.closed = [], False\n    def put(self, x):\n"
        "        self.items.append(x)\n    def close(self):\n        pass\n",
        {"TestBox::test_put": "failed"},
    ),
}


def _kodcode_style():
    """benchmarks/kodcode_style.py (its real-pytest runner)."""
    if "kodcode_style" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "kodcode_style", os.path.join(HERE, "..", "benchmarks", "kodcode_style.py")
        )
        sys.modules["kodcode_style"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["kodcode_style"])
    return sys.modules["kodcode_style"]


def ours(executor, test: str, program: str) -> dict[str, str]:
    """{test id: outcome} as the package scores it (a pass: pytest's word for it; any failure: its status)."""
    suite, _ = pytest_file_suite(test, executor)
    res = executor.run(program, suite)
    return {str(o.test): (o.detail or "passed") if o.passed else o.status for o in res.outcomes}


def test_real_pytest_agrees_with_every_expectation():
    cases = [{"test": t, "program": p} for t, p, _ in (*FALSE_FAILURES.values(), *FALSE_PASSES.values())]
    expected = [e for _, _, e in (*FALSE_FAILURES.values(), *FALSE_PASSES.values())]
    assert _kodcode_style().real_pytest(cases) == expected


@pytest.mark.parametrize("test, program, expected", FALSE_FAILURES.values(), ids=FALSE_FAILURES)
def test_a_correct_program_passes_as_under_real_pytest(executor, test, program, expected):
    assert ours(executor, test, program) == expected


@pytest.mark.parametrize("test, program, expected", FALSE_PASSES.values(), ids=FALSE_PASSES)
def test_a_wrong_program_fails_as_under_real_pytest(executor, test, program, expected):
    got = ours(executor, test, program)
    assert {k: v if v in ("passed", "skipped") else "failed" for k, v in got.items()} == {
        k: v if v in ("passed", "skipped") else "failed" for k, v in expected.items()
    }


def test_a_failure_is_reported_by_pytests_explanation_and_the_program_traceback(executor):
    test = "from solution import add, half\n\ndef test_add():\n    assert add(1, 2) == 3\n\ndef test_half():\n    assert half(4) == 2\n"
    program = WRONG_ADD + "def half(x):\n    return x / 0\n"
    res = executor.run(program, pytest_file_suite(test)[0])
    add, half = res.outcomes
    assert add.passed and half.status == "error"
    assert 'File "solution.py", line 4, in half' in half.detail and "ZeroDivisionError" in half.detail
    res = executor.run(program, pytest_file_suite(test.replace("add(1, 2) == 3", "add(7, 2) == 9"))[0])
    assert res.outcomes[0].status == "failed" and res.outcomes[0].assertion == "assert add(7, 2) == 9"
    assert res.outcomes[0].detail.startswith("assert 0 == 9")
    assert (
        "assert add(7, 2) == 9  # output: assert 0 == 9" in res.feedback and "(via: test_add)" in res.feedback
    )


def test_each_test_id_has_its_own_clock_and_a_timeout_ends_only_its_program_process(executor):
    test = (
        "import pytest\nfrom solution import f\n\n@pytest.fixture(scope='module')\ndef base():\n    return 1\n\n"
        "@pytest.mark.parametrize('x', [1, 2, 3])\ndef test_f(base, x):\n    assert f(x) == x + base\n"
    )
    program = "def f(x):\n    while x == 2:\n        pass\n    return x + 1\n"
    suite, _ = pytest_file_suite(test, executor)
    res = executor.run(program, TestSuite(cases=suite.cases, setup=suite.setup, runner="pytest", timeout=0.5))
    assert [(o.test, o.status) for o in res.outcomes] == [
        ("test_f[1]", "passed"),
        ("test_f[2]", "timeout"),
        ("test_f[3]", "passed"),
    ]


def test_a_file_pytest_cannot_collect_with_this_program_is_the_loading_verdict_of_every_id(executor):
    suite, _ = pytest_file_suite(
        "from solution import f, g\n\ndef test_f():\n    assert f()\n\ndef test_g():\n    assert g()\n"
    )
    res = executor.run("def f():\n    return 1\n", suite)
    assert [o.status for o in res.outcomes] == ["error", "error"]
    assert "cannot import name 'g' from 'solution'" in res.outcomes[0].detail
    assert "(while loading the program)" in res.feedback


def test_an_id_this_program_does_not_collect_is_an_error_and_others_do_not_run(executor):
    test = "from solution import N\nimport pytest\n\n@pytest.mark.parametrize('k', list(range(N)))\ndef test_k(k):\n    assert k < 10\n"
    suite, _ = pytest_file_suite(test.replace("list(range(N))", "[0, 1]"), executor)
    res = executor.run("N = 1\n", TestSuite(cases=suite.cases, setup=test, runner="pytest"))
    assert [(o.test, o.status) for o in res.outcomes] == [("test_k[0]", "passed"), ("test_k[1]", "error")]
    assert "did not collect this test" in res.outcomes[1].detail
    assert executor.run("N = 5\n", TestSuite(cases=suite.cases[:1], setup=test, runner="pytest")).total == 1


def test_the_program_cannot_skip_xfail_or_interrupt_its_way_to_a_pass(executor):
    test = (
        "from solution import f\n\ndef test_a():\n    assert f() == 1\n\ndef test_b():\n    assert f() == 1\n"
    )
    suite, _ = pytest_file_suite(test, executor)
    for program in (
        "import pytest\ndef f():\n    pytest.skip('no')\n",
        "import pytest\ndef f():\n    pytest.xfail('no')\n",
        "import pytest\ndef f():\n    pytest.exit('done', returncode=0)\n",
        "import unittest\ndef f():\n    raise unittest.SkipTest('no')\n",
        "def f():\n    raise KeyboardInterrupt\n",
        "import sys\ndef f():\n    sys.exit(0)\n",
    ):
        res = executor.run(program, suite)
        assert res.passed == 0 and res.total == 2, (program, res.feedback)


def test_a_conftest_or_ini_file_the_program_writes_is_not_read(executor):
    test = "from solution import plant\n\ndef test_a():\n    plant()\n    assert False\n\ndef test_b():\n    assert False\n"
    program = (
        "import os, tempfile\ndef plant():\n    hook = 'def pytest_runtest_makereport(item, call):\\n    call.excinfo = None\\n'\n"
        "    for d in {os.getcwd(), tempfile.gettempdir(), '/tmp'}:\n        for name in ('conftest.py', 'pytest.ini'):\n"
        "            try:\n                open(os.path.join(d, name), 'w').write(hook if name.endswith('.py') else '[pytest]\\naddopts = -p no:python\\n')\n"
        "            except OSError:\n                pass\n"
    )
    suite, _ = pytest_file_suite(test, executor)
    for _ in range(2):
        assert executor.run(program, suite).passed == 0


def test_a_program_cannot_plant_files_in_the_tests_tmp_path_before_it_is_made(executor):
    """tmp_path lives in the job folder the program shares (so a file one writes the other reads), but as in pytest it
    is made fresh for the test: a folder or a link the program planted at its place when loaded is never the
    test's (pytest removes the folder; a link makes the fixture fail), so the planted file passes no test."""
    test = "import solution\n\ndef test_a(tmp_path):\n    assert (tmp_path / 'answer.txt').exists()\n"
    plant = "import os, tempfile\nbase = os.path.join(tempfile.gettempdir(), 'pytest-tmp')\n"
    folder = (
        plant
        + "os.makedirs(os.path.join(base, 'test_a0'))\nopen(os.path.join(base, 'test_a0', 'answer.txt'), 'w').close()\n"
    )
    link = (
        plant + "os.makedirs('mine/test_a0')\nopen('mine/test_a0/answer.txt', 'w').close()\n"
        "os.symlink(os.path.abspath('mine'), base)\n"
    )
    suite, _ = pytest_file_suite(test, executor)
    for program in (folder, link):
        assert executor.run(program, suite).passed == 0


def test_a_program_flooding_its_output_fails_its_own_test(executor):
    test = (
        "from solution import shout\n\ndef test_a(capsys):\n    shout()\n\ndef test_b():\n    assert True\n"
    )
    res = executor.run(
        "def shout():\n    while True:\n        print('x' * 1000)\n", pytest_file_suite(test, executor)[0]
    )
    assert [o.status for o in res.outcomes] == ["error", "passed"] and "bytes of output" in res.outcomes[
        0
    ].detail


def test_the_collection_census_counts_what_pytest_collected():
    suite, census = pytest_file_suite(FALSE_PASSES["a parameter list extended after its literal"][0])
    assert suite.runner == "pytest" and suite.cases == ("test_add[1-2-3]", "test_add[5-5-10]")
    assert (census.tests, census.parametrized, census.in_classes, census.fixtures) == (2, 2, 0, 0)


@pytest.mark.parametrize(
    "test, reason",
    [
        ("def test_a(:\n    pass\n", "does not parse"),
        ("def helper():\n    pass\n", "collected no test"),
        ("import no_such_module_here\n\ndef test_a():\n    pass\n", "No module named 'no_such_module_here'"),
        (
            "import pytest\n\n@pytest.fixture\ndef f():\n    return 1\n\n@pytest.mark.parametrize('f', [1])\ndef test_a(f):\n    pass\n",
            "",
        ),
    ],
)
def test_a_file_pytest_cannot_collect_is_refused_with_its_reason(test, reason):
    if not reason:  # pytest collects it (a parameter overrides the fixture): no refusal
        assert pytest_file_suite(test)[0].cases == ("test_a[1]",)
        return
    with pytest.raises(ValueError, match=reason):
        pytest_file_suite(test)


def test_pytest_is_imported_by_the_first_pytest_job_never_for_assert_lists():
    check = TestSuite(cases=("assert '_pytest' not in sys.modules",), setup="import sys\n")
    with Executor(workers=1) as ex:
        assert ex.run("x = 1", check).solved  # an assert-list job's worker holds no pytest
        assert ex.run(
            "def f():\n    return 1\n",
            pytest_file_suite("from solution import f\n\ndef test_f():\n    assert f() == 1\n", ex)[0],
        ).solved
        assert not ex.run("x = 1", check).solved  # ... until a pytest job came


def test_a_star_import_gives_the_names_the_file_reads_and_a_broken_file_fails_alone(executor):
    suite, _ = pytest_file_suite(
        "from solution import *\n\ndef test_a():\n    assert add(1, 2) == 3\n", executor
    )
    assert executor.run("def add(a, b):\n    return a + b\n", suite).solved
    broken = TestSuite(cases=("test_a",), setup="from solution import *\ndef test_a(:\n", runner="pytest")
    res = executor.run("def add(a, b):\n    return a + b\n", broken)
    assert res.outcomes[0].status == "error" and "SyntaxError" in res.outcomes[0].detail
    assert executor.run("def add(a, b):\n    return a + b\n", suite).solved  # the worker goes on


def test_a_pytest_suite_is_test_ids_run_by_pytest_and_nothing_else():
    with pytest.raises(ValueError, match="runner must be one of"):
        TestSuite(cases=("test_a",), runner="nose")
    with pytest.raises(ValueError, match="test ids"):
        TestSuite(cases=(IOTest("1", "1"),), runner="pytest")


def test_an_error_shows_the_test_files_frames_then_the_programs(executor):
    """A test that errors reads as Python's traceback: the test file's frame, the program's frame when the program
    raised (its text is the head), the exception last (harness.traceback_text, shared with assert-list jobs)."""
    test = (
        "from solution import parse\n\ndef test_remote():\n    assert parse('x') == 1\n\n"
        "def test_local():\n    {}['missing']\n"
    )
    program = "def parse(s):\n    return int(s)\n"
    suite, _ = pytest_file_suite(test, executor)
    details = {str(o.test): o.detail for o in executor.run(program, suite).outcomes}
    remote, local = details["test_remote"], details["test_local"]
    assert remote.startswith("Traceback (most recent call last):\n")
    assert 'File "test_solution.py", line 4, in test_remote' in remote
    assert 'File "solution.py", line 2, in parse' in remote
    assert remote.rstrip().endswith("ValueError: invalid literal for int() with base 10: 'x'")
    assert 'File "test_solution.py", line 7, in test_local' in local and '"solution.py"' not in local
    assert local.rstrip().endswith("KeyError: 'missing'")
