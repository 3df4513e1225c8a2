"""What tests need keeps working across the channel: classes, callbacks, in-place changes, generators,
expected exceptions, float tolerances, ``check(candidate)`` (docs/executor.md, "What crosses")."""

from __future__ import annotations

import textwrap

import pytest

from murphy_lab.executor import TestSuite


@pytest.fixture(scope="module")
def ex(executor):
    return executor  # the session's (tests/conftest.py): no test here needs limits of its own


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip()


def test_plain_values_of_every_builtin_type_cross_exactly(ex):
    p = "def f():\n    return (1, 2.5, float('nan'), float('inf'), 1j, 's', b'b', True, None, [1], {1: 2}, {3}, frozenset({4}))\n"
    tests = [
        "v = f()\nassert type(v) is tuple and v[2] != v[2] and v[3] == float('inf')",
        "assert [type(x).__name__ for x in f()] == ['int', 'float', 'float', 'float', 'complex', 'str', 'bytes', "
        "'bool', 'NoneType', 'list', 'dict', 'set', 'frozenset']",
        "assert f()[4] == 1j and f()[-2] == {3} and f()[-1] == frozenset({4})",
    ]
    assert ex.run(p, tests).solved


def test_a_leetcode_solution_class_is_called_through_its_instance(ex):
    p = prog("""
        class Solution:
            def __init__(self):
                self.calls = 0
            def add(self, a, b):
                self.calls += 1
                return a + b
    """)
    assert ex.run(p, ["s = Solution()\nassert s.add(1, 2) == 3 and s.add(2, 2) == 4 and s.calls == 2"]).solved


def test_builtin_functions_and_classes_cross_by_name(ex):
    # the program gets its own `len` and `str`, never a function of the test side
    p = "def apply(fn, xs):\n    return [fn(x) for x in xs]\ndef sort_by(xs, key):\n    return sorted(xs, key=key)\n"
    tests = ["assert apply(str, [1, 2]) == ['1', '2']", "assert sort_by(['bb', 'a'], len) == ['a', 'bb']"]
    assert ex.run(p, tests).solved


def test_keyword_arguments_reach_the_program(ex):
    p = "def f(a, b=0, *, c=1):\n    return a + 10 * b + 100 * c\ndef call(fn):\n    return fn(7, 2)\n"
    tests = ["assert f(1, b=2, c=3) == 321", "assert f(a=1) == 101", "assert call(divmod) == (3, 1)"]
    res = ex.run(p, tests)
    assert res.solved, res.feedback


def test_in_place_changes_to_arguments_reach_the_test(ex):
    p = prog("""
        def sort_in_place(xs):
            xs.sort()
        def fill(d, grid):
            d['k'] = 1
            grid[0][0] = 9
    """)
    tests = [
        "xs = [3, 1, 2]\nsort_in_place(xs)\nassert xs == [1, 2, 3]",
        "d, g = {}, [[0, 0], [0, 0]]\nrow = g[0]\nfill(d, g)\nassert d == {'k': 1} and g == [[9, 0], [0, 0]] and row[0] == 9",
    ]
    assert ex.run(p, tests).solved


def test_generators_are_iterated_through_the_channel(ex):
    p = "def gen(n):\n    for i in range(n):\n        yield i * i\n"
    tests = ["assert list(gen(4)) == [0, 1, 4, 9]", "g = gen(3)\nassert next(g) == 0 and next(g) == 1"]
    assert ex.run(p, tests).solved


def test_exceptions_the_tests_expect_cross_as_their_builtin_type(ex):
    p = prog("""
        class MyError(ValueError):
            pass
        def f(x):
            if x < 0:
                raise MyError("negative")
            return x
    """)
    tests = [
        "try:\n    f(-1)\n    assert False\nexcept ValueError as e:\n    assert str(e) == 'negative'",
        "import pytest\nwith pytest.raises(ValueError):\n    f(-1)",
    ]
    assert ex.run(p, tests).solved


def test_float_tolerances_compare_genuine_floats(ex):
    p = "import math\ndef area(r):\n    return math.pi * r * r\n"
    tests = ["assert abs(area(1) - 3.14159) < 1e-4", "assert math.isclose(area(2), 12.566, rel_tol=1e-3)"]
    assert ex.run(p, tests).solved


def test_check_candidate_style_tests_run_with_the_candidate_as_a_proxy(ex):
    suite = TestSuite(
        cases=("check(f)",),
        setup="def check(candidate):\n    for i in range(20):\n        assert candidate(i) == i + 1\n",
    )
    assert ex.run("def f(x):\n    return x + 1\n", suite).solved


def test_program_objects_returned_and_passed_back_are_the_same_objects(ex):
    p = prog("""
        class Node:
            def __init__(self, v, nxt=None):
                self.v, self.nxt = v, nxt
        def build(xs):
            head = None
            for x in reversed(xs):
                head = Node(x, head)
            return head
        def to_list(node):
            out = []
            while node:
                out.append(node.v)
                node = node.nxt
            return out
    """)
    assert ex.run(p, ["assert to_list(build([1, 2, 3])) == [1, 2, 3]", "assert build([5]).v == 5"]).solved


def test_a_program_returning_a_value_that_cannot_cross_as_data_fails_closed(ex):
    p = "import threading\ndef f():\n    return threading.Lock()\n"
    res = ex.run(p, ["assert f() == 1", "assert f() in (1, 2)"])
    assert res.passed == 0 and res.status == "failed"
