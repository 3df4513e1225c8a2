"""The limits that stay (docs/executor.md, "Limits that stay"): each row's program, scored here and in one plain
`python` process, so that the table says what the executor does today.

Every limit is a place where a correct program scores unlike one process (or, for containment, a wrong one scores
like it), kept for the reason the table gives; when one of these tests starts to fail, the limit moved and the
table must say so.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


@pytest.fixture(scope="module")
def ex(executor):
    return executor  # the session's (tests/conftest.py)


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip()


def one_process(program: str, test: str, cwd) -> bool:
    done = subprocess.run([sys.executable, "-c", program + "\n" + test + "\n"], cwd=cwd, capture_output=True)
    return done.returncode == 0


# (the row of the table, the program, the test, whether it passes here); every test passes in one process
LIMITS = [
    (
        "a program object equals no plain data",
        prog("""
        from collections import UserList
        def f():
            return UserList([1, 2])
     """),
        "assert f() == [1, 2]",
        False,
    ),
    (
        "an operator with the test's data gives a program object",
        prog("""
        class Temp:
            def __init__(self, c):
                self.c = c
            def __sub__(self, other):
                return self.c - other
     """),
        "assert Temp(30) - 10 == 20",
        False,
    ),
    (
        "containment is the program's answer",
        prog("""
        class Anything:
            def __contains__(self, x):
                return True
        def f():
            return Anything()
     """),
        "assert 42 in f()",
        True,
    ),
    (
        "type(x) is the stand-in class",
        prog("""
        class P:
            pass
        def f():
            return P()
     """),
        "assert type(f()) is P",
        False,
    ),
    (
        "a test's subclass of a program class has no methods of its own",
        prog("""
        class Base:
            def hi(self):
                return 1
     """),
        "class B(Base):\n    def hi(self):\n        return 2\nassert B().hi() == 2",
        False,
    ),
    (
        "(a subclass without methods is made by the program)",
        prog("""
        class Base:
            def hi(self):
                return 1
     """),
        "class B(Base):\n    pass\nassert B().hi() == 1 and isinstance(B(), Base)",
        True,
    ),
    (
        "attributes the test sets are not followed",
        prog("""
        class Node:
            def __init__(self):
                self.items = None
            def add(self, x):
                self.items.append(x)
     """),
        "n, xs = Node(), []\nn.items = xs\nn.add(1)\nassert xs == [1]",
        False,
    ),
    (
        "what the program returns is a copy",
        prog("""
        class Box:
            def __init__(self):
                self.xs = []
            def get(self):
                return self.xs
            def add(self, x):
                self.xs.append(x)
     """),
        "b = Box()\nxs = b.get()\nb.add(1)\nassert xs == [1]",
        False,
    ),
    (
        "a loop runs the program's iterator a batch ahead",
        prog("""
        seen = []
        def gen():
            for i in range(5):
                seen.append(i)
                yield i
        def produced():
            return list(seen)
     """),
        "for x in gen():\n    assert produced() == list(range(x + 1))",
        False,
    ),
    (
        "StopIteration from a call fails the case",
        prog("""
        def stop(x):
            raise StopIteration
     """),
        "assert list(map(stop, [1])) == []",
        False,
    ),
    (
        "a test value that is not plain data cannot cross",
        prog("""
        def apply(fn, x):
            return fn(x)
     """),
        "assert apply(lambda v: v + 1, 1) == 2",
        False,
    ),
    (
        "a defaultdict's own factory stays behind",
        prog("""
        from collections import defaultdict
        def f():
            d = defaultdict(lambda: 7)
            d["a"] = 1
            return d
     """),
        "assert f()['b'] == 7",
        False,
    ),
    (
        "an IntFlag's arithmetic gives an int",
        prog("""
        import enum
        class Perm(enum.IntFlag):
            R = 4
            W = 2
     """),
        "assert type(Perm.R | Perm.W).__name__ == 'Perm'",
        False,
    ),
    (
        "a value past the caps stays a program object",
        prog("""
        def f():
            return list(range(5_000_000))
     """),
        "assert f() == list(range(5_000_000))",
        False,
    ),
    (
        "dataclasses' functions do not see a program dataclass",
        prog("""
        from dataclasses import dataclass
        @dataclass
        class P:
            x: int
        def f():
            return P(1)
     """),
        "from dataclasses import asdict\nassert asdict(f()) == {'x': 1}",
        False,
    ),
    (
        "(its __dict__ is the program's)",
        prog("""
        from dataclasses import dataclass
        @dataclass
        class P:
            x: int
        def f():
            return P(1)
     """),
        "assert vars(f()) == {'x': 1} and f().__dict__ == {'x': 1}",
        True,
    ),
    (
        "names come from the test text",
        prog("""
        def f():
            return 1
     """),
        "assert eval('f()') == 1",
        False,
    ),
]


@pytest.mark.parametrize("row, program, test, here", LIMITS, ids=[r[0] for r in LIMITS])
def test_each_limit_that_stays_is_what_the_table_says(ex, tmp_path, row, program, test, here):
    assert one_process(program, test, tmp_path), "every row's test passes in one plain process"
    res = ex.run(program, [test])
    assert res.solved == here, res.feedback


def test_a_pandas_value_the_format_does_not_carry_stays_a_program_object(ex, tmp_path):
    pytest.importorskip("pandas")
    program = "import pandas as pd\ndef f():\n    return pd.DataFrame({'a': pd.Categorical(['x'])})\n"
    test = (
        "import pandas as pd\npd.testing.assert_frame_equal(f(), pd.DataFrame({'a': pd.Categorical(['x'])}))"
    )
    assert one_process(program, test, tmp_path)
    res = ex.run(program, [test, "assert f().shape == (1, 1) and len(f()) == 1"])
    assert [o.passed for o in res.outcomes] == [False, True], res.feedback  # it still answers for itself
